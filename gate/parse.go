package gate

import (
	"github.com/dop251/goja"

	"github.com/mcpgate/mcpgate/gate/internal/sandbox"
)

// fallbackParseValues bounds the text the runtime's own JSON.parse reads in one native
// step (with a reviver, a lone surrogate or a \uD800–\uDFFF escape, or invalid JSON),
// in values: about half a second here.
const fallbackParseValues = 1 << 18

// boundedParse is the host half of JSON.parse (lockdown.js safeParse), given the text
// as a string: it measures the text (sandbox.JSONShape) and refuses it before any value is
// built when it nests deeper than sandbox.MaxNesting (policy_stack_limit), holds more than
// sandbox.MaxNodes values or an array of more than sandbox.MaxArrayLen (policy_memory_limit). Without a
// reviver, text whose UTF-8 is exact is built in Go (jsvalue, which checks for a
// pending interrupt as it goes, so the deadline stops it). Anything else returns
// undefined, which tells safeParse to call the original, for at most
// fallbackParseValues values.
func (v *vm) boundedParse(text goja.Value, reviver bool) goja.Value {
	s, ok := text.(goja.String)
	if !ok {
		return goja.Undefined()
	}
	src, exact := sandbox.ExactText(s)
	if !exact {
		src = s.String() // the brackets, commas and quotes are where they were
	}
	depth, values, longest := sandbox.JSONShape(src)
	switch {
	case depth > sandbox.MaxNesting:
		v.rt.Interrupt(errStack)
		v.broken.Store(true)
		sandbox.CallJS(v.poll, goja.Undefined())
	case values > sandbox.MaxNodes || longest > sandbox.MaxArrayLen:
		v.oom()
		sandbox.CallJS(v.poll, goja.Undefined())
	}
	if !reviver && exact {
		if val, _, ok := v.json.FromJSON(src); ok {
			return val
		}
	}
	if values > fallbackParseValues {
		v.oom()
		sandbox.CallJS(v.poll, goja.Undefined())
	}
	return goja.Undefined()
}
