package gate

import (
	_ "embed"
	"log/slog"
	"runtime/metrics"
	"sync"
	"sync/atomic"
	"time"
)

// pool holds up to size+1 runtimes shared by every policy set of one Gate. Phases
// other than pre share size of them (the shared tokens), so one runtime is always left
// for pre phases: a pre phase never queues behind post phases busy with large results.
type pool struct {
	size    int
	shared  chan struct{} // one token per runtime in use by a phase other than pre
	console bool
	logger  *slog.Logger
	gate    *Gate

	idle       chan *vm
	slots      chan struct{} // one token per runtime that exists or is being built
	mu         sync.Mutex
	active     map[*vm]activeRun // running runtimes, for the heap watchdog
	closed     atomic.Bool
	softCap    uint64
	budget     uint64        // Options.PolicyHeapBudget
	collecting atomic.Bool   // a GC started by the watchdog is running
	gcLive     atomic.Uint64 // live heap the watchdog's last GC found
	gcSeq      atomic.Uint64 // number of the watchdog's last completed collection
	gcStarted  atomic.Uint64 // collections begun
	wake       chan struct{} // begin → an idle watchdog
	asleep     atomic.Bool   // the watchdog waits on wake (set under a re-check of active)
	stop       chan struct{}
	wg         sync.WaitGroup
	warming    sync.WaitGroup // warm runs and the self-test
	// tested is closed once the self-test ran (selftest.go); testErr is its failure,
	// which every later runtime request returns, so no policy runs unproven
	tested  chan struct{}
	testErr error
}

// activeRun is one policy run the watchdog watches: its token, the heap when it began,
// the growth it may cause, its deadline, and whether it was interrupted already (it may take a while
// to stop: a huge string copy is one instruction).
type activeRun struct {
	tok, base, budget uint64
	deadline          time.Time       // the policy's time limit (the watchdog interrupts past it); zero: none
	done              <-chan struct{} // the call's context (the watchdog interrupts once it is closed); nil: none
	hit               bool
}

func newPool(g *Gate, size int, console bool, logger *slog.Logger, soft, budget uint64) *pool {
	p := &pool{
		size: size, console: console, logger: logger, gate: g,
		shared:  make(chan struct{}, size),
		idle:    make(chan *vm, size+1),
		slots:   make(chan struct{}, size+1),
		active:  make(map[*vm]activeRun),
		softCap: soft,
		budget:  budget,
		wake:    make(chan struct{}, 1),
		stop:    make(chan struct{}),
		tested:  make(chan struct{}),
	}
	p.wg.Add(1)
	go p.watchdog()
	return p
}

// acquire returns a runtime for a phase, which release gives back. A phase other than
// pre (pre false) first takes a shared token, waiting for one while size runtimes
// already serve such phases.
func (p *pool) acquire(pre bool, done <-chan struct{}) (*vm, error) {
	if !pre {
		select {
		case p.shared <- struct{}{}:
		case <-done:
			return nil, errCancelled
		}
	}
	v, err := p.get(done)
	if err != nil {
		if !pre {
			<-p.shared
		}
		return nil, err
	}
	return v, nil
}

// release gives back a runtime acquire returned for the same phase kind.
func (p *pool) release(v *vm, pre bool) {
	p.put(v)
	if !pre {
		<-p.shared
	}
}

// get returns an idle runtime, builds one while fewer than size exist, or waits.
func (p *pool) get(done <-chan struct{}) (*vm, error) {
	if err := p.proven(done); err != nil {
		return nil, err
	}
	if p.closed.Load() {
		return nil, ErrClosed
	}
	for {
		select {
		case v := <-p.idle:
			return v, nil
		default:
		}
		select {
		case v := <-p.idle:
			return v, nil
		case p.slots <- struct{}{}:
			v, err := newVM(p)
			if err != nil {
				<-p.slots
				return nil, err
			}
			return v, nil
		case <-done:
			return nil, errCancelled
		}
	}
}

// warm readies the pool for s in the background, before calls need it
// (docs/policies.md#first-call): it binds s's policy wrappers on every idle runtime
// (no policy code runs), then builds the runtimes the pool may still hold (each
// locked down like any other) and binds them too, so that a first call neither
// builds a runtime nor binds. It holds one runtime at a time and gives it back at
// once, so a call finds the others idle; it stops when the pool closes or s is no
// longer current.
func (p *pool) warm(s *Set) {
	if p.proven(p.stop) != nil {
		return
	}
	live := func() bool { return !p.closed.Load() && p.gate.Current() == s }
	bind := func(v *vm) {
		for _, pol := range s.policies {
			if _, err := v.wrapper(s, pol); err != nil {
				v.broken.Store(true) // as a call would: the runtime is not reused
				break
			}
		}
		p.put(v)
	}
	for n := len(p.idle); n > 0 && live(); n-- { // each idle one once: put queues it last
		select {
		case v := <-p.idle:
			bind(v)
		default:
			n = 0
		}
	}
	for live() {
		select {
		case p.slots <- struct{}{}:
		default:
			return // the pool is full
		}
		v, err := newVM(p)
		if err != nil {
			<-p.slots
			return
		}
		bind(v)
	}
}

// proven waits for the self-test and returns its failure (ErrLockdownFailed), or
// errCancelled once done is closed first.
func (p *pool) proven(done <-chan struct{}) error {
	select {
	case <-p.tested:
		return p.testErr
	case <-done:
		return errCancelled
	}
}

// put returns v to the pool, or drops it (freeing its slot) when it is broken.
func (p *pool) put(v *vm) {
	v.cur = nil
	if v.broken.Load() || p.closed.Load() {
		<-p.slots
		return
	}
	p.idle <- v
}

// begin registers a policy run with the watchdog, which interrupts it with
// policy_timeout once timeout has passed (0: no deadline, the caller keeps its own
// clock) or done is closed (the call was cancelled), and, with a heap budget, once the
// heap grows past it. After close, which stops the watchdog, the run is interrupted at
// once (policy_error).
func (p *pool) begin(v *vm, tok uint64, input int, timeout time.Duration, done <-chan struct{}) {
	v.mu.Lock()
	v.token = tok
	v.mu.Unlock()
	v.rt.ClearInterrupt() // k6: clear on activation; a stale interrupt cannot reach us (token)
	run := activeRun{tok: tok, done: done}
	if timeout > 0 {
		run.deadline = time.Now().Add(timeout)
	}
	if p.budget > 0 { // the heap at the start matters only to a per-policy budget
		if v.heap == nil {
			v.heap = []metrics.Sample{{Name: heapMetric}}
		}
		metrics.Read(v.heap)
		run.base, run.budget = sampleUint(v.heap[0]), p.budget+inputFactor*uint64(input)
	}
	p.mu.Lock()
	p.active[v] = run
	p.mu.Unlock()
	if p.closed.Load() { // no watchdog keeps the deadline any more: stop it as close stops the runs before it
		v.interruptIf(tok, errClosing)
		return
	}
	if p.asleep.Load() { // read after the insert: a watchdog going to sleep sees one or the other
		select {
		case p.wake <- struct{}{}:
		default:
		}
	}
}

func (p *pool) end(v *vm) {
	v.mu.Lock()
	v.token = 0
	v.mu.Unlock()
	p.mu.Lock()
	delete(p.active, v)
	p.mu.Unlock()
}

func (p *pool) close() {
	if p.closed.Swap(true) {
		return
	}
	close(p.stop)
	p.wg.Wait()
	p.mu.Lock()
	for v, r := range p.active {
		v.interruptIf(r.tok, errClosing)
	}
	p.mu.Unlock()
	for {
		select {
		case <-p.idle:
			<-p.slots
		default:
			return
		}
	}
}
