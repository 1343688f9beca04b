package gate

import (
	"encoding/json"
	"strconv"
	"strings"
	"unicode/utf16"
	"unicode/utf8"

	"github.com/dop251/goja"
)

// fromJSON builds the native JS value of JSON text in Go, as JSON.parse(text) would:
// plain objects with own data properties in text order (a "__proto__" key is an own
// property), arrays, strings, numbers, booleans and null. It avoids the runtime's
// token-by-token JSON.parse. ok is false when the text is not plain, valid JSON or
// holds a \u escape of a surrogate (the caller then uses JSON.parse, which keeps lone
// surrogates); nesting past maxNesting trips the stack guard, as JSON.parse does here.
func (v *vm) fromJSON(text string) (val goja.Value, ok bool) {
	if strings.Contains(text, `\ud`) || strings.Contains(text, `\uD`) {
		return nil, false
	}
	r := jsonReader{v: v, s: text}
	val, ok = r.value(0)
	if !ok {
		return nil, false
	}
	r.space()
	return val, r.i == len(r.s)
}

type jsonReader struct {
	v *vm
	s string
	i int
}

func (r *jsonReader) space() {
	for r.i < len(r.s) {
		switch r.s[r.i] {
		case ' ', '\t', '\n', '\r':
			r.i++
		default:
			return
		}
	}
}

func (r *jsonReader) value(depth int) (goja.Value, bool) {
	r.space()
	if r.i >= len(r.s) {
		return nil, false
	}
	rt := r.v.rt
	switch c := r.s[r.i]; {
	case c == '{':
		if depth >= maxNesting {
			r.v.rt.Interrupt(errStack)
			r.v.broken.Store(true)
			panic(rt.NewTypeError("value nested too deeply"))
		}
		r.i++
		o := rt.NewObject()
		r.space()
		if r.i < len(r.s) && r.s[r.i] == '}' {
			r.i++
			return o, true
		}
		for {
			r.space()
			k, ok := r.str()
			if !ok {
				return nil, false
			}
			r.space()
			if r.i >= len(r.s) || r.s[r.i] != ':' {
				return nil, false
			}
			r.i++
			e, ok := r.value(depth + 1)
			if !ok {
				return nil, false
			}
			if err := o.DefineDataProperty(k, e, goja.FLAG_TRUE, goja.FLAG_TRUE, goja.FLAG_TRUE); err != nil {
				return nil, false
			}
			r.space()
			if r.i >= len(r.s) {
				return nil, false
			}
			if r.s[r.i] == '}' {
				r.i++
				return o, true
			}
			if r.s[r.i] != ',' {
				return nil, false
			}
			r.i++
		}
	case c == '[':
		if depth >= maxNesting {
			r.v.rt.Interrupt(errStack)
			r.v.broken.Store(true)
			panic(rt.NewTypeError("value nested too deeply"))
		}
		r.i++
		var items []any
		r.space()
		if r.i < len(r.s) && r.s[r.i] == ']' {
			r.i++
			return rt.NewArray(), true
		}
		for {
			e, ok := r.value(depth + 1)
			if !ok {
				return nil, false
			}
			items = append(items, e)
			r.space()
			if r.i >= len(r.s) {
				return nil, false
			}
			if r.s[r.i] == ']' {
				r.i++
				return rt.NewArray(items...), true
			}
			if r.s[r.i] != ',' {
				return nil, false
			}
			r.i++
		}
	case c == '"':
		s, ok := r.str()
		if !ok {
			return nil, false
		}
		return rt.ToValue(s), true
	case c == 't' && strings.HasPrefix(r.s[r.i:], "true"):
		r.i += 4
		return rt.ToValue(true), true
	case c == 'f' && strings.HasPrefix(r.s[r.i:], "false"):
		r.i += 5
		return rt.ToValue(false), true
	case c == 'n' && strings.HasPrefix(r.s[r.i:], "null"):
		r.i += 4
		return goja.Null(), true
	case c == '-' || (c >= '0' && c <= '9'):
		j := r.i
		for j < len(r.s) && strings.IndexByte("+-0123456789.eE", r.s[j]) >= 0 {
			j++
		}
		tok := r.s[r.i:j]
		if !json.Valid([]byte(tok)) {
			return nil, false
		}
		f, err := strconv.ParseFloat(tok, 64)
		if err != nil { // out of range: JSON.parse decides
			return nil, false
		}
		r.i = j
		return rt.ToValue(f), true
	}
	return nil, false
}

// str reads a JSON string at r.i.
func (r *jsonReader) str() (string, bool) {
	if r.i >= len(r.s) || r.s[r.i] != '"' {
		return "", false
	}
	start := r.i + 1
	esc := false
	for j := start; j < len(r.s); j++ {
		switch c := r.s[j]; {
		case c == '\\':
			esc = true
			j++
		case c < 0x20:
			return "", false
		case c == '"':
			r.i = j + 1
			if !esc {
				return r.s[start:j], true
			}
			if out, ok := unescape(r.s[start:j]); ok {
				return out, true
			}
			var out string // invalid UTF-8 or a bad escape: encoding/json decides
			if err := json.Unmarshal([]byte(r.s[start-1:j+1]), &out); err != nil {
				return "", false
			}
			return out, true
		}
	}
	return "", false
}

// unescape decodes the body of a JSON string that holds escapes (no control
// characters, no surrogate escapes: fromJSON checked); ok is false for anything else
// (invalid UTF-8, which encoding/json replaces with U+FFFD, or a malformed escape).
// engine's appendUnquoted is its twin for the scanner: it turns lone surrogates into
// U+FFFD, which a JS string must keep exact, so here the slow path decides them.
func unescape(s string) (string, bool) {
	if !utf8.ValidString(s) {
		return "", false
	}
	b := make([]byte, 0, len(s))
	for i := 0; i < len(s); {
		k := strings.IndexByte(s[i:], '\\')
		if k < 0 {
			b = append(b, s[i:]...)
			break
		}
		b = append(b, s[i:i+k]...)
		i += k
		if i+1 >= len(s) {
			return "", false
		}
		switch c := s[i+1]; c {
		case '"', '\\', '/':
			b = append(b, c)
		case 'b':
			b = append(b, '\b')
		case 'f':
			b = append(b, '\f')
		case 'n':
			b = append(b, '\n')
		case 'r':
			b = append(b, '\r')
		case 't':
			b = append(b, '\t')
		case 'u':
			if i+6 > len(s) {
				return "", false
			}
			n, err := strconv.ParseUint(s[i+2:i+6], 16, 32)
			if err != nil || utf16.IsSurrogate(rune(n)) {
				return "", false
			}
			b = utf8.AppendRune(b, rune(n))
			i += 4
		default:
			return "", false
		}
		i += 2
	}
	return string(b), true
}
