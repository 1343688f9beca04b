// Package jsvalue is the gate's JSON ⇄ JS value bridge: it builds the native goja
// value of JSON text as JSON.parse would (Bridge.FromJSON) and reads a value back as
// JSON.stringify would (Writer), in Go, under the sandbox's bounds. It is the seam where
// a goja with a fast native JSON.parse would replace the reader.
package jsvalue

import (
	"encoding/json"
	"slices"
	"strconv"
	"strings"
	"unicode/utf16"
	"unicode/utf8"

	"github.com/dop251/goja"
	"github.com/mcpgate/mcpgate/internal/jsonscan"
)

// Bridge is the JSON ⇄ JS bridge of one runtime; its fields are set once, when the
// runtime is built.
type Bridge struct {
	RT *goja.Runtime
	// ProtoNames are the frozen Object.prototype's own names and "__proto__"
	// (ObjectProtoNames); nil when the runtime is not locked down.
	ProtoNames map[string]bool
	// Poll is an empty JS function: calling it raises a pending interrupt, so that a
	// long read stops at the deadline; nil: never polled.
	Poll goja.Callable
	// TooDeep interrupts the runtime for nesting past MaxNesting (the caller's reason
	// code); the reader then unwinds.
	TooDeep func()
	// Broken marks the runtime as not to be reused (a Writer's guard fired).
	Broken func()
	// Keys is the intrinsic Object.keys, the Writer's key walk (one array and one value
	// per key); nil: goja's Object.Keys, which makes two iterator closures per key more.
	Keys goja.Callable
	// MaxNesting bounds arrays and objects in both directions; MaxNodes the values one
	// Writer visits.
	MaxNesting, MaxNodes int

	canonBuf []byte   // FromJSON's reusable canonical-text buffer
	keysBuf  []string // FromJSON's reusable stack of object keys
}

// MaxScratch bounds the buffers a Bridge or Writer keeps between uses, in bytes.
const MaxScratch = 64 << 10

// pollEvery is how many values a read runs between two interrupt checks.
const pollEvery = 1024

// FromJSON builds the native JS value of JSON text in Go, as JSON.parse(text) would:
// plain objects with own data properties in text order (a "__proto__" key is an own
// property), arrays, strings, numbers, booleans and null. It avoids the runtime's
// token-by-token JSON.parse. ok is false when the text is not plain, valid JSON or
// holds a \u escape of a surrogate (the caller then uses the runtime's JSON.parse,
// which joins a pair and, in this goja, reads a lone surrogate as U+FFFD); nesting past
// maxNesting trips the stack guard, as JSON.parse does here.
// canon is JSON.stringify of that value, written in the same pass, or "" where the
// order of an object's keys would not be the text's (an array-index key, a duplicate)
// or a string is not plain UTF-8.
func (v *Bridge) FromJSON(text string) (val goja.Value, canon string, ok bool) {
	if strings.Contains(text, `\ud`) || strings.Contains(text, `\uD`) {
		return nil, "", false
	}
	r := jsonReader{v: v, s: text, canonOK: true, canon: v.canonBuf[:0], keys: v.keysBuf[:0]}
	defer func() {
		if cap(r.canon) <= MaxScratch {
			v.canonBuf = r.canon[:0]
		}
		if cap(r.keys) <= MaxScratch/16 {
			clear(r.keys[:cap(r.keys)]) // keep no view of this text
			v.keysBuf = r.keys[:0]
		}
	}()
	val, ok = r.value(0)
	if !ok {
		return nil, "", false
	}
	r.space()
	if r.i != len(r.s) {
		return nil, "", false
	}
	if r.canonOK {
		canon = string(r.canon)
	}
	return val, canon, true
}

type jsonReader struct {
	v *Bridge
	s string
	i int

	canon   []byte   // JSON.stringify of what was read so far
	canonOK bool     // canon is exact
	keys    []string // keys of the objects being read, innermost last
	values  int      // values read so far
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
	if r.values++; r.values%pollEvery == 0 && r.v.Poll != nil {
		if _, err := r.v.Poll(goja.Undefined()); err != nil {
			panic(err) // a pending interrupt (the deadline) stops a long read
		}
	}
	r.space()
	if r.i >= len(r.s) {
		return nil, false
	}
	rt := r.v.RT
	switch c := r.s[r.i]; {
	case c == '{':
		if depth >= r.v.MaxNesting {
			r.v.TooDeep()
			panic(rt.NewTypeError("value nested too deeply"))
		}
		r.i++
		o := rt.NewObject()
		r.canon = append(r.canon, '{')
		r.space()
		if r.i < len(r.s) && r.s[r.i] == '}' {
			r.i++
			r.canon = append(r.canon, '}')
			return o, true
		}
		first := len(r.keys)
		defer func() { r.keys = r.keys[:first] }()
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
			if r.canonOK {
				r.key(k, first)
			}
			e, ok := r.value(depth + 1)
			if !ok {
				return nil, false
			}
			if !r.v.defineKey(o, k, e) {
				return nil, false
			}
			r.space()
			if r.i >= len(r.s) {
				return nil, false
			}
			if r.s[r.i] == '}' {
				r.i++
				r.canon = append(r.canon, '}')
				return o, true
			}
			r.canon = append(r.canon, ',')
			if r.s[r.i] != ',' {
				return nil, false
			}
			r.i++
		}
	case c == '[':
		if depth >= r.v.MaxNesting {
			r.v.TooDeep()
			panic(rt.NewTypeError("value nested too deeply"))
		}
		r.i++
		var items []any
		r.canon = append(r.canon, '[')
		r.space()
		if r.i < len(r.s) && r.s[r.i] == ']' {
			r.i++
			r.canon = append(r.canon, ']')
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
				r.canon = append(r.canon, ']')
				return rt.NewArray(items...), true
			}
			if r.s[r.i] != ',' {
				return nil, false
			}
			r.canon = append(r.canon, ',')
			r.i++
		}
	case c == '"':
		s, ok := r.str()
		if !ok {
			return nil, false
		}
		r.quote(s)
		return rt.ToValue(s), true
	case c == 't' && r.literal("true"):
		r.canon = append(r.canon, "true"...)
		return rt.ToValue(true), true
	case c == 'f' && r.literal("false"):
		r.canon = append(r.canon, "false"...)
		return rt.ToValue(false), true
	case c == 'n' && r.literal("null"):
		r.canon = append(r.canon, "null"...)
		return goja.Null(), true
	case c == '-' || (c >= '0' && c <= '9'):
		j := r.i
		if !r.number() { // out of range included: JSON.parse decides
			return nil, false
		}
		f, err := strconv.ParseFloat(r.s[j:r.i], 64)
		if err != nil {
			return nil, false
		}
		r.canon = appendJSNumber(r.canon, rt, f)
		return rt.ToValue(f), true
	}
	return nil, false
}

// quote appends s to canon as JSON.stringify writes it (plain UTF-8 only).
func (r *jsonReader) quote(s string) {
	if !r.canonOK {
		return
	}
	if !utf8.ValidString(s) || strings.ContainsRune(s, utf8.RuneError) {
		r.canonOK = false // jsonWriter.jsString decides such strings unit by unit
		return
	}
	r.canon = append(r.canon, '"')
	r.canon = appendQuotedRunes(r.canon, s)
	r.canon = append(r.canon, '"')
}

// key appends an object key to canon, unless JavaScript would order the object's keys
// differently from the text: an array-index key comes first, a duplicate key keeps
// its first place. first is where this object's keys start in r.keys.
func (r *jsonReader) key(k string, first int) {
	if isArrayIndex(k) || slices.Contains(r.keys[first:], k) {
		r.canonOK = false
		return
	}
	r.keys = append(r.keys, k)
	r.quote(k)
	r.canon = append(r.canon, ':')
}

// isArrayIndex reports whether k is the canonical decimal form of an integer in
// [0, 2^32-2], a key JavaScript orders before all others.
func isArrayIndex(k string) bool {
	if k == "" || len(k) > 10 || (len(k) > 1 && k[0] == '0') {
		return false
	}
	n := uint64(0)
	for i := 0; i < len(k); i++ {
		if k[i] < '0' || k[i] > '9' {
			return false
		}
		n = n*10 + uint64(k[i]-'0')
	}
	return n < 1<<32-1
}

// str reads the JSON string at r.i, validated as skipString validates it, and
// decodes it (a view of r.s when it holds no escape).
func (r *jsonReader) str() (string, bool) {
	start := r.i
	if !r.skipString() {
		return "", false
	}
	body := r.s[start+1 : r.i-1]
	if strings.IndexByte(body, '\\') < 0 {
		return body, true
	}
	if out, ok := unescape(body); ok {
		return out, true
	}
	var out string // invalid UTF-8: encoding/json decides
	if err := json.Unmarshal([]byte(r.s[start:r.i]), &out); err != nil {
		return "", false
	}
	return out, true
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
	var b strings.Builder // one allocation: the string itself
	b.Grow(len(s))
	for i := 0; i < len(s); {
		k := strings.IndexByte(s[i:], '\\')
		if k < 0 {
			b.WriteString(s[i:])
			break
		}
		b.WriteString(s[i : i+k])
		i += k
		if i+1 >= len(s) {
			return "", false
		}
		c := s[i+1]
		if d, ok := jsonscan.Escaped(c); ok {
			b.WriteByte(d)
			i += 2
			continue
		}
		switch c {
		case 'u':
			if i+6 > len(s) {
				return "", false
			}
			n, err := strconv.ParseUint(s[i+2:i+6], 16, 32)
			if err != nil || utf16.IsSurrogate(rune(n)) {
				return "", false
			}
			b.WriteRune(rune(n))
			i += 4
		default:
			return "", false
		}
		i += 2
	}
	return b.String(), true
}

// defineKey gives the fresh plain object o the own data property k as JSON.parse does
// (writable, enumerable, configurable): with a plain Set where plainKey allows it,
// DefineDataProperty otherwise; false when neither can.
func (v *Bridge) defineKey(o *goja.Object, k string, val goja.Value) bool {
	if v.plainKey(k) && o.Set(k, val) == nil {
		return true
	}
	return o.DefineDataProperty(k, val, goja.FLAG_TRUE, goja.FLAG_TRUE, goja.FLAG_TRUE) == nil
}

// plainKey reports whether k names no property of the locked-down Object.prototype,
// so that o.Set(k, v) on a fresh plain object o creates the same own data property
// JSON.parse would (writable, enumerable, configurable) without DefineDataProperty's
// descriptor path, about a third cheaper. "__proto__" and the prototype's own names
// (a frozen "toString" refuses a Set) take that path, as does every key in a runtime
// that is not locked down (protoNames nil).
func (v *Bridge) plainKey(k string) bool {
	return v.ProtoNames != nil && !v.ProtoNames[k]
}

// ObjectProtoNames returns the own property names of rt's Object.prototype and
// "__proto__"; the gate reads them once the prototype is frozen, so they never change.
func ObjectProtoNames(rt *goja.Runtime) map[string]bool {
	names := map[string]bool{"__proto__": true}
	for _, name := range rt.NewObject().Prototype().GetOwnPropertyNames() {
		names[name] = true
	}
	return names
}

// skipString moves past a JSON string, validating it as str does, without decoding:
// no control character, and each escape one of \" \\ \/ \b \f \n \r \t \uXXXX,
// except that a \u escape of a surrogate (\uD800–\uDFFF) is refused too (JSON.parse
// joins a pair and reads a lone one as U+FFFD; the whole value is then built instead).
// Runs of plain bytes are skipped eight at a time. Not internal/jsonscan.String, which
// does not validate: it plus a validating pass over the string measured 1.5–3× slower.
func (r *jsonReader) skipString() bool {
	s := r.s
	if r.i >= len(s) || s[r.i] != '"' {
		return false
	}
	const lo, hi = 0x0101010101010101, 0x8080808080808080
	for j := r.i + 1; j < len(s); j++ {
		for j+8 <= len(s) {
			x := uint64(s[j]) | uint64(s[j+1])<<8 | uint64(s[j+2])<<16 | uint64(s[j+3])<<24 |
				uint64(s[j+4])<<32 | uint64(s[j+5])<<40 | uint64(s[j+6])<<48 | uint64(s[j+7])<<56
			q, b := x^('"'*lo), x^('\\'*lo)
			// a byte below 0x20, or equal to " or \ (exact zero-byte tests: a set bit
			// can only come from such a byte or a borrow out of one below it)
			if ((x-0x20*lo)&^x|(q-lo)&^q|(b-lo)&^b)&hi != 0 {
				break
			}
			j += 8
		}
		if j >= len(s) {
			break
		}
		switch c := s[j]; {
		case c == '"':
			r.i = j + 1
			return true
		case c < 0x20:
			return false
		case c == '\\':
			if j+1 >= len(s) {
				return false
			}
			j++
			if _, ok := jsonscan.Escaped(s[j]); ok {
				continue
			}
			if s[j] != 'u' || j+4 >= len(s) || s[j+1] == 'd' || s[j+1] == 'D' {
				return false
			}
			for _, h := range []byte(s[j+1 : j+5]) {
				if !('0' <= h && h <= '9' || 'a' <= h && h <= 'f' || 'A' <= h && h <= 'F') {
					return false
				}
			}
			j += 4
		}
	}
	return false
}

func (r *jsonReader) literal(lit string) bool {
	if !strings.HasPrefix(r.s[r.i:], lit) {
		return false
	}
	r.i += len(lit)
	return true
}

// number moves past a JSON number: -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?,
// refusing one out of float64's range.
func (r *jsonReader) number() bool {
	s, i := r.s, r.i
	digits := func() bool {
		j := i
		for i < len(s) && s[i] >= '0' && s[i] <= '9' {
			i++
		}
		return i > j
	}
	if i < len(s) && s[i] == '-' {
		i++
	}
	switch {
	case i < len(s) && s[i] == '0':
		i++
	case !digits():
		return false
	}
	if i < len(s) && s[i] == '.' {
		i++
		if !digits() {
			return false
		}
	}
	if i < len(s) && (s[i] == 'e' || s[i] == 'E') {
		i++
		if i < len(s) && (s[i] == '+' || s[i] == '-') {
			i++
		}
		if !digits() {
			return false
		}
	}
	// one JSON.parse here cannot read (out of float64's range) makes the whole value
	// fail to build, as reading it whole would
	if tok := s[r.i:i]; len(tok) > 300 || strings.ContainsAny(tok, "eE") {
		if _, err := strconv.ParseFloat(tok, 64); err != nil {
			return false
		}
	}
	r.i = i
	return true
}
