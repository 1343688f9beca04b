package sandbox

import (
	"errors"
	"fmt"
	"strings"

	"github.com/dop251/goja"
	"github.com/dop251/goja/parser"
)

// Hooks are the host's halves of the lockdown: what a runtime calls when a guard trips,
// its JSON.parse, and (when Console is set) where console.log goes.
type Hooks struct {
	OOM      func()                              // a growth guard tripped: interrupt with policy_memory_limit
	TooDeep  func()                              // a nesting guard tripped: interrupt with policy_stack_limit
	FromJSON func(src string) (goja.Value, bool) // JSON.parse in Go of exact text without a reviver, once bounded; false: the runtime's own parses it
	Console  func(msg string)                    // console.log and its kin, arguments joined by spaces; nil: no console
}

// Runtime is one goja runtime with the lockdown applied and the lockdown's tools: the
// functions lockdown.js's setup returns, each called from Go.
type Runtime struct {
	RT     *goja.Runtime
	Global *goja.Object

	Runner            goja.Callable // (wrapper, ctx) → undefined or Explain's [message, class, stack] (test files)
	Bind              goja.Callable // (wrapper, ctx) → the policy function
	Explain           goja.Callable // thrown value → [message, native error class, stack]
	Describe          goja.Callable // thrown value → message, without running its toString
	Stringify         goja.Callable // guarded JSON.stringify
	Parse             goja.Callable // guarded JSON.parse
	DeepFreeze        goja.Callable
	PreventExtensions goja.Callable
	Freeze            goja.Callable
	Entries           goja.Callable // a helper argument's own data, without running a getter
	Poll              goja.Callable // an empty JS function: calling it from Go raises a pending interrupt

	// Rejected are the promises rejected without a handler since the last
	// ClearRejected, in order (SetPromiseRejectionTracker); a handler added later
	// removes its promise.
	Rejected []*goja.Promise

	isFrozen  goja.Callable // the intrinsic Object.isFrozen, taken before any policy runs
	baseProto *goja.Object
	baseSyms  int
}

// hostLimits are the bounds lockdown.js reads from its host object, by name.
var hostLimits = map[string]int{
	"maxString": MaxStringLen,
	"maxArray":  MaxArrayLen,
	"maxNodes":  MaxNodes,
	"maxBytes":  MaxBufferLen,
	"maxDepth":  MaxNesting,
}

// New builds a runtime and applies the lockdown, up to the point where the host adds
// its own globals (ctx); Seal then closes globalThis. The error says which step failed.
func New(h Hooks) (*Runtime, error) {
	rt := goja.New()
	rt.SetParserOptions(parser.WithDisableSourceMaps)
	rt.SetMaxCallStackSize(MaxCallStack)
	r := &Runtime{RT: rt, Global: rt.GlobalObject()}
	rt.SetPromiseRejectionTracker(func(p *goja.Promise, op goja.PromiseRejectionOperation) {
		switch op {
		case goja.PromiseRejectionReject:
			r.Rejected = append(r.Rejected, p)
		case goja.PromiseRejectionHandle:
			for i := len(r.Rejected) - 1; i >= 0; i-- { // usually the last one
				if r.Rejected[i] == p {
					r.Rejected = append(r.Rejected[:i], r.Rejected[i+1:]...)
					break
				}
			}
		}
	})
	isFrozen, ok := goja.AssertFunction(rt.Get("Object").ToObject(rt).Get("isFrozen"))
	if !ok {
		return nil, errors.New("Object.isFrozen missing")
	}
	r.isFrozen = isFrozen
	host := rt.NewObject()
	for name, n := range hostLimits {
		_ = host.Set(name, n)
	}
	_ = host.Set("oom", func(goja.FunctionCall) goja.Value {
		h.OOM()
		return goja.Undefined()
	})
	_ = host.Set("deep", func(goja.FunctionCall) goja.Value {
		h.TooDeep()
		return goja.Undefined()
	})
	_ = host.Set("parse", func(c goja.FunctionCall) goja.Value {
		return h.boundedParse(r.Poll, c.Argument(0), c.Argument(1).ToBoolean())
	})
	if h.Console != nil {
		con := rt.NewObject()
		logf := func(c goja.FunctionCall) goja.Value {
			parts := make([]string, len(c.Arguments))
			for i, a := range c.Arguments {
				parts[i] = a.String()
			}
			h.Console(strings.Join(parts, " "))
			return goja.Undefined()
		}
		for _, k := range []string{"log", "info", "warn", "error", "debug"} {
			_ = con.Set(k, logf)
		}
		_ = r.Global.DefineDataProperty("console", con, goja.FLAG_TRUE, goja.FLAG_TRUE, goja.FLAG_FALSE)
	}
	poll, err := GuardReplace(rt, h.OOM)
	if err != nil {
		return nil, err
	}
	r.Poll = poll
	fv, err := rt.RunProgram(lockdown())
	if err != nil {
		return nil, err
	}
	setup, _ := goja.AssertFunction(fv)
	tools, err := setup(goja.Undefined(), host)
	if err != nil {
		return nil, err
	}
	t := tools.ToObject(rt)
	for name, dst := range map[string]*goja.Callable{
		"runner": &r.Runner, "bind": &r.Bind, "explain": &r.Explain, "describe": &r.Describe, "stringify": &r.Stringify, "parse": &r.Parse,
		"deepFreeze": &r.DeepFreeze, "preventExtensions": &r.PreventExtensions, "freeze": &r.Freeze,
		"entries": &r.Entries,
	} {
		f, ok := goja.AssertFunction(t.Get(name))
		if !ok {
			return nil, fmt.Errorf("lockdown tool %s missing", name)
		}
		*dst = f
	}
	return r, nil
}

// Seal makes globalThis non-extensible, last: implicit globals of a policy are its own
// locals (policyast), and nothing else can add or swap anything global. It records
// what ResetGlobals restores and fails when an enumerable global is left.
func (r *Runtime) Seal() error {
	if _, err := r.PreventExtensions(goja.Undefined(), r.Global); err != nil {
		return err
	}
	r.baseProto = r.Global.Prototype()
	r.baseSyms = len(r.Global.Symbols())
	if n := len(r.Global.Keys()); n != 0 {
		return fmt.Errorf("%d enumerable globals after lockdown", n)
	}
	return nil
}

// IsFrozen reports whether val is frozen, by the intrinsic Object.isFrozen.
func (r *Runtime) IsFrozen(val goja.Value) bool {
	res, err := r.isFrozen(goja.Undefined(), val)
	return err == nil && res.ToBoolean()
}

// ClearRejected forgets the promises rejected so far.
func (r *Runtime) ClearRejected() {
	clear(r.Rejected)
	r.Rejected = r.Rejected[:0]
}

// ResetGlobals deletes implicit globals a policy created and reports whether the
// runtime is still clean (prototype unchanged, nothing left behind).
func (r *Runtime) ResetGlobals() bool {
	keys := r.Global.Keys()
	for _, k := range keys {
		if err := r.Global.Delete(k); err != nil {
			return false
		}
	}
	if len(keys) > 0 && len(r.Global.Keys()) != 0 {
		return false
	}
	if syms := r.Global.Symbols(); len(syms) != r.baseSyms {
		for _, s := range syms {
			_ = r.Global.DeleteSymbol(s)
		}
		if len(r.Global.Symbols()) != r.baseSyms {
			return false
		}
	}
	return r.Global.Prototype() == r.baseProto
}
