package ctxapi

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/mcpgate/mcpgate/internal/costtest"
)

// RewriteMembersAppend costs the same per byte at 4 KiB and 1 MiB for each shape that
// makes it work hardest: many strings each rewritten, with escapes and without,
// escaped member names (each copied), nesting read through (docs/engine.md#linear-cost). One long
// string is not a shape here: at about 1 ns per byte its cost is the allocation of
// its buffers, which varies with the heap; TestStringLinear covers its scan.
func TestRewriteMembersLinear(t *testing.T) {
	fill := func(n int, open, item, close string) []byte { return []byte(costtest.Fill(n, open, item, close)) }
	// upper rewrites every 'q' to 'Q', counting one replacement per string with one.
	upper := func(dst []byte, _, s string) ([]byte, int) {
		if !strings.Contains(s, "q") {
			return dst, 0
		}
		return append(dst, strings.ReplaceAll(s, "q", "Q")...), 1
	}
	for _, tc := range []struct {
		name  string
		shape func(n int) []byte
	}{
		{"escaped strings", func(n int) []byte { return fill(n, `[`, `"line q %d\nof output\n"`, `]`) }},
		{"many strings", func(n int) []byte { return fill(n, `[`, `"q%d"`, `]`) }},
		{"escaped names", func(n int) []byte { return fill(n, `{`, `"k\n%d":"q"`, `}`) }},
		{"nesting", func(n int) []byte {
			// Nothing rewritten: at about 3 ns per byte, a rewritten output's
			// allocation (which varies with the heap) would be what is measured.
			return fill(n, `[`, strings.Repeat(`{"a":[`, 30)+`"n%d"`+strings.Repeat(`]}`, 30), `]`)
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			small, big := tc.shape(4<<10), tc.shape(1<<20)
			out, n, err := RewriteMembersAppend(big, ContentSkipKeys, upper)
			if err != nil || n == 0 && !bytes.Equal(out, big) || !json.Valid(out) || bytes.Contains(out, []byte("q")) {
				t.Fatalf("RewriteMembersAppend(big) = %d replacements, err %v, a 'q' left: %t", n, err, bytes.Contains(out, []byte("q")))
			}
			costtest.Linear(t, small, big, func(b []byte) { RewriteMembersAppend(b, ContentSkipKeys, upper) })
		})
	}
}
