package jsvalue

import (
	"math"
	"reflect"
	"strconv"
	"strings"
	"unicode/utf16"
	"unicode/utf8"

	"github.com/dop251/goja"
)

// Writer reads a ctx value back as JSON text in Go, with the semantics of
// JSON.stringify(value) (toJSON, getters and Proxy traps run once each, in the same
// order; undefined, functions and symbols are left out of objects and are null in
// arrays; NaN and Infinity are null; lone surrogates are escaped) and the sandbox's
// guards (nesting, node count, output size). It replaces a JS replacer call per value.
type Writer struct {
	V      *Bridge
	Buf    []byte // the text written so far (reused: set it to a scratch buffer)
	Nodes  int    // values visited
	Limit  int    // bytes of output past which the value is refused
	onPath []*goja.Object
	Trip   Trip // the guard that fired, if any
}

// Trip is a Writer guard that fired; the caller turns it into its rejection.
type Trip int

// Guards.
const (
	TripNone   Trip = iota
	TripMemory      // more than MaxNodes values or Limit bytes
	TripStack       // nesting past MaxNesting
)

var tripText = [...]string{TripMemory: "policy exceeded the memory limit", TripStack: "policy exceeded the nesting limit"}

// fail records a guard and unwinds with a TypeError.
func (w *Writer) fail(why Trip) {
	w.Trip = why
	w.V.Broken()
	panic(w.V.RT.NewTypeError(tripText[why]))
}

// write appends val's JSON to w.Buf; it reports false when val serialises to nothing
// (undefined, a function, a symbol).
func (w *Writer) Write(key string, val goja.Value, depth int) bool {
	if w.Nodes++; w.Nodes > w.V.MaxNodes || len(w.Buf) > w.Limit {
		w.fail(TripMemory)
	}
	if o, ok := val.(*goja.Object); ok {
		if f, ok := goja.AssertFunction(o.Get("toJSON")); ok {
			r, err := f(o, w.V.RT.ToValue(key))
			if err != nil {
				panic(err)
			}
			val = r
		}
	}
	switch {
	case val == nil, goja.IsUndefined(val):
		return false
	case goja.IsNull(val):
		w.Buf = append(w.Buf, "null"...)
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

func (w *Writer) bool(b bool) {
	if b {
		w.Buf = append(w.Buf, "true"...)
	} else {
		w.Buf = append(w.Buf, "false"...)
	}
}

func (w *Writer) number(f float64) bool {
	w.Buf = appendJSNumber(w.Buf, w.V.RT, f)
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

func (w *Writer) enter(o *goja.Object, depth int) {
	if depth > w.V.MaxNesting {
		w.fail(TripStack)
	}
	for _, p := range w.onPath {
		if p == o {
			panic(w.V.RT.NewTypeError("Converting circular structure to JSON"))
		}
	}
	w.onPath = append(w.onPath, o)
}

func (w *Writer) array(o *goja.Object, depth int) {
	w.enter(o, depth)
	n := o.Get("length").ToInteger()
	if n > int64(w.V.MaxNodes) {
		w.fail(TripMemory)
	}
	w.Buf = append(w.Buf, '[')
	for i := int64(0); i < n; i++ {
		if i > 0 {
			w.Buf = append(w.Buf, ',')
		}
		k := strconv.FormatInt(i, 10)
		if !w.Write(k, o.Get(k), depth+1) {
			w.Buf = append(w.Buf, "null"...)
		}
	}
	w.Buf = append(w.Buf, ']')
	w.onPath = w.onPath[:len(w.onPath)-1]
}

func (w *Writer) object(o *goja.Object, depth int) {
	w.enter(o, depth)
	w.Buf = append(w.Buf, '{')
	first := true
	for _, k := range o.Keys() {
		mark := len(w.Buf)
		if !first {
			w.Buf = append(w.Buf, ',')
		}
		w.str(k)
		w.Buf = append(w.Buf, ':')
		if w.Write(k, o.Get(k), depth+1) {
			first = false
		} else {
			w.Buf = w.Buf[:mark]
		}
	}
	w.Buf = append(w.Buf, '}')
	w.onPath = w.onPath[:len(w.onPath)-1]
}

// jsString quotes a JS string; a string holding lone surrogates is written from its
// UTF-16 units so they are escaped as JSON.stringify does.
func (w *Writer) jsString(s goja.String) {
	t := s.String()
	if !strings.ContainsRune(t, utf8.RuneError) {
		w.str(t)
		return
	}
	w.Buf = append(w.Buf, '"')
	n := s.Length()
	for i := 0; i < n; i++ {
		c := s.CharAt(i)
		switch {
		case utf16.IsSurrogate(rune(c)):
			if c < 0xDC00 && i+1 < n {
				if d := s.CharAt(i + 1); d >= 0xDC00 && d <= 0xDFFF {
					w.Buf = utf8.AppendRune(w.Buf, utf16.DecodeRune(rune(c), rune(d)))
					i++
					continue
				}
			}
			w.Buf = append(w.Buf, `\u`...)
			w.Buf = append(w.Buf, strconv.FormatInt(int64(c), 16)...)
		default:
			w.Buf = appendQuotedRunes(w.Buf, string(rune(c)))
		}
	}
	w.Buf = append(w.Buf, '"')
}

// str quotes valid UTF-8 as JSON.stringify does.
func (w *Writer) str(s string) {
	w.Buf = append(w.Buf, '"')
	w.Buf = appendQuotedRunes(w.Buf, s)
	w.Buf = append(w.Buf, '"')
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

// proxyType is the type goja exports a Proxy as.
var proxyType = reflect.TypeOf(goja.Proxy{})
