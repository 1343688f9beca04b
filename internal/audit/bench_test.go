package audit

import (
	"context"
	"io"
	"log/slog"
	"path/filepath"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/mcpgate/mcpgate/vocab"
)

// BenchmarkEmitter measures the hot-path cost of one record: Emit, a channel send,
// whichever sink is behind it. The buffer holds b.N records so every Emit is a real
// send (not a drop); the drain runs after the timer stops. p50-ns is the median of
// per-call timings taken around Emit alone.
func BenchmarkEmitter(b *testing.B) {
	for _, sink := range []string{"stderr", "sqlite"} {
		b.Run(sink, func(b *testing.B) {
			var s Sink = NewJSONL(io.Discard)
			if sink == "sqlite" {
				db, err := OpenSQLite(filepath.Join(b.TempDir(), "a.db"))
				if err != nil {
					b.Fatal(err)
				}
				s = db
			}
			e := NewEmitter(slog.New(slog.DiscardHandler), b.N+1, s)
			r := rec(1, vocab.Redact, "customer_profile_get")
			lat := make([]time.Duration, b.N)
			b.ReportAllocs()
			b.ResetTimer()
			for i := range b.N {
				t0 := time.Now()
				e.Emit(r)
				lat[i] = time.Since(t0)
			}
			b.StopTimer()
			slices.Sort(lat)
			b.ReportMetric(float64(lat[len(lat)/2].Nanoseconds()), "p50-ns")
			if err := e.Close(context.Background()); err != nil {
				b.Fatal(err)
			}
			if st := e.Stats(); st.Dropped != 0 || st.Errors != 0 {
				b.Fatalf("stats %+v", st)
			}
		})
	}
}

// BenchmarkSQLiteWrite measures the sink side: records stored per second through
// batched transactions (off the hot path).
func BenchmarkSQLiteWrite(b *testing.B) {
	db, err := OpenSQLite(filepath.Join(b.TempDir(), "a.db"))
	if err != nil {
		b.Fatal(err)
	}
	defer db.Close()
	r := rec(1, vocab.Pass, "read_file")
	b.ReportAllocs()
	for b.Loop() {
		if err := db.Write(r); err != nil {
			b.Fatal(err)
		}
	}
	if err := db.Flush(); err != nil {
		b.Fatal(err)
	}
}

// BenchmarkSQLiteQuery1M fills a store with 1,000,000 records (setup, untimed) and
// times the console's query: the newest 100 with one status, plus the count tiles.
// The target is under 50 ms per query (reported, never asserted).
func BenchmarkSQLiteQuery1M(b *testing.B) {
	if testing.Short() {
		b.Skip("1M-record fill takes tens of seconds; run without -short (make bench)")
	}
	const total = 1_000_000
	db, err := OpenSQLite(filepath.Join(b.TempDir(), "a.db"))
	if err != nil {
		b.Fatal(err)
	}
	defer db.Close()
	db.batch.size = 20_000
	actions := []vocab.Action{vocab.Pass, vocab.Pass, vocab.Pass, vocab.Pass, vocab.Warn, vocab.Redact, vocab.Mask, vocab.Block}
	for i := range total {
		r := rec(i, actions[i%len(actions)], "tool_"+strconv.Itoa(i%50))
		r.TS = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC).Add(time.Duration(i) * time.Second).Format(TSLayout)
		if err := db.Write(r); err != nil {
			b.Fatal(err)
		}
	}
	if err := db.Flush(); err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	for _, tc := range []struct {
		name string
		f    Filter
	}{
		{"status=redact", Filter{Status: vocab.Redact, Limit: 100}},
		{"status=block,tool", Filter{Status: vocab.Block, Tool: "tool_7", Limit: 100}},
		{"newest", Filter{Limit: 100}},
	} {
		b.Run(tc.name, func(b *testing.B) {
			for b.Loop() {
				got, err := db.Query(ctx, tc.f)
				if err != nil || len(got) != 100 {
					b.Fatalf("%d records, %v", len(got), err)
				}
			}
		})
	}
	b.Run("count", func(b *testing.B) {
		for b.Loop() {
			if c, err := db.Count(ctx, Filter{Since: time.Date(2026, 1, 12, 0, 0, 0, 0, time.UTC)}); err != nil || c.Total == 0 {
				b.Fatal(c, err)
			}
		}
	})
}
