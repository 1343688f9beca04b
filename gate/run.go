package gate

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"
	"unicode/utf8"

	"github.com/dop251/goja"

	"github.com/mcpgate/mcpgate/ctxapi"
	"github.com/mcpgate/mcpgate/engine"
	"github.com/mcpgate/mcpgate/internal/vocab"
)

// Warning is one ctx.warn(reason). Reason is policy text that may quote call data: it
// goes to the client or a debug view only, never to a log or an audit record.
type Warning struct {
	Policy string
	Reason string
}

// slot is one ctx value the policies can change: raw JSON until a policy reads it,
// then a native JS value read back after every policy.
type slot struct {
	name     string
	raw      []byte // current value; the input bytes until something really changes
	present  bool
	readOnly bool

	mat     bool       // js holds the value
	js      goja.Value // materialised value
	last    string     // JSON.stringify(js) at the last read-back
	hasLast bool
	touched bool // read or written by the running policy
	changed bool // changed by the running policy (Go-side helper)
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
	shapeErr   string // a bad shape no read-back can see (ctx.response replaced or deleted)
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
	start := time.Now()
	defer func() { res.Elapsed = time.Since(start) }()
	res.Params = call.Params
	if call.Response != nil {
		res.Content = call.Response.Content
		res.StructuredContent = call.Response.StructuredContent
	}
	if call.Phase != ctxapi.PhasePre && call.Phase != ctxapi.PhasePost && s.Acts(call.Phase) {
		res.Reject = &Rejection{Code: vocab.ReasonBadCtxShape, Message: "unknown phase"}
		return res
	}
	if !s.Acts(call.Phase) {
		return res // no policy acts in this phase: no runtime, no decoding
	}
	if call.Phase == ctxapi.PhasePost && call.Response == nil {
		res.Reject = &Rejection{Code: vocab.ReasonBadCtxShape, Message: "post phase without a response"}
		return res
	}
	v, err := s.pool.get(ctx.Done())
	if err != nil {
		res.Reject = &Rejection{Code: vocab.ReasonPolicyError, Message: "no policy runtime available"}
		if errors.Is(err, errCancelled) {
			res.Reject.Code = vocab.ReasonPolicyTimeout
			res.Reject.Message = errCancelled.msg
		}
		return res
	}
	defer s.pool.put(v)

	c := &callState{set: s, call: call, phase: call.Phase}
	params := []byte(call.Params)
	if len(params) == 0 || string(params) == "null" {
		params = []byte("{}")
	}
	c.params = slot{name: "params", raw: params, present: true, readOnly: call.Phase == ctxapi.PhasePost}
	if call.Phase == ctxapi.PhasePost {
		c.content = slot{name: "response.content", raw: call.Response.Content, present: len(call.Response.Content) > 0}
		c.sc = slot{name: "response.structuredContent", raw: call.Response.StructuredContent,
			present: len(call.Response.StructuredContent) > 0 && string(call.Response.StructuredContent) != "null"}
	}
	v.cur = c
	defer func() { v.cur = nil }()

	var stopCancel func() bool
	if ctx.Done() != nil {
		stopCancel = context.AfterFunc(ctx, func() {
			v.mu.Lock()
			tok := v.token
			v.mu.Unlock()
			v.interruptIf(tok, errCancelled)
		})
		defer stopCancel()
	}

	action := vocab.Pass
	anyChange := false
	for _, p := range s.policies {
		if !p.actsIn(call.Phase) {
			continue
		}
		c.policy = p.name
		c.warned, c.helperRung, c.shapeErr = false, vocab.Pass, ""
		changed, rej := s.runOne(v, c, p)
		if rej != nil {
			rej.Policy = p.name
			res.Reject = rej
			res.Acted = append(res.Acted, p.name)
			res.Warnings = c.warnings
			return res
		}
		if changed || c.warned {
			res.Acted = append(res.Acted, p.name)
		}
		if c.warned {
			action = vocab.Strongest(action, vocab.Warn)
		}
		if changed {
			anyChange = true
			a := c.helperRung
			if a == vocab.Pass && call.Phase == ctxapi.PhasePost {
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
	if call.Phase == ctxapi.PhasePre {
		res.Params = c.params.raw
		res.Changed = !jsonEqual(res.Params, params)
		return res
	}
	res.Content = c.content.raw
	if c.sc.present {
		res.StructuredContent = c.sc.raw
	} else {
		res.StructuredContent = nil
	}
	res.Changed = !jsonEqual(res.Content, call.Response.Content) ||
		(res.StructuredContent == nil) != (len(call.Response.StructuredContent) == 0 || string(call.Response.StructuredContent) == "null") ||
		(res.StructuredContent != nil && !jsonEqual(res.StructuredContent, call.Response.StructuredContent))
	return res
}

// Acts reports whether any policy of the set runs in phase (decided at load time;
// docs/policies.md#phases). A caller may skip preparing a phase no policy acts in.
func (s *Set) Acts(phase ctxapi.Phase) bool {
	for i := range s.policies {
		if s.policies[i].actsIn(phase) {
			return true
		}
	}
	return false
}

// Phases returns the phases the named policy file runs in, sorted, and the phase
// names it compares ctx.phase with; ok is false when the set has no such file.
func (s *Set) Phases(file string) (acts, compared []ctxapi.Phase, ok bool) {
	for i := range s.policies {
		if p := &s.policies[i]; p.name == file {
			return slices.Clone(p.phases.acts), slices.Clone(p.phases.compared), true
		}
	}
	return nil, nil, false
}

// runOne runs one policy under its deadline, then reads the changed ctx back.
func (s *Set) runOne(v *vm, c *callState, p policy) (changed bool, rej *Rejection) {
	tok := tokens.Add(1)
	s.pool.begin(v, tok, c.inputBytes())
	v.clearRejected()
	timer := time.AfterFunc(s.timeout, func() { v.interruptIf(tok, errTimeout) })
	defer func() {
		timer.Stop()
		s.pool.end(v)
		v.clearRejected()
		if r := recover(); r != nil {
			v.broken.Store(true)
			changed, rej = false, classify(r)
		}
	}()
	fv, err := v.wrapper(s, p)
	if err != nil {
		v.broken.Store(true)
		return false, classify(err)
	}
	out, err := v.runner(goja.Undefined(), fv, v.b.ctx)
	if err != nil {
		v.broken.Store(true)
		return false, classify(err)
	}
	if o, ok := out.(*goja.Object); ok { // [message, thrown]: the policy threw
		rej := &Rejection{Code: vocab.ReasonPolicyThrow, Message: truncate(o.Get("0").String())}
		if rej.ErrorClass = nativeErrorClass(v, o.Get("1")); rej.ErrorClass != "" {
			rej.Line, rej.Column = errorPosition(o.Get("1").(*goja.Object), p.name)
		}
		return false, rej
	}
	if rej := v.unhandledRejection(); rej != nil {
		return false, rej
	}
	changed, rej = v.readBack(c)
	if rej == nil {
		rej = v.unhandledRejection() // a toJSON run by the read-back may reject a promise too
	}
	return changed, rej
}

// wrapper returns the policy's wrapper function on this runtime, evaluating its program
// once per runtime and policy set (no policy code runs; the function is unreachable
// from JavaScript, and each call gets a fresh scope).
func (v *vm) wrapper(s *Set, p policy) (goja.Value, error) {
	if v.fnSet != s {
		v.fnSet, v.fns = s, make(map[*goja.Program]goja.Value, len(s.policies))
	}
	if fv, ok := v.fns[p.prg]; ok {
		return fv, nil
	}
	fv, err := v.rt.RunProgram(p.prg)
	if err != nil {
		return nil, err
	}
	if _, ok := goja.AssertFunction(fv); !ok {
		return nil, errors.New("gate: policy did not compile to a function")
	}
	v.fns[p.prg] = fv
	return fv, nil
}

// unhandledRejection turns the first promise still rejected without a handler once the
// policy and its jobs have run into policy_throw, its reason described like a throw.
// A promise handled later in the same run (`p.catch(...)` after the rejection) is not
// counted; an async policy that needs its result must still finish within the run.
func (v *vm) unhandledRejection() *Rejection {
	if len(v.rejected) == 0 {
		return nil
	}
	reason := v.rejected[0].Result()
	v.clearRejected()
	if reason == nil {
		reason = goja.Undefined()
	}
	msg, err := v.describe(goja.Undefined(), reason)
	if err != nil {
		panic(err) // classified by runOne's recover
	}
	return &Rejection{Code: vocab.ReasonPolicyThrow, Message: truncate(msg.String())}
}

func (v *vm) clearRejected() {
	clear(v.rejected)
	v.rejected = v.rejected[:0]
}

// inputBytes is the size of the JSON the policies of this phase start from; the heap
// watchdog scales a policy's allocation budget with it.
func (c *callState) inputBytes() int {
	return len(c.params.raw) + len(c.content.raw) + len(c.sc.raw)
}

// readBack stringifies each value the policy touched (still under the deadline),
// validates its shape and detects changes by JSON equality.
func (v *vm) readBack(c *callState) (bool, *Rejection) {
	if c.shapeErr != "" {
		return false, &Rejection{Code: vocab.ReasonBadCtxShape, Message: c.shapeErr}
	}
	changed := false
	for _, s := range []*slot{&c.params, &c.content, &c.sc} {
		if s.changed {
			changed = true
			s.changed = false
		}
		if !s.touched {
			continue
		}
		s.touched = false
		if s.readOnly {
			continue
		}
		if msg := v.checkShape(c, s); msg != "" {
			return false, &Rejection{Code: vocab.ReasonBadCtxShape, Message: msg}
		}
		if !s.present {
			if s.raw != nil {
				changed = true
				s.raw = nil
			}
			continue
		}
		out, err := v.stringify(goja.Undefined(), s.js)
		if err != nil {
			panic(err) // classified by runOne's recover
		}
		text := out.String()
		switch {
		case s.hasLast && text == s.last:
		case !s.hasLast && (text == string(s.raw) || jsonEqual([]byte(text), s.raw)):
		default:
			s.raw = []byte(text)
			changed = true
		}
		s.last, s.hasLast = text, true
	}
	return changed, nil
}

// checkShape validates a touched value: params an object; content an array of objects
// each with a string type; structuredContent an object, or undefined/null for absent.
func (v *vm) checkShape(c *callState, s *slot) string {
	o, isObj := s.js.(*goja.Object)
	switch s {
	case &c.params:
		if !isObj || o.ClassName() == "Array" || o.ClassName() == "Function" {
			return "ctx.params must be an object"
		}
	case &c.content:
		if !isObj || o.ClassName() != "Array" {
			return "ctx.response.content must be an array"
		}
		n := o.Get("length").ToInteger()
		for i := int64(0); i < n; i++ {
			b, ok := o.Get(fmt.Sprint(i)).(*goja.Object)
			if !ok || b.ClassName() == "Array" || b.ClassName() == "Function" {
				return fmt.Sprintf("ctx.response.content[%d] must be an object", i)
			}
			if t := b.Get("type"); t == nil || !goja.IsString(t) {
				return fmt.Sprintf("ctx.response.content[%d].type must be a string", i)
			}
		}
	case &c.sc:
		if s.js == nil || goja.IsUndefined(s.js) || goja.IsNull(s.js) {
			s.present = false
			return ""
		}
		if !isObj || o.ClassName() == "Array" || o.ClassName() == "Function" {
			return "ctx.response.structuredContent must be an object"
		}
		s.present = true
	}
	return ""
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
			return &Rejection{Code: vocab.ReasonPolicyThrow, Message: truncate(v.String())}
		}
		return &Rejection{Code: vocab.ReasonPolicyThrow, Message: "policy threw a value that could not be described"}
	case err != nil && errors.Is(err, errCancelled):
		return &Rejection{Code: vocab.ReasonPolicyTimeout, Message: errCancelled.msg}
	}
	if v, ok := r.(goja.Value); ok && goja.IsString(v) {
		return &Rejection{Code: vocab.ReasonPolicyThrow, Message: truncate(v.String())}
	}
	return &Rejection{Code: vocab.ReasonPolicyError, Message: "policy failed"}
}

// truncate caps a client message at 1 KiB of valid UTF-8.
func truncate(s string) string {
	const max = 1024
	if len(s) > max {
		s = s[:max]
		for !utf8.ValidString(s) {
			s = s[:len(s)-1]
		}
		s += "…"
	}
	return s
}
