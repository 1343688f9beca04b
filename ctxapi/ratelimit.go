package ctxapi

import (
	"context"
	"sync"
	"time"
)

// RateLimitStore counts tools/call arrivals per user over a sliding window for
// ctx.rateLimitExceeded(n) (docs/decisions.md#rate-limit). RateLimiter keeps the
// window in the process; internal/ratelimit keeps it in Redis, shared by replicas.
type RateLimitStore interface {
	// Hit counts one call for user, when it arrives, and returns user's calls in the
	// window ending now, this one included. It never fails: a store that cannot count
	// answers by its documented failure mode (0 when failing open).
	Hit(ctx context.Context, user string) int
	// Peek returns user's calls in the window ending now without counting one (for
	// requests that are not tools/call), by the same failure mode.
	Peek(ctx context.Context, user string) int
}

var _ RateLimitStore = (*RateLimiter)(nil)

// RateLimiter backs ctx.rateLimitExceeded(n): a sliding window (an hour in production)
// per user in which each tools/call is counted once, when it arrives
// (docs/decisions.md#rate-limit). Counts are kept in buckets of window/3600 (one
// second for an hour), so memory per user is bounded by 3600 buckets however many calls arrive. Safe for
// concurrent use.
type RateLimiter struct {
	window time.Duration
	res    time.Duration // bucket width
	nb     int64         // buckets per window
	now    func() time.Time

	mu    sync.Mutex
	users map[string]*userWindow
	sweep int
}

type bucket struct {
	slot int64 // time / res
	n    uint32
}

type userWindow struct {
	buckets []bucket // ascending slots, all within the window
	total   uint64
}

// NewRateLimiter returns a limiter over window (an hour in production); now may be nil
// (time.Now). A window <= 0 means one hour.
func NewRateLimiter(window time.Duration, now func() time.Time) *RateLimiter {
	if window <= 0 {
		window = time.Hour
	}
	if now == nil {
		now = time.Now
	}
	res := window / 3600
	if res <= 0 {
		res = 1
	}
	return &RateLimiter{
		window: window,
		res:    res,
		nb:     int64((window + res - 1) / res),
		now:    now,
		users:  make(map[string]*userWindow),
	}
}

// expire drops buckets that left the window ending at slot.
func (u *userWindow) expire(slot, nb int64) {
	i := 0
	for i < len(u.buckets) && u.buckets[i].slot <= slot-nb {
		u.total -= uint64(u.buckets[i].n)
		i++
	}
	if i > 0 {
		u.buckets = append(u.buckets[:0], u.buckets[i:]...)
	}
}

// Arrive counts one call for user. The pipeline calls it exactly once per tools/call,
// before the pre phase, including calls that are rejected later.
func (r *RateLimiter) Arrive(user string) {
	slot := r.now().UnixNano() / int64(r.res)
	r.mu.Lock()
	defer r.mu.Unlock()
	u := r.users[user]
	if u == nil {
		u = &userWindow{}
		r.users[user] = u
	}
	u.expire(slot, r.nb)
	if n := len(u.buckets); n > 0 && u.buckets[n-1].slot == slot {
		u.buckets[n-1].n++
	} else {
		u.buckets = append(u.buckets, bucket{slot: slot, n: 1})
	}
	u.total++
	r.sweep++
	if r.sweep >= 4096 { // drop idle users now and then, so memory follows live users
		r.sweep = 0
		for name, w := range r.users {
			if w.expire(slot, r.nb); w.total == 0 {
				delete(r.users, name)
			}
		}
	}
}

// Hit counts one call for user and returns the count in the window, this one included.
func (r *RateLimiter) Hit(_ context.Context, user string) int {
	r.Arrive(user)
	return r.Count(user)
}

// Peek returns the count in the window without counting a call.
func (r *RateLimiter) Peek(_ context.Context, user string) int { return r.Count(user) }

// Count returns user's calls in the window ending now, the current call included.
func (r *RateLimiter) Count(user string) int {
	slot := r.now().UnixNano() / int64(r.res)
	r.mu.Lock()
	defer r.mu.Unlock()
	u := r.users[user]
	if u == nil {
		return 0
	}
	u.expire(slot, r.nb)
	return int(u.total)
}

// Exceeded reports whether user's count in the window, the current call included, is
// greater than n: with n=3 the 4th call within the window is the first one exceeded.
func (r *RateLimiter) Exceeded(user string, n int) bool {
	return r.Count(user) > n
}
