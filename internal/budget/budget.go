// Package budget bounds the work the gateway holds at once across every session:
// the tools/call requests in flight and the bytes of upstream results being
// filtered. Past the call limit a new call waits, then gets a clear error before it
// reaches the upstream; past the byte limit a result waits its turn (first come,
// first served) until earlier results are done. See docs/http.md#in-flight-budget.
package budget

import (
	"context"
	"errors"
	"time"

	"golang.org/x/sync/semaphore"
)

// Defaults for Options.
const (
	DefaultMaxCalls = 256
	DefaultMaxBytes = 128 << 20
	DefaultCallWait = 30 * time.Second
)

// ErrBusy is returned by EnterCall when no call slot frees up within CallWait.
var ErrBusy = errors.New("too many tools/call requests in flight")

// Options configure a Budget. Zero fields take the defaults; a negative MaxCalls or
// MaxBytes turns that limit off.
type Options struct {
	MaxCalls int           // tools/call requests in flight at once
	MaxBytes int64         // bytes of upstream results being filtered at once
	CallWait time.Duration // longest wait for a call slot before ErrBusy
}

// Budget is safe for concurrent use. A nil *Budget imposes no limit.
type Budget struct {
	opts  Options
	calls *semaphore.Weighted
	bytes *semaphore.Weighted
}

// New returns a Budget.
func New(o Options) *Budget {
	if o.MaxCalls == 0 {
		o.MaxCalls = DefaultMaxCalls
	}
	if o.MaxBytes == 0 {
		o.MaxBytes = DefaultMaxBytes
	}
	if o.CallWait <= 0 {
		o.CallWait = DefaultCallWait
	}
	b := &Budget{opts: o}
	if o.MaxCalls > 0 {
		b.calls = semaphore.NewWeighted(int64(o.MaxCalls))
	}
	if o.MaxBytes > 0 {
		b.bytes = semaphore.NewWeighted(o.MaxBytes)
	}
	return b
}

// Options returns the limits in force.
func (b *Budget) Options() Options { return b.opts }

// EnterCall takes a call slot, waiting up to CallWait; it returns ErrBusy when none
// frees up, or ctx's error. Call release when the call is done.
func (b *Budget) EnterCall(ctx context.Context) (release func(), err error) {
	if b == nil || b.calls == nil {
		return func() {}, nil
	}
	if b.calls.TryAcquire(1) {
		return func() { b.calls.Release(1) }, nil
	}
	wctx, cancel := context.WithTimeout(ctx, b.opts.CallWait)
	defer cancel()
	if err := b.calls.Acquire(wctx, 1); err != nil {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		return nil, ErrBusy
	}
	return func() { b.calls.Release(1) }, nil
}

// HoldBytes takes n bytes of the result budget, waiting while earlier results hold
// it, until ctx ends. A result larger than the whole budget waits for every other
// one and then runs alone. Call release when the result is done.
func (b *Budget) HoldBytes(ctx context.Context, n int) (release func(), err error) {
	if b == nil || b.bytes == nil {
		return func() {}, nil
	}
	w := min(int64(n), b.opts.MaxBytes)
	if w <= 0 {
		return func() {}, nil
	}
	if err := b.bytes.Acquire(ctx, w); err != nil {
		return nil, err
	}
	return func() { b.bytes.Release(w) }, nil
}
