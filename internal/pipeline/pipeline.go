// Package pipeline is the tools/call path of mcpgate, in one function that reads top
// to bottom:
//
//	input rules → pre policies → upstream → output rules → post policies → merge → audit
//
// docs/decisions.md#stage-order is the contract; docs/telemetry.md the record.
package pipeline

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/google/uuid"

	"github.com/mcpgate/mcpgate/ctxapi"
	"github.com/mcpgate/mcpgate/engine"
	"github.com/mcpgate/mcpgate/gate"
	"github.com/mcpgate/mcpgate/internal/audit"
	"github.com/mcpgate/mcpgate/internal/bound"
	"github.com/mcpgate/mcpgate/internal/jsonrpc"
	"github.com/mcpgate/mcpgate/internal/vocab"
)

// Errors an Upstream returns for a call that got no response.
var (
	ErrCancelled   = errors.New("pipeline: call cancelled by the client")
	ErrTimeout     = errors.New("pipeline: upstream did not answer in time")
	ErrUnavailable = errors.New("pipeline: upstream MCP server is not running")
)

// Upstream sends a tools/call with params to the server and returns its response
// message, or one of ErrCancelled, ErrTimeout, ErrUnavailable (possibly wrapped).
type Upstream func(ctx context.Context, params json.RawMessage) (*jsonrpc.Message, error)

// Emitter receives the one audit record of each call.
type Emitter interface{ Emit(*audit.Record) }

// Pipeline holds what every call shares. It is safe for concurrent use.
type Pipeline struct {
	Analyzer     *engine.Analyzer
	Gate         *gate.Gate
	Limiter      *ctxapi.RateLimiter
	Audit        Emitter
	Logger       *slog.Logger
	FilterOutput bool          // --filter-output: apply the transforms of docs/decisions.md#output-filter
	FailClosed   bool          // --fail-mode closed: truncation or an undecodable result blocks
	Kind         string        // audit kind: gateway_output_filter or mcp_output_filter
	Origin       *audit.Origin // agent_origin, nil for the MCP server
	AuditOutput  bool          // false when MCPGATE_AUDIT_OUTPUT=off: input-only recording
	// Metrics, when set, sees every record after it is emitted.
	Observe func(*audit.Record)
}

// Call is one tools/call as the relay received it.
type Call struct {
	Params     json.RawMessage // the request's params object
	User       ctxapi.User
	ToolAccess func(ctx context.Context, tool string) string
	ClientInfo map[string]string
	// Listed, when set, reports whether the upstream listed the tool (or the
	// configuration tags it); only such names become /metrics labels.
	Listed func(tool string) bool
}

// Reply is what the relay sends back: a result, an error object, or nothing (the
// client cancelled the request, so MCP says no response is sent).
type Reply struct {
	// Original, when set, is the upstream's response line, forwarded byte for byte
	// because nothing changed it.
	Original []byte
	Result   json.RawMessage
	Error    json.RawMessage
	NoReply  bool
}

// Handle runs one tools/call through the whole pipeline and writes its audit record.
func (p *Pipeline) Handle(ctx context.Context, c Call, up Upstream) (reply Reply) {
	t := p.begin(c)
	defer func() {
		if r := recover(); r != nil { // a bug must not lose the record or the process
			reply = t.internalError(r)
		}
		t.emit()
	}()

	// Every tools/call counts once toward the rate limit when it arrives, even one
	// rejected later (docs/decisions.md#rate-limit); it runs on one policy set throughout.
	p.Limiter.Arrive(c.User.UserID)
	limit := func(n int) bool { return p.Limiter.Exceeded(c.User.UserID, n) }
	set := p.Gate.Current()
	t.policySet(set)

	// Decode the request: name and arguments; every other key is kept as is.
	params, name, args, err := decodeParams(c.Params)
	if err != nil {
		t.rec.Tool = bound.Truncate(name, bound.ToolName) // set only for a name too long
		return t.invalidParams(err)
	}
	if string(params["arguments"]) == "null" {
		// "arguments": null makes TypeScript servers fail with -32603; send {} instead.
		params["arguments"] = args
		c.Params, _ = jsonrpc.Marshal(params)
	}
	t.tool(name, c.ToolAccess, c.Listed, ctx)

	// 1. Built-in input rules over the arguments' string leaves.
	stage := time.Now()
	in, err := p.Analyzer.AnalyzeArguments(args)
	if err != nil {
		return t.invalidParams(err)
	}
	t.stage(vocab.StageInputRules, stage)

	// 2. Pre-phase policies: reject or rewrite the arguments.
	stage = time.Now()
	pre := set.Run(ctx, &ctxapi.Call{
		Phase: ctxapi.PhasePre, Tool: name, ToolAccess: t.rec.ToolAccess, Params: args,
		User: c.User, Findings: in.Findings, RateLimitExceeded: limit,
	})
	t.stage(vocab.StagePrePolicies, stage)
	if ctx.Err() != nil { // the client cancelled or left: no policy failed
		return t.upstreamFailed(ErrCancelled)
	}
	t.acted(pre.Acted)
	if pre.Reject != nil {
		t.rec.InputRuleIDs = in.RuleIDs()
		return t.reject(pre.Reject, vocab.OutcomeRejected)
	}
	if pre.Changed {
		// A rewrite has no rung on the ladder; it is scanned again before it goes out.
		args, t.rec.ParamsRewritten = pre.Params, true
		params["arguments"] = args
		if in, err = p.Analyzer.AnalyzeArguments(args); err != nil {
			return t.reject(&gate.Rejection{Policy: lastOf(pre.Acted), Code: vocab.ReasonBadCtxShape,
				Message: "the rewritten arguments are not a JSON object"}, vocab.OutcomeRejected)
		}
		c.Params, _ = jsonrpc.Marshal(params)
	}
	t.rec.InputRuleIDs = in.RuleIDs()
	if !p.AuditOutput {
		t.emitInputOnly()
	}

	// 3. The upstream call.
	stage = time.Now()
	resp, err := up(ctx, c.Params)
	t.stage(vocab.StageUpstream, stage)
	if err != nil {
		return t.upstreamFailed(err)
	}
	if resp.Error != nil {
		return t.upstreamError(resp.Error)
	}
	result := resp.Result

	// 4. Built-in output rules over the upstream's original result.
	stage = time.Now()
	out, err := p.Analyzer.AnalyzeResult(result)
	t.stage(vocab.StageOutputRules, stage)
	verdict := t.verdict(out, err)
	if verdict == engine.Block {
		return t.block(t.rec.Reason)
	}
	// 5. Post-phase policies, each on the content the previous one left. With no
	// policy acting in post the result is never decoded here: the clean path stays one scan.
	var post gate.Result
	if set.Acts(ctxapi.PhasePost) {
		content, structured, ok := splitResult(result)
		if !ok { // undecodable and fail-open: forward untouched, nothing else can read it
			return Reply{Original: resp.Raw}
		}
		stage = time.Now()
		post = set.Run(ctx, &ctxapi.Call{
			Phase: ctxapi.PhasePost, Tool: name, ToolAccess: t.rec.ToolAccess, Params: args,
			Response: &ctxapi.Response{Content: content, StructuredContent: structured},
			User:     c.User, Findings: out.Findings, RateLimitExceeded: limit,
		})
		t.stage(vocab.StagePostPolicies, stage)
		if ctx.Err() != nil {
			return t.upstreamFailed(ErrCancelled)
		}
		t.acted(post.Acted)
		if post.Reject != nil {
			return t.reject(post.Reject, vocab.OutcomeOK)
		}
	}

	// 6. Merge: policy edits, then the Warn sanitizer over the final content.
	stage = time.Now()
	defer t.stage(vocab.StageMerge, stage)
	findings := len(out.Findings)
	if post.Changed {
		t.escalate(policyAction(post.Action))
		if result, err = replaceContent(result, post.Content, post.StructuredContent); err != nil {
			return t.reject(&gate.Rejection{Policy: lastOf(post.Acted), Code: vocab.ReasonBadCtxShape, Message: err.Error()}, vocab.OutcomeOK)
		}
		t.outputChanged()
		// What a policy wrote is scanned too, so a policy can never put escapes back.
		if p.FilterOutput {
			if again, err := p.Analyzer.AnalyzeResult(result); err == nil && again.Verdict > verdict {
				verdict, findings = again.Verdict, findings+len(again.Findings)
				t.rescanned(again)
				if verdict == engine.Block {
					return t.block(vocab.ReasonFilterBlock)
				}
			}
		}
	}
	// ctx.warn in either phase is a warning the agent sees, like the filter's.
	warnings := len(pre.Warnings) + len(post.Warnings)
	if warnings > 0 {
		t.escalate(vocab.Warn)
	}
	if verdict == engine.Warn || warnings > 0 {
		warned, err := warnResult(result, t.rec.EventID, findings+warnings)
		if err != nil { // cannot rewrite safely: fail closed rather than pass escapes on
			t.rec.Reason = vocab.ReasonSanitizeFailed
			return t.block(vocab.ReasonSanitizeFailed)
		}
		t.escalate(vocab.Warn)
		t.outputChanged()
		return t.forward(warned)
	}
	if !post.Changed {
		return Reply{Original: resp.Raw} // changes are detected, not assumed
	}
	return t.forward(result)
}

// verdict applies --filter-output and the fail mode to the output analysis.
func (t *trace) verdict(out engine.Report, err error) engine.Verdict {
	p := t.p
	t.rec.RuleIDs = out.RuleIDs()
	t.rec.FindingsCount = len(out.Findings)
	t.rec.HighestSeverity = out.Highest.String()
	t.rec.Truncated = out.Truncated
	if !p.FilterOutput {
		t.rec.Filter, t.rec.Decision = vocab.FilterOff, engine.Allow.String()
		return engine.Allow
	}
	t.rec.Filter = vocab.FilterOn
	v := out.Verdict
	switch {
	case err != nil:
		t.rec.Reason = vocab.ReasonUndecodableResult
		v = engine.Allow
		if p.FailClosed {
			v, t.rec.FailModeTriggered = engine.Block, true
		}
	case out.Truncated && v == engine.Allow && p.FailClosed:
		v, t.rec.FailModeTriggered, t.rec.Reason = engine.Block, true, vocab.ReasonScanTruncated
	case v == engine.Block:
		t.rec.Reason = vocab.ReasonFilterBlock
	}
	t.rec.Decision = v.String()
	if v != engine.Allow {
		for _, f := range out.Findings {
			if engine.VerdictFor(f.Severity) >= engine.Warn {
				t.guardrail(f.RuleID)
			}
		}
	}
	return v
}

// policyAction is the rung of a post-phase content change: mask when a mask helper
// made it, otherwise redact, including a change made without a helper (docs/decisions.md#ladder).
func policyAction(a vocab.Action) vocab.Action {
	if a == vocab.Mask {
		return vocab.Mask
	}
	return vocab.Redact
}

func lastOf(s []string) string {
	if len(s) == 0 {
		return ""
	}
	return s[len(s)-1]
}

// decodeParams splits tools/call params into its keys, the tool name and the
// arguments object ({} when absent or null).
func decodeParams(raw json.RawMessage) (map[string]json.RawMessage, string, json.RawMessage, error) {
	var params map[string]json.RawMessage
	if err := json.Unmarshal(raw, &params); err != nil || params == nil {
		return nil, "", nil, errors.New("tools/call params must be an object")
	}
	var name string
	if err := json.Unmarshal(params["name"], &name); err != nil || name == "" {
		return nil, "", nil, errors.New(`tools/call params need a string "name"`)
	}
	if !bound.ToolNameOK(name) {
		return nil, name, nil, fmt.Errorf("tool name is %d bytes long; MCP tool names have 1 to %d characters", len(name), bound.ToolName)
	}
	args := params["arguments"]
	if len(args) == 0 || string(args) == "null" {
		args = json.RawMessage("{}")
	} else if args[0] != '{' {
		return nil, "", nil, errors.New(`tools/call "arguments" must be an object`)
	}
	return params, name, args, nil
}

// splitResult returns the result's content array ([] when absent) and its
// structuredContent (nil when absent); ok is false for a result that is not an object.
func splitResult(result json.RawMessage) (content, structured json.RawMessage, ok bool) {
	var m map[string]json.RawMessage
	if json.Unmarshal(result, &m) != nil || m == nil {
		return nil, nil, false
	}
	content = m["content"]
	if len(content) == 0 || string(content) == "null" {
		content = json.RawMessage("[]")
	}
	if sc := m["structuredContent"]; len(sc) > 0 {
		structured = sc
	}
	return content, structured, true
}

// replaceContent writes the policies' content and structuredContent into result,
// keeping every other field.
func replaceContent(result, content, structured json.RawMessage) (json.RawMessage, error) {
	var m map[string]json.RawMessage
	if err := json.Unmarshal(result, &m); err != nil {
		return nil, fmt.Errorf("result is not an object: %w", err)
	}
	if content != nil {
		m["content"] = content
	}
	if structured == nil || string(structured) == "null" {
		delete(m, "structuredContent")
	} else {
		m["structuredContent"] = structured
	}
	return jsonrpc.Marshal(m)
}

// Wire texts (docs/decisions.md#block-shape, #warn-shape, #rejection-shape; the dash is U+2014).
func blockText(eventID string) string {
	return "[mcpgate: tool output blocked — see audit log entry " + eventID + " for details]"
}

func warnText(eventID string, n int) string {
	return fmt.Sprintf("[mcpgate: WARNING — %d findings; see audit log entry %s]", n, eventID)
}

func rejectText(policy, message, eventID string) string {
	return "[mcpgate: call rejected by policy " + policy + ": " + message + " — see audit log entry " + eventID + "]"
}

type textItem struct {
	Type string `json:"type"`
	Text string `json:"text"`
}

// errorResult is the block shape (docs/decisions.md#block-shape): one text item and isError, nothing else.
func errorResult(text string) json.RawMessage {
	b, _ := jsonrpc.Marshal(struct {
		Content []textItem `json:"content"`
		IsError bool       `json:"isError"`
	}{[]textItem{{"text", text}}, true})
	return b
}

// warnResult sanitizes every text-bearing string of result and prepends the notice.
func warnResult(result json.RawMessage, eventID string, n int) (json.RawMessage, error) {
	clean, err := engine.SanitizeResult(result)
	if err != nil {
		return nil, err
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(clean, &m); err != nil {
		return nil, err
	}
	var items []json.RawMessage
	if c := m["content"]; len(c) > 0 && string(c) != "null" {
		if err := json.Unmarshal(c, &items); err != nil {
			return nil, fmt.Errorf("content is not an array: %w", err)
		}
	}
	notice, _ := jsonrpc.Marshal(textItem{"text", warnText(eventID, n)})
	m["content"], _ = jsonrpc.Marshal(append([]json.RawMessage{notice}, items...))
	return jsonrpc.Marshal(m)
}

// newEventID returns a UUIDv4 (docs/decisions.md#block-shape).
func newEventID() string { return uuid.NewString() }
