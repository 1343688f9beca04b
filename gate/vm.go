package gate

import (
	_ "embed"
	"errors"
	"fmt"
	"log/slog"
	"runtime"
	"runtime/metrics"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/dlclark/regexp2/v2"
	"github.com/dop251/goja"
	"github.com/dop251/goja/parser"
)

// Sandbox limits. A guard that trips interrupts the policy with policy_memory_limit or
// policy_stack_limit; the runtime is then thrown away.
const (
	maxStringLen  = 1 << 25          // UTF-16 units a guarded built-in may produce (repeat, padStart, join)
	maxArrayLen   = 1 << 20          // elements: Array(n), Array.from, any Array.prototype receiver, split, apply, spreads
	maxNodes      = 1 << 22          // values one JSON.stringify or one helper walk visits
	maxBufferLen  = 1 << 26          // bytes: ArrayBuffer and typed arrays
	maxNesting    = 512              // JSON.parse/stringify nesting, Array.prototype.flat depth, helper walks
	maxCallStack  = 2048             // JS frames (goja SetMaxCallStackSize)
	watchInterval = time.Millisecond // heap sampling while a policy runs (none while idle)
	inputFactor   = 32               // heap budget bytes per byte of a phase's input JSON
)

//go:embed lockdown.js
var lockdownSrc string

var lockdownPrg = goja.MustCompile("lockdown.js", lockdownSrc, false)

var regexpMu sync.Mutex

// lowerRegexpTimeout bounds every backtracking (regexp2) match goja compiles from now
// on: goja falls back to regexp2 for lookaround and backreferences, and Interrupt
// cannot stop a native match. regexp2.DefaultMatchTimeout is process-wide and read
// when a pattern is compiled, so it is only ever lowered, never raised.
func lowerRegexpTimeout(d time.Duration) {
	regexpMu.Lock()
	defer regexpMu.Unlock()
	if d > 0 && d < regexp2.DefaultMatchTimeout {
		regexp2.DefaultMatchTimeout = d
	}
}

func init() { lowerRegexpTimeout(DefaultTimeout) }

// vm is one pooled runtime with its lockdown applied.
type vm struct {
	rt         *goja.Runtime
	runner     goja.Callable // (fn, ctx) → undefined or [message]
	describe   goja.Callable // thrown value → message, without running its toString
	stringify  goja.Callable // guarded JSON.stringify
	parse      goja.Callable // guarded JSON.parse
	deepFreeze goja.Callable
	preventExt goja.Callable
	freeze     goja.Callable
	entries    goja.Callable // a helper argument's own data, without running a getter
	global     *goja.Object
	baseProto  *goja.Object
	baseSyms   int

	mu     sync.Mutex // guards token against the timer and the watchdog
	token  uint64
	broken atomic.Bool // interrupted, panicked or polluted: never reused

	cur *callState // the call being run (natives read it)
	b   binding    // per-runtime native functions for ctx

	// rejected are the promises rejected without a handler during the running policy,
	// in order (SetPromiseRejectionTracker); a handler added later removes its promise.
	rejected []*goja.Promise

	fnSet *Set                         // the set fns belongs to
	fns   map[*goja.Program]goja.Value // wrapper functions of fnSet's policies
	heap  []metrics.Sample             // begin's reusable heap sample
}

var tokens atomic.Uint64

// interruptIf interrupts the runtime only if it is still running the run identified by
// tok, so a late timer never poisons the next call.
func (v *vm) interruptIf(tok uint64, why *interruptReason) {
	v.mu.Lock()
	if v.token == tok && tok != 0 {
		v.rt.Interrupt(why)
		v.broken.Store(true)
	}
	v.mu.Unlock()
}

// newVM builds a locked-down runtime. console is exposed only when console is true.
func newVM(p *pool) (*vm, error) {
	rt := goja.New()
	rt.SetParserOptions(parser.WithDisableSourceMaps)
	rt.SetMaxCallStackSize(maxCallStack)
	v := &vm{rt: rt, global: rt.GlobalObject()}
	rt.SetPromiseRejectionTracker(func(p *goja.Promise, op goja.PromiseRejectionOperation) {
		switch op {
		case goja.PromiseRejectionReject:
			v.rejected = append(v.rejected, p)
		case goja.PromiseRejectionHandle:
			for i := len(v.rejected) - 1; i >= 0; i-- { // usually the last one
				if v.rejected[i] == p {
					v.rejected = append(v.rejected[:i], v.rejected[i+1:]...)
					break
				}
			}
		}
	})
	host := rt.NewObject()
	_ = host.Set("maxString", maxStringLen)
	_ = host.Set("maxArray", maxArrayLen)
	_ = host.Set("maxNodes", maxNodes)
	_ = host.Set("maxBytes", maxBufferLen)
	_ = host.Set("maxDepth", maxNesting)
	_ = host.Set("oom", func(goja.FunctionCall) goja.Value {
		rt.Interrupt(errMemory)
		v.broken.Store(true)
		return goja.Undefined()
	})
	_ = host.Set("deep", func(goja.FunctionCall) goja.Value {
		rt.Interrupt(errStack)
		v.broken.Store(true)
		return goja.Undefined()
	})
	_ = host.Set("jsonDepth", func(c goja.FunctionCall) goja.Value {
		return rt.ToValue(jsonDepth(c.Argument(0).String()))
	})
	if p.console {
		con := rt.NewObject()
		logf := func(c goja.FunctionCall) goja.Value {
			parts := make([]string, len(c.Arguments))
			for i, a := range c.Arguments {
				parts[i] = a.String()
			}
			if v.cur != nil {
				p.logger.Debug("policy console", "policy", v.cur.policy, "msg", strings.Join(parts, " "))
			}
			return goja.Undefined()
		}
		for _, k := range []string{"log", "info", "warn", "error", "debug"} {
			_ = con.Set(k, logf)
		}
		_ = v.global.DefineDataProperty("console", con, goja.FLAG_TRUE, goja.FLAG_TRUE, goja.FLAG_FALSE)
	}
	fv, err := rt.RunProgram(lockdownPrg)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrLockdownFailed, err)
	}
	setup, _ := goja.AssertFunction(fv)
	tools, err := setup(goja.Undefined(), host)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrLockdownFailed, err)
	}
	t := tools.ToObject(rt)
	for name, dst := range map[string]*goja.Callable{
		"runner": &v.runner, "describe": &v.describe, "stringify": &v.stringify, "parse": &v.parse,
		"deepFreeze": &v.deepFreeze, "preventExtensions": &v.preventExt, "freeze": &v.freeze,
		"entries": &v.entries,
	} {
		f, ok := goja.AssertFunction(t.Get(name))
		if !ok {
			return nil, fmt.Errorf("%w: lockdown tool %s missing", ErrLockdownFailed, name)
		}
		*dst = f
	}
	if err := v.bind(p); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrLockdownFailed, err)
	}
	// globalThis is made non-extensible last: implicit globals of a policy are its own
	// locals (implicitGlobals), and nothing else can add or swap anything global.
	if _, err := v.preventExt(goja.Undefined(), v.global); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrLockdownFailed, err)
	}
	v.baseProto = v.global.Prototype()
	v.baseSyms = len(v.global.Symbols())
	if n := len(v.global.Keys()); n != 0 {
		return nil, fmt.Errorf("%w: %d enumerable globals after lockdown", ErrLockdownFailed, n)
	}
	return v, nil
}

// resetGlobals deletes implicit globals a policy created and reports whether the
// runtime is still clean (prototype unchanged, nothing left behind).
func (v *vm) resetGlobals() bool {
	keys := v.global.Keys()
	for _, k := range keys {
		if err := v.global.Delete(k); err != nil {
			return false
		}
	}
	if len(keys) > 0 && len(v.global.Keys()) != 0 {
		return false
	}
	if syms := v.global.Symbols(); len(syms) != v.baseSyms {
		for _, s := range syms {
			_ = v.global.DeleteSymbol(s)
		}
		if len(v.global.Symbols()) != v.baseSyms {
			return false
		}
	}
	return v.global.Prototype() == v.baseProto
}

// jsonDepth returns the deepest bracket nesting of JSON text, ignoring strings.
func jsonDepth(s string) int {
	depth, max := 0, 0
	in, esc := false, false
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case in:
			switch {
			case esc:
				esc = false
			case c == '\\':
				esc = true
			case c == '"':
				in = false
			}
		case c == '"':
			in = true
		case c == '[' || c == '{':
			depth++
			if depth > max {
				max = depth
			}
		case c == ']' || c == '}':
			depth--
		}
	}
	return max
}

// pool holds up to size runtimes shared by every policy set of one Gate.
type pool struct {
	size    int
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
	stop       chan struct{}
	wg         sync.WaitGroup
}

// activeRun is one policy run the watchdog watches: its token, the heap when it began,
// the growth it may cause, and whether it was interrupted already (it may take a while
// to stop: a huge string copy is one instruction).
type activeRun struct {
	tok, base, budget uint64
	hit               bool
}

func newPool(g *Gate, size int, console bool, logger *slog.Logger, soft, budget uint64) *pool {
	p := &pool{
		size: size, console: console, logger: logger, gate: g,
		idle:    make(chan *vm, size),
		slots:   make(chan struct{}, size),
		active:  make(map[*vm]activeRun),
		softCap: soft,
		budget:  budget,
		wake:    make(chan struct{}, 1),
		stop:    make(chan struct{}),
	}
	p.wg.Add(1)
	go p.watchdog()
	return p
}

// get returns an idle runtime, builds one while fewer than size exist, or waits.
func (p *pool) get(done <-chan struct{}) (*vm, error) {
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

// put returns v to the pool, or drops it (freeing its slot) when it is broken.
func (p *pool) put(v *vm) {
	v.cur = nil
	if v.broken.Load() || p.closed.Load() {
		<-p.slots
		return
	}
	p.idle <- v
}

func (p *pool) begin(v *vm, tok uint64, input int) {
	v.mu.Lock()
	v.token = tok
	v.mu.Unlock()
	v.rt.ClearInterrupt() // k6: clear on activation; a stale interrupt cannot reach us (token)
	if v.heap == nil {
		v.heap = []metrics.Sample{{Name: heapMetric}}
	}
	metrics.Read(v.heap)
	run := activeRun{tok: tok, base: sampleUint(v.heap[0]), budget: p.budget + inputFactor*uint64(input)}
	p.mu.Lock()
	p.active[v] = run
	p.mu.Unlock()
	select {
	case p.wake <- struct{}{}:
	default:
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

const heapMetric = "/memory/classes/heap/objects:bytes"

// liveHeapBytes is the heap the last GC found live (runtime/metrics /gc/heap/live:bytes).
func liveHeapBytes() uint64 {
	s := [1]metrics.Sample{{Name: "/gc/heap/live:bytes"}}
	metrics.Read(s[:])
	return sampleUint(s[0])
}

// collect runs two full garbage collections in the background, unless they are
// running; when they end, gcLive holds the smaller live heap they found and gcSeq
// the number of this collection (gcStarted counts the ones begun). Two, because a GC counts what is allocated while it marks as live: a
// burst of garbage made during the first is gone by the second, a bomb is not.
func (p *pool) collect() {
	if p.collecting.CompareAndSwap(false, true) {
		n := p.gcStarted.Add(1)
		go func() {
			defer p.collecting.Store(false)
			runtime.GC()
			first := liveHeapBytes()
			runtime.GC()
			p.gcLive.Store(min(first, liveHeapBytes()))
			p.gcSeq.Store(n)
		}()
	}
}

// heapBytes is the heap in use by objects, live or not yet swept (about 0.3 µs).
func heapBytes() uint64 {
	s := [1]metrics.Sample{{Name: heapMetric}}
	metrics.Read(s[:])
	return sampleUint(s[0])
}

func sampleUint(s metrics.Sample) uint64 {
	if s.Value.Kind() != metrics.KindUint64 {
		return 0
	}
	return s.Value.Uint64()
}

// watchdog samples the heap every millisecond while a policy runs (and sleeps while
// none does). Once the live heap passes the soft cap it interrupts every running
// policy; with a per-policy budget set, a policy whose heap growth since it began
// passes that budget. Allocation in a loop is JS and stops at the next instruction
// (policy_memory_limit), so string doubling with `+` or template literals, which no
// built-in guard sees, stops soon after the limit. The GC that tells live memory from
// garbage runs on its own goroutine, so a policy copying a huge string never stalls
// this loop.
func (p *pool) watchdog() {
	defer p.wg.Done()
	t := time.NewTicker(watchInterval)
	defer t.Stop()
	ticking := true
	seenGC, trustFrom := p.gcSeq.Load(), p.gcStarted.Load()+1
	for {
		p.mu.Lock()
		n := len(p.active)
		p.mu.Unlock()
		if n == 0 {
			if ticking {
				t.Stop()
				ticking = false
			}
			select {
			case <-p.stop:
				return
			case <-p.wake:
			}
			continue
		}
		if !ticking {
			t.Reset(watchInterval)
			ticking = true
			trustFrom = p.gcStarted.Load() + 1
		}
		select {
		case <-p.stop:
			return
		case <-t.C:
		}
		heap := heapBytes()
		if heap >= p.softCap {
			// The heap counts garbage until the next GC: only memory a GC forced here
			// found live interrupts, or a burst of garbage (a large result handled by
			// another call) would reject every clean call. The GC runs off this loop,
			// and again while the heap stays high, so a growing bomb is re-measured.
			// Only a collection begun in this busy period describes these policies.
			if seq := p.gcSeq.Load(); seq != seenGC && seq >= trustFrom {
				seenGC = seq
				if live := p.gcLive.Load(); live >= p.softCap {
					if n := p.interrupt(func(activeRun) bool { return true }); n > 0 {
						p.logger.Warn("gate: live heap passed the soft limit; running policies interrupted",
							"live_bytes", live, "soft_limit", p.softCap, "interrupted", n)
					}
				}
			}
			p.collect()
			continue
		}
		if p.budget == 0 {
			continue
		}
		if n := p.interrupt(func(r activeRun) bool { return heap > r.base+r.budget }); n > 0 {
			p.logger.Warn("gate: the heap grew past a running policy's budget; interrupted",
				"heap_bytes", heap, "interrupted", n)
		}
	}
}

// interrupt interrupts the running policies that match f and were not interrupted
// yet (policy_memory_limit), and returns how many.
func (p *pool) interrupt(f func(activeRun) bool) int {
	p.mu.Lock()
	victims := make(map[*vm]uint64, len(p.active))
	for v, r := range p.active {
		if !r.hit && f(r) {
			victims[v] = r.tok
			r.hit = true
			p.active[v] = r
		}
	}
	p.mu.Unlock()
	for v, tok := range victims {
		v.interruptIf(tok, errMemory)
	}
	return len(victims)
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

// selfTest proves the lockdown on a fresh runtime: no eval, no Function constructor by
// any path, no host objects, frozen intrinsics. Load fails when any probe disagrees.
func selfTest(p *pool) error {
	v, err := newVM(p)
	if err != nil {
		return err
	}
	probes := []string{
		`typeof eval === "undefined"`,
		`typeof require === "undefined" && typeof process === "undefined" && typeof module === "undefined"`,
		`typeof fetch === "undefined" && typeof XMLHttpRequest === "undefined" && typeof GoError === "undefined"`,
		`typeof setTimeout === "undefined" && typeof Deno === "undefined" && typeof Bun === "undefined"`,
		`(function(){ try { Function("return 1"); return false } catch (e) { return e instanceof TypeError } })()`,
		`(function(){ try { (function(){}).constructor("return 1"); return false } catch (e) { return e instanceof TypeError } })()`,
		`(function(){ try { (function*(){}).constructor("yield 1"); return false } catch (e) { return e instanceof TypeError } })()`,
		`(function(){ try { (async function(){}).constructor("return 1"); return false } catch (e) { return e instanceof TypeError } })()`,
		`(function(){ try { new (Object.getPrototypeOf(function(){}).constructor)("return 1"); return false } catch (e) { return e instanceof TypeError } })()`,
		`!Object.isExtensible(globalThis) && Object.isFrozen(Object.prototype) && Object.isFrozen(Array.prototype) && Object.isFrozen(String.prototype) && Object.isFrozen(Function.prototype) && Object.isFrozen(JSON) && Object.isFrozen(Math)`,
		`(function(){ Object.prototype.polluted = 1; return ({}).polluted === undefined })()`,
	}
	if !p.console {
		probes = append(probes, `typeof console === "undefined"`)
	}
	for i, src := range probes {
		res, err := v.rt.RunString(src)
		if err != nil || !res.ToBoolean() {
			return fmt.Errorf("%w: probe %d (%s) failed: %v", ErrLockdownFailed, i, src, errors.Unwrap(err))
		}
	}
	if !v.resetGlobals() {
		return fmt.Errorf("%w: globals not clean after probes", ErrLockdownFailed)
	}
	return nil
}
