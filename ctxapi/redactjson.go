package ctxapi

import (
	"encoding/binary"
	"encoding/json"
	"errors"
	"sync"
	"unicode/utf8"

	"github.com/mcpgate/mcpgate/internal/jsonscan"
)

// ErrBadJSON is returned by RewriteStrings for input that is not well-formed JSON.
var ErrBadJSON = errors.New("ctxapi: malformed JSON")

// ContentSkipKeys are the keys whose string values RewriteStrings leaves alone inside
// an MCP content array: block types, MIME types, and base64 image, audio and blob data.
var ContentSkipKeys = map[string]bool{"type": true, "mimeType": true, "data": true, "blob": true}

// RewriteStrings streams over raw JSON and passes every string value (never an object
// key) whose member key is not in skip to fn; fn returns the new string and how many
// replacements it made. It returns the rewritten JSON (raw itself when nothing
// changed) and the total count. Array elements have the key "". It never decodes the
// document into Go values, so unchanged input costs one pass and no allocation.
func RewriteStrings(raw []byte, skip map[string]bool, fn func(string) (string, int)) ([]byte, int, error) {
	return RewriteStringsAppend(raw, skip, func(dst []byte, s string) ([]byte, int) {
		ns, k := fn(s)
		if k == 0 || ns == s {
			return dst, 0
		}
		return append(dst, ns...), k
	})
}

// RewriteStringsAppend is RewriteStrings for an fn that appends the new text of s to
// dst (a buffer RewriteStringsAppend keeps and reuses) and returns it with the number
// of replacements; 0, or text equal to s, leaves s as it was. The new text is quoted
// into the output before fn is called again.
func RewriteStringsAppend(raw []byte, skip map[string]bool, fn func(dst []byte, s string) ([]byte, int)) ([]byte, int, error) {
	type frame struct {
		obj       bool
		expectKey bool
		key       string
	}
	var (
		stack   []frame
		out     []byte // nil until the first change
		scratch []byte // fn's buffer, from scratchPool once a string is handed to fn
		last    int    // raw[last:] not yet copied into out
		total   int
	)
	defer func() {
		if cap(scratch) > 0 && cap(scratch) <= maxScratch {
			scratch = scratch[:0]
			clear(scratch[:cap(scratch)]) // no call's text waits in the pool
			scratchPool.Put(&scratch)
		}
	}()
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
			var s string
			if escaped {
				if err := json.Unmarshal(tok, &s); err != nil {
					return nil, 0, ErrBadJSON
				}
			} else {
				s = string(tok[1 : len(tok)-1])
			}
			i = end
			if len(stack) > 0 && stack[len(stack)-1].obj && stack[len(stack)-1].expectKey {
				stack[len(stack)-1].key = s
				stack[len(stack)-1].expectKey = false
				continue
			}
			key := ""
			if len(stack) > 0 && stack[len(stack)-1].obj {
				key = stack[len(stack)-1].key
			}
			if skip[key] {
				continue
			}
			if scratch == nil {
				scratch = *scratchPool.Get().(*[]byte)
			}
			ns, k := fn(scratch[:0], s)
			scratch = ns
			if k == 0 || string(ns) == s {
				continue
			}
			total += k
			if out == nil {
				out = make([]byte, 0, len(raw)+64)
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

// scratchPool holds the buffers RewriteStringsAppend hands to fn, so that a redaction
// does not allocate its new text each time; buffers past maxScratch are dropped.
var scratchPool = sync.Pool{New: func() any { return new([]byte) }}

const maxScratch = 256 << 10

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
		if i+8 <= len(s) && plain8(string(s[i:i+8])) { // no allocation: 8 bytes, not kept
			i += 8
			continue
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

// plain8 reports whether the 8 bytes of s are ASCII that JSON keeps as is (no control
// character, quote or backslash), tested at once (SWAR).
func plain8(s string) bool {
	const lo, hi = 0x0101010101010101, 0x8080808080808080
	x := binary.LittleEndian.Uint64([]byte(s)) // no allocation: the conversion does not escape
	zero := func(y uint64) uint64 { return (y - lo) &^ y & hi }
	return (x&hi)|((x-0x20*lo)&^x&hi)|zero(x^('"'*lo))|zero(x^('\\'*lo)) == 0
}

func isDelim(c byte) bool {
	switch c {
	case ' ', '\t', '\r', '\n', ',', ':', ']', '}', '[', '{', '"':
		return true
	}
	return false
}
