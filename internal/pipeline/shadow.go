package pipeline

import (
	"context"
	"encoding/json"
	"maps"
	"slices"
	"sync"
	"time"

	"github.com/mcpgate/mcpgate/ctxapi"
	"github.com/mcpgate/mcpgate/engine"
	"github.com/mcpgate/mcpgate/gate"
	"github.com/mcpgate/mcpgate/internal/audit"
	"github.com/mcpgate/mcpgate/internal/capture"
	"github.com/mcpgate/mcpgate/internal/guardrail"
	"github.com/mcpgate/mcpgate/vocab"
)

// shadow is one call's run of the --shadow candidate set: the same inputs as the live
// set, its own results, nothing it does reaches the client or the server.
type shadow struct {
	r         *run
	set       *gate.Set
	pre, post gate.Result
	postRan   bool
	postCall  *ctxapi.Call // the post phase to run once the live reply is out; nil for none

	preDone chan struct{} // closed when the pre phase, run beside the live call, ends
	preTook time.Duration

	// guards are the candidate's own guardrails (DIR/guardrails.json); nil: it shares
	// the live ones, whose outcome is then its own (docs/decisions.md#shadow-guardrails).
	guards       *guardrail.Set
	calls        []audit.GuardrailCall // the candidate's callouts, for the record's shadow part
	guardStop    *gate.Rejection       // a guardrail stopped the call: the candidate's own, or the live one shared
	guardRedact  bool                  // a guardrail replaced a result's texts: the candidate's own, or the live one shared
	postRaw      json.RawMessage       // own guardrails: the result as the output rules left it; nil: no post phase
	postFindings []engine.Finding      // the output rules' findings over postRaw

	trial     *Trial // the bundle trial this run is part of; nil for --shadow
	policyRan bool   // the candidate's pre policies ran: its decision is its policies'
}

// shadowRun starts the shadow of this call; nil (every method a no-op) without one.
func (r *run) shadowRun() *shadow {
	if r.p.Shadow == nil {
		return r.trialRun()
	}
	s := &shadow{r: r, set: r.p.Shadow.Current(), guards: r.p.ShadowGuardrails}
	r.shadow = s
	return s
}

// trialRun starts the shadow of this call on the running trial's set, layered with
// the caller's tenant layer as the live set is; nil without a trial, or for a call
// on a set of its own (Call.Policies), which has no live global set to compare.
func (r *run) trialRun() *shadow {
	if r.c.Policies != nil || r.p.Gate == nil {
		return nil
	}
	t := r.p.takeTrial()
	if t == nil {
		return nil
	}
	set := t.Set
	if tg := r.p.Tenants[r.c.User.Tenant]; tg != nil && r.c.User.Tenant != "" {
		set = gate.Layered(set, tg.Current(), r.c.User.Tenant)
	}
	s := &shadow{r: r, set: set, trial: t}
	r.shadow = s
	return s
}

// observe hands a trial's decision pair to its Observe, when the candidate's
// policies ran: a call stopped before them was not judged by either set.
func (s *shadow) observe(d *audit.Shadow) {
	if s.trial == nil || s.trial.Observe == nil || d == nil || !s.policyRan {
		return
	}
	r := s.r
	s.trial.Observe(TrialDecision{EventID: r.rec.r.EventID, Tool: r.tool, Live: r.rec.state.action,
		LivePolicy: r.rec.r.Policy, Shadow: *d})
}

// release ends this call's use of a trial's set; once only.
func (s *shadow) release() {
	if s != nil && s.trial != nil {
		s.trial.users.Done()
		s.trial = nil
	}
}

// ownGuardrails reports whether the candidate has its own guardrails.
func (s *shadow) ownGuardrails() bool { return s != nil && s.guards != nil }

func (s *shadow) actsInPost() bool { return s != nil && s.set.Acts(ctxapi.PhasePost) }

// startPre runs the candidate's pre phase on its own goroutine (its own runtime pool),
// beside the live pre phase and the upstream call, on a copy of the same inputs; join
// waits for it. Without a shadow it does nothing.
func (s *shadow) startPre(ctx context.Context, call *ctxapi.Call) {
	if s == nil || s.preDone != nil {
		return
	}
	c := *call
	ctx = context.WithoutCancel(ctx) // the live call ending must not cut the shadow short
	s.preDone, s.policyRan = make(chan struct{}), true
	go func() {
		defer close(s.preDone)
		start := time.Now()
		s.pre = s.runSet(ctx, &c)
		s.preTook = time.Since(start)
	}()
}

// startOwnPre starts the candidate's pre phase when it has its own guardrails: before
// the live guardrails, so that it runs even when they stop the call. Its guardrails
// judge the arguments the live ones judge (after the input rules, with their
// findings); then its pre policies run with its guardrails' findings, on the arguments
// its interventions left, and its authorization runs again on arguments its policies
// rewrote. Nothing it does reaches the live call.
func (s *shadow) startOwnPre(r *run, findings []engine.Finding) {
	if !s.ownGuardrails() {
		return
	}
	call := r.policyCall(ctxapi.PhasePre, nil, findings)
	var content *guardrail.Content
	var texts []guardrail.Text
	if s.guards.Content(call.Method) {
		var err error
		if texts, err = guardrail.Leaves(r.args, false); err == nil {
			content = r.guardContent(guardPre, texts, findings)
		}
	}
	var access *guardrail.Access
	if s.guards.Authorizes(call.Method) {
		access = r.guardAccess(guardPre)
	}
	ctx := context.WithoutCancel(r.ctx) // the live call ending must not cut the shadow short
	s.preDone = make(chan struct{})
	go func() {
		defer close(s.preDone)
		start := time.Now()
		s.pre = s.ownPre(ctx, call, content, texts, access)
		s.preTook = time.Since(start)
	}()
}

func (s *shadow) ownPre(ctx context.Context, call *ctxapi.Call, content *guardrail.Content, texts []guardrail.Text, access *guardrail.Access) gate.Result {
	outs := s.callGuardrails(ctx, guardPre, content, access)
	if s.guardStop != nil {
		return gate.Result{}
	}
	var rewritten json.RawMessage
	if content != nil {
		if args, ok := s.intervene(call.Params, texts, outs, false); ok {
			call.Params, rewritten = args, args
		}
	}
	call.Findings = withFindings(call.Findings, findingsOf(outs))
	res := s.runSet(ctx, call)
	if res.Reject == nil && res.Changed {
		rewritten = res.Params
	}
	if access != nil && rewritten != nil { // what a mutation produced is what gets authorized
		a := *access
		a.Phase, a.Arguments = guardPreRewritten, rewritten
		s.callGuardrails(ctx, guardPreRewritten, nil, &a)
	}
	return res
}

// callGuardrails runs one phase of the candidate's guardrails, keeps each callout for
// the record's shadow part, and notes the first that stops the call (a block or a
// deny first, else a failure under fail mode closed, in guardrail name order).
func (s *shadow) callGuardrails(ctx context.Context, phase string, content *guardrail.Content, access *guardrail.Access) []guardrail.Outcome {
	outs := s.guards.Run(ctx, content, access)
	for _, o := range outs {
		s.calls = append(s.calls, guardrailEntry(o, phase))
	}
	stop := slices.IndexFunc(outs, func(o guardrail.Outcome) bool { return o.Verdict == guardrail.Block || o.Verdict == guardrail.Deny })
	if stop < 0 {
		stop = slices.IndexFunc(outs, guardrail.Outcome.Stops)
	}
	if stop >= 0 && s.guardStop == nil {
		code, _ := stopReason(outs[stop])
		s.guardStop = &gate.Rejection{Code: code, Policy: guardrail.Source(outs[stop].Name)}
	}
	return outs
}

// intervene applies the candidate's interventions to doc, noting the texts each
// replaced in its callout's entry.
func (s *shadow) intervene(doc json.RawMessage, texts []guardrail.Text, outs []guardrail.Outcome, sanitize bool) (json.RawMessage, bool) {
	set, counts := replacements(texts, outs, sanitize)
	if len(set) == 0 {
		return doc, false
	}
	out, err := guardrail.Replace(doc, set)
	if err != nil {
		return doc, false
	}
	for i := len(s.calls) - 1; i >= 0; i-- { // this phase's entries are the last
		if n := counts[s.calls[i].Name]; n > 0 && s.calls[i].Replaced == 0 {
			s.calls[i].Replaced = n
			delete(counts, s.calls[i].Name)
		}
	}
	return out, true
}

// notePost keeps, when the candidate has its own guardrails, the result as the
// output rules left it and their findings: its post phase runs on them once the live
// reply is out, whatever the live guardrails did to the result.
func (s *shadow) notePost(result json.RawMessage, findings []engine.Finding) {
	if s.ownGuardrails() {
		s.postRaw, s.postFindings = append(json.RawMessage(nil), result...), findings
	}
}

// ownPost runs the candidate's post phase with its own guardrails, after its pre
// phase and off the live path: its content guardrails over the result, then its post
// policies on what their interventions left, with their findings. Timed as
// stage_ms.shadow_post.
func (s *shadow) ownPost(ctx context.Context) {
	if s.pre.Reject != nil || s.guardStop != nil {
		return // judged on its pre phase alone
	}
	r := s.r
	ctx = context.WithoutCancel(ctx)
	start := time.Now()
	defer r.rec.stage(vocab.StageShadowPost, start)
	raw, method := s.postRaw, r.rec.r.Method
	var outside []engine.Finding
	if s.guards.Content(method) {
		if texts, err := guardrail.Leaves(raw, true); err == nil {
			outs := s.callGuardrails(ctx, guardPost, r.guardContent(guardPost, texts, s.postFindings), nil)
			if s.guardStop != nil {
				return
			}
			var changed bool
			raw, changed = s.intervene(raw, texts, outs, true)
			s.guardRedact = s.guardRedact || changed // a result's replacement is redact, as live
			outside = findingsOf(outs)
		}
	}
	if !s.set.Acts(ctxapi.PhasePost) {
		return
	}
	content, structured, ok := splitResult(raw)
	if !ok {
		return
	}
	call := r.policyCall(ctxapi.PhasePost, &ctxapi.Response{Content: content, StructuredContent: structured}, withFindings(s.postFindings, outside))
	s.post, s.postRan = s.runSet(ctx, call), true
	if s.post.Reject != nil {
		r.policyError(s.post.Reject, ctxapi.PhasePost, true)
	}
}

// shareStop notes a live guardrail's stop for a candidate without guardrails of its
// own, which shares the live ones; a stop on arguments the live pre policies rewrote
// is theirs, not the guardrails', and is not shared.
func (s *shadow) shareStop(code vocab.Reason, name, phase string) {
	if s != nil && s.guards == nil && phase != guardPreRewritten && s.guardStop == nil {
		s.guardStop = &gate.Rejection{Code: code, Policy: name}
	}
}

// shareRedact notes a live guardrail's intervention for a candidate that shares them.
func (s *shadow) shareRedact() {
	if s != nil && s.guards == nil {
		s.guardRedact = true
	}
}

// deferPost notes the candidate's post phase, run on a copy of the live inputs once
// the live reply is out (finish): a slow candidate never delays the client.
func (s *shadow) deferPost(call *ctxapi.Call) {
	if s == nil {
		return
	}
	c := *call
	if call.Response != nil {
		resp := *call.Response
		c.Response = &resp
	}
	s.postCall = &c
}

// join waits for the pre phase and records it: its time as stage_ms.shadow_pre, a
// fault on the operator's log. It runs on the call's goroutine.
func (s *shadow) join() {
	if s == nil || s.preDone == nil {
		return
	}
	<-s.preDone
	s.preDone = nil
	s.r.rec.r.StageMS[vocab.StageShadowPre] = ms(s.preTook)
	if s.pre.Reject != nil {
		s.r.policyError(s.pre.Reject, ctxapi.PhasePre, true)
	}
}

// runPost runs the candidate's post phase after the pre phase, timed as
// stage_ms.shadow_post.
func (s *shadow) runPost(ctx context.Context, call *ctxapi.Call) {
	if s == nil {
		return
	}
	s.join()
	ctx = context.WithoutCancel(ctx)
	start := time.Now()
	s.post, s.postRan = s.runSet(ctx, call), true
	s.r.rec.stage(vocab.StageShadowPost, start)
	if s.post.Reject != nil {
		s.r.policyError(s.post.Reject, ctxapi.PhasePost, true)
	}
}

// runSet runs one phase of the candidate set. A panic or a policy fault stays in the
// shadow's own result.
func (s *shadow) runSet(ctx context.Context, call *ctxapi.Call) (res gate.Result) {
	defer func() {
		if r := recover(); r != nil {
			res = gate.Result{Reject: &gate.Rejection{Code: vocab.ReasonPolicyError, Message: "shadow policy set failed"}}
		}
	}()
	return s.set.Run(ctx, call)
}

// decide is the record's shadow field: the action the candidate set would have taken
// with the same output rules (filterAction), and whether it differs from the live one.
// A candidate that would have let a live pre-phase rejection through is judged on its
// pre phase alone: the server's answer to that call is unknown.
func (s *shadow) decide(live decisions, filterAction vocab.Action) *audit.Shadow {
	if s == nil {
		return nil
	}
	out := &audit.Shadow{ActionTaken: vocab.Pass, PolicySetHash: s.set.Hash, Guardrails: s.calls}
	switch rej := s.rejection(); {
	case rej != nil:
		out.ActionTaken, out.Reason, out.Policy = vocab.Block, rej.Code, rej.Policy
	default:
		if filterAction != "" {
			out.ActionTaken = filterAction
			if filterAction == vocab.Block {
				out.Reason = live.reason
			}
		}
		if len(s.pre.Warnings)+len(s.post.Warnings) > 0 {
			out.ActionTaken = vocab.Strongest(out.ActionTaken, vocab.Warn)
		}
		if s.post.Changed {
			out.ActionTaken = vocab.Strongest(out.ActionTaken, policyAction(s.post.Action))
		}
		if s.guardRedact {
			out.ActionTaken = vocab.Strongest(out.ActionTaken, vocab.Redact)
		}
	}
	out.Differs = out.ActionTaken != live.action
	return out
}

func (s *shadow) rejection() *gate.Rejection {
	if s.pre.Reject != nil {
		return s.pre.Reject
	}
	if s.guardStop != nil {
		return s.guardStop
	}
	if s.postRan {
		return s.post.Reject
	}
	return nil
}

// captureCall starts the --capture entry with the arguments as the client sent them.
func (r *run) captureCall() {
	if r.p.Capture == nil {
		return
	}
	r.capture = &capture.Entry{
		Tool: r.tool, ToolAccess: r.rec.toolAccess(), User: r.c.User,
		FilterOutput: r.filterOutput, Arguments: append(json.RawMessage(nil), r.args...),
	}
}

func (r *run) captureResult(result json.RawMessage) {
	if r.capture != nil {
		r.capture.Result = append(json.RawMessage(nil), result...)
	}
}

// finish emits the record, once, with the shadow's decision. With final it also
// hands the capture entry over, with the upstream's result and the recorded action
// (MCPGATE_AUDIT_OUTPUT=off emits the record before the upstream call).
func (r *run) finish(final bool) {
	switch sh := r.shadow; {
	case r.rec.emitted || r.recording:
		if final && sh != nil && sh.trial != nil { // emitted early: the pre phase may still run on the set
			done := sh.preDone
			go func() {
				if done != nil {
					<-done
				}
				sh.release()
			}()
		}
	case sh != nil && final:
		// The live reply goes out first: the shadow's part of the record (its pre
		// phase still running, its post phase) is completed after it, off the call's
		// goroutine; nothing on the live path touches the record past this point.
		r.recording, r.rec.end = true, time.Now()
		r.p.shadows.Add(1)
		go func() {
			defer r.p.shadows.Done()
			sh.join()
			switch {
			case sh.ownGuardrails():
				if sh.postRaw != nil {
					sh.ownPost(r.ctx)
				}
			case sh.postCall != nil:
				sh.runPost(r.ctx, sh.postCall)
			}
			d := sh.decide(r.rec.state, r.filterAction)
			sh.observe(d)
			r.rec.setShadow(d)
			r.rec.emit(r.p)
			sh.release() // after the record: EndTrial leaves none of the trial's pending
		}()
	case sh != nil:
		// An early record (audit output off) is written before the upstream call,
		// which must not wait: it gets the shadow's pre phase only if that is done.
		select {
		case <-sh.preDone:
			sh.join()
			d := sh.decide(r.rec.state, r.filterAction)
			sh.observe(d)
			r.rec.setShadow(d)
		default:
		}
		r.rec.emit(r.p)
	default:
		r.rec.emit(r.p)
	}
	if final && r.capture != nil {
		c := r.capture
		c.EventID, c.TS = r.rec.r.EventID, time.Now().UTC().Format(audit.TSLayout)
		c.ActionTaken, c.Outcome = r.rec.state.action, r.rec.state.outcome
		r.p.Capture.Capture(c)
	}
}

// Wait blocks until every record still waiting on a --shadow run is written; call it
// before closing the audit sinks.
func (p *Pipeline) Wait() {
	if p != nil {
		p.shadows.Wait()
	}
}

// Health counts policy errors per file since the process started. The zero value is
// ready; a nil *Health counts nothing. Safe for concurrent use.
type Health struct {
	mu   sync.Mutex
	errs map[string]uint64
}

func (h *Health) add(file string) {
	if h == nil {
		return
	}
	h.mu.Lock()
	if h.errs == nil {
		h.errs = map[string]uint64{}
	}
	h.errs[file]++
	h.mu.Unlock()
}

// Errors returns a copy of the error count per policy file.
func (h *Health) Errors() map[string]uint64 {
	if h == nil {
		return map[string]uint64{}
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	out := maps.Clone(h.errs)
	if out == nil {
		out = map[string]uint64{}
	}
	return out
}
