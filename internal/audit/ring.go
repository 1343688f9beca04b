package audit

import (
	"context"
	"sync"
)

// Ring keeps the last N records in memory, so the admin console works when no
// SQLite store is configured. It is safe for concurrent use. Add copies nothing but
// the pointer: records are never modified after they are emitted.
type Ring struct {
	mu   sync.RWMutex
	recs []*Record
	next int
	full bool
}

// NewRing returns a ring of n records (1000 when n ≤ 0).
func NewRing(n int) *Ring {
	if n <= 0 {
		n = 1000
	}
	return &Ring{recs: make([]*Record, n)}
}

// Add keeps r, evicting the oldest record when the ring is full.
func (g *Ring) Add(r *Record) {
	g.mu.Lock()
	g.recs[g.next] = r
	g.next++
	if g.next == len(g.recs) {
		g.next, g.full = 0, true
	}
	g.mu.Unlock()
}

// Write makes Ring a Sink.
func (g *Ring) Write(r *Record) error { g.Add(r); return nil }

// Close does nothing.
func (g *Ring) Close() error { return nil }

// each calls fn on the records newest first until fn returns false.
func (g *Ring) each(fn func(*Record) bool) {
	g.mu.RLock()
	defer g.mu.RUnlock()
	n := g.next
	if g.full {
		n = len(g.recs)
	}
	for i := 1; i <= n; i++ {
		if !fn(g.recs[(g.next-i+len(g.recs))%len(g.recs)]) {
			return
		}
	}
}

// Query returns the newest records matching f, newest first.
func (g *Ring) Query(_ context.Context, f Filter) ([]Record, error) {
	lim := f.limit()
	out := []Record{}
	g.each(func(r *Record) bool {
		if f.Match(r) {
			out = append(out, *r)
		}
		return len(out) < lim
	})
	return out, nil
}

// Count returns the tiles over f's tool and since.
func (g *Ring) Count(_ context.Context, f Filter) (Counts, error) {
	var c Counts
	g.each(func(r *Record) bool {
		if f.matchScope(r) {
			c.add(r.ActionTaken, 1)
		}
		return true
	})
	return c, nil
}
