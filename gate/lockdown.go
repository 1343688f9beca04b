package gate

import (
	_ "embed"

	"github.com/dop251/goja"
)

// lockdown.js runs once per pooled runtime before any policy: the guards, the removal
// of code generation and BigInt, the growth guards and the freeze (docs/policies.md).
//
//go:embed lockdown.js
var lockdownSrc string

var lockdownPrg = goja.MustCompile("lockdown.js", lockdownSrc, false)

// jsonDepth returns the deepest bracket nesting of JSON text, ignoring strings.
func jsonDepth(s string) int {
	depth, max := 0, 0
	in, esc := false, false
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
			depth++
			if depth > max {
				max = depth
			}
		case c == ']' || c == '}':
			depth--
		}
	}
	return max
}
