package upstream

import (
	"context"
	"log/slog"
	"sync"
	"time"
)

// MaxPoolSize bounds a Pool's size (--warm-pool).
const MaxPoolSize = 16

// Pool keeps up to Size started, not yet initialized processes of one stdio server,
// so that a new HTTP session takes one whose runtime has already loaded instead of
// waiting for a process to start (docs/decisions.md#warm-pool). A process leaves the
// pool once, to one caller, and never comes back: the session's own initialize is
// the first message it reads, and it ends with the session. Each Take starts a
// replacement in the background; a process that exits while it waits is dropped.
type Pool struct {
	start func() (*Process, error)
	size  int
	log   *slog.Logger

	mu       sync.Mutex
	idle     []*Process
	starting int
	closed   bool
	wg       sync.WaitGroup
}

// NewPool returns a pool of size processes made by start (a size below 1 keeps none:
// Take then always starts one) and begins filling it in the background.
func NewPool(size int, start func() (*Process, error), log *slog.Logger) *Pool {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	p := &Pool{start: start, size: min(max(size, 0), MaxPoolSize), log: log}
	p.fill()
	return p
}

// Take returns a warm process, or starts one at once when none waits (the pool is
// empty, or still filling), and starts a replacement in the background.
func (p *Pool) Take() (*Process, error) {
	p.mu.Lock()
	var got *Process
	for len(p.idle) > 0 && got == nil {
		got, p.idle = p.idle[0], p.idle[1:]
		select {
		case <-got.Done(): // exited while it waited: never handed out
			go func(dead *Process) { _ = dead.Close(context.Background(), time.Second) }(got)
			got = nil
		default:
		}
	}
	p.mu.Unlock()
	p.fill()
	if got != nil {
		return got, nil
	}
	return p.start()
}

// Idle returns how many started processes wait in the pool.
func (p *Pool) Idle() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.idle)
}

// fill starts processes in the background until the pool holds size, counting those
// already starting. A start that fails is logged and not retried before the next Take.
func (p *Pool) fill() {
	p.mu.Lock()
	defer p.mu.Unlock()
	for !p.closed && len(p.idle)+p.starting < p.size {
		p.starting++
		p.wg.Add(1)
		go func() {
			defer p.wg.Done()
			proc, err := p.start()
			p.mu.Lock()
			p.starting--
			if err == nil && !p.closed {
				p.idle = append(p.idle, proc)
				proc = nil
			}
			p.mu.Unlock()
			if err != nil {
				p.log.Warn("could not start a warm upstream process; a session starts its own", "err", err)
			}
			if proc != nil { // closed meanwhile
				_ = proc.Close(context.Background(), time.Second)
			}
		}()
	}
}

// Close stops filling and ends the waiting processes (stdin closed, then SIGTERM and
// SIGKILL after grace each), waiting for those still starting.
func (p *Pool) Close(ctx context.Context, grace time.Duration) {
	p.mu.Lock()
	p.closed = true
	idle := p.idle
	p.idle = nil
	p.mu.Unlock()
	var wg sync.WaitGroup
	for _, proc := range idle {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_ = proc.Close(ctx, grace)
		}()
	}
	wg.Wait()
	p.wg.Wait()
}
