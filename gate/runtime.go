package gate

import (
	"fmt"
	"runtime/metrics"
	"sync"
	"sync/atomic"

	"github.com/dop251/goja"

	"github.com/mcpgate/mcpgate/gate/internal/jsvalue"
	"github.com/mcpgate/mcpgate/gate/internal/sandbox"
)

// vm is one pooled runtime: a locked-down sandbox.Runtime, its ctx and the call it runs.
type vm struct {
	*sandbox.Runtime
	rt     *goja.Runtime // Runtime.RT
	global *goja.Object  // Runtime.Global

	mu     sync.Mutex // guards token against the timer and the watchdog
	token  uint64
	broken atomic.Bool // interrupted, panicked or polluted: never reused

	cur   *callState // the call being run (natives read it)
	state callState  // the storage cur points to during a run (one allocation per runtime)
	b     binding    // per-runtime native functions for ctx

	fnSet *Set                            // the set fns belongs to
	fns   map[*goja.Program]goja.Callable // policy functions of fnSet's policies (bound wrappers)
	heap  []metrics.Sample                // begin's reusable heap sample

	scratch []byte // readText's reusable output buffer (at most maxScratch bytes kept)

	json jsvalue.Bridge // the JSON ⇄ JS bridge of this runtime
}

// newVM builds a locked-down runtime with its ctx (package sandbox builds and seals it).
// console is exposed only when the pool's console is true.
func newVM(p *pool) (*vm, error) {
	v := &vm{}
	h := sandbox.Hooks{OOM: v.oom, TooDeep: v.tooDeep, FromJSON: func(src string) (goja.Value, bool) {
		val, _, ok := v.json.FromJSON(src)
		return val, ok
	}}
	if p.console {
		h.Console = func(msg string) {
			if v.cur != nil {
				p.logger.Debug("policy console", "policy", v.cur.policy, "msg", msg)
			}
		}
	}
	sb, err := sandbox.New(h)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrLockdownFailed, err)
	}
	v.Runtime, v.rt, v.global = sb, sb.RT, sb.Global
	v.initJSON()
	if err := v.bind(p); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrLockdownFailed, err)
	}
	if err := v.Seal(); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrLockdownFailed, err)
	}
	if v.IsFrozen(v.rt.NewObject().Prototype()) { // no policy has run yet: the intrinsic
		v.json.ProtoNames = jsvalue.ObjectProtoNames(v.rt)
	}
	return v, nil
}

// initJSON sets up the runtime's JSON bridge under the sandbox's bounds (its
// ProtoNames come once the lockdown is in place).
func (v *vm) initJSON() {
	v.json = jsvalue.Bridge{RT: v.rt, MaxNesting: sandbox.MaxNesting, MaxNodes: sandbox.MaxNodes,
		TooDeep: v.tooDeep, Broken: func() { v.broken.Store(true) }}
	if v.Runtime != nil {
		v.json.Poll = v.Poll
	}
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

// oom interrupts the runtime with policy_memory_limit and marks it broken.
func (v *vm) oom() {
	v.rt.Interrupt(errMemory)
	v.broken.Store(true)
}

// tooDeep interrupts the runtime with policy_stack_limit and marks it broken.
func (v *vm) tooDeep() {
	v.rt.Interrupt(errStack)
	v.broken.Store(true)
}
