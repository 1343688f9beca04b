package engine

import (
	"unicode/utf8"
	"unsafe"
)

// needsSanitize marks ASCII bytes Sanitize must look at: C0 controls but tab and LF,
// CR (kept only before LF), DEL, and every non-ASCII byte (checked by decoding).
var needsSanitize = func() (t [256]bool) {
	for c := 0; c < 0x20; c++ {
		t[c] = c != '\t' && c != '\n'
	}
	t[0x7F] = true
	for c := 0x80; c < 0x100; c++ {
		t[c] = true
	}
	return
}()

// Sanitize removes what the Warn path strips (seed 000, "Warn behavior", extended
// by DECISIONS "Warn sanitizing"): ESC- and C1-introduced sequences (CSI, OSC, DCS,
// SOS, PM, APC, two-byte forms) and other C1 controls; bare CR (CRLF is kept); C0
// controls but tab and LF; DEL; zero-width characters (U+200B–U+200D, U+2060–U+2064,
// U+FEFF, U+180E); bidi controls (U+202A–U+202E, U+2066–U+2069); Tags outside an emoji
// flag tag sequence; and variation selectors that follow no base or another selector.
// Invalid UTF-8 becomes U+FFFD. It is idempotent and returns s itself when nothing
// changes.
func Sanitize(s string) string {
	i := firstDirty(s)
	if i == len(s) {
		return s
	}
	out := make([]byte, 0, len(s))
	out = append(out, s[:i]...)
	out = sanitizeAppend(out, s, i)
	return unsafe.String(unsafe.SliceData(out), len(out))
}

// firstDirty returns the offset of the first byte Sanitize would change, or len(s).
func firstDirty(s string) int {
	n := len(s)
	for i := 0; i < n; {
		if !needsSanitize[s[i]] {
			i++
			continue
		}
		c := s[i]
		if c == '\r' {
			if i+1 < n && s[i+1] == '\n' {
				i += 2
				continue
			}
			return i
		}
		if c < 0x80 {
			return i
		}
		r, sz := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && sz == 1 || r >= 0x80 && r <= 0x9F {
			return i
		}
		switch invClass(r) {
		case invNone:
		case invVS:
			prev, _ := utf8.DecodeLastRuneInString(s[:i])
			if i == 0 || !isBase(prev) {
				return i
			}
		case invTag:
			// a tag run is kept only as part of a valid flag; check from its start
			j := i
			for j < n {
				r2, sz2 := utf8.DecodeRuneInString(s[j:])
				if invClass(r2) != invTag {
					break
				}
				j += sz2
			}
			if !validTagSequence(s, i, j) {
				return i
			}
			i = j
			continue
		default:
			return i
		}
		i += sz
	}
	return n
}

// sanitizeAppend appends the sanitized form of s[i:] to out; out already holds the
// clean s[:i].
func sanitizeAppend(out []byte, s string, i int) []byte {
	n := len(s)
	for i < n {
		c := s[i]
		if c < 0x80 {
			switch {
			case c == 0x1B:
				e := parseEscape(s, i)
				i = max(e.end, i+1)
			case c == '\r':
				if i+1 < n && s[i+1] == '\n' {
					out = append(out, '\r', '\n')
					i += 2
				} else {
					i++
				}
			case needsSanitize[c]:
				i++
			default:
				out = append(out, c)
				i++
			}
			continue
		}
		if isC1Lead(s, i) {
			e := parseEscape(s, i)
			i = max(e.end, i+1)
			continue
		}
		r, sz := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && sz == 1 {
			out = append(out, "\uFFFD"...)
			i++
			continue
		}
		switch invClass(r) {
		case invZW, invBidi:
			i += sz
			continue
		case invVS:
			prev, _ := utf8.DecodeLastRune(out)
			if len(out) > 0 && isBase(prev) {
				out = append(out, s[i:i+sz]...)
			}
			i += sz
			continue
		case invTag:
			j := i
			for j < n {
				r2, sz2 := utf8.DecodeRuneInString(s[j:])
				if invClass(r2) != invTag {
					break
				}
				j += sz2
			}
			if prev, _ := utf8.DecodeLastRune(out); prev == 0x1F3F4 && validTagSequence(s, i, j) {
				out = append(out, s[i:j]...)
			}
			i = j
			continue
		}
		out = append(out, s[i:i+sz]...)
		i += sz
	}
	return out
}

// SanitizeResult applies Sanitize to content[].text, content[].resource.text and every
// string value of structuredContent, and returns the rewritten JSON. Every other byte
// (member order, unknown fields, image and audio data, whitespace) is copied as is;
// when nothing changes the input slice itself is returned. It errors (wrapping
// ErrUndecodable) when result is not a JSON object. Unlike analysis it has no scan
// cap: every byte is cleaned.
func SanitizeResult(result []byte) ([]byte, error) {
	i := 0
	for i < len(result) && (result[i] == ' ' || result[i] == '\t' || result[i] == '\n' || result[i] == '\r') {
		i++
	}
	if i >= len(result) || result[i] != '{' {
		return nil, errNotObject()
	}
	var sv sanitizeVisitor
	var w jsonWalker
	sv.src = result
	w.reset(result, &sv)
	if err := w.walk(); err != nil {
		return nil, err
	}
	if sv.out == nil {
		return result, nil
	}
	return append(sv.out, result[sv.copied:]...), nil
}

// sanitizeVisitor rewrites target strings, copying the bytes between them.
type sanitizeVisitor struct {
	src    []byte
	out    []byte
	copied int // src[:copied] is already in out
	buf    []byte
}

func (v *sanitizeVisitor) objectEnd(*jsonWalker) {}

func (v *sanitizeVisitor) visitString(w *jsonWalker, raw []byte, start int, esc, isKey bool) {
	if isKey || !sanitizeTarget(w) {
		return
	}
	text := raw
	if esc {
		var ok bool
		v.buf, ok = appendUnquoted(v.buf[:0], raw)
		if !ok {
			return
		}
		text = v.buf
	}
	s := unsafe.String(unsafe.SliceData(text), len(text))
	if firstDirty(s) == len(s) {
		return
	}
	clean := Sanitize(s)
	if v.out == nil {
		v.out = make([]byte, 0, len(v.src))
	}
	v.out = append(v.out, v.src[v.copied:start-1]...) // up to the opening quote
	v.out = appendQuoted(v.out, clean)
	v.copied = start + len(raw) + 1 // past the closing quote
}

// sanitizeTarget reports whether the current string is one SanitizeResult rewrites.
func sanitizeTarget(w *jsonWalker) bool {
	d := w.depth()
	switch {
	case d >= 1 && w.keyIs(0, "structuredContent"):
		return true
	case d == 3 && w.keyIs(0, "content") && w.keyIs(2, "text"):
		return true
	case d == 4 && w.keyIs(0, "content") && w.keyIs(2, "resource") && w.keyIs(3, "text"):
		return true
	}
	return false
}
