package pipeline

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"time"
	"unicode/utf8"

	"github.com/mcpgate/mcpgate/engine"
	"github.com/mcpgate/mcpgate/gate"
	"github.com/mcpgate/mcpgate/internal/audit"
	"github.com/mcpgate/mcpgate/internal/jsonrpc"
	"github.com/mcpgate/mcpgate/internal/vocab"
)

// trace builds the one audit record of a call as the pipeline runs. Every exit of
// Handle goes through finish, which emits exactly one record (docs/decisions.md#fail-modes).
type trace struct {
	p       *Pipeline
	start   time.Time
	rec     *audit.Record
	emitted bool
}

func (p *Pipeline) begin(c Call) *trace {
	t := &trace{p: p, start: time.Now()}
	t.rec = &audit.Record{
		Kind:                p.Kind,
		Decision:            engine.Allow.String(),
		EventID:             newEventID(),
		RuleIDs:             []string{},
		HighestSeverity:     engine.SeverityNone.String(),
		AgentOrigin:         p.Origin,
		ActionTaken:         vocab.Pass,
		GuardrailsTriggered: []string{},
		Filter:              vocab.FilterSkipped,
		Outcome:             vocab.OutcomeOK,
		StageMS:             map[vocab.Stage]float64{},
		ClientInfo:          c.ClientInfo,
		Caller:              &audit.Caller{UserID: c.User.UserID, CallerID: c.User.CallerID, CallerClass: c.User.CallerClass},
	}
	return t
}

func (t *trace) tool(name string, access func(context.Context, string) string, listed func(string) bool, ctx context.Context) {
	t.rec.Tool = name
	if access != nil {
		start := time.Now()
		t.rec.ToolAccess = access(ctx, name) // may list the upstream's tools once
		t.stage(vocab.StageToolAccess, start)
	}
	t.rec.Listed = listed != nil && listed(name)
}

func (t *trace) policySet(s *gate.Set) {
	t.rec.PolicyGen, t.rec.PolicySetHash = s.Generation, s.Hash
}

// ms converts to milliseconds with microsecond precision.
func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

func roundMS(x float64) float64 { return math.Round(x*1000) / 1000 }

func (t *trace) stage(name vocab.Stage, since time.Time) { t.rec.StageMS[name] = ms(time.Since(since)) }

// acted names the policies that changed, warned or rejected.
func (t *trace) acted(files []string) {
	for _, f := range files {
		t.rec.Policies = appendUnique(t.rec.Policies, f)
		t.guardrail(f)
	}
}

func (t *trace) guardrail(name string) {
	t.rec.GuardrailsTriggered = appendUnique(t.rec.GuardrailsTriggered, name)
}

func appendUnique(s []string, v string) []string {
	for _, x := range s {
		if x == v {
			return s
		}
	}
	return append(s, v)
}

// escalate moves the action up the ladder; it never moves down (docs/decisions.md#ladder).
func (t *trace) escalate(action vocab.Action) {
	t.rec.ActionTaken = vocab.Strongest(t.rec.ActionTaken, action)
	t.rec.Blocked = t.rec.ActionTaken == vocab.Block
}

// rescanned records what the output rules found in content a post policy wrote.
func (t *trace) rescanned(again engine.Report) {
	t.rec.FindingsCount += len(again.Findings)
	for _, id := range again.RuleIDs() {
		t.rec.RuleIDs = appendUnique(t.rec.RuleIDs, id)
	}
	if again.Highest > t.highest() {
		t.rec.HighestSeverity = again.Highest.String()
	}
	t.rec.Decision = again.Verdict.String()
	for _, f := range again.Findings {
		if engine.VerdictFor(f.Severity) >= engine.Warn {
			t.guardrail(f.RuleID)
		}
	}
}

func (t *trace) highest() engine.Severity {
	s, _ := engine.ParseSeverity(t.rec.HighestSeverity)
	return s
}

// outputChanged marks that the output stage changed or withheld data.
func (t *trace) outputChanged() { t.guardrail(audit.GuardrailOutputSanitization) }

func (t *trace) forward(result json.RawMessage) Reply { return Reply{Result: result} }

// block withholds the whole result behind the placeholder (docs/decisions.md#block-shape).
func (t *trace) block(reason vocab.Reason) Reply {
	if t.rec.Reason == "" {
		t.rec.Reason = reason
	}
	t.escalate(vocab.Block)
	t.outputChanged()
	return Reply{Result: errorResult(blockText(t.rec.EventID))}
}

// reject answers a policy rejection: an isError result naming the policy. The
// message goes to the client only (docs/decisions.md#reasons-without-values).
func (t *trace) reject(r *gate.Rejection, outcome vocab.Outcome) Reply {
	t.rec.Reason, t.rec.Policy, t.rec.Outcome = r.Code, r.Policy, outcome
	t.guardrail(r.Policy)
	t.escalate(vocab.Block)
	if outcome != vocab.OutcomeRejected {
		t.outputChanged()
	}
	msg := r.Message
	if msg == "" {
		msg = rejectionReasons[r.Code]
	}
	if msg == "" {
		msg = "the policy rejected the call"
	}
	// A thrown message may quote content: it gets the Warn sanitizer and a bound.
	msg = capText(engine.Sanitize(msg), maxRejectionText)
	return Reply{Result: errorResult(rejectText(r.Policy, msg, t.rec.EventID))}
}

// maxRejectionText bounds the policy message an agent sees, in bytes.
const maxRejectionText = 1024

// capText cuts s to at most max bytes on a UTF-8 boundary, marking the cut.
func capText(s string, max int) string {
	if len(s) <= max {
		return s
	}
	cut := max
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "…"
}

var rejectionReasons = map[vocab.Reason]string{
	vocab.ReasonPolicyTimeout:     "the policy ran past its time limit",
	vocab.ReasonPolicyStackLimit:  "the policy exceeded the call-stack limit",
	vocab.ReasonPolicyMemoryLimit: "the policy exceeded the memory limit",
	vocab.ReasonBadCtxShape:       "the policy left ctx in an invalid shape",
	vocab.ReasonPolicyError:       "the policy failed",
}

func (t *trace) invalidParams(err error) Reply {
	t.rec.Reason, t.rec.Outcome = vocab.ReasonInvalidParams, vocab.OutcomeRejected
	t.escalate(vocab.Block)
	b, _ := jsonrpc.Marshal(jsonrpc.ErrorObject{Code: jsonrpc.CodeInvalidParams, Message: "mcpgate: " + err.Error()})
	return Reply{Error: b}
}

// upstreamFailed records a call the upstream never answered.
func (t *trace) upstreamFailed(err error) Reply {
	var code int
	switch {
	case errors.Is(err, ErrCancelled):
		t.rec.Outcome = vocab.OutcomeCancelled
		return Reply{NoReply: true}
	case errors.Is(err, ErrTimeout):
		t.rec.Outcome, code = vocab.OutcomeTimeout, jsonrpc.CodeRequestTimeout
	default:
		t.rec.Outcome, code = vocab.OutcomeUpstreamError, jsonrpc.CodeUpstreamUnavailable
	}
	b, _ := jsonrpc.Marshal(jsonrpc.ErrorObject{Code: code, Message: "mcpgate: " + err.Error() + " (audit log entry " + t.rec.EventID + ")"})
	return Reply{Error: b}
}

// upstreamError filters a JSON-RPC error the upstream returned: its message and its
// data are scanned like a result; a block withholds both, a warn sanitizes both and
// puts the notice in front of the message.
func (t *trace) upstreamError(raw json.RawMessage) Reply {
	t.rec.Outcome = vocab.OutcomeUpstreamError
	var e map[string]json.RawMessage
	var msg string
	if json.Unmarshal(raw, &e) != nil || json.Unmarshal(e["message"], &msg) != nil {
		return Reply{Error: raw}
	}
	scan, _ := jsonrpc.Marshal(map[string]json.RawMessage{"message": e["message"], "data": orNull(e["data"])})
	rep, err := t.p.Analyzer.AnalyzeArguments(scan)
	for i := range rep.Findings {
		rep.Findings[i].Pointer = "/error" + rep.Findings[i].Pointer
	}
	switch t.verdict(rep, err) {
	case engine.Block:
		msg = blockText(t.rec.EventID)
		delete(e, "data")
		t.escalate(vocab.Block)
		t.outputChanged()
	case engine.Warn:
		msg = warnText(t.rec.EventID, len(rep.Findings)) + " " + engine.Sanitize(msg)
		if d, ok := e["data"]; ok {
			if clean, err := engine.SanitizeJSON(d); err == nil {
				e["data"] = clean
			} else {
				delete(e, "data")
			}
		}
		t.escalate(vocab.Warn)
		t.outputChanged()
	default:
		return Reply{Error: raw}
	}
	e["message"], _ = jsonrpc.Marshal(msg)
	b, _ := jsonrpc.Marshal(e)
	return Reply{Error: b}
}

func orNull(v json.RawMessage) json.RawMessage {
	if len(v) == 0 {
		return json.RawMessage("null")
	}
	return v
}

// emitInputOnly is MCPGATE_AUDIT_OUTPUT=off: the input decision is recorded before
// the upstream call and the output stage goes unrecorded (docs/decisions.md#audit-output-off).
func (t *trace) emitInputOnly() {
	t.rec.AuditOutput = "off"
	t.emit()
}

// internalError fails the call closed after a panic inside the pipeline.
func (t *trace) internalError(p any) Reply {
	t.p.Logger.Error("tools/call pipeline panicked; call blocked", "event_id", t.rec.EventID, "panic", fmt.Sprint(p))
	t.rec.Reason = vocab.ReasonInternalError
	return t.block(vocab.ReasonInternalError)
}

func (t *trace) emit() {
	if t.emitted {
		return
	}
	t.emitted = true
	// Emit a snapshot: the sink encodes it on another goroutine, and with
	// MCPGATE_AUDIT_OUTPUT=off the pipeline goes on after the record is out.
	snap := *t.rec
	snap.StageMS = make(map[vocab.Stage]float64, len(t.rec.StageMS)+1)
	for k, v := range t.rec.StageMS {
		snap.StageMS[k] = v
	}
	snap.RuleIDs = append([]string{}, t.rec.RuleIDs...)
	snap.GuardrailsTriggered = append([]string{}, t.rec.GuardrailsTriggered...)
	snap.Policies = append([]string(nil), t.rec.Policies...)
	r := &snap
	r.TS = time.Now().UTC().Format("2006-01-02T15:04:05.000Z")
	r.ElapsedMS = ms(time.Since(t.start))
	if up, ok := r.StageMS[vocab.StageUpstream]; ok {
		r.StageMS[vocab.StageGateway] = roundMS(r.ElapsedMS - up)
	}
	r.Blocked = r.ActionTaken == vocab.Block
	r.ToolCalls = []audit.ToolCall{{Name: r.Tool, Arguments: map[string]any{}, RBAC: audit.RBAC{Action: r.ActionTaken}}}
	if t.p.Audit != nil {
		t.p.Audit.Emit(r)
	}
	if t.p.Observe != nil {
		t.p.Observe(r)
	}
}
