package jsonrpc

import (
	"fmt"
	"strings"
	"testing"

	"github.com/mcpgate/mcpgate/internal/costtest"
)

// Parse (the envelope read, the decode it may fall back to, and the one-reading
// check) costs the same per byte at 4 KiB and 1 MiB for each shape that makes it
// work hardest: escaped strings, objects past smallObject members (their names go
// into a map), many small objects (names compared pairwise), nesting, an
// escaped envelope name (which sends the envelope to json.Unmarshal) (docs/engine.md#linear-cost).
func TestParseLinear(t *testing.T) {
	response := func(result func(n int) string) func(int) []byte {
		return func(n int) []byte {
			return []byte(`{"jsonrpc":"2.0","id":1,"result":` + result(n) + `}`)
		}
	}
	// objects is an array of objects of item members (its %d the member's number),
	// 8,192 to an object: past smallObject, so their names are hashed, and a cost
	// quadratic in one object's names shows 25 times over against 4 KiB's one object
	// of a few hundred, while each map stays small enough for the CPU's cache (one
	// map of 75,000 names measures the memory hierarchy; BenchmarkParse/members-1MiB).
	objects := func(n int, item string) string {
		var b strings.Builder
		b.WriteString(`[{`)
		for i := 0; b.Len() < n-len(item)-16; i++ {
			switch {
			case i%8192 == 0 && i > 0:
				b.WriteString(`},{`)
			case i > 0:
				b.WriteByte(',')
			}
			fmt.Fprintf(&b, item, i)
		}
		b.WriteString(`}]`)
		return b.String()
	}
	for _, tc := range []struct {
		name  string
		shape func(n int) []byte
	}{
		{"escaped text", response(func(n int) string {
			return costtest.Fill(n, `{"content":[{"type":"text","text":"`, `%06d line of output with nothing in it, then a line feed\n`, `"}]}`)
		})},
		{"many members", response(func(n int) string { return objects(n, `"k%d":1`) })},
		{"small objects", response(func(n int) string {
			return costtest.Fill(n, `[`, `{"a%d":1,"b":2,"c":3,"d":4,"e":5,"f":6,"g":7,"h":8,"i":9,"j":0,"k":1,"l":2,"m":3,"n":4,"o":5}`, `]`)
		})},
		{"nesting", response(func(n int) string {
			return costtest.Fill(n, `[`, strings.Repeat(`[`, 60)+`%d`+strings.Repeat(`]`, 60), `]`)
		})},
		{"escaped envelope name", func(n int) []byte {
			return []byte(`{"jsonrpc":"2.0","id":1,"\u0072esult":` + objects(n, `"k%d":[1,"\n"]`) + `}`)
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			small, big := tc.shape(4<<10), tc.shape(1<<20)
			m, err := Parse(big)
			if err != nil || m.Kind != KindResponse {
				t.Fatalf("Parse(big) = %v, %v; want a response", m.Kind, err)
			}
			costtest.Linear(t, small, big, func(b []byte) { Parse(b) })
		})
	}
}
