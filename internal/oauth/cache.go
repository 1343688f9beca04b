package oauth

import (
	"crypto/sha256"
	"sync"
	"time"
)

// maxCachedTokens bounds a tokenCache: past it expired entries go, then any.
const maxCachedTokens = 10000

// introEntry is a judged token: its claims, or why it was refused, until a time.
type introEntry struct {
	claims map[string]any
	err    *Error
	until  time.Time
}

// tokenCache keeps judged tokens under their SHA-256, never the token itself.
type tokenCache struct {
	now func() time.Time
	mu  sync.Mutex
	m   map[[sha256.Size]byte]introEntry
}

func newTokenCache(now func() time.Time) *tokenCache {
	return &tokenCache{now: now, m: map[[sha256.Size]byte]introEntry{}}
}

func (c *tokenCache) get(key [sha256.Size]byte) (introEntry, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.m[key]
	if !ok || !c.now().Before(e.until) {
		return introEntry{}, false
	}
	return e, true
}

func (c *tokenCache) put(key [sha256.Size]byte, e introEntry) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.m) >= maxCachedTokens {
		now := c.now()
		for k, old := range c.m {
			if !now.Before(old.until) {
				delete(c.m, k)
			}
		}
		for k := range c.m {
			if len(c.m) < maxCachedTokens {
				break
			}
			delete(c.m, k)
		}
	}
	c.m[key] = e
}
