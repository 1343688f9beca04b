// Package jsonscan holds the byte-level JSON skipping that mcpgate's layers share:
// finding where a string ends, how deep a document nests and which members an object
// holds, without decoding it.
// It does not validate: callers either validated the document already
// (httpfront's depth check) or deliberately read broken input (jsonrpc.PeekID, which
// fails the request a malformed line answers). The engine keeps its own validating
// walker (engine/json.go), which also tracks JSON Pointers and decodes escapes on the
// hot path; ctxapi.RewriteMembersAppend streams and rewrites (its decoder and encoder stop
// at non-ASCII bytes too); gate/internal/jsvalue validates each string as JSON.parse
// does while skipping it.
package jsonscan

import (
	"bytes"
	"encoding/json"
	"strings"
	"unicode/utf8"
)

// String returns the offset just past the closing quote of the JSON string whose
// opening quote is b[i], and whether the string holds a backslash escape; end is -1
// when the string does not end within b. Linear in the string's length: each quote
// and each backslash is found once with bytes.IndexByte (vectorised), so a 4 KiB
// text costs well under a microsecond and escapes add no rescans.
func String(b []byte, i int) (end int, escaped bool) {
	j := i + 1
	for j < len(b) {
		q := bytes.IndexByte(b[j:], '"')
		if q < 0 {
			if bytes.IndexByte(b[j:], '\\') >= 0 {
				escaped = true
			}
			return -1, escaped
		}
		q += j
		// Walk the escapes before the quote at q; the last one may escape q itself.
		k := j
		for {
			bs := bytes.IndexByte(b[k:q], '\\')
			if bs < 0 {
				return q + 1, escaped
			}
			escaped = true
			if k += bs + 2; k > q { // the backslash at q-1 escaped this quote
				break
			}
		}
		j = k
	}
	return -1, escaped
}

// Space returns the offset of the first byte at or after i that is not JSON white
// space (space, tab, LF, CR).
func Space(b []byte, i int) int {
	for i < len(b) && (b[i] == ' ' || b[i] == '\t' || b[i] == '\n' || b[i] == '\r') {
		i++
	}
	return i
}

// Deeper reports whether the arrays and objects of b nest more than max levels deep.
// Brackets inside strings do not count.
func Deeper(b []byte, max int) bool {
	depth := 0
	for i := 0; i < len(b); i++ {
		switch b[i] {
		case '"':
			end, _ := String(b, i)
			if end < 0 {
				return false
			}
			i = end - 1
		case '{', '[':
			if depth++; depth > max {
				return true
			}
		case '}', ']':
			depth--
		}
	}
	return false
}

// Escaped returns the byte a one-character JSON string escape \c stands for (RFC 8259
// section 7: " \ / b f n r t); false for anything else, \u included.
func Escaped(c byte) (byte, bool) {
	switch c {
	case '"', '\\', '/':
		return c, true
	case 'b':
		return '\b', true
	case 'f':
		return '\f', true
	case 'n':
		return '\n', true
	case 'r':
		return '\r', true
	case 't':
		return '\t', true
	}
	return 0, false
}

// MayHold reports whether the JSON text b may hold s in a member name or a string
// value once decoded: s stands in b literally, or b has an escape that can spell one
// of s's bytes (\u always; \/, \", \\, \b, \f, \n, \r, \t when s holds that byte). A
// false answer is exact (b cannot hold s), so a caller may skip decoding b; a true
// one means "decode and look" (docs/decisions.md#decoded-values). Decoding reads
// invalid UTF-8 as U+FFFD, so a non-ASCII s is also held by any b that is not UTF-8.
func MayHold(b []byte, s string) bool {
	if bytes.Contains(b, []byte(s)) {
		return true
	}
	for i := 0; i < len(s); i++ {
		if s[i] >= utf8.RuneSelf {
			if !utf8.Valid(b) {
				return true
			}
			break
		}
	}
	for i := bytes.IndexByte(b, '\\'); i >= 0 && i+1 < len(b); {
		c := b[i+1]
		if c == 'u' {
			return true
		}
		if e, ok := Escaped(c); ok && bytes.IndexByte([]byte(s), e) >= 0 {
			return true
		}
		j := bytes.IndexByte(b[i+2:], '\\')
		if j < 0 {
			break
		}
		i += 2 + j
	}
	return false
}

// Members calls each for every member of the JSON object b, in order: name is the
// member name as it stands (a JSON string with its quotes; see StringIs), value its
// value without surrounding white space. It reports whether b is an object whose
// members it followed to the closing brace. It does not validate: b must be valid
// JSON already (jsonrpc.Parse validated the message a result came in), and an answer
// over invalid JSON means nothing. Linear in len(b): strings are skipped with String,
// so reading one member of a result costs a fraction of decoding it.
func Members(b []byte, each func(name, value []byte)) bool {
	i := Space(b, 0)
	if i >= len(b) || b[i] != '{' {
		return false
	}
	if i = Space(b, i+1); i < len(b) && b[i] == '}' {
		return true
	}
	for {
		if i >= len(b) || b[i] != '"' {
			return false
		}
		end, _ := String(b, i)
		if end < 0 {
			return false
		}
		name := b[i:end]
		if i = Space(b, end); i >= len(b) || b[i] != ':' {
			return false
		}
		i = Space(b, i+1)
		vend := Value(b, i)
		if vend < 0 {
			return false
		}
		each(name, b[i:vend])
		if i = Space(b, vend); i >= len(b) {
			return false
		}
		switch b[i] {
		case ',':
			i = Space(b, i+1)
		case '}':
			return true
		default:
			return false
		}
	}
}

// Value returns the offset just past the JSON value that starts at b[i] (no white
// space before it), matching brackets without decoding, or -1 when it does not end
// within b. Like Members it does not validate.
func Value(b []byte, i int) int {
	if i >= len(b) {
		return -1
	}
	switch b[i] {
	case '"':
		end, _ := String(b, i)
		return end
	case '{', '[':
		depth := 0
		for j := i; j < len(b); j++ {
			switch b[j] {
			case '"':
				end, _ := String(b, j)
				if end < 0 {
					return -1
				}
				j = end - 1
			case '{', '[':
				depth++
			case '}', ']':
				if depth--; depth == 0 {
					return j + 1
				}
			}
		}
		return -1
	}
	j := i
	for j < len(b) && b[j] != ',' && b[j] != '}' && b[j] != ']' && b[j] != ' ' && b[j] != '\n' && b[j] != '\r' && b[j] != '\t' {
		j++
	}
	if j == i {
		return -1
	}
	return j
}

// StringIs reports whether raw is a JSON string (with its quotes) that decodes to s,
// as encoding/json decodes it: escapes read ("\u0074ask" is "task") and invalid
// UTF-8 read as U+FFFD. A string without escapes is compared in place.
func StringIs(raw []byte, s string) bool {
	if len(raw) < 2 || raw[0] != '"' {
		return false
	}
	if in := raw[1 : len(raw)-1]; bytes.IndexByte(in, '\\') < 0 && utf8.Valid(in) {
		return string(in) == s
	}
	var d string
	return json.Unmarshal(raw, &d) == nil && d == s
}

// StringFolds reports whether raw is a JSON string (with its quotes) that decodes to
// a string equal to s under Unicode simple case folding (strings.EqualFold): every
// name encoding/json matches to a struct field tagged s folds to s, so a false
// answer means such a field stays unset.
func StringFolds(raw []byte, s string) bool {
	if len(raw) < 2 || raw[0] != '"' {
		return false
	}
	if in := raw[1 : len(raw)-1]; bytes.IndexByte(in, '\\') < 0 && utf8.Valid(in) {
		return bytes.EqualFold(in, []byte(s))
	}
	var d string
	return json.Unmarshal(raw, &d) == nil && strings.EqualFold(d, s)
}
