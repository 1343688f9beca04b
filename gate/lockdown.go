package gate

import (
	_ "embed"

	"github.com/dop251/goja"
)

// fallbackParseValues bounds the text the runtime's own JSON.parse reads in one native
// step (with a reviver, a lone surrogate or a \uD800–\uDFFF escape, or invalid JSON),
// in values: about half a second here.
const fallbackParseValues = 1 << 18

// boundedParse is the host half of JSON.parse (lockdown.js safeParse), given the text
// as a string: it measures the text (jsonShape) and refuses it before any value is
// built when it nests deeper than maxNesting (policy_stack_limit), holds more than
// maxNodes values or an array of more than maxArrayLen (policy_memory_limit). Without a
// reviver, text whose UTF-8 is exact is built in Go (jsvalue, which checks for a
// pending interrupt as it goes, so the deadline stops it). Anything else returns
// undefined, which tells safeParse to call the original, for at most
// fallbackParseValues values.
func (v *vm) boundedParse(text goja.Value, reviver bool) goja.Value {
	s, ok := text.(goja.String)
	if !ok {
		return goja.Undefined()
	}
	src, exact := exactText(s)
	if !exact {
		src = s.String() // the brackets, commas and quotes are where they were
	}
	depth, values, longest := jsonShape(src)
	switch {
	case depth > maxNesting:
		v.rt.Interrupt(errStack)
		v.broken.Store(true)
		callJS(v.poll, goja.Undefined())
	case values > maxNodes || longest > maxArrayLen:
		v.oom()
		callJS(v.poll, goja.Undefined())
	}
	if !reviver && exact {
		if val, _, ok := v.json.FromJSON(src); ok {
			return val
		}
	}
	if values > fallbackParseValues {
		v.oom()
		callJS(v.poll, goja.Undefined())
	}
	return goja.Undefined()
}

// exactText returns s as UTF-8 when that is exact: ASCII (no copy), or UTF-16 without
// a lone surrogate. ok is false otherwise.
func exactText(s goja.String) (string, bool) {
	if a, ok := ascii(s); ok {
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

// lockdown.js runs once per pooled runtime before any policy: the guards, the removal
// of code generation and BigInt, the growth guards and the freeze (docs/policies.md).
//
//go:embed lockdown.js
var lockdownSrc string

var lockdownPrg = goja.MustCompile("lockdown.js", lockdownSrc, false)

// jsonShape measures JSON text without parsing it, ignoring strings: the deepest
// bracket nesting (counting stops past maxNesting), the values it can hold at most
// (one per comma and per bracket, plus one) and the most elements one array holds. It
// does not validate: it bounds the native step JSON.parse would take.
func jsonShape(s string) (depth, values, longest int) {
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
			values++
			n := 0
			if c == '{' {
				n = -1
			}
			commas = append(commas, n)
			if len(commas) > depth {
				depth = len(commas)
				if depth > maxNesting {
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
			values++
			if k := len(commas); k > 0 && commas[k-1] >= 0 {
				commas[k-1]++
				longest = max(longest, commas[k-1]+1)
			}
		}
	}
	return depth, values, longest
}
