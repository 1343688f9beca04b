package guardrail

import "time"

// SetClock makes s read the time from now (the breaker, the verdict cache).
func SetClock(s *Set, now func() time.Time) { s.now = now }

// CacheLen is the number of verdicts g's cache holds.
func CacheLen(s *Set, name string) int {
	for _, g := range s.guards {
		if g.name == name && g.cache != nil {
			return g.cache.len()
		}
	}
	return 0
}
