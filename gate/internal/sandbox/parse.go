package sandbox

import (
	"github.com/dop251/goja"
)

// fallbackParseValues bounds the text the runtime's own JSON.parse reads in one native
// step (with a reviver, a lone surrogate or a \uD800–\uDFFF escape, or invalid JSON),
// in values: about half a second here.
const fallbackParseValues = 1 << 18

// boundedParse is the host half of JSON.parse (lockdown.js safeParse), given the text
// as a string: it measures the text (JSONShape) and refuses it before any value is
// built when it nests deeper than MaxNesting (policy_stack_limit), holds more than
// MaxNodes values or an array of more than MaxArrayLen (policy_memory_limit). Without a
// reviver, text whose UTF-8 is exact is built in Go (h.FromJSON: jsvalue, which checks
// for a pending interrupt as it goes, so the deadline stops it). Anything else returns
// undefined, which tells safeParse to call the original, for at most
// fallbackParseValues values.
func (h *Hooks) boundedParse(poll goja.Callable, text goja.Value, reviver bool) goja.Value {
	s, ok := text.(goja.String)
	if !ok {
		return goja.Undefined()
	}
	src, exact := ExactText(s)
	if !exact {
		src = s.String() // the brackets, commas and quotes are where they were
	}
	depth, values, longest := JSONShape(src)
	switch {
	case depth > MaxNesting:
		h.TooDeep()
		CallJS(poll, goja.Undefined())
	case values > MaxNodes || longest > MaxArrayLen:
		h.OOM()
		CallJS(poll, goja.Undefined())
	}
	if !reviver && exact {
		if val, ok := h.FromJSON(src); ok {
			return val
		}
	}
	if values > fallbackParseValues {
		h.OOM()
		CallJS(poll, goja.Undefined())
	}
	return goja.Undefined()
}
