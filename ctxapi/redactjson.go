package ctxapi

import (
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"sync"
	"unicode/utf8"
	"unsafe"

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
		ns, k := fn(strings.Clone(s)) // fn may keep its string; s may share raw's memory
		if k == 0 || ns == s {
			return dst, 0
		}
		return append(dst, ns...), k
	})
}

// RewriteStringsAppend is RewriteStrings for an fn that appends the new text of s to
// dst (a buffer RewriteStringsAppend keeps and reuses) and returns it with the number
// of replacements; 0, or text equal to s, leaves s as it was. The new text is quoted
// into the output before fn is called again. s may share raw's memory: fn must not
// keep it (nor a substring) past its return, and neither fn nor anyone else may
// modify raw until RewriteStringsAppend returns.
func RewriteStringsAppend(raw []byte, skip map[string]bool, fn func(dst []byte, s string) ([]byte, int)) ([]byte, int, error) {
	type frame struct {
		obj       bool
		expectKey bool
		key       string
	}
	var (
		stackBuf [16]frame
		stack    = stackBuf[:0] // no allocation up to 16 levels
		out      []byte         // nil until the first change
		pooled   *[]byte        // scratchPool's box for scratch, once a string is handed to fn
		scratch  []byte         // fn's buffer
		last     int            // raw[last:] not yet copied into out
		total    int
	)
	defer func() {
		if pooled == nil {
			return
		}
		// The box goes back (reusing it saves an allocation), the buffer only when
		// small enough, and cleared: no call's text waits in the pool. A buffer fn
		// outgrew is no longer referenced once *pooled is overwritten.
		*pooled = nil
		if cap(scratch) <= maxScratch {
			clear(scratch[:cap(scratch)])
			*pooled = scratch[:0]
		}
		scratchPool.Put(pooled)
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
				var err error
				if s, err = unquote(tok); err != nil {
					return nil, 0, ErrBadJSON
				}
			} else if len(tok) > 2 {
				// A view of raw, not a copy: it is valid while raw is unchanged, which
				// holds until we return (raw is only read here, and fn's contract keeps
				// it unchanged and s unretained). s lives in the stack frame (a member
				// key, used for the skip lookup only) or is handed to fn; neither
				// outlives this call. gate's fn, engine.(*Analyzer).AppendRedact, keeps
				// offsets and static entity names, never text of s.
				s = unsafe.String(&tok[1], len(tok)-2)
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
			if pooled == nil {
				pooled = scratchPool.Get().(*[]byte)
				scratch = *pooled
			}
			ns, k := fn(scratch[:0], s)
			scratch = ns
			if k == 0 || string(ns) == s {
				continue
			}
			total += k
			// Room for the output up to here, the new text quoted with the escape
			// overhead s had in raw, and the rest of raw: exact when the new text
			// escapes like s did, so the common case allocates once and never grows.
			need := len(out) + (end - len(tok) - last) + len(ns) + (len(tok) - len(s)) + (n - end)
			if need > cap(out) {
				// rounded up to the allocation's size class; past the first
				// allocation, at least append's geometric growth
				out = slices.Grow(out, need+64-len(out))
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

// unquote decodes the JSON string token tok (quotes included) as encoding/json does.
// It is apart from the loop in RewriteStringsAppend so that the string it decodes
// into is the only one that moves to the heap.
func unquote(tok []byte) (string, error) {
	var s string
	err := json.Unmarshal(tok, &s)
	return s, err
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
		if i+8 <= len(s) && plain8(load8(s, i)) {
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

// load8 returns s[i:i+8] as a little-endian word; the compiler merges the byte
// loads into one (a string([]byte) conversion would call the runtime).
func load8[T string | []byte](s T, i int) uint64 {
	_ = s[i+7]
	return uint64(s[i]) | uint64(s[i+1])<<8 | uint64(s[i+2])<<16 | uint64(s[i+3])<<24 |
		uint64(s[i+4])<<32 | uint64(s[i+5])<<40 | uint64(s[i+6])<<48 | uint64(s[i+7])<<56
}

// plain8 reports whether the 8 bytes of x (load8) are ASCII that JSON keeps as is (no
// control character, quote or backslash), tested at once (SWAR).
func plain8(x uint64) bool {
	const lo, hi = 0x0101010101010101, 0x8080808080808080
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
