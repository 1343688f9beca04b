package ctxapi

import (
	"errors"
	"math/bits"
	"slices"
	"sync"
	"unicode/utf16"
	"unicode/utf8"
	"unsafe"

	"github.com/mcpgate/mcpgate/internal/jsonscan"
)

// ErrBadJSON is returned by RewriteMembersAppend for input that is not well-formed JSON.
var ErrBadJSON = errors.New("ctxapi: malformed JSON")

// ContentSkipKeys are the keys whose string values RewriteMembersAppend leaves alone inside
// an MCP content array: block types, MIME types, and base64 image, audio and blob data.
var ContentSkipKeys = map[string]bool{"type": true, "mimeType": true, "data": true, "blob": true}

// RewriteMembersAppend streams over raw JSON and passes every string value (never an
// object key) whose member key is not in skip to fn, with the string's member name:
// the nearest one, as engine.(*Analyzer).AnalyzeResult reads it (an array element's is
// its array's member name; "" at the top level or in a top-level array; skip still
// looks at the string's own key, "" for an array element). fn appends the new text of
// s to dst (a buffer RewriteMembersAppend keeps and reuses) and returns it with the
// number of replacements; 0, or text equal to s, leaves s as it was. The new text is
// quoted into the output before fn is called again. It returns the rewritten JSON (raw
// itself when nothing changed) and the total count. It never decodes the document
// into Go values, so unchanged input costs one pass and no allocation. s and member
// share memory with raw or with a buffer reused for the next string: fn must not keep
// them (nor a substring) past its return, and neither fn nor anyone else may modify
// raw until RewriteMembersAppend returns.
func RewriteMembersAppend(raw []byte, skip map[string]bool, fn func(dst []byte, member, s string) ([]byte, int)) ([]byte, int, error) {
	type frame struct {
		obj       bool
		expectKey bool
		key       string
	}
	var (
		stackBuf [16]frame
		stack    = stackBuf[:0] // no allocation up to 16 levels
		out      []byte         // nil until the first change
		scratch  poolBuf        // fn's buffer
		decoded  poolBuf        // the current string value with its escapes decoded
		last     int            // raw[last:] not yet copied into out
		total    int
	)
	defer scratch.release()
	defer decoded.release()
	i := 0
	n := len(raw)
	for i < n {
		c := raw[i]
		switch c {
		case ' ', '\t', '\n', '\r', ',', ':':
			if c == ',' && len(stack) > 0 && stack[len(stack)-1].obj {
				stack[len(stack)-1].expectKey = true
			}
			i++
		case '{':
			stack = append(stack, frame{obj: true, expectKey: true})
			i++
		case '[':
			stack = append(stack, frame{})
			i++
		case '}', ']':
			if len(stack) == 0 || stack[len(stack)-1].obj != (c == '}') {
				return nil, 0, ErrBadJSON
			}
			stack = stack[:len(stack)-1]
			i++
		case '"':
			end, escaped := scanString(raw, i)
			if end < 0 {
				return nil, 0, ErrBadJSON
			}
			tok := raw[i:end]
			// s is a view, not a copy: of raw, or of decoded's buffer when tok holds an
			// escape. raw is only read here, fn's contract keeps it unchanged and s
			// unretained, and decoded is only rewritten by the next escaped string,
			// after fn has returned. A member key must outlive that, so a key with
			// an escape is copied. Nothing else keeps s past this iteration: gate's
			// fn, engine.(*Analyzer).AppendRedact, keeps offsets and static entity
			// names, never text of s.
			var s string
			isKey := len(stack) > 0 && stack[len(stack)-1].obj && stack[len(stack)-1].expectKey
			if escaped {
				// Room for the text at once (its escapes make it shorter, but for
				// invalid UTF-8), not grown by doubling from the pooled buffer.
				b, ok := appendUnquoted(slices.Grow(decoded.get(), len(tok)), tok)
				if !ok {
					return nil, 0, ErrBadJSON
				}
				decoded.b = b
				if isKey {
					s = string(b)
				} else if len(b) > 0 {
					s = unsafe.String(&b[0], len(b))
				}
			} else if len(tok) > 2 {
				s = unsafe.String(&tok[1], len(tok)-2)
			}
			i = end
			if isKey {
				stack[len(stack)-1].key = s
				stack[len(stack)-1].expectKey = false
				continue
			}
			key, member := "", ""
			if len(stack) > 0 && stack[len(stack)-1].obj {
				key = stack[len(stack)-1].key
			}
			if skip[key] {
				continue
			}
			for d := len(stack) - 1; d >= 0; d-- {
				if stack[d].obj {
					member = stack[d].key
					break
				}
			}
			ns, k := fn(scratch.get(), member, s)
			scratch.b = ns
			if k == 0 || string(ns) == s {
				continue
			}
			total += k
			// Room for the output up to here, the new text quoted with the escape
			// overhead s had in raw, and the rest of raw: exact when the new text
			// escapes like s did, so the common case allocates once and never grows.
			need := len(out) + (end - len(tok) - last) + len(ns) + (len(tok) - len(s)) + (n - end)
			if out == nil {
				out = make([]byte, 0, need+64) // make may skip zeroing fresh memory
			} else if need > cap(out) {
				out = slices.Grow(out, need+64-len(out)) // at least append's geometric growth
			}
			out = append(out, raw[last:end-len(tok)]...)
			out = appendJSONString(out, ns)
			last = end
		default:
			// literal or number: skip to the next delimiter
			j := i
			for j < n && !isDelim(raw[j]) {
				j++
			}
			if j == i {
				return nil, 0, ErrBadJSON
			}
			i = j
		}
	}
	if len(stack) != 0 {
		return nil, 0, ErrBadJSON
	}
	if out == nil {
		return raw, 0, nil
	}
	return append(out, raw[last:]...), total, nil
}

// scratchPool holds the buffers RewriteMembersAppend hands to fn and decodes escaped
// strings into, so that a redaction does not allocate its new text each time; buffers
// past maxScratch are dropped.
var scratchPool = sync.Pool{New: func() any { return new([]byte) }}

const maxScratch = 256 << 10

// poolBuf is one buffer from scratchPool, taken on first use.
type poolBuf struct {
	box *[]byte // scratchPool's box; nil until get
	b   []byte  // the buffer, possibly regrown since get
}

// get returns the buffer emptied.
func (p *poolBuf) get() []byte {
	if p.box == nil {
		p.box = scratchPool.Get().(*[]byte)
		p.b = *p.box
	}
	return p.b[:0]
}

// release returns the box to scratchPool (reusing it saves an allocation) and the
// buffer with it when small enough, cleared: no call's text waits in the pool. A
// buffer that was outgrown is no longer referenced once *box is overwritten.
func (p *poolBuf) release() {
	if p.box == nil {
		return
	}
	*p.box = nil
	if cap(p.b) <= maxScratch {
		clear(p.b[:cap(p.b)])
		*p.box = p.b[:0]
	}
	scratchPool.Put(p.box)
	*p = poolBuf{}
}

// appendUnquoted appends the text of the JSON string token tok (quotes included, its
// end found by scanString) to dst, as encoding/json decodes it: invalid UTF-8 bytes
// and lone surrogate escapes become U+FFFD; false for a control character, an
// unknown escape or a \u without four hex digits, which encoding/json rejects.
// engine's appendUnquoted shares the escape table but is lenient (raw bytes copied
// as they are, control characters kept) for its scanner; this one must match
// encoding/json byte for byte, so the two stay apart.
func appendUnquoted(dst, tok []byte) ([]byte, bool) {
	c := tok[1 : len(tok)-1]
	for i := 0; i < len(c); {
		// copy the run of bytes that need no decoding at once
		j := i
		for j+8 <= len(c) {
			m := special8(load8(c, j))
			if m != 0 {
				j += bits.TrailingZeros64(m) >> 3
				break
			}
			j += 8
		}
		for j < len(c) && c[j] >= 0x20 && c[j] < utf8.RuneSelf && c[j] != '\\' && c[j] != '"' {
			j++
		}
		dst = append(dst, c[i:j]...)
		if i = j; i == len(c) {
			break
		}
		switch b := c[i]; {
		case b >= utf8.RuneSelf:
			r, size := utf8.DecodeRune(c[i:])
			if r == utf8.RuneError && size == 1 {
				dst = utf8.AppendRune(dst, utf8.RuneError)
			} else {
				dst = append(dst, c[i:i+size]...)
			}
			i += size
		case b != '\\' || i+1 == len(c):
			return dst, false // a control character or '"'
		default:
			i += 2
			e := c[i-1]
			if d, ok := jsonscan.Escaped(e); ok {
				dst = append(dst, d)
				continue
			}
			switch e {
			case 'u':
				r := hex4(c, i)
				if r < 0 {
					return dst, false
				}
				i += 4
				if utf16.IsSurrogate(r) {
					// a pair decodes to one rune; otherwise this half alone is U+FFFD
					// and what follows is decoded on its own
					r2 := rune(-1)
					if i+1 < len(c) && c[i] == '\\' && c[i+1] == 'u' {
						r2 = hex4(c, i+2)
					}
					if r = utf16.DecodeRune(r, r2); r != utf8.RuneError {
						i += 6
					}
				}
				dst = utf8.AppendRune(dst, r)
			default:
				return dst, false
			}
		}
	}
	return dst, true
}

// hex4 is the value of the four hex digits at b[i:], or -1.
func hex4(b []byte, i int) rune {
	if i+4 > len(b) {
		return -1
	}
	var r rune
	for _, c := range b[i : i+4] {
		switch {
		case '0' <= c && c <= '9':
			c -= '0'
		case 'a' <= c && c <= 'f':
			c -= 'a' - 10
		case 'A' <= c && c <= 'F':
			c -= 'A' - 10
		default:
			return -1
		}
		r = r<<4 | rune(c)
	}
	return r
}

// scanString returns the offset just past the closing quote of the string starting at
// raw[i], and whether it holds an escape; -1 when unterminated.
func scanString(raw []byte, i int) (int, bool) { return jsonscan.String(raw, i) }

// appendJSONString appends s as a JSON string without HTML escaping; runs of bytes
// that need no escape are copied at once.
func appendJSONString[T string | []byte](dst []byte, s T) []byte {
	const hex = "0123456789abcdef"
	dst = append(dst, '"')
	start := 0
	for i := 0; i < len(s); {
		if i+8 <= len(s) {
			m := special8(load8(s, i))
			if m == 0 {
				i += 8
				continue
			}
			i += bits.TrailingZeros64(m) >> 3 // the first byte that is not plain ASCII
		}
		c := s[i]
		if c < utf8.RuneSelf {
			if c >= 0x20 && c != '"' && c != '\\' {
				i++
				continue
			}
			dst = append(dst, s[start:i]...)
			switch {
			case c == '"' || c == '\\':
				dst = append(dst, '\\', c)
			case c == '\n':
				dst = append(dst, '\\', 'n')
			case c == '\r':
				dst = append(dst, '\\', 'r')
			case c == '\t':
				dst = append(dst, '\\', 't')
			default:
				dst = append(dst, '\\', 'u', '0', '0', hex[c>>4], hex[c&0xf])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(string(s[i:min(i+utf8.UTFMax, len(s))]))
		switch {
		case r == utf8.RuneError && size == 1:
			dst = append(dst, s[start:i]...)
			dst = append(dst, `\ufffd`...)
			start = i + size
		case r == '\u2028' || r == '\u2029':
			dst = append(dst, s[start:i]...)
			dst = append(dst, '\\', 'u', '2', '0', '2', hex[r&0xf])
			start = i + size
		}
		i += size
	}
	dst = append(dst, s[start:]...)
	return append(dst, '"')
}

// load8 returns s[i:i+8] as a little-endian word; the compiler merges the byte
// loads into one (a string([]byte) conversion would call the runtime).
func load8[T string | []byte](s T, i int) uint64 {
	_ = s[i+7]
	return uint64(s[i]) | uint64(s[i+1])<<8 | uint64(s[i+2])<<16 | uint64(s[i+3])<<24 |
		uint64(s[i+4])<<32 | uint64(s[i+5])<<40 | uint64(s[i+6])<<48 | uint64(s[i+7])<<56
}

// special8 returns 0x80 in each byte of x (load8) that JSON does not keep as is
// (a control character, '"', '\\' or a byte >= 0x80), and possibly in bytes after
// such a byte; the lowest one set is always the first such byte (SWAR).
// It stops where decoding or encoding must look (non-ASCII included), which
// internal/jsonscan.String, a skipper that stops only at '"' and '\\', cannot.
func special8(x uint64) uint64 {
	const lo, hi = 0x0101010101010101, 0x8080808080808080
	// A byte's high bit ends up set in x (a byte >= 0x80), in x-0x20 (a byte < 0x20)
	// or in x^c - 1 (a byte equal to c). A borrow carries into the next byte only
	// out of a byte that set its bit, and x^c >= 0x81 only when x >= 0x80.
	return (x | (x - 0x20*lo) | ((x ^ '"'*lo) - lo) | ((x ^ '\\'*lo) - lo)) & hi
}

func isDelim(c byte) bool {
	switch c {
	case ' ', '\t', '\r', '\n', ',', ':', ']', '}', '[', '{', '"':
		return true
	}
	return false
}
