// Package ratelimit keeps the sliding window of ctx.rateLimitExceeded(n) in Redis, so
// that every replica of the gateway counts a user's calls together
// (docs/deploy.md#shared-rate-limit). The in-process window is ctxapi.RateLimiter.
package ratelimit

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/mcpgate/mcpgate/ctxapi"
)

// Failure modes when Redis cannot answer in time.
const (
	FailOpen   = "open"   // the call counts as 0: no policy sees the limit exceeded
	FailClosed = "closed" // the call counts as over every limit
)

// Options configure a Redis store.
type Options struct {
	URL     string        // redis://[:PASSWORD@]HOST:PORT/DB
	Window  time.Duration // the sliding window; an hour when 0
	Timeout time.Duration // longest wait for one count, dial included; 250 ms when 0
	Fail    string        // FailOpen (default) or FailClosed
	Logger  *slog.Logger
}

// Redis is a ctxapi.RateLimitStore on Redis: one sorted set per user
// ("mcpgate:ratelimit:<user>") holding one member per call, scored by the Redis
// server's clock (so replicas' clocks do not matter), trimmed to the window and
// counted by one atomic Lua script. Safe for concurrent use.
type Redis struct {
	c      *redis.Client
	window time.Duration
	fail   string
	log    *slog.Logger
	prefix string // unique per process: members never collide across replicas
	seq    atomic.Uint64
	errs   atomic.Uint64

	mu      sync.Mutex
	lastLog time.Time
}

var _ ctxapi.RateLimitStore = (*Redis)(nil)

// hitScript trims the window, adds this call and returns the count; all in one
// atomic step. KEYS[1] the user's set; ARGV[1] the window in microseconds, ARGV[2]
// the member.
var hitScript = redis.NewScript(`
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000000 + tonumber(t[2])
local window = tonumber(ARGV[1])
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now - window)
redis.call('ZADD', KEYS[1], now, ARGV[2])
redis.call('PEXPIRE', KEYS[1], math.ceil(window / 1000))
return redis.call('ZCARD', KEYS[1])
`)

// peekScript trims the window and returns the count without adding a call.
var peekScript = redis.NewScript(`
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000000 + tonumber(t[2])
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now - tonumber(ARGV[1]))
return redis.call('ZCARD', KEYS[1])
`)

// Open parses the URL and returns the store. It does not wait for Redis: a store
// whose Redis is down answers by its failure mode until Redis is back.
func Open(o Options) (*Redis, error) {
	if !strings.HasPrefix(o.URL, "redis://") {
		return nil, fmt.Errorf("rate-limit store %q: want redis://HOST:PORT/DB", o.URL)
	}
	opt, err := redis.ParseURL(o.URL)
	if err != nil {
		return nil, fmt.Errorf("rate-limit store: %w", err)
	}
	if o.Window <= 0 {
		o.Window = time.Hour
	}
	if o.Timeout <= 0 {
		o.Timeout = 250 * time.Millisecond
	}
	switch o.Fail {
	case "":
		o.Fail = FailOpen
	case FailOpen, FailClosed:
	default:
		return nil, fmt.Errorf("rate-limit failure mode %q: want open or closed", o.Fail)
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	opt.DialTimeout, opt.ReadTimeout, opt.WriteTimeout = o.Timeout, o.Timeout, o.Timeout
	opt.MaxRetries = -1 // a retry would double the wait; the next call tries again
	opt.ContextTimeoutEnabled = true
	var b [8]byte
	_, _ = rand.Read(b[:])
	return &Redis{c: redis.NewClient(opt), window: o.Window, fail: o.Fail, log: o.Logger, prefix: hex.EncodeToString(b[:])}, nil
}

// Hit counts one call for user and returns the count in the window. When Redis does
// not answer within the timeout, the failure is counted (Errors), logged at most once
// a minute, and the answer is the failure mode's: 0 (open) or math.MaxInt32 (closed).
func (s *Redis) Hit(ctx context.Context, user string) int {
	member := s.prefix + "-" + fmt.Sprint(s.seq.Add(1))
	return s.run(ctx, hitScript, user, s.window.Microseconds(), member)
}

// Peek returns user's count in the window without counting a call, failing as Hit.
func (s *Redis) Peek(ctx context.Context, user string) int {
	return s.run(ctx, peekScript, user, s.window.Microseconds())
}

func (s *Redis) run(ctx context.Context, script *redis.Script, user string, args ...any) int {
	ctx, cancel := context.WithTimeout(ctx, s.c.Options().ReadTimeout)
	defer cancel()
	n, err := script.Run(ctx, s.c, []string{"mcpgate:ratelimit:" + user}, args...).Int()
	if err == nil {
		return n
	}
	total := s.errs.Add(1)
	s.mu.Lock()
	quiet := time.Since(s.lastLog) < time.Minute
	if !quiet {
		s.lastLog = time.Now()
	}
	s.mu.Unlock()
	if !quiet {
		s.log.Error("rate-limit store unreachable; counting by the failure mode",
			"fail", s.fail, "err", errText(err), "errors_total", total)
	}
	if s.fail == FailClosed {
		return math.MaxInt32
	}
	return 0
}

// Errors returns how many counts Redis failed to answer.
func (s *Redis) Errors() uint64 { return s.errs.Load() }

// Close closes the connections.
func (s *Redis) Close() error { return s.c.Close() }

func errText(err error) string {
	if errors.Is(err, context.DeadlineExceeded) {
		return "timeout"
	}
	return err.Error()
}
