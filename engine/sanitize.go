package engine

import (
	"encoding/base64"
	"slices"
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

// Sanitize removes what the Warn path strips (docs/decisions.md#warn-sanitizing):
// ESC- and C1-introduced sequences (CSI, OSC, DCS,
// SOS, PM, APC, two-byte forms) and other C1 controls; bare CR (CRLF is kept); C0
// controls but tab and LF; DEL; zero-width characters (U+200B–U+200D, U+2060–U+2064,
// U+FEFF, U+180E); bidi controls (U+202A–U+202E, U+2066–U+2069); Tags outside an emoji
// flag tag sequence; and variation selectors that follow no base or another selector.
// The URL of a Markdown image or link, or of an HTML <img>, that carries data out
// (output_exfil_url) is defanged: "https://a.b/p?d=…" becomes "hxxps://a[.]b/p?d=…".
// Invalid UTF-8 becomes U+FFFD. It is idempotent and returns s itself when nothing
// changes.
func Sanitize(s string) string {
	i := firstDirty(s)
	if i == len(s) {
		return defang(s)
	}
	out := make([]byte, 0, len(s))
	out = append(out, s[:i]...)
	out = sanitizeAppend(out, s, i)
	return defang(unsafe.String(unsafe.SliceData(out), len(out)))
}

// isClean reports whether Sanitize would return s unchanged.
func isClean(s string) bool { return firstDirty(s) == len(s) && len(exfilURLs(s, nil)) == 0 }

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
			j := tagRunEnd(s, i)
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
		case invZW, invBidi, invOther:
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
			j := tagRunEnd(s, i)
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

// SanitizeResult applies Sanitize to every string of an MCP CallToolResult that
// AnalyzeResult scans, and returns the rewritten JSON: content[].text, resource text,
// resource_link name, title, description and uri, annotations, item-level and
// result-level _meta, the strings of unknown content types and of unknown members,
// every string value and member name of structuredContent (and of the other free-form
// objects), and text blobs (content[].blob or resource.blob whose mimeType is text/*,
// JSON, XML, YAML or JavaScript), which are base64-decoded, sanitized and re-encoded
// with the blob's padding style. It never alters image or audio data, non-text blobs,
// type, mimeType, isError or the member names of the result, its content items and
// resources. Every other byte (member order, whitespace, numbers) is copied as is;
// when nothing changes the input slice itself is returned. It errors (wrapping
// ErrUndecodable) when result is not a JSON object. Unlike analysis it has no scan
// cap: every byte is cleaned. It is idempotent, and re-analysing its output finds
// nothing from the terminal_escape and hidden_text families.
func SanitizeResult(result []byte) ([]byte, error) {
	i := 0
	for i < len(result) && (result[i] == ' ' || result[i] == '\t' || result[i] == '\n' || result[i] == '\r') {
		i++
	}
	if i >= len(result) || result[i] != '{' {
		return nil, errNotObject()
	}
	return sanitizeDoc(result, false)
}

// SanitizeJSON applies Sanitize to every string of any JSON value — member names and
// string values at any depth — and returns the rewritten JSON. It is meant for
// free-form values such as a JSON-RPC error's data. Bytes outside the rewritten
// strings are copied as is, and when nothing changes v itself is returned. It errors
// (wrapping ErrUndecodable) when v is not one valid JSON value. Like SanitizeResult it
// has no cap and is idempotent.
func SanitizeJSON(v []byte) ([]byte, error) {
	return sanitizeDoc(v, true)
}

func sanitizeDoc(doc []byte, all bool) ([]byte, error) {
	sv := sanitizeVisitor{src: doc, all: all}
	var w jsonWalker
	w.reset(doc, &sv)
	if err := w.walk(); err != nil {
		return nil, err
	}
	if len(sv.edits) == 0 {
		return doc, nil
	}
	// edits are in document order but for blobs, which are decided when their object
	// ends; the edits never overlap
	slices.SortFunc(sv.edits, func(a, b sanitizeEdit) int { return a.start - b.start })
	out := make([]byte, 0, len(doc)+len(sv.arena)/4)
	copied := 0
	for _, e := range sv.edits {
		out = append(out, doc[copied:e.start]...)
		out = append(out, sv.arena[e.off:e.off+e.n]...)
		copied = e.end
	}
	return append(out, doc[copied:]...), nil
}

// sanitizeEdit replaces doc[start:end] (a JSON string with its quotes) with
// arena[off:off+n].
type sanitizeEdit struct {
	start, end int
	off, n     int
}

// sanitizeVisitor collects the rewrites of the strings SanitizeResult (or, with all,
// SanitizeJSON) cleans.
type sanitizeVisitor struct {
	src   []byte
	all   bool
	edits []sanitizeEdit
	arena []byte
	buf   []byte
	dec   []byte
	blobs blobTracker
}

func (v *sanitizeVisitor) objectEnd(w *jsonWalker) {
	if v.all {
		return
	}
	blobs, text := v.blobs.end(w.depth())
	if !text {
		return
	}
	for _, pb := range blobs {
		v.sanitizeBlob(pb)
	}
}

func (v *sanitizeVisitor) visitString(w *jsonWalker, raw []byte, start int, esc, isKey bool) {
	role := roleScan
	if !v.all {
		role = resultRole(w, isKey)
	}
	switch role {
	case roleScan:
	case roleBlob:
		v.blobs.blob(w, raw, start, esc)
		return
	case roleMime:
		v.buf = v.blobs.mime(w, raw, esc, v.buf)
		return
	default:
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
	if isClean(s) {
		return
	}
	off := len(v.arena)
	v.arena = appendQuoted(v.arena, Sanitize(s))
	v.edits = append(v.edits, sanitizeEdit{start: start - 1, end: start + len(raw) + 1, off: off, n: len(v.arena) - off})
}

// sanitizeBlob rewrites a text blob whose decoded text is not clean: decoded,
// sanitized and re-encoded with the same padding style.
func (v *sanitizeVisitor) sanitizeBlob(pb pendingBlob) {
	dec, scratch, padded, ok := decodeBlob(v.dec, v.buf, pb.raw, pb.esc)
	v.dec, v.buf = dec[:0], scratch
	if !ok {
		return
	}
	s := unsafe.String(unsafe.SliceData(dec), len(dec))
	if isClean(s) {
		return
	}
	clean := Sanitize(s)
	enc := base64.RawStdEncoding
	if padded {
		enc = base64.StdEncoding
	}
	off := len(v.arena)
	v.arena = append(v.arena, '"')
	v.arena = enc.AppendEncode(v.arena, []byte(clean))
	v.arena = append(v.arena, '"')
	v.edits = append(v.edits, sanitizeEdit{start: pb.start - 1, end: pb.start + len(pb.raw) + 1, off: off, n: len(v.arena) - off})
}

// tagRunEnd returns the end of the run of Unicode Tags (U+E0000–E007F) starting at s[i].
func tagRunEnd(s string, i int) int {
	for i < len(s) {
		r, sz := utf8.DecodeRuneInString(s[i:])
		if invClass(r) != invTag {
			break
		}
		i += sz
	}
	return i
}
