package pipeline

import (
	"context"
	"encoding/json"
	"maps"
	"sync"
	"time"

	"github.com/mcpgate/mcpgate/ctxapi"
	"github.com/mcpgate/mcpgate/gate"
	"github.com/mcpgate/mcpgate/internal/audit"
	"github.com/mcpgate/mcpgate/internal/capture"
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
}

// shadowRun starts the shadow of this call; nil (every method a no-op) without one.
func (r *run) shadowRun() *shadow {
	if r.p.Shadow == nil {
		return nil
	}
	s := &shadow{r: r, set: r.p.Shadow.Current()}
	r.shadow = s
	return s
}

func (s *shadow) actsInPost() bool { return s != nil && s.set.Acts(ctxapi.PhasePost) }

// startPre runs the candidate's pre phase on its own goroutine (its own runtime pool),
// beside the live pre phase and the upstream call, on a copy of the same inputs; join
// waits for it. Without a shadow it does nothing.
func (s *shadow) startPre(ctx context.Context, call *ctxapi.Call) {
	if s == nil {
		return
	}
	c := *call
	ctx = context.WithoutCancel(ctx) // the live call ending must not cut the shadow short
	s.preDone = make(chan struct{})
	go func() {
		defer close(s.preDone)
		start := time.Now()
		s.pre = s.runSet(ctx, &c)
		s.preTook = time.Since(start)
	}()
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
	out := &audit.Shadow{ActionTaken: vocab.Pass, PolicySetHash: s.set.Hash}
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
	}
	out.Differs = out.ActionTaken != live.action
	return out
}

func (s *shadow) rejection() *gate.Rejection {
	if s.pre.Reject != nil {
		return s.pre.Reject
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
	case sh != nil && final:
		// The live reply goes out first: the shadow's part of the record (its pre
		// phase still running, its post phase) is completed after it, off the call's
		// goroutine; nothing on the live path touches the record past this point.
		r.recording, r.rec.end = true, time.Now()
		r.p.shadows.Add(1)
		go func() {
			defer r.p.shadows.Done()
			sh.join()
			if sh.postCall != nil {
				sh.runPost(r.ctx, sh.postCall)
			}
			r.rec.setShadow(sh.decide(r.rec.state, r.filterAction))
			r.rec.emit(r.p)
		}()
	case sh != nil:
		// An early record (audit output off) is written before the upstream call,
		// which must not wait: it gets the shadow's pre phase only if that is done.
		select {
		case <-sh.preDone:
			sh.join()
			r.rec.setShadow(sh.decide(r.rec.state, r.filterAction))
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
