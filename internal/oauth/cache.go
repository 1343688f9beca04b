package oauth

import (
	"crypto/sha256"
	"sync"
	"time"
)

// maxCachedTokens bounds the caches of judged tokens.
const maxCachedTokens = 10000

// introEntry is a judged token: its claims, or why it was refused, until a time.
type introEntry struct {
	claims map[string]any
	err    *Error
	until  time.Time
}

// expiring keeps values under a SHA-256 key (never what was hashed) until their
// time, at most max of them: past it expired entries go, then any. Safe for
// concurrent use.
type expiring[V any] struct {
	now func() time.Time
	max int
	mu  sync.Mutex
	m   map[[sha256.Size]byte]expiringEntry[V]
}

type expiringEntry[V any] struct {
	v     V
	until time.Time
}

func newExpiring[V any](now func() time.Time, max int) *expiring[V] {
	return &expiring[V]{now: now, max: max, m: map[[sha256.Size]byte]expiringEntry[V]{}}
}

// get returns the value under key while its time has not come.
func (c *expiring[V]) get(key [sha256.Size]byte) (V, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.m[key]
	if !ok || !c.now().Before(e.until) {
		var zero V
		return zero, false
	}
	return e.v, true
}

// put keeps v under key until until.
func (c *expiring[V]) put(key [sha256.Size]byte, v V, until time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.m) >= c.max {
		now := c.now()
		for k, old := range c.m {
			if !now.Before(old.until) {
				delete(c.m, k)
			}
		}
		for k := range c.m { // still full: drop any (map order)
			if len(c.m) < c.max {
				break
			}
			delete(c.m, k)
		}
	}
	c.m[key] = expiringEntry[V]{v: v, until: until}
}
