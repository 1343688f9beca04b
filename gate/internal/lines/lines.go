// Package lines is ctx.removeLines's line filter over goja strings
// (docs/policies.md#removelines): one pass, read as UTF-8 when that is exact, else unit
// by unit, never decoded whole.
package lines

import (
	"slices"
	"strings"
	"unicode/utf16"
	"unicode/utf8"

	"github.com/dop251/goja"

	"github.com/mcpgate/mcpgate/gate/internal/sandbox"
)

// ctx.removeLines(text, prefixes): text without the
// lines that begin with one of prefixes, letters A–Z matching in either case. A line
// ends at "\n" and goes with it; of the blank lines right below removed lines, one
// stays after a line of text and none after blank lines or at the start, and blank
// lines a removal leaves at the end are dropped.

// Bounds a caller checks before Remove.
const (
	MaxPrefixes  = 64  // prefixes one call may pass
	MaxPrefixLen = 256 // UTF-16 units per prefix
	// MaxWork bounds text length × (prefixes + 1), since a native call cannot be
	// interrupted: each line costs a step and a try of each prefix, up to its line
	// break. At the bound a text of one-character lines took up to 0.4 s on either
	// path, on a busy 2-core machine (docs/policies.md#removelines).
	MaxWork = 1 << 26
)

// Prefix is one prefix in both encodings the texts come in.
type Prefix struct {
	s     string   // UTF-8, for texts read as Go strings
	u     []uint16 // UTF-16 units, for texts read unit by unit
	units bool     // p holds a lone surrogate: matched only unit by unit (see NewPrefix)
}

// lineText is a text read line by line; indexes are in the text's own units (bytes of
// a Go string, or UTF-16 units of a JS string).
type lineText interface {
	len() int
	lineEnd(from int) int // index of the next "\n" at or after from, or len()
	hasPrefix(at int, p *Prefix) bool
	blank(from, to int) bool // only spaces, tabs and "\r" in [from, to)
}

// NewPrefix holds p in both encodings. String turns a lone surrogate into U+FFFD,
// so such a prefix is matched unit by unit only (Remove reads the text by
// units), where a lone high surrogate at its end matches the first half of a pair, as
// startsWith does.
func NewPrefix(p goja.String) Prefix {
	u := make([]uint16, p.Length())
	for j := range u {
		u[j] = p.CharAt(j)
	}
	s := p.String()
	return Prefix{s: s, u: u, units: len(s) != len(u) && !exactUTF8(s, u)} // ASCII is exact
}

// utf8Text is a JS string held as a Go string (valid UTF-8) that is its exact text.
type utf8Text string

func (t utf8Text) len() int { return len(t) }

func (t utf8Text) lineEnd(from int) int {
	if i := strings.IndexByte(string(t[from:]), '\n'); i >= 0 {
		return from + i
	}
	return len(t)
}

func (t utf8Text) hasPrefix(at int, p *Prefix) bool {
	if len(t)-at < len(p.s) {
		return false
	}
	for i := 0; i < len(p.s); i++ {
		if foldASCII(uint16(t[at+i])) != foldASCII(uint16(p.s[i])) {
			return false
		}
	}
	return true
}

func (t utf8Text) blank(from, to int) bool {
	for _, c := range []byte(t[from:to]) {
		if c != ' ' && c != '\t' && c != '\r' {
			return false
		}
	}
	return true
}

// utf16Text is any other JS string, read through goja unit by unit; n is its length.
type utf16Text struct {
	s goja.String
	n int
}

func (t utf16Text) len() int { return t.n }

func (t utf16Text) lineEnd(from int) int {
	n := t.n
	for i := from; i < n; i++ {
		if t.s.CharAt(i) == '\n' {
			return i
		}
	}
	return n
}

func (t utf16Text) hasPrefix(at int, p *Prefix) bool {
	if t.n-at < len(p.u) {
		return false
	}
	for i, c := range p.u {
		if foldASCII(t.s.CharAt(at+i)) != foldASCII(c) {
			return false
		}
	}
	return true
}

func (t utf16Text) blank(from, to int) bool {
	for i := from; i < to; i++ {
		if c := t.s.CharAt(i); c != ' ' && c != '\t' && c != '\r' {
			return false
		}
	}
	return true
}

// foldASCII maps A–Z to a–z and leaves every other unit as it is.
func foldASCII(c uint16) uint16 {
	if 'A' <= c && c <= 'Z' {
		return c + 'a' - 'A'
	}
	return c
}

// keepLines passes to w the spans of t that ctx.removeLines keeps, adjacent lines in
// one span, and returns the number of lines removed; w gets nothing when that is 0.
// Blank lines that follow a removed line, with only blank lines kept between them and
// the line before it (or the start of the text), are removed too; so are the blank
// lines kept at the end when a line was removed after the last other line. Kept spans
// wait in a few ints until a line that is not blank is kept (before the first removal,
// one span), so the work is one pass and the memory does not grow with the text.
func keepLines[T lineText](t T, prefixes []Prefix, w *lineOut) int {
	n := t.len()
	removed := 0
	afterRemoved := false // a line was removed since the last kept line that is not blank
	lastBlank := true     // the last kept line is blank, or none is kept yet
	var buf [8]int
	spans := buf[:0]      // kept [start, end) pairs not yet passed to w
	full, fullEnd := 0, 0 // len(spans) and the end of the last kept line that is not blank
	for at := 0; at < n; {
		end := t.lineEnd(at)
		next := min(end+1, n)
		match := false
		for i := range prefixes {
			if t.hasPrefix(at, &prefixes[i]) {
				match = true
				break
			}
		}
		switch blank := t.blank(at, end); {
		case match:
			removed++
			afterRemoved = true
		case blank && afterRemoved && lastBlank:
			// a blank line the removal brought next to another (or to the start)
		default:
			if k := len(spans); k > 0 && spans[k-1] == at {
				spans[k-1] = next // the line follows the last one kept
			} else {
				spans = append(spans, at, next)
			}
			lastBlank = blank
			if !blank {
				afterRemoved = false
				if removed > 0 { // the end of the text can no longer drop these
					writeSpans(w, spans)
					spans = spans[:0]
				}
				full, fullEnd = len(spans), next
			}
		}
		at = next
	}
	if removed == 0 {
		return 0
	}
	if afterRemoved {
		// drop the blank lines kept after the last full line
		if spans = spans[:full]; full > 0 {
			spans[full-1] = fullEnd
		}
	}
	writeSpans(w, spans)
	return removed
}

func writeSpans(w *lineOut, spans []int) {
	for i := 0; i < len(spans); i += 2 {
		w.write(spans[i], spans[i+1])
	}
}

// Remove runs ctx.removeLines on a JS string: the same value when no line is
// removed, else the new string (rt makes it). A text held as a Go string (ASCII, or
// imported from Go) is read as one when that is its exact text (valid UTF-8) and no
// prefix needs matching by units; any other is read unit by unit, never decoded whole
// (String would decode a UTF-16 string into a new one, and lose lone surrogates).
func Remove(rt *goja.Runtime, s goja.String, prefixes []Prefix) (goja.Value, int) {
	if len(prefixes) == 0 {
		return s, 0
	}
	if sandbox.HeldAsGoString(s) && !slices.ContainsFunc(prefixes, func(p Prefix) bool { return p.units }) {
		if str := s.String(); len(str) == s.Length() || utf8.ValidString(str) {
			w := lineOut{s8: str}
			if len(str) == s.Length() {
				w.s16 = s // ASCII: its bytes are its units, and goja's builder keeps it so
			}
			if n := keepLines(utf8Text(str), prefixes, &w); n > 0 {
				if w.s16 != nil {
					return w.b16.String(), n
				}
				return rt.ToValue(w.b8.String()), n
			}
			return s, 0
		}
	}
	return removeLineUnits(s, prefixes)
}

// removeLineUnits is Remove reading s unit by unit.
func removeLineUnits(s goja.String, prefixes []Prefix) (goja.Value, int) {
	w := lineOut{s16: s}
	if n := keepLines(utf16Text{s, s.Length()}, prefixes, &w); n > 0 {
		return w.b16.String(), n
	}
	return s, 0
}

// lineOut collects the spans keepLines keeps: of s16 (read by units, or ASCII) into
// b16, else of s8 (a Go string) into b8. The first span reserves the rest of the text,
// which the result cannot exceed; b16 reserves it as ASCII and moves to UTF-16 at the
// first span that needs it, so a result without one is ASCII as goja expects.
type lineOut struct {
	s8      string
	s16     goja.String
	b8      strings.Builder
	b16     goja.StringBuilder
	started bool
}

func (w *lineOut) write(from, to int) {
	if w.s16 == nil {
		if !w.started {
			w.b8.Grow(len(w.s8) - from)
		}
		w.b8.WriteString(w.s8[from:to])
	} else {
		if !w.started {
			w.b16.Grow(w.s16.Length() - from)
		}
		w.b16.WriteSubstring(w.s16, from, to)
	}
	w.started = true
}

// exactUTF8 reports whether k, the UTF-8 that goja's String gives for the UTF-16 units
// u, is their exact text: false when u holds a lone surrogate (String writes U+FFFD).
func exactUTF8(k string, u []uint16) bool {
	return slices.Equal(utf16.Encode([]rune(k)), u)
}

// HasLineBreak reports whether p holds "\n" (ctx.removeLines refuses such a prefix).
func (p *Prefix) HasLineBreak() bool { return strings.IndexByte(p.s, '\n') >= 0 }
