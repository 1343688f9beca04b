// Package costtest checks in ordinary tests that a scanner's cost grows linearly with
// its input: the same total bytes are scanned as many small inputs and as one large
// one, and the large one may not cost more than Bound times as much per byte. It
// compares the fastest of several alternating trials, so a busy machine slows both
// sides alike and a quadratic scanner (hundreds of times slower per byte at 1 MiB
// than at 4 KiB) still fails by a wide margin.
package costtest

import (
	"fmt"
	"runtime"
	"strings"
	"testing"
	"time"
)

// Bound is the largest accepted ratio of the large input's cost per byte to the
// small one's (docs/engine.md#linear-cost).
const Bound = 2.0

// Linear fails t when scan over big costs more than Bound times per byte what it
// costs over small. Each trial scans big once and small len(big)/len(small) times;
// the fastest of trials of each side is compared.
func Linear(t testing.TB, small, big []byte, scan func([]byte)) {
	t.Helper()
	reps := len(big) / len(small)
	if reps < 1 {
		t.Fatalf("costtest: big (%d B) is smaller than small (%d B)", len(big), len(small))
	}
	const trials = 7
	bestSmall, bestBig := time.Duration(1<<62), time.Duration(1<<62)
	for range trials {
		runtime.GC() // each side starts from a collected heap, not the other's garbage
		t0 := time.Now()
		for range reps {
			scan(small)
		}
		bestSmall = min(bestSmall, time.Since(t0))
		runtime.GC()
		t0 = time.Now()
		scan(big)
		bestBig = min(bestBig, time.Since(t0))
	}
	perSmall := float64(bestSmall) / float64(reps*len(small))
	perBig := float64(bestBig) / float64(len(big))
	if perBig > Bound*perSmall {
		t.Errorf("cost per byte grows with size: %.2f ns/B at %d B, %.2f ns/B at %d B (%.1f×, bound %.0f×)",
			perSmall, len(small), perBig, len(big), perBig/perSmall, Bound)
	}
}

// Fill returns open, then item formatted with 0, 1, 2, … (its one verb an int)
// joined by commas while the whole stays within n bytes, then close: a JSON list of
// about n bytes.
func Fill(n int, open, item, close string) string {
	var b strings.Builder
	b.WriteString(open)
	for i := 0; b.Len() < n-len(close)-len(item)-16; i++ {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, item, i)
	}
	b.WriteString(close)
	return b.String()
}
