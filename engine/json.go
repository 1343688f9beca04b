package engine

import (
	"bytes"
	"fmt"
	"strconv"
	"unicode/utf16"
	"unicode/utf8"

	"github.com/mcpgate/mcpgate/internal/jsonscan"
)

// A small JSON walker: it validates the document, tracks the JSON Pointer path, and
// hands every string (key or value) to a visitor without building any Go values, so
// a clean result is scanned without allocating.
// It differs on purpose from internal/jsonscan, which only skips (and does not
// validate) for the layers that must read broken or already-validated input.

// maxDepth bounds nesting; deeper documents are rejected as undecodable.
const maxDepth = 10000

type pathSeg struct {
	idx        int // array index, or -1 for an object member
	koff, klen int // decoded member name in jsonWalker.keys
}

// visitor receives the strings of a document. raw is the string's JSON text between
// the quotes (escapes undecoded); start is its offset in the document.
type visitor interface {
	visitString(w *jsonWalker, raw []byte, start int, esc, isKey bool)
	objectEnd(w *jsonWalker)
}

type jsonWalker struct {
	b    []byte
	pos  int
	path []pathSeg
	keys []byte
	v    visitor
	err  error
}

func (w *jsonWalker) reset(b []byte, v visitor) {
	w.b, w.pos, w.v, w.err = b, 0, v, nil
	w.path = w.path[:0]
	w.keys = w.keys[:0]
}

func (w *jsonWalker) fail(msg string) {
	if w.err == nil {
		w.err = fmt.Errorf("%w: %s at byte %d", ErrUndecodable, msg, w.pos)
	}
}

// depth is the number of path segments.
func (w *jsonWalker) depth() int { return len(w.path) }

// key returns the member name of path segment d (nil for an array index).
func (w *jsonWalker) key(d int) []byte {
	if d >= len(w.path) || w.path[d].idx >= 0 {
		return nil
	}
	p := w.path[d]
	return w.keys[p.koff : p.koff+p.klen]
}

func (w *jsonWalker) keyIs(d int, name string) bool {
	k := w.key(d)
	return k != nil && string(k) == name
}

// pointer renders the current path as an RFC 6901 JSON Pointer.
func (w *jsonWalker) pointer() string {
	var b []byte
	for d := range w.path {
		b = append(b, '/')
		if w.path[d].idx >= 0 {
			b = strconv.AppendInt(b, int64(w.path[d].idx), 10)
			continue
		}
		for _, c := range w.key(d) {
			switch c {
			case '~':
				b = append(b, '~', '0')
			case '/':
				b = append(b, '~', '1')
			default:
				b = append(b, c)
			}
		}
	}
	return string(b)
}

func (w *jsonWalker) skipWS() {
	for w.pos < len(w.b) {
		switch w.b[w.pos] {
		case ' ', '\t', '\n', '\r':
			w.pos++
		default:
			return
		}
	}
}

// walk parses one document: a value and nothing but whitespace after it.
func (w *jsonWalker) walk() error {
	w.skipWS()
	w.value()
	if w.err == nil {
		w.skipWS()
		if w.pos != len(w.b) {
			w.fail("data after the top-level value")
		}
	}
	return w.err
}

func (w *jsonWalker) value() {
	if w.err != nil {
		return
	}
	if w.pos >= len(w.b) {
		w.fail("unexpected end of input")
		return
	}
	switch c := w.b[w.pos]; {
	case c == '{':
		w.object()
	case c == '[':
		w.array()
	case c == '"':
		st, en, esc := w.str()
		if w.err == nil {
			w.v.visitString(w, w.b[st:en], st, esc, false)
		}
	case c == '-' || isDigit(c):
		w.number()
	default:
		w.literal()
	}
}

func (w *jsonWalker) object() {
	if len(w.path) >= maxDepth {
		w.fail("nesting too deep")
		return
	}
	w.pos++
	w.skipWS()
	if w.pos < len(w.b) && w.b[w.pos] == '}' {
		w.pos++
		w.v.objectEnd(w)
		return
	}
	for w.err == nil {
		w.skipWS()
		if w.pos >= len(w.b) || w.b[w.pos] != '"' {
			w.fail("expected a member name")
			return
		}
		st, en, esc := w.str()
		if w.err != nil {
			return
		}
		koff := len(w.keys)
		if esc {
			var ok bool
			w.keys, ok = appendUnquoted(w.keys, w.b[st:en])
			if !ok {
				w.fail("bad escape in member name")
				return
			}
		} else {
			w.keys = append(w.keys, w.b[st:en]...)
		}
		w.path = append(w.path, pathSeg{idx: -1, koff: koff, klen: len(w.keys) - koff})
		w.v.visitString(w, w.b[st:en], st, esc, true)
		w.skipWS()
		if w.pos >= len(w.b) || w.b[w.pos] != ':' {
			w.fail("expected ':'")
			return
		}
		w.pos++
		w.skipWS()
		w.value()
		w.path = w.path[:len(w.path)-1]
		w.keys = w.keys[:koff]
		if w.err != nil {
			return
		}
		w.skipWS()
		if w.pos >= len(w.b) {
			w.fail("unexpected end of object")
			return
		}
		switch w.b[w.pos] {
		case ',':
			w.pos++
		case '}':
			w.pos++
			// objectEnd sees the object's own path
			w.v.objectEnd(w)
			return
		default:
			w.fail("expected ',' or '}'")
			return
		}
	}
}

func (w *jsonWalker) array() {
	if len(w.path) >= maxDepth {
		w.fail("nesting too deep")
		return
	}
	w.pos++
	w.skipWS()
	if w.pos < len(w.b) && w.b[w.pos] == ']' {
		w.pos++
		return
	}
	w.path = append(w.path, pathSeg{idx: 0})
	d := len(w.path) - 1
	for w.err == nil {
		w.skipWS()
		w.value()
		if w.err != nil {
			return
		}
		w.skipWS()
		if w.pos >= len(w.b) {
			w.fail("unexpected end of array")
			return
		}
		switch w.b[w.pos] {
		case ',':
			w.pos++
			w.path[d].idx++
		case ']':
			w.pos++
			w.path = w.path[:d]
			return
		default:
			w.fail("expected ',' or ']'")
			return
		}
	}
}

// str reads a string at w.pos and returns the offsets of its contents and whether
// it holds an escape.
func (w *jsonWalker) str() (start, end int, esc bool) {
	w.pos++
	start = w.pos
	p := w.pos
	q := -1 // offset of the next '"' at or after p
	for {
		if q < p {
			k := bytes.IndexByte(w.b[p:], '"')
			if k < 0 {
				w.pos = len(w.b)
				w.fail("unterminated string")
				return
			}
			q = p + k
		}
		bs := bytes.IndexByte(w.b[p:q], '\\')
		if bs < 0 {
			end = q
			w.pos = q + 1
			return
		}
		esc = true
		p += bs + 1
		if p >= len(w.b) {
			w.pos = len(w.b)
			w.fail("unterminated string")
			return
		}
		switch w.b[p] {
		case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
			p++
		case 'u':
			if _, ok := hex4(w.b, p+1); !ok {
				w.pos = p
				w.fail("bad \\u escape")
				return
			}
			p += 5
		default:
			w.pos = p
			w.fail("bad escape")
			return
		}
	}
}

func (w *jsonWalker) number() {
	b := w.b
	p := w.pos
	if b[p] == '-' {
		p++
	}
	st := p
	for p < len(b) && isDigit(b[p]) {
		p++
	}
	if p == st || (b[st] == '0' && p-st > 1) {
		w.fail("bad number")
		return
	}
	if p < len(b) && b[p] == '.' {
		p++
		st = p
		for p < len(b) && isDigit(b[p]) {
			p++
		}
		if p == st {
			w.fail("bad number")
			return
		}
	}
	if p < len(b) && (b[p] == 'e' || b[p] == 'E') {
		p++
		if p < len(b) && (b[p] == '+' || b[p] == '-') {
			p++
		}
		st = p
		for p < len(b) && isDigit(b[p]) {
			p++
		}
		if p == st {
			w.fail("bad number")
			return
		}
	}
	w.pos = p
}

func (w *jsonWalker) literal() {
	for _, lit := range [...]string{"true", "false", "null"} {
		if bytes.HasPrefix(w.b[w.pos:], []byte(lit)) {
			w.pos += len(lit)
			return
		}
	}
	w.fail("unexpected character")
}

// appendUnquoted decodes the JSON string contents raw (no quotes) onto dst. Lone
// surrogates become U+FFFD; it reports false on a malformed escape.
func appendUnquoted(dst, raw []byte) ([]byte, bool) {
	return appendUnquotedLimit(dst, raw, -1)
}

// appendUnquotedLimit is appendUnquoted that stops once dst has grown by at least
// limit bytes (limit < 0: no limit).
func appendUnquotedLimit(dst, raw []byte, limit int) ([]byte, bool) {
	base := len(dst)
	for i := 0; i < len(raw); {
		if limit >= 0 && len(dst)-base >= limit {
			return dst, true
		}
		k := bytes.IndexByte(raw[i:], '\\')
		if k < 0 {
			k = len(raw) - i
			if limit >= 0 && k > limit-(len(dst)-base) {
				k = limit - (len(dst) - base)
			}
			return append(dst, raw[i:i+k]...), true
		}
		if limit >= 0 && k > limit-(len(dst)-base) {
			return append(dst, raw[i:i+limit-(len(dst)-base)]...), true
		}
		dst = append(dst, raw[i:i+k]...)
		i += k
		if i+1 >= len(raw) {
			return dst, false
		}
		c := raw[i+1]
		i += 2
		if d, ok := jsonscan.Escaped(c); ok {
			dst = append(dst, d)
			continue
		}
		switch c {
		case 'u':
			r, ok := hex4(raw, i)
			if !ok {
				return dst, false
			}
			i += 4
			if utf16.IsSurrogate(r) {
				if r < 0xDC00 && i+6 <= len(raw) && raw[i] == '\\' && raw[i+1] == 'u' {
					if r2, ok := hex4(raw, i+2); ok && r2 >= 0xDC00 && r2 <= 0xDFFF {
						r = utf16.DecodeRune(r, r2)
						i += 6
					} else {
						r = utf8.RuneError
					}
				} else {
					r = utf8.RuneError
				}
			}
			dst = utf8.AppendRune(dst, r)
		default:
			return dst, false
		}
	}
	return dst, true
}

func hex4(b []byte, i int) (rune, bool) {
	if i+4 > len(b) {
		return 0, false
	}
	var r rune
	for _, c := range b[i : i+4] {
		var v byte
		switch {
		case isDigit(c):
			v = c - '0'
		case c >= 'a' && c <= 'f':
			v = c - 'a' + 10
		case c >= 'A' && c <= 'F':
			v = c - 'A' + 10
		default:
			return 0, false
		}
		r = r<<4 | rune(v)
	}
	return r, true
}

// appendQuoted appends s as a JSON string with quotes. Control characters, '"' and
// '\' are escaped; everything else is copied as UTF-8.
func appendQuoted(dst []byte, s string) []byte {
	const hexd = "0123456789abcdef"
	dst = append(dst, '"')
	last := 0
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c >= 0x20 && c != '"' && c != '\\' {
			continue
		}
		dst = append(dst, s[last:i]...)
		switch c {
		case '"', '\\':
			dst = append(dst, '\\', c)
		case '\n':
			dst = append(dst, '\\', 'n')
		case '\r':
			dst = append(dst, '\\', 'r')
		case '\t':
			dst = append(dst, '\\', 't')
		default:
			dst = append(dst, '\\', 'u', '0', '0', hexd[c>>4], hexd[c&0xF])
		}
		last = i + 1
	}
	dst = append(dst, s[last:]...)
	return append(dst, '"')
}
