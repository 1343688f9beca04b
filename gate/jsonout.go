package gate

import (
	"math"
	"reflect"
	"strconv"
	"strings"
	"unicode/utf16"
	"unicode/utf8"

	"github.com/dop251/goja"
)

// jsonWriter reads a ctx value back as JSON text in Go, with the semantics of
// JSON.stringify(value) (toJSON, getters and Proxy traps run once each, in the same
// order; undefined, functions and symbols are left out of objects and are null in
// arrays; NaN and Infinity are null; lone surrogates are escaped) and the sandbox's
// guards (nesting, node count, output size). It replaces a JS replacer call per value.
type jsonWriter struct {
	v      *vm
	buf    []byte
	nodes  int
	limit  int
	onPath []*goja.Object
	trip   *interruptReason // a guard that fired (policy_memory_limit, policy_stack_limit)
}

// fail records a guard and unwinds with a TypeError.
func (w *jsonWriter) fail(why *interruptReason) {
	w.trip = why
	w.v.broken.Store(true)
	panic(w.v.rt.NewTypeError(why.msg))
}

// write appends val's JSON to w.buf; it reports false when val serialises to nothing
// (undefined, a function, a symbol).
func (w *jsonWriter) write(key string, val goja.Value, depth int) bool {
	if w.nodes++; w.nodes > maxNodes || len(w.buf) > w.limit {
		w.fail(errMemory)
	}
	if o, ok := val.(*goja.Object); ok {
		if f, ok := goja.AssertFunction(o.Get("toJSON")); ok {
			r, err := f(o, w.v.rt.ToValue(key))
			if err != nil {
				rethrow(err)
			}
			val = r
		}
	}
	switch {
	case val == nil, goja.IsUndefined(val):
		return false
	case goja.IsNull(val):
		w.buf = append(w.buf, "null"...)
		return true
	}
	o, isObj := val.(*goja.Object)
	if isObj {
		if _, fn := goja.AssertFunction(o); fn {
			return false
		}
		switch o.ClassName() {
		case "Array":
			w.array(o, depth)
			return true
		case "Number":
			return w.number(o.ToFloat())
		case "String":
			w.str(o.String())
			return true
		case "Boolean":
			b, _ := o.Export().(bool)
			w.bool(b)
			return true
		}
		if isArrayProxy(o) {
			w.array(o, depth)
		} else {
			w.object(o, depth)
		}
		return true
	}
	if t := val.ExportType(); t != nil && t.Kind() == reflect.Bool {
		w.bool(val.ToBoolean())
		return true
	}
	if s, ok := val.(goja.String); ok {
		w.jsString(s)
		return true
	}
	if goja.IsNumber(val) {
		return w.number(val.ToFloat())
	}
	return false // a symbol
}

func (w *jsonWriter) bool(b bool) {
	if b {
		w.buf = append(w.buf, "true"...)
	} else {
		w.buf = append(w.buf, "false"...)
	}
}

func (w *jsonWriter) number(f float64) bool {
	w.buf = appendJSNumber(w.buf, w.v.rt, f)
	return true
}

// appendJSNumber appends f as JSON.stringify writes a number: null for NaN and the
// infinities, else JavaScript's Number::toString.
func appendJSNumber(b []byte, rt *goja.Runtime, f float64) []byte {
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return append(b, "null"...)
	}
	if f == math.Trunc(f) && math.Abs(f) < 1e15 {
		return strconv.AppendInt(b, int64(f), 10) // -0 is written 0, as in JavaScript
	}
	return append(b, rt.ToValue(f).String()...)
}

func (w *jsonWriter) enter(o *goja.Object, depth int) {
	if depth > maxNesting {
		w.fail(errStack)
	}
	for _, p := range w.onPath {
		if p == o {
			w.v.throwType("Converting circular structure to JSON")
		}
	}
	w.onPath = append(w.onPath, o)
}

func (w *jsonWriter) array(o *goja.Object, depth int) {
	w.enter(o, depth)
	n := o.Get("length").ToInteger()
	if n > maxNodes {
		w.fail(errMemory)
	}
	w.buf = append(w.buf, '[')
	for i := int64(0); i < n; i++ {
		if i > 0 {
			w.buf = append(w.buf, ',')
		}
		k := strconv.FormatInt(i, 10)
		if !w.write(k, o.Get(k), depth+1) {
			w.buf = append(w.buf, "null"...)
		}
	}
	w.buf = append(w.buf, ']')
	w.onPath = w.onPath[:len(w.onPath)-1]
}

func (w *jsonWriter) object(o *goja.Object, depth int) {
	w.enter(o, depth)
	w.buf = append(w.buf, '{')
	first := true
	for _, k := range o.Keys() {
		mark := len(w.buf)
		if !first {
			w.buf = append(w.buf, ',')
		}
		w.str(k)
		w.buf = append(w.buf, ':')
		if w.write(k, o.Get(k), depth+1) {
			first = false
		} else {
			w.buf = w.buf[:mark]
		}
	}
	w.buf = append(w.buf, '}')
	w.onPath = w.onPath[:len(w.onPath)-1]
}

// jsString quotes a JS string; a string holding lone surrogates is written from its
// UTF-16 units so they are escaped as JSON.stringify does.
func (w *jsonWriter) jsString(s goja.String) {
	t := s.String()
	if !strings.ContainsRune(t, utf8.RuneError) {
		w.str(t)
		return
	}
	w.buf = append(w.buf, '"')
	n := s.Length()
	for i := 0; i < n; i++ {
		c := s.CharAt(i)
		switch {
		case utf16.IsSurrogate(rune(c)):
			if c < 0xDC00 && i+1 < n {
				if d := s.CharAt(i + 1); d >= 0xDC00 && d <= 0xDFFF {
					w.buf = utf8.AppendRune(w.buf, utf16.DecodeRune(rune(c), rune(d)))
					i++
					continue
				}
			}
			w.buf = append(w.buf, `\u`...)
			w.buf = append(w.buf, strconv.FormatInt(int64(c), 16)...)
		default:
			w.buf = appendQuotedRunes(w.buf, string(rune(c)))
		}
	}
	w.buf = append(w.buf, '"')
}

// str quotes valid UTF-8 as JSON.stringify does.
func (w *jsonWriter) str(s string) {
	w.buf = append(w.buf, '"')
	w.buf = appendQuotedRunes(w.buf, s)
	w.buf = append(w.buf, '"')
}

const hexDigits = "0123456789abcdef"

func appendQuotedRunes(b []byte, s string) []byte {
	start := 0
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c >= 0x20 && c != '"' && c != '\\' {
			continue
		}
		b = append(b, s[start:i]...)
		switch c {
		case '"':
			b = append(b, `\"`...)
		case '\\':
			b = append(b, `\\`...)
		case '\b':
			b = append(b, `\b`...)
		case '\f':
			b = append(b, `\f`...)
		case '\n':
			b = append(b, `\n`...)
		case '\r':
			b = append(b, `\r`...)
		case '\t':
			b = append(b, `\t`...)
		default:
			b = append(b, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xF])
		}
		start = i + 1
	}
	return append(b, s[start:]...)
}

// isArrayProxy is IsArray for a Proxy: true when its (innermost) target is an array. A
// revoked Proxy is a TypeError, as in JavaScript.
func isArrayProxy(o *goja.Object) bool {
	for i := 0; i < 64 && o.ExportType() == proxyType; i++ {
		t := o.Export().(goja.Proxy).Target()
		if t == nil {
			panic(o.ClassName()) // unreachable: ClassName of a revoked Proxy throws a TypeError
		}
		o = t
	}
	return o.ClassName() == "Array"
}
