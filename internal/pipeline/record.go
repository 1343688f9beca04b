package pipeline

import (
	"context"
	"maps"
	"math"
	"slices"
	"sync"
	"time"

	"github.com/mcpgate/mcpgate/engine"
	"github.com/mcpgate/mcpgate/gate"
	"github.com/mcpgate/mcpgate/internal/argcheck"
	"github.com/mcpgate/mcpgate/internal/audit"
	"github.com/mcpgate/mcpgate/internal/methods"
	"github.com/mcpgate/mcpgate/vocab"
)

// record is the one audit record of a call as the pipeline fills it in. It only
// records: every decision is made in pipeline.go, and each method here sets or adds
// to fields. emit sends it exactly once (docs/decisions.md#fail-modes).
//
// The decisions later steps consult (action, reason, outcome, findings, fail mode,
// rewritten params) live in state, the run's own; r is output only, and emit writes
// them into it.
type record struct {
	start   time.Time
	r       audit.Record
	state   decisions
	emitted bool
	end     time.Time // when the live reply was ready; zero: when emitted
	hold    *recordHold
}

// recordHold keeps the records of the calls handled under one HoldRecords context
// from their sinks until the front has written the reply.
type recordHold struct {
	mu       sync.Mutex
	released bool
	held     []func()
}

type holdKey struct{}

// HoldRecords returns a context under which the audit records of the calls Handle
// answers are built when they are decided, as always, but handed to Pipeline.Audit
// only when release is called: a front calls it once the reply is written, so that
// encoding and writing the record never compete with the reply
// (docs/decisions.md#records-after-reply). Each record still goes out exactly once;
// one decided after release (a shadow's) goes out at once. release may be called
// more than once; a front defers it so that every path releases.
func HoldRecords(ctx context.Context) (context.Context, func()) {
	h := &recordHold{}
	return context.WithValue(ctx, holdKey{}, h), func() {
		h.mu.Lock()
		held := h.held
		h.released, h.held = true, nil
		h.mu.Unlock()
		for _, f := range held {
			f()
		}
	}
}

func holdOf(ctx context.Context) *recordHold {
	h, _ := ctx.Value(holdKey{}).(*recordHold)
	return h
}

// decisions is what the run has decided so far, read by its later steps.
type decisions struct {
	action          vocab.Action  // the ladder's rung; starts at pass
	reason          vocab.Reason  // the reason code; "" while none
	outcome         vocab.Outcome // starts ok
	findings        int           // output rule findings, the upstream's and a post policy's
	failMode        bool          // a fail mode decided the call
	paramsRewritten bool          // a pre policy rewrote the arguments
}

func newRecord(p *Pipeline, c Call) *record {
	return &record{start: time.Now(), r: audit.Record{
		Kind:                p.Kind,
		Decision:            engine.Allow.String(),
		EventID:             newEventID(),
		Method:              methods.ToolsCall,
		RuleIDs:             []string{},
		HighestSeverity:     engine.SeverityNone.String(),
		AgentOrigin:         p.Origin,
		GuardrailsTriggered: []string{},
		Filter:              vocab.FilterSkipped,
		StageMS:             map[vocab.Stage]float64{},
		ClientInfo:          c.ClientInfo,
		ProtocolVersion:     c.ProtocolVersion,
		Server:              c.Server,
		Caller:              &audit.Caller{UserID: c.User.UserID, CallerID: c.User.CallerID, CallerClass: c.User.CallerClass, Scopes: c.User.Scopes},
	}, state: decisions{action: vocab.Pass, outcome: vocab.OutcomeOK}}
}

func (t *record) eventID() string    { return t.r.EventID }
func (t *record) toolAccess() string { return t.r.ToolAccess }

func (t *record) setPolicySet(s *gate.Set, tenant string) {
	t.r.PolicyGen, t.r.PolicySetHash, t.r.PolicyRevision = s.Generation, s.Hash, s.Revision
	t.r.TenantPolicySetHash, t.r.TenantPolicyRevision = s.TenantHash, s.TenantRevision
	if t.r.Caller != nil {
		t.r.Caller.Tenant = tenant
	}
}

func (t *record) setTool(name, access string, listed bool) {
	t.r.Tool, t.r.ToolAccess, t.r.Listed = name, access, listed
}

func (t *record) setOutcome(o vocab.Outcome) { t.state.outcome = o }

func (t *record) setMethod(m string) { t.r.Method = m }

func (t *record) setReason(r vocab.Reason) { t.state.reason = r }

func (t *record) setPolicy(file string) { t.r.Policy = file }

func (t *record) setPhase(phase string) { t.r.Phase = phase }

func (t *record) setShadow(s *audit.Shadow) { t.r.Shadow = s }

func (t *record) setParamsRewritten() { t.state.paramsRewritten = true }
func (t *record) setInputRules(in engine.Report) {
	t.r.InputRuleIDs = in.RuleIDs()
	if ac := t.r.ArgumentCheck; ac != nil {
		for _, f := range ac.Findings {
			t.r.InputRuleIDs = appendUnique(t.r.InputRuleIDs, f.Rule)
		}
	}
}

// setArguments records what the argument checks found (argument_check); their rule
// ids join input_rule_ids.
func (t *record) setArguments(res argcheck.Result) { t.r.ArgumentCheck = argumentCheck(res) }
func (t *record) setFailModeTriggered()            { t.state.failMode = true }
func (t *record) setTruncated()                    { t.r.Truncated = true }

// ms converts to milliseconds with microsecond precision.
func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

func roundMS(x float64) float64 { return math.Round(x*1000) / 1000 }

// stage records how long a stage took, from since to now.
func (t *record) stage(name vocab.Stage, since time.Time) { t.r.StageMS[name] = ms(time.Since(since)) }

// acted names the policies that changed, warned or rejected.
func (t *record) acted(files []string) {
	for _, f := range files {
		t.r.Policies = appendUnique(t.r.Policies, f)
		t.guardrail(f)
	}
}

func (t *record) guardrail(name string) {
	t.r.GuardrailsTriggered = appendUnique(t.r.GuardrailsTriggered, name)
}

func appendUnique(s []string, v string) []string {
	if slices.Contains(s, v) {
		return s
	}
	return append(s, v)
}

// escalate moves the action up the ladder; it never moves down (docs/decisions.md#ladder).
func (t *record) escalate(action vocab.Action) {
	t.state.action = vocab.Strongest(t.state.action, action)
}

// outputChanged marks that the output stage changed or withheld data.
func (t *record) outputChanged() { t.guardrail(audit.GuardrailOutputSanitization) }

// setFilter records the filter's state and verdict.
func (t *record) setFilter(state string, v engine.Verdict) {
	t.r.Filter, t.r.Decision = state, v.String()
}

// setFindings records what the output rules found in the upstream's result.
func (t *record) setFindings(out engine.Report) {
	t.r.RuleIDs = out.RuleIDs()
	t.state.findings = len(out.Findings)
	t.r.HighestSeverity = out.Highest.String()
	t.r.Truncated = out.Truncated
}

// addFindings records what the output rules found in content a post policy wrote.
func (t *record) addFindings(again engine.Report) {
	t.state.findings += len(again.Findings)
	for _, id := range again.RuleIDs() {
		t.r.RuleIDs = appendUnique(t.r.RuleIDs, id)
	}
	if s, _ := engine.ParseSeverity(t.r.HighestSeverity); again.Highest > s {
		t.r.HighestSeverity = again.Highest.String()
	}
}

// rulesActed names, as guardrails, the rules whose findings warn or block.
func (t *record) rulesActed(out engine.Report) {
	for _, f := range out.Findings {
		if engine.VerdictFor(f.Severity) >= engine.Warn {
			t.guardrail(f.RuleID)
		}
	}
}

// setAuditOutputOff marks the record input-only (docs/decisions.md#audit-output-off).
func (t *record) setAuditOutputOff() { t.r.AuditOutput = "off" }

// emit sends a snapshot of the record to p.Audit, once; later calls do
// nothing. Under HoldRecords the snapshot is taken now and sent on release. The sink encodes the snapshot on another goroutine, and with
// MCPGATE_AUDIT_OUTPUT=off the pipeline goes on after the record is out.
func (t *record) emit(p *Pipeline) {
	if t.emitted {
		return
	}
	t.emitted = true
	snap := t.r
	d := t.state
	snap.ActionTaken, snap.Reason, snap.Outcome = d.action, d.reason, d.outcome
	snap.FindingsCount, snap.FailModeTriggered, snap.ParamsRewritten = d.findings, d.failMode, d.paramsRewritten
	snap.StageMS = maps.Clone(t.r.StageMS)
	snap.RuleIDs = append([]string{}, t.r.RuleIDs...) // [] rather than null on the wire
	snap.GuardrailsTriggered = append([]string{}, t.r.GuardrailsTriggered...)
	snap.Policies = slices.Clone(t.r.Policies)
	snap.Guardrails = slices.Clone(t.r.Guardrails)
	snap.TS = time.Now().UTC().Format(audit.TSLayout)
	end := t.end // the live reply's time, when the record waited for a shadow after it
	if end.IsZero() {
		end = time.Now()
	}
	snap.ElapsedMS = ms(end.Sub(t.start))
	if up, ok := snap.StageMS[vocab.StageUpstream]; ok {
		snap.StageMS[vocab.StageGateway] = roundMS(snap.ElapsedMS - up)
	}
	snap.Blocked = snap.ActionTaken == vocab.Block
	snap.ToolCalls = []audit.ToolCall{}
	if snap.Tool != "" || snap.Method == methods.ToolsCall {
		snap.ToolCalls = []audit.ToolCall{{Name: snap.Tool, Arguments: map[string]any{}, RBAC: audit.RBAC{Action: snap.ActionTaken}}}
	}
	if p.Audit == nil {
		return
	}
	if h := t.hold; h != nil {
		h.mu.Lock()
		if !h.released {
			h.held = append(h.held, func() { p.Audit.Emit(&snap) })
			h.mu.Unlock()
			return
		}
		h.mu.Unlock()
	}
	p.Audit.Emit(&snap)
}
