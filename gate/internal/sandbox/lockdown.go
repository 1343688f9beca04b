package sandbox

import (
	_ "embed"
	"sync"

	"github.com/dop251/goja"
)

// ExactText returns s as UTF-8 when that is exact: ASCII (no copy), or UTF-16 without
// a lone surrogate. ok is false otherwise.
func ExactText(s goja.String) (string, bool) {
	if a, ok := ASCII(s); ok {
		return a, true
	}
	n := s.Length()
	for i := 0; i < n; i++ {
		c := s.CharAt(i)
		if c < 0xD800 || c > 0xDFFF {
			continue
		}
		if c <= 0xDBFF && i+1 < n {
			if d := s.CharAt(i + 1); d >= 0xDC00 && d <= 0xDFFF {
				i++
				continue
			}
		}
		return "", false
	}
	return s.String(), true
}

//go:embed lockdown.js
var lockdownSrc string

// lockdown compiles lockdown.js on first use (not at package init: a command that
// runs no policy does not pay for it). It runs once per pooled runtime before any
// policy: the guards, the removal of code generation and BigInt, the growth guards
// and the freeze (docs/policies.md).
var lockdown = sync.OnceValue(func() *goja.Program { return goja.MustCompile("lockdown.js", lockdownSrc, false) })

// JSONShape measures JSON text without parsing it, ignoring strings: the deepest
// bracket nesting, the values it can hold at most (one per comma and per bracket, plus
// one) and the most elements one array holds; it stops as soon as one of them is past
// its bound (MaxNesting, MaxNodes, MaxArrayLen). It does not validate: it bounds the
// native step JSON.parse would take.
func JSONShape(s string) (depth, values, longest int) {
	var commas []int // commas so far in each open bracket; -1 for an object
	in, esc := false, false
	values = 1
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case in:
			switch {
			case esc:
				esc = false
			case c == '\\':
				esc = true
			case c == '"':
				in = false
			}
		case c == '"':
			in = true
		case c == '[' || c == '{':
			if values++; values > MaxNodes {
				return depth, values, longest
			}
			n := 0
			if c == '{' {
				n = -1
			}
			commas = append(commas, n)
			if len(commas) > depth {
				depth = len(commas)
				if depth > MaxNesting {
					return depth, values, longest
				}
			}
		case c == ']' || c == '}':
			if k := len(commas); k > 0 {
				if n := commas[k-1]; n >= 0 {
					longest = max(longest, n+1)
				}
				commas = commas[:k-1]
			}
		case c == ',':
			if values++; values > MaxNodes {
				return depth, values, longest
			}
			if k := len(commas); k > 0 && commas[k-1] >= 0 {
				commas[k-1]++
				if longest = max(longest, commas[k-1]+1); longest > MaxArrayLen {
					return depth, values, longest
				}
			}
		}
	}
	return depth, values, longest
}
