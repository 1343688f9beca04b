package gate

import (
	"strings"
	"unicode/utf8"

	"github.com/dop251/goja"
)

// ctx.removeLines(text, prefixes) (docs/policies.md#removelines): text without the
// lines that begin with one of prefixes, letters A–Z matching in either case. A line
// ends at "\n" and goes with it; blank lines the removal brings together collapse
// into one, and blank lines it leaves at the end are dropped.

const (
	maxLinePrefixes  = 64  // prefixes one call may pass
	maxLinePrefixLen = 256 // UTF-16 units per prefix
	// maxLineWork bounds text length × prefixes, since a native call cannot be
	// interrupted: matching compares at most that twice over (each line against each
	// prefix, up to its line break), well under a second at the bound.
	maxLineWork = 1 << 27
)

// linePrefix is one prefix in both encodings the texts come in.
type linePrefix struct {
	s string   // UTF-8, for texts read as Go strings
	u []uint16 // UTF-16 units, for texts read unit by unit
}

// lineText is a text read line by line; indexes are in the text's own units (bytes of
// a Go string, or UTF-16 units of a JS string).
type lineText interface {
	len() int
	lineEnd(from int) int // index of the next "\n" at or after from, or len()
	hasPrefix(at int, p *linePrefix) bool
	blank(from, to int) bool // only spaces, tabs and "\r" in [from, to)
}

// linePrefixes reads the prefixes argument of ctx.removeLines; anything but an array
// of at most maxLinePrefixes strings of 1 to maxLinePrefixLen units without "\n" is a
// TypeError.
func (v *vm) linePrefixes(val goja.Value) []linePrefix {
	const msg = "ctx.removeLines(text, prefixes): prefixes must be an array of at most 64 strings, each 1 to 256 characters long, without a line break"
	list := v.stringList(val, maxLinePrefixes, msg)
	out := make([]linePrefix, len(list))
	for i, p := range list {
		if n := p.Length(); n == 0 || n > maxLinePrefixLen {
			v.throwType(msg)
		}
		out[i] = newLinePrefix(p)
		if strings.IndexByte(out[i].s, '\n') >= 0 {
			v.throwType(msg)
		}
	}
	return out
}

// newLinePrefix holds p in both encodings. String turns a lone surrogate into U+FFFD,
// which no text read as UTF-8 holds (removeLines reads those unit by unit), so the
// UTF-8 form never matches where the units would not.
func newLinePrefix(p goja.String) linePrefix {
	u := make([]uint16, p.Length())
	for j := range u {
		u[j] = p.CharAt(j)
	}
	return linePrefix{s: p.String(), u: u}
}

// utf8Text is a JS string whose UTF-8 form converts back without loss.
type utf8Text string

func (t utf8Text) len() int { return len(t) }

func (t utf8Text) lineEnd(from int) int {
	if i := strings.IndexByte(string(t[from:]), '\n'); i >= 0 {
		return from + i
	}
	return len(t)
}

func (t utf8Text) hasPrefix(at int, p *linePrefix) bool {
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

// utf16Text is any other JS string, read through goja unit by unit.
type utf16Text struct{ s goja.String }

func (t utf16Text) len() int { return t.s.Length() }

func (t utf16Text) lineEnd(from int) int {
	n := t.s.Length()
	for i := from; i < n; i++ {
		if t.s.CharAt(i) == '\n' {
			return i
		}
	}
	return n
}

func (t utf16Text) hasPrefix(at int, p *linePrefix) bool {
	if t.s.Length()-at < len(p.u) {
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

// keepLines appends to spans the [start, end) pairs of t that ctx.removeLines keeps,
// adjacent lines merged into one pair, and returns them with the number of lines
// removed. Blank lines that follow a removed line, with only blank lines kept between
// them and the line before it (or the start of the text), are removed too; so are the
// blank lines kept at the end when a line was removed after the last other line.
func keepLines[T lineText](t T, prefixes []linePrefix, spans []int) ([]int, int) {
	n := t.len()
	removed := 0
	afterRemoved := false // a line was removed since the last kept line that is not blank
	lastBlank := true     // the last kept line is blank, or none is kept yet
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
				full, fullEnd = len(spans), next
			}
		}
		at = next
	}
	if afterRemoved && removed > 0 {
		// drop the blank lines kept after the last full line
		if spans = spans[:full]; full > 0 {
			spans[full-1] = fullEnd
		}
	}
	return spans, removed
}

// removeLines runs ctx.removeLines on a JS string: the same value when no line is
// removed, else the new string.
func removeLines(s goja.String, prefixes []linePrefix) (goja.Value, int) {
	var buf [16]int
	var b goja.StringBuilder
	if str := s.String(); len(str) == s.Length() || !strings.ContainsRune(str, utf8.RuneError) {
		// ASCII, or no lone surrogate (String turns one into U+FFFD): work on bytes
		kept, n := keepLines(utf8Text(str), prefixes, buf[:0])
		if n == 0 {
			return s, 0
		}
		b.Grow(spanLen(kept))
		for i := 0; i < len(kept); i += 2 {
			b.WriteUTF8String(str[kept[i]:kept[i+1]])
		}
		return b.String(), n
	}
	kept, n := keepLines(utf16Text{s}, prefixes, buf[:0])
	if n == 0 {
		return s, 0
	}
	b.Grow(spanLen(kept))
	for i := 0; i < len(kept); i += 2 {
		b.WriteSubstring(s, kept[i], kept[i+1])
	}
	return b.String(), n
}

func spanLen(spans []int) int {
	total := 0
	for i := 0; i < len(spans); i += 2 {
		total += spans[i+1] - spans[i]
	}
	return total
}
