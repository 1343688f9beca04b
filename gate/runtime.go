package gate

import (
	_ "embed"
	"fmt"
	"runtime/metrics"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/dop251/goja"

	"github.com/dop251/goja/parser"
	"github.com/mcpgate/mcpgate/gate/internal/sandbox"

	"github.com/mcpgate/mcpgate/gate/internal/jsvalue"
)

// vm is one pooled runtime with its lockdown applied.
type vm struct {
	rt         *goja.Runtime
	runner     goja.Callable // (wrapper, ctx) → undefined or explain's [message, class, stack] (test files)
	bindFn     goja.Callable // (wrapper, ctx) → the policy function
	explain    goja.Callable // thrown value → [message, native error class, stack]
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

	cur   *callState // the call being run (natives read it)
	state callState  // the storage cur points to during a run (one allocation per runtime)
	b     binding    // per-runtime native functions for ctx

	// rejected are the promises rejected without a handler during the running policy,
	// in order (SetPromiseRejectionTracker); a handler added later removes its promise.
	rejected []*goja.Promise

	fnSet *Set                            // the set fns belongs to
	fns   map[*goja.Program]goja.Callable // policy functions of fnSet's policies (bound wrappers)
	heap  []metrics.Sample                // begin's reusable heap sample

	scratch []byte // readText's reusable output buffer (at most maxScratch bytes kept)

	poll goja.Callable // an empty JS function: calling it from Go raises a pending interrupt

	json jsvalue.Bridge // the JSON ⇄ JS bridge of this runtime
}

// newVM builds a locked-down runtime. console is exposed only when console is true.
func newVM(p *pool) (*vm, error) {
	rt := goja.New()
	rt.SetParserOptions(parser.WithDisableSourceMaps)
	rt.SetMaxCallStackSize(sandbox.MaxCallStack)
	v := &vm{rt: rt, global: rt.GlobalObject()}
	v.initJSON()
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
	_ = host.Set("maxString", sandbox.MaxStringLen)
	_ = host.Set("maxArray", sandbox.MaxArrayLen)
	_ = host.Set("sandbox.MaxNodes", sandbox.MaxNodes)
	_ = host.Set("maxBytes", sandbox.MaxBufferLen)
	_ = host.Set("maxDepth", sandbox.MaxNesting)
	_ = host.Set("oom", func(goja.FunctionCall) goja.Value {
		v.oom()
		return goja.Undefined()
	})
	_ = host.Set("deep", func(goja.FunctionCall) goja.Value {
		rt.Interrupt(errStack)
		v.broken.Store(true)
		return goja.Undefined()
	})
	_ = host.Set("parse", func(c goja.FunctionCall) goja.Value { return v.boundedParse(c.Argument(0), c.Argument(1).ToBoolean()) })
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
	poll, err := sandbox.GuardReplace(rt, v.oom)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrLockdownFailed, err)
	}
	v.poll, v.json.Poll = poll, poll
	fv, err := rt.RunProgram(sandbox.Lockdown)
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
		"runner": &v.runner, "bind": &v.bindFn, "explain": &v.explain, "describe": &v.describe, "stringify": &v.stringify, "parse": &v.parse,
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
	if isFrozen, ok := goja.AssertFunction(rt.Get("Object").ToObject(rt).Get("isFrozen")); ok { // no policy has run yet: the intrinsic
		if res, err := isFrozen(goja.Undefined(), rt.NewObject().Prototype()); err == nil && res.ToBoolean() {
			v.json.ProtoNames = jsvalue.ObjectProtoNames(rt)
		}
	}
	v.baseSyms = len(v.global.Symbols())
	if n := len(v.global.Keys()); n != 0 {
		return nil, fmt.Errorf("%w: %d enumerable globals after lockdown", ErrLockdownFailed, n)
	}
	return v, nil
}

// initJSON sets up the runtime's JSON bridge under the sandbox's bounds (its Poll and
// ProtoNames come once the guards and the lockdown are in place).
func (v *vm) initJSON() {
	v.json = jsvalue.Bridge{RT: v.rt, MaxNesting: sandbox.MaxNesting, MaxNodes: sandbox.MaxNodes,
		TooDeep: func() { v.rt.Interrupt(errStack); v.broken.Store(true) },
		Broken:  func() { v.broken.Store(true) }}
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
