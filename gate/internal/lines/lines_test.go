package lines

import (
	"runtime"
	"strings"
	"testing"
	"unicode"
	"unicode/utf16"
	"unicode/utf8"

	"github.com/dop251/goja"

	"github.com/mcpgate/mcpgate/gate/internal/sandbox"
)

// loneMark stands for the lone surrogate U+D800 in test strings (a private-use
// character: a test can write both a lone surrogate and a real U+FFFD).
const loneMark = '\uE000'

// jsString makes the goja string of the UTF-16 units of s, with U+D800 for loneMark.
func jsString(s string) goja.String {
	var u []uint16
	for _, r := range s {
		if r == loneMark {
			u = append(u, 0xD800)
			continue
		}
		u = utf16.AppendRune(u, r)
	}
	return goja.StringFromUTF16(u)
}

// toPrefixes builds prefixes as linePrefixes does, without a runtime.
func toPrefixes(ps []string) []Prefix {
	out := make([]Prefix, len(ps))
	for i, p := range ps {
		out[i] = NewPrefix(jsString(p))
	}
	return out
}

// linesRT makes the results of Remove in tests.
var linesRT = goja.New()

// removeLinesBoth runs the text through Remove (which picks its path), as a
// string imported from Go when that holds it (the UTF-8 path unless a prefix is
// matched by units), and through the UTF-16 path alone, and fails unless all agree.
func removeLinesBoth(t testing.TB, text goja.String, prefixes []Prefix) (string, int) {
	t.Helper()
	out16, n16 := removeLineUnits(text, prefixes)
	want := out16.(goja.String)
	if !sandbox.HeldAsGoString(want) && !strings.ContainsFunc(want.String(), func(r rune) bool { return r >= utf8.RuneSelf }) {
		t.Fatalf("%q: an ASCII result held as UTF-16 (=== would fail against a literal)", want.String())
	}
	texts := []goja.String{text}
	if imported := linesRT.ToValue(text.String()).(goja.String); imported.SameAs(text) {
		texts = append(texts, imported)
	}
	var got goja.String
	for _, in := range texts {
		out, n := Remove(linesRT, in, prefixes)
		got = out.(goja.String)
		if n != n16 || !got.SameAs(want) {
			t.Fatalf("%q (%T): Remove gave %q (%d), the UTF-16 path %q (%d)", text.String(), in, got.String(), n, want.String(), n16)
		}
		if n == 0 && !got.SameAs(in) {
			t.Fatalf("%q: nothing removed, but a new value %q", text.String(), got.String())
		}
	}
	return quoteUnits(got), n16
}

// quoteUnits is the inverse of jsString.
func quoteUnits(s goja.String) string {
	var b strings.Builder
	for i := 0; i < s.Length(); i++ {
		c := s.CharAt(i)
		switch {
		case utf16.IsSurrogate(rune(c)) && i+1 < s.Length() && c < 0xDC00 && s.CharAt(i+1) >= 0xDC00 && s.CharAt(i+1) <= 0xDFFF:
			b.WriteRune(utf16.DecodeRune(rune(c), rune(s.CharAt(i+1))))
			i++
		case utf16.IsSurrogate(rune(c)):
			b.WriteRune(loneMark)
		default:
			b.WriteRune(rune(c))
		}
	}
	return b.String()
}

func TestRemoveLines(t *testing.T) {
	co := []string{"co-authored-by:"}
	for _, tc := range []struct {
		name, text string
		prefixes   []string
		want       string
		removed    int
	}{
		{"nothing to remove", "Fix.\n\nBody.\n", co, "Fix.\n\nBody.\n", 0},
		{"empty text", "", co, "", 0},
		{"trailer after a blank line", "Fixes the bug.\n\nCo-Authored-By: Bot <bot@example.com>\n", co, "Fixes the bug.\n", 1},
		{"two trailers", "Fix.\n\nx\nCo-Authored-By: A <a@x>\nCo-Authored-By: B <b@x>\n", co, "Fix.\n\nx\n", 2},
		{"any case", "a\nCO-AUTHORED-BY: x\nco-authored-by: y\nCo-Authored-by: z\nb", co, "a\nb", 3},
		{"only at the start of a line", "say Co-Authored-By: x\n Co-Authored-By: y\n", co, "say Co-Authored-By: x\n Co-Authored-By: y\n", 0},
		{"the whole prefix", "Co-Authored-By x\nCo-Authored-\n", co, "Co-Authored-By x\nCo-Authored-\n", 0},
		{"trailer last, without a break", "Fix.\n\nCo-Authored-By: x", co, "Fix.\n", 1},
		{"a prefix that is the whole last line", "a\nCo-Authored-By:", co, "a\n", 1},
		{"last line without a break", "a\nCo-Authored-By: x", co, "a\n", 1},
		{"every line", "Co-Authored-By: x\nco-authored-by: y\n", co, "", 2},
		{"every line but blank ones", "\n\nCo-Authored-By: x\n\n", co, "", 1},
		{"between paragraphs", "a\n\nCo-Authored-By: x\n\nb\n", co, "a\n\nb\n", 1},
		{"between paragraphs, many blanks", "a\n\n\nCo-Authored-By: x\n\n\n\nb\n", co, "a\n\n\nb\n", 1},
		{"right after a line", "a\nCo-Authored-By: x\n\nb\n", co, "a\n\nb\n", 1},
		{"at the start", "Co-Authored-By: x\n\n\nb\n", co, "b\n", 1},
		{"blank lines elsewhere stay", "a\n\n\n\nb\nCo-Authored-By: x\n", co, "a\n\n\n\nb\n", 1},
		{"a final blank line stays when nothing follows it was removed", "Co-Authored-By: x\nb\n\n", co, "b\n\n", 1},
		{"CRLF", "a\r\n\r\nCo-Authored-By: x\r\n\r\nb\r\n", co, "a\r\n\r\nb\r\n", 1},
		{"CRLF at the end", "a\r\n\r\nCo-Authored-By: x\r\n", co, "a\r\n", 1},
		{"spaces and tabs are blank", "a\n \t\nCo-Authored-By: x\n\t\nb", co, "a\n \t\nb", 1},
		{"several prefixes", "a\nSigned-off-by: x\nCo-Authored-By: y\nReviewed-by: z\n", []string{"signed-off-by:", "co-authored-by:"}, "a\nReviewed-by: z\n", 2},
		{"no prefixes", "Co-Authored-By: x\n", nil, "Co-Authored-By: x\n", 0},
		{"non-ASCII text", "Gérard\n\nCo-Authored-By: Zoë <z@x>\n", co, "Gérard\n", 1},
		{"non-ASCII prefix: only A–Z fold", "généré par: x\nGÉNÉRÉ PAR: y\nGénéré par: z\n", []string{"généré par:"}, "GÉNÉRÉ PAR: y\n", 2},
		{"emoji", "🤖 Generated\nok 🙂\n", []string{"🤖"}, "ok 🙂\n", 1},
		{"lone surrogate kept", "a\uE000b\nCo-Authored-By: x\n", co, "a\uE000b\n", 1},
		{"U+FFFD kept", "a\uFFFDb\nCo-Authored-By: x\n", co, "a\uFFFDb\n", 1},
		{"lone surrogate prefix", "\uE000x\n\uFFFDy\nz\n", []string{"\uE000"}, "\uFFFDy\nz\n", 1},
		{"lone surrogate prefix, text with U+FFFD", "\uFFFDy\nz\n", []string{"\uE000"}, "\uFFFDy\nz\n", 0},
		{"U+FFFD prefix", "\uE000x\n\uFFFDy\nz\n", []string{"\uFFFD"}, "\uE000x\nz\n", 1},
		// U+10000 is the pair D800 DC00: a prefix matches unit by unit, as startsWith does
		{"lone surrogate prefix, half a pair", "\U00010000x\ny\n", []string{"\uE000"}, "y\n", 1},
		{"only A–Z fold, not their neighbours", "@a\n[a\n`a\n{a\nZA\n", []string{"`", "{", "za"}, "@a\n[a\n", 3},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, n := removeLinesBoth(t, jsString(tc.text), toPrefixes(tc.prefixes))
			if got != tc.want || n != tc.removed {
				t.Fatalf("got %q (%d removed), want %q (%d)", got, n, tc.want, tc.removed)
			}
		})
	}
}

// TestRemoveLinesMemory: a call allocates about its result, not a record per line
// nor a UTF-8 copy of a text held as UTF-16 (a native call cannot be stopped, and
// the heap budget is only checked after it).
func TestRemoveLinesMemory(t *testing.T) {
	const lines = 1 << 18
	rt := goja.New()
	co := toPrefixes([]string{"co-authored-by:", "b"})
	for _, tc := range []struct {
		name    string
		text    goja.String
		removed int
	}{
		{"ASCII", jsString(strings.Repeat("x\nb\n", lines)), lines},
		{"imported from Go", rt.ToValue(strings.Repeat("é\nb\n", lines)).(goja.String), lines},
		{"UTF-16", jsString(strings.Repeat("é\nb\n", lines)), lines},
		{"lone surrogate", jsString("\uE000" + strings.Repeat("x\nb\n", lines)), lines},
		{"nothing removed", jsString(strings.Repeat("é\nx\n", lines)), 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.text.Length() // a string imported from Go is scanned on first use
			var before, after runtime.MemStats
			runtime.ReadMemStats(&before)
			_, n := Remove(linesRT, tc.text, co)
			runtime.ReadMemStats(&after)
			if n != tc.removed {
				t.Fatalf("%d removed, want %d", n, tc.removed)
			}
			if got, limit := after.TotalAlloc-before.TotalAlloc, uint64(4*tc.text.Length()+1<<16); got > limit {
				t.Errorf("allocated %d bytes for %d units, want at most %d", got, tc.text.Length(), limit)
			}
		})
	}
}

// referenceRemoveLines is ctx.removeLines said another way, over UTF-16 units: the
// text is cut into lines (each with its "\n"); between two full lines (not blank, not
// removed), or the start or end of the text, lies a run of blank and removed lines. A
// run without a removed line stays. A run with one keeps the blank lines before its
// first removed line, or, when there are none and a full line precedes it, the first
// blank line after; at the end of the text it keeps nothing.
func referenceRemoveLines(text []uint16, prefixes [][]uint16) ([]uint16, int) {
	var lines [][]uint16
	for start := 0; start < len(text); {
		end := start
		for end < len(text) && text[end] != '\n' {
			end++
		}
		lines = append(lines, text[start:min(end+1, len(text))])
		start = end + 1
	}
	fold := func(c uint16) uint16 { // only ASCII folds, and of it only A–Z
		if c < 0x80 {
			return uint16(unicode.ToLower(rune(c)))
		}
		return c
	}
	kind := func(l []uint16) byte { // 'r'emoved, 'b'lank, 'f'ull
		for _, p := range prefixes {
			if len(l) >= len(p) {
				match := true
				for i, c := range p {
					if fold(l[i]) != fold(c) {
						match = false
						break
					}
				}
				if match {
					return 'r'
				}
			}
		}
		for _, c := range l {
			if c != ' ' && c != '\t' && c != '\r' && c != '\n' {
				return 'f'
			}
		}
		return 'b'
	}
	var out []uint16
	removed := 0
	for i := 0; i < len(lines); {
		if kind(lines[i]) == 'f' {
			out = append(out, lines[i]...)
			i++
			continue
		}
		j := i
		for j < len(lines) && kind(lines[j]) != 'f' {
			j++
		}
		run := lines[i:j]
		first := -1
		for k, l := range run {
			if kind(l) == 'r' {
				removed++
				if first < 0 {
					first = k
				}
			}
		}
		switch {
		case first < 0:
			for _, l := range run {
				out = append(out, l...)
			}
		case j == len(lines):
			// the end of the text: nothing
		case first > 0:
			for _, l := range run[:first] {
				out = append(out, l...)
			}
		case i > 0:
			for _, l := range run {
				if kind(l) == 'b' {
					out = append(out, l...)
					break
				}
			}
		}
		i = j
	}
	if removed == 0 {
		return text, 0
	}
	return out, removed
}

// FuzzRemoveLines checks ctx.removeLines against referenceRemoveLines, and its two
// paths against each other (removeLinesBoth). With surrogate's low bit a lone
// surrogate goes into the text (high at odd places, low at even ones); a prefix ending
// in "^" ends in a lone high surrogate instead.
func FuzzRemoveLines(f *testing.F) {
	f.Add("Fix.\n\nCo-Authored-By: a\nco-authored-by: b\n", "co-authored-by:", byte(0))
	f.Add("a\r\n\r\nX: 1\r\n\r\n\r\nb", "x:|y", byte(3))
	f.Add("\n \n\tX\nX\n\n", "x", byte(7))
	f.Add("é\nÉ\n🙂\n", "é|🙂", byte(5))
	f.Add("🙂x\n\uFFFD\n", "^|x", byte(0))
	f.Add("🙂x\n\uFFFD\n", "^", byte(3))
	f.Fuzz(func(t *testing.T, text, prefixArg string, surrogate byte) {
		u := utf16.Encode([]rune(text))
		if surrogate&1 == 1 && len(u) > 0 {
			i := int(surrogate>>1) % len(u)
			lone := uint16(0xDC00)
			if i%2 == 1 {
				lone = 0xD83D
			}
			u = append(u[:i:i], append([]uint16{lone}, u[i:]...)...)
		}
		var ps [][]uint16
		var prefixes []Prefix
		for _, p := range strings.SplitN(strings.ReplaceAll(prefixArg, "\n", ""), "|", 4) { // linePrefixes refuses "\n"
			if p != "" {
				pu := utf16.Encode([]rune(p))
				if pu[len(pu)-1] == '^' {
					pu[len(pu)-1] = 0xD83D
				}
				ps = append(ps, pu)
				prefixes = append(prefixes, NewPrefix(goja.StringFromUTF16(pu)))
			}
		}
		js := goja.StringFromUTF16(u)
		got, n := Remove(linesRT, js, prefixes)
		removeLinesBoth(t, js, prefixes)
		want, wantN := referenceRemoveLines(u, ps)
		if n != wantN || !got.(goja.String).SameAs(goja.StringFromUTF16(want)) {
			t.Fatalf("%q %q: got %q (%d), reference %q (%d)", text, prefixArg, got.String(), n,
				goja.StringFromUTF16(want).String(), wantN)
		}
	})
}
