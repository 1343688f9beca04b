package gate

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"time"

	"github.com/dop251/goja"

	"github.com/mcpgate/mcpgate/ctxapi"
	"github.com/mcpgate/mcpgate/engine"
	"github.com/mcpgate/mcpgate/gate/internal/policyast"
	"github.com/mcpgate/mcpgate/vocab"
)

// Warning is one ctx.warn(reason). Reason is policy text that may quote call data: it
// goes to the client or a debug view only, never to a log or an audit record.
type Warning struct {
	Policy string
	Reason string
}

// callState is one phase of one call on one runtime.
type callState struct {
	set      *Set
	call     *ctxapi.Call
	phase    ctxapi.Phase
	policy   string
	params   slot
	content  slot
	sc       slot
	findings goja.Value

	warned     bool
	helperRung vocab.Action
	warnings   []Warning
	shapeErr   string          // a bad shape no read-back can see (ctx.response replaced or deleted)
	done       <-chan struct{} // the call's context: closed when the client cancels or leaves
}

// badShape records the first bad shape of the running policy; it rejects the call with
// bad_ctx_shape when the policy ends, even if the policy caught an error meanwhile.
func (c *callState) badShape(msg string) {
	if c.shapeErr == "" {
		c.shapeErr = msg
	}
}

func (c *callState) noteHelper(s engine.Strategy) {
	a := vocab.Redact
	if s == engine.StrategyMask {
		a = vocab.Mask
	}
	c.helperRung = vocab.Strongest(c.helperRung, a)
}

// Run runs every policy of the set for call.Phase, in lexical file order, each on the
// ctx left by the one before, and stops at the first rejection (docs/decisions.md#policies).
// Any policy error rejects (fail closed). Run is safe for concurrent use.
func (s *Set) Run(ctx context.Context, call *ctxapi.Call) (res Result) {
	if s.layers != nil {
		return s.layers.run(ctx, call)
	}
	start := time.Now()
	defer func() { res.Elapsed = time.Since(start) }()
	res.Params = call.Params
	if call.Response != nil {
		res.Content = call.Response.Content
		res.StructuredContent = call.Response.StructuredContent
	}
	if !knownPhase(call.Phase) && s.Acts(call.Phase) {
		res.Reject = &Rejection{Code: vocab.ReasonBadCtxShape, Message: "unknown phase"}
		return res
	}
	if !s.Acts(call.Phase) {
		return res // no policy acts in this phase: no runtime, no decoding
	}
	spec := phaseSpecs[call.Phase]
	if spec.response && call.Response == nil {
		res.Reject = &Rejection{Code: vocab.ReasonBadCtxShape, Message: "post phase without a response"}
		return res
	}
	v, err := s.pool.acquire(spec.reserved, ctx.Done())
	if err != nil {
		res.Reject = &Rejection{Code: vocab.ReasonPolicyError, Message: "no policy runtime available"}
		if errors.Is(err, errCancelled) {
			res.Reject.Code = vocab.ReasonPolicyTimeout
			res.Reject.Message = errCancelled.msg
		}
		return res
	}
	defer s.pool.release(v, spec.reserved)

	c := &v.state // reused: nothing of a run outlives it but what res holds
	*c = callState{set: s, call: call, phase: call.Phase}
	params := []byte(call.Params)
	if len(params) == 0 || string(params) == "null" {
		params = []byte("{}")
	}
	c.params = newSlot("params", params, !spec.writesParams)
	if spec.array != "" {
		c.content = newSlot(spec.array, spec.arrayOf(call), false)
	}
	if spec.structured {
		c.sc = newSlot("response.structuredContent", call.Response.StructuredContent, false)
	}
	v.cur = c
	defer func() { // an idle runtime holds no call data
		v.cur, v.state = nil, callState{}
	}()

	c.done = ctx.Done() // the watchdog interrupts a running policy once it is closed

	action := vocab.Pass
	anyChange := false
	before := c.content.raw // hides: the array as the running policy found it
	for _, p := range s.policies {
		if !p.ActsIn(call.Phase) {
			continue
		}
		if ctx.Err() != nil { // cancelled between policies: run no more
			res.Reject = classify(errCancelled)
			res.Reject.Policy = p.Name
			res.Warnings = c.warnings
			return res
		}
		c.policy = p.Name
		c.warned, c.helperRung, c.shapeErr = false, vocab.Pass, ""
		changed, rej := s.runOne(v, c, p)
		if rej != nil {
			rej.Policy = p.Name
			res.Reject = rej
			res.Acted = append(res.Acted, p.Name)
			res.Warnings = c.warnings
			return res
		}
		if changed || c.warned {
			res.Acted = append(res.Acted, p.Name)
		}
		if c.warned {
			action = vocab.Strongest(action, vocab.Warn)
		}
		if changed && spec.hides {
			res.Removed = removedBy(res.Removed, before, c.content.raw, spec.member, p.Name)
			before = c.content.raw
		}
		if changed {
			anyChange = true
			a := c.helperRung
			if a == vocab.Pass && spec.toClient {
				a = vocab.Redact // a plain-JS edit of what the client receives
			}
			action = vocab.Strongest(action, a)
		}
	}
	res.Action = action
	res.Warnings = c.warnings
	if !anyChange {
		return res
	}
	if spec.writesParams {
		res.Params = c.params.raw
		res.Changed = c.params.differs()
		return res
	}
	if !spec.structured { // list, resource, prompt: the one array
		res.Content = c.content.raw
		res.Changed = c.content.differs()
		return res
	}
	res.Content = c.content.raw
	res.StructuredContent = nil
	if c.sc.present {
		res.StructuredContent = c.sc.raw
	}
	res.Changed = c.content.differs() || c.sc.differs()
	return res
}

// removedBy records policy in by for the member of each element of the JSON array
// before that no element of after has ("" for an element without a string member).
func removedBy(by map[string]string, before, after []byte, member, policy string) map[string]string {
	var was, is []json.RawMessage
	_ = json.Unmarshal(before, &was)
	_ = json.Unmarshal(after, &is)
	kept := make(map[string]bool, len(is))
	for _, e := range is {
		n, _ := memberString(e, member)
		kept[n] = true
	}
	for _, e := range was {
		if n, _ := memberString(e, member); !kept[n] {
			if by == nil {
				by = map[string]string{}
			}
			by[n] = policy
		}
	}
	return by
}

// Acts reports whether any policy of the set runs in phase (decided at load time;
// docs/policies.md#phases). A caller may skip preparing a phase no policy acts in.
func (s *Set) Acts(phase ctxapi.Phase) bool {
	if s.layers != nil {
		return s.layers.global.Acts(phase) || s.layers.tenant.Acts(phase)
	}
	for i := range s.policies {
		if s.policies[i].ActsIn(phase) {
			return true
		}
	}
	return false
}

// Phases returns the phases the named policy file runs in, sorted, and the phase
// names it compares ctx.phase with; ok is false when the set has no such file.
func (s *Set) Phases(file string) (acts, compared []ctxapi.Phase, ok bool) {
	for i := range s.policies {
		if p := &s.policies[i]; p.Name == file {
			return slices.Clone(p.Phases.Acts), slices.Clone(p.Phases.Compared), true
		}
	}
	return nil, nil, false
}

// runOne runs one policy under its deadline, then reads the changed ctx back.
func (s *Set) runOne(v *vm, c *callState, p policy) (changed bool, rej *Rejection) {
	tok := tokens.Add(1)
	s.pool.begin(v, tok, c.inputBytes(), s.timeout, c.done) // the watchdog enforces both
	v.ClearRejected()
	defer func() {
		s.pool.end(v)
		v.ClearRejected()
		if r := recover(); r != nil {
			v.broken.Store(true)
			changed, rej = false, classify(r)
		}
	}()
	fn, err := v.wrapper(s, p)
	if err != nil {
		v.broken.Store(true)
		return false, classify(err)
	}
	if _, err := fn(goja.Undefined()); err != nil {
		var ex *goja.Exception
		if !errors.As(err, &ex) || isUncatchable(err) {
			v.broken.Store(true)
			return false, classify(err)
		}
		// the policy threw: describe the value without running its toString
		out, err := v.Explain(goja.Undefined(), ex.Value())
		o, ok := out.(*goja.Object)
		if err != nil || !ok {
			v.broken.Store(true)
			return false, classify(err)
		}
		rej := &Rejection{Code: vocab.ReasonPolicyThrow, Message: clientText(o.Get("0").String())}
		if rej.ErrorClass = o.Get("1").String(); rej.ErrorClass != "" {
			rej.Line, rej.Column = policyast.ErrorPosition(o.Get("2").String(), p.Name, policyast.PrefixLen)
		}
		return false, rej
	}
	if rej := v.unhandledRejection(); rej != nil {
		return false, rej
	}
	changed, rej = v.readBack(c, p.ParamsRO)
	if rej == nil {
		rej = v.unhandledRejection() // a toJSON run by the read-back may reject a promise too
	}
	return changed, rej
}

// wrapper returns the policy's function on this runtime, binding its wrapper once per
// runtime and policy set (no policy code runs; each call gets a fresh scope, and the
// function, which a sloppy policy reaches as arguments.callee, is frozen).
func (v *vm) wrapper(s *Set, p policy) (goja.Callable, error) {
	if v.fnSet != s {
		v.fnSet, v.fns = s, make(map[*goja.Program]goja.Callable, len(s.policies))
	}
	if fn, ok := v.fns[p.Program]; ok {
		return fn, nil
	}
	wv, err := v.rt.RunProgram(p.Program)
	if err != nil {
		return nil, err
	}
	if _, ok := goja.AssertFunction(wv); !ok {
		return nil, errors.New("gate: policy did not compile to a function")
	}
	fv, err := v.Bind(goja.Undefined(), wv, v.b.ctx)
	if err != nil {
		return nil, err
	}
	fn, ok := goja.AssertFunction(fv)
	if !ok {
		return nil, errors.New("gate: policy wrapper did not return a function")
	}
	// the function outlives the call and a sloppy policy reaches it (arguments.callee):
	// frozen with its prototype, it cannot carry a value to the next call
	if _, err := v.DeepFreeze(goja.Undefined(), fv); err != nil {
		return nil, err
	}
	v.fns[p.Program] = fn
	return fn, nil
}

// isUncatchable reports whether err stopped the runtime rather than being thrown by the
// policy (an interrupt or the stack limit): the runtime is not reused.
func isUncatchable(err error) bool {
	var ie *goja.InterruptedError
	var so *goja.StackOverflowError
	return errors.As(err, &ie) || errors.As(err, &so)
}

// unhandledRejection turns the first promise still rejected without a handler once the
// policy and its jobs have run into policy_throw, its reason described like a throw.
// A promise handled later in the same run (`p.catch(...)` after the rejection) is not
// counted; an async policy that needs its result must still finish within the run.
func (v *vm) unhandledRejection() *Rejection {
	if len(v.Rejected) == 0 {
		return nil
	}
	reason := v.Rejected[0].Result()
	v.ClearRejected()
	if reason == nil {
		reason = goja.Undefined()
	}
	msg, err := v.Describe(goja.Undefined(), reason)
	if err != nil {
		panic(err) // classified by runOne's recover
	}
	return &Rejection{Code: vocab.ReasonPolicyThrow, Message: clientText(msg.String())}
}

// inputBytes is the size of the JSON the policies of this phase start from; the heap
// watchdog scales a policy's allocation budget with it.
func (c *callState) inputBytes() int {
	return len(c.params.raw) + len(c.content.raw) + len(c.sc.raw)
}

// classify turns a run error or a recovered panic into a rejection without running JS:
// thrown values are never converted with Exception.Error (it calls toString).
func classify(r any) *Rejection {
	var ie *goja.InterruptedError
	var so *goja.StackOverflowError
	var ex *goja.Exception
	err, _ := r.(error)
	switch {
	case err != nil && errors.As(err, &ie):
		if why, ok := ie.Value().(*interruptReason); ok {
			return &Rejection{Code: why.code, Message: why.msg}
		}
		return &Rejection{Code: vocab.ReasonPolicyTimeout, Message: errTimeout.msg}
	case err != nil && errors.As(err, &so):
		return &Rejection{Code: vocab.ReasonPolicyStackLimit, Message: "policy exceeded the call stack limit"}
	case err != nil && errors.As(err, &ex):
		if v := ex.Value(); v != nil && goja.IsString(v) {
			return &Rejection{Code: vocab.ReasonPolicyThrow, Message: clientText(v.String())}
		}
		return &Rejection{Code: vocab.ReasonPolicyThrow, Message: "policy threw a value that could not be described"}
	case err != nil && errors.Is(err, errCancelled):
		return &Rejection{Code: vocab.ReasonPolicyTimeout, Message: errCancelled.msg}
	}
	if v, ok := r.(goja.Value); ok && goja.IsString(v) {
		return &Rejection{Code: vocab.ReasonPolicyThrow, Message: clientText(v.String())}
	}
	return &Rejection{Code: vocab.ReasonPolicyError, Message: "policy failed"}
}
