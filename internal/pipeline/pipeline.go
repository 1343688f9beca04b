package pipeline

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/mcpgate/mcpgate/ctxapi"
	"github.com/mcpgate/mcpgate/engine"
	"github.com/mcpgate/mcpgate/gate"
	"github.com/mcpgate/mcpgate/internal/argcheck"
	"github.com/mcpgate/mcpgate/internal/audit"
	"github.com/mcpgate/mcpgate/internal/bound"
	"github.com/mcpgate/mcpgate/internal/budget"
	"github.com/mcpgate/mcpgate/internal/capture"
	"github.com/mcpgate/mcpgate/internal/guardrail"
	"github.com/mcpgate/mcpgate/internal/jsonrpc"
	"github.com/mcpgate/mcpgate/internal/methods"
	"github.com/mcpgate/mcpgate/internal/motion"
	"github.com/mcpgate/mcpgate/internal/pins"
	"github.com/mcpgate/mcpgate/vocab"
)

// Errors an Upstream returns for a call that got no response.
var (
	ErrCancelled   = errors.New("pipeline: call cancelled by the client")
	ErrTimeout     = errors.New("pipeline: upstream did not answer in time")
	ErrUnavailable = errors.New("pipeline: upstream MCP server is not running")
	// ErrUnknownTool: the name routes to no configured server; no server was called.
	ErrUnknownTool = errors.New("pipeline: unknown tool")
)

// Upstream sends a tools/call with params to the server and returns its response
// message, or one of ErrCancelled, ErrTimeout, ErrUnavailable, ErrUnknownTool
// (possibly wrapped).
type Upstream func(ctx context.Context, params json.RawMessage) (*jsonrpc.Message, error)

// Emitter receives the one audit record of each call.
type Emitter interface{ Emit(*audit.Record) }

// Pipeline holds what every call shares. Its fields are set before the first call
// and not changed after; Handle is then safe for concurrent use.
type Pipeline struct {
	// Analyzer runs the built-in input and output rules. It must not be nil.
	Analyzer *engine.Analyzer
	// Gate holds the policy set each call runs on. Nil means no policies: both
	// policy phases are skipped and records carry generation 0 and no hash.
	Gate *gate.Gate
	// Limiter counts each call once on arrival for ctx.rateLimitExceeded(n): a
	// *ctxapi.RateLimiter in the process, or a shared store. Nil means no limiter:
	// rateLimitExceeded is always false.
	Limiter ctxapi.RateLimitStore
	// Audit receives the one record of each call. Nil means records are dropped.
	Audit Emitter
	// Logger receives the pipeline's own failures (a panic). Nil means slog.Default().
	Logger *slog.Logger
	// FilterOutput is --filter-output: apply the transforms of
	// docs/decisions.md#output-filter. False records findings and changes nothing.
	FilterOutput bool
	// FailClosed is --fail-mode closed: a truncated scan or an undecodable result
	// blocks (docs/decisions.md#fail-modes).
	FailClosed bool
	// Kind is the records' kind: audit.KindGateway or audit.KindMCPServer.
	Kind string
	// Origin is the records' agent_origin. Nil leaves it out (the MCP server).
	Origin *audit.Origin
	// AuditOutput false is MCPGATE_AUDIT_OUTPUT=off: the record is emitted before
	// the upstream call and the output stage goes unrecorded
	// (docs/decisions.md#audit-output-off).
	AuditOutput bool
	// Budget bounds the calls in flight and the result bytes being filtered across
	// every session (docs/http.md#in-flight-budget). Nil imposes no limit.
	Budget *budget.Budget
	// Tenants are the tenant policy layers by name, TenantOf a caller's tenant
	// (docs/policies.md#layers). Nil: every call runs on Gate's set alone.
	Tenants  map[string]*gate.Gate
	TenantOf func(ctxapi.User) string
	// Shadow, when set, is a candidate policy set (gateway run --shadow) that runs
	// beside the live one on the same inputs and only fills the record's shadow field
	// (docs/policies.md#shadow). Nil: no shadow.
	Shadow *gate.Gate
	// ShadowGuardrails, when set, are the Shadow set's own guardrails (DIR/guardrails.json):
	// called off the live path, their outcome only in the record's shadow field. Nil:
	// the candidate shares the live Guardrails' outcome
	// (docs/decisions.md#shadow-guardrails).
	ShadowGuardrails *guardrail.Set
	// Capture, when set, receives each call's arguments and upstream result (gateway
	// run --capture; docs/policies.md#replay). Nil: nothing is captured.
	Capture Capturer
	// Health, when set, counts policy errors per file. Nil: not counted (still logged).
	Health *Health
	// ShadowHealth, when set, counts the Shadow set's policy errors per file.
	ShadowHealth *Health
	// shadows counts the records still waiting on a shadow run (Wait).
	shadows sync.WaitGroup
	// trial is the policy bundle's candidate run as the shadow (StartTrial); trialOn
	// spares calls the lock while there is none.
	trialMu sync.Mutex
	trial   *Trial
	trialOn atomic.Bool
	// Pins, when set, remembers the first definition of each tool and reports a
	// change as tool_definition_changed (docs/channels.md#pinning).
	Pins *pins.Store
	// PinBlock hides a changed tool until it is approved; otherwise a change warns.
	PinBlock bool
	// StructureSeverities overrides the severities of the channel-structure rules
	// (internal/channelcheck) by rule id, as engine.Options.Severities does for the
	// engine's; SeverityNone turns a rule off.
	StructureSeverities map[string]engine.Severity
	// PinServer is the pin identity of the server named "" (the command after --):
	// its command line or a name the user gave, so that two gateways sharing a pin
	// file keep their servers' pins apart (docs/channels.md#pinning).
	PinServer string
	// Strict is the strict profile (docs/policies.md#profiles): the checks that
	// record by default refuse, withhold or block instead. The gateway resolves it
	// once from --profile or the configuration's "profile".
	Strict bool
	// RefuseSecretsInMotion refuses a tools/call whose arguments carry a value an
	// earlier result showed the same session (reason secret_in_motion); otherwise such
	// a call is recorded and goes on (docs/decisions.md#secrets-in-motion).
	RefuseSecretsInMotion bool
	// MaxCacheTTL is the longest ttlMs a 2026-07-28 cacheable result keeps on its
	// way to the client (--max-cache-ttl); DefaultMaxCacheTTL when zero.
	MaxCacheTTL time.Duration
	// Guardrails are the outside content guardrails and authorization services
	// (docs/guardrails.md), called between the built-in rules and the policies of a
	// phase. Nil: none.
	Guardrails *guardrail.Set
	// PerCaller is whether the gateway tells callers apart (bearer tokens, OAuth or
	// configured callers): a cacheable result is then cacheScope "private", since
	// what one caller may see is not another's (docs/http.md#cache-hints).
	PerCaller bool
}

// Capturer receives one entry per tools/call; it must not block.
type Capturer interface{ Capture(*capture.Entry) }

// Call is one tools/call as the relay received it. Handle never changes it.
type Call struct {
	Params json.RawMessage // the request's params object
	User   ctxapi.User
	// ToolAccess, when set, returns the tool's DADL access tag
	// (docs/decisions.md#tool-access); it may list the upstream's tools once. Nil
	// means every tool's tag is empty.
	ToolAccess func(ctx context.Context, tool string) string
	// ClientInfo is initialize's clientInfo for the record (mcp-server); nil leaves
	// it out.
	ClientInfo map[string]string
	// ProtocolVersion is the MCP revision of the call, for the record; "" leaves it out.
	ProtocolVersion string
	// SamplingContext is Channel.SamplingContext, for the sampling requests among the
	// input requests of an input_required result.
	SamplingContext bool
	// ClientCapabilities is Channel.ClientCapabilities.
	ClientCapabilities json.RawMessage
	// Roots are the file:// roots the client last declared to this server (after its
	// pins, docs/channels.md#roots): a file: link in the result outside every one is
	// output_ssrf_target. Nil means none are known.
	Roots []string
	// PinnedRoots are the file:// roots the server is pinned to (--root,
	// mcpServers.NAME.roots); the argument checks judge paths by Roots, else by these.
	PinnedRoots []string
	// Schema, when set, returns the argument checks of the tool's inputSchema from the
	// listing the gateway saw, nil when it saw none (docs/engine.md#argument-checks).
	// Nil: the checks are not run.
	Schema func(tool string) *argcheck.Tool
	// Server is the configured name of the server the call goes to (ctx.server and
	// the record's server); "" when the gateway fronts an unnamed command.
	Server string
	// Listed, when set, reports whether the upstream listed the tool (or the
	// configuration tags it); only such names become /metrics labels. Nil means
	// none is listed.
	Listed func(tool string) bool
	// Policies, when set, is the policy set this call runs on instead of
	// Gate.Current() (mcpgate test and replay run one file or another directory).
	Policies *gate.Set
	// FilterOutput, when set, overrides Pipeline.FilterOutput for this call (replay
	// runs each captured call as it was run).
	FilterOutput *bool
	// Guardrails, when set, replaces Pipeline.Guardrails for this call: replay and
	// mcpgate test give recorded or stubbed verdicts (guardrail.Replay).
	Guardrails *guardrail.Set
	// Hidden, when set, reports whether the tool is withheld from this caller's
	// listing; a call to it is then rejected (docs/channels.md#hidden). Nil means
	// nothing is hidden.
	Hidden func(ctx context.Context, tool string) *Hidden
	// Motion is the session's memory of the secret and PII values results showed its
	// caller (docs/decisions.md#secrets-in-motion). Nil: nothing is remembered or checked.
	Motion *motion.Scope
}

// Reply is what the relay sends back: a result, an error object, or nothing (the
// client cancelled the request, so MCP says no response is sent).
type Reply struct {
	// Original, when set, is the upstream's response line, forwarded byte for byte
	// because nothing changed it.
	Original []byte
	Result   json.RawMessage
	Error    json.RawMessage
	NoReply  bool // no response; for a notification: dropped
	// Params replaces a server-to-client request's or notification's params.
	Params json.RawMessage
	// Hidden are the listing entries withheld from this caller (tools/list).
	Hidden []Hidden
	// HiddenAll, when set, withholds every entry, named or not: the listing could not
	// be read and --fail-mode closed listed nothing (docs/channels.md#hidden).
	HiddenAll *Hidden
	// Abandoned: the answer replaces an input_required result (an input request
	// withheld, or one the client's capabilities do not declare), so the client will
	// not retry; the relay tells the server (notifications/cancelled) before it
	// answers the client.
	Abandoned bool
}

// noPolicies is the set a Pipeline without a Gate runs on: it has no policies.
var noPolicies = &gate.Set{}

// run is one call on its way through the stages.
type run struct {
	p     *Pipeline
	ctx   context.Context
	c     Call // as received; never changed
	rec   *record
	set   *gate.Set
	limit func(n int) bool

	params map[string]json.RawMessage // the request's keys, decoded once
	tool   string
	args   json.RawMessage // the arguments the upstream gets

	filterOutput bool           // Pipeline.FilterOutput or the call's override
	filterAction vocab.Action   // what the output rules alone did: "", warn or block
	shadow       *shadow        // the --shadow set's run; nil without one
	capture      *capture.Entry // the --capture entry; nil without capture
	recording    bool           // the record is being completed off the call's goroutine (finish)
}

// Handle runs one tools/call through the whole pipeline and writes its audit record.
func (p *Pipeline) Handle(ctx context.Context, c Call, up Upstream) (reply Reply) {
	r := p.arrive(ctx, c)
	defer func() {
		if v := recover(); v != nil { // a bug must not lose the record or the process
			reply = r.internalError(v)
		}
		r.finish(true)
	}()

	if err := r.decodeRequest(); err != nil {
		return r.invalidParams(err)
	}
	r.lookupTool()
	if r.c.Hidden != nil {
		if h := r.c.Hidden(ctx, r.tool); h != nil {
			return r.hidden(h)
		}
	}
	// The in-flight budget: past the call limit a call waits, then is refused before
	// the upstream sees it.
	leave, err := p.Budget.EnterCall(ctx)
	if err != nil {
		if ctx.Err() != nil {
			return r.upstreamFailed(ErrCancelled)
		}
		return r.overloaded(err)
	}
	defer leave()
	r.captureCall()
	sh := r.shadowRun()

	// 1. Built-in input rules over the arguments' string leaves.
	in, err := r.inputRules(r.args)
	if err != nil {
		return r.invalidParams(err)
	}
	r.inputResponses(&in)
	if refused := r.argumentChecks(); refused != nil {
		r.rec.setInputRules(in)
		return *refused
	}

	// 2. Outside guardrails and authorization (docs/guardrails.md), then the pre-phase
	// policies: reject or rewrite the arguments.
	sh.startOwnPre(r, in.Findings) // a candidate with its own guardrails starts here
	outside, stop := r.guardrailsPre(&in)
	if stop != nil {
		r.rec.setInputRules(in)
		return *stop
	}
	preCall := r.policyCall(ctxapi.PhasePre, nil, withFindings(in.Findings, outside))
	sh.startPre(r.ctx, preCall) // beside the live phase and the upstream call
	pre := r.policies(preCall, vocab.StagePrePolicies)
	if r.ctx.Err() != nil { // the client cancelled or left: no policy failed
		return r.upstreamFailed(ErrCancelled)
	}
	if pre.Reject != nil {
		r.rec.setInputRules(in)
		return r.reject(pre.Reject, vocab.OutcomeRejected)
	}
	if pre.Changed {
		if in, err = r.rewriteArguments(pre.Params); err != nil {
			return r.reject(&gate.Rejection{Policy: lastOf(pre.Acted), Code: vocab.ReasonBadCtxShape,
				Message: "the rewritten arguments are not a JSON object"}, vocab.OutcomeRejected)
		}
		if stop := r.authorizeRewritten(); stop != nil {
			r.rec.setInputRules(in)
			return *stop
		}
	}
	r.rec.setInputRules(in)
	if m := r.motionCheck(); m != nil && p.RefuseSecretsInMotion {
		return r.secretInMotion(m)
	}
	if !p.AuditOutput {
		r.rec.setAuditOutputOff()
		r.finish(false)
	}

	// 3. The upstream call.
	resp, err := r.callUpstream(up)
	if err != nil {
		return r.upstreamFailed(err)
	}
	// A result waits while earlier ones hold the byte budget, then is filtered and
	// forwarded within it.
	free, err := p.Budget.HoldBytes(ctx, len(resp.Raw))
	if err != nil {
		return r.upstreamFailed(ErrCancelled)
	}
	defer free()
	if resp.Refused != "" {
		return r.refusedResponse(resp)
	}
	if resp.Error != nil {
		return r.filterUpstreamError(resp.Error)
	}
	return r.output(resp, sh, len(pre.Warnings))
}

// output runs steps 4 to 6 over a CallToolResult (a tools/call's, or a task's from
// tasks/result); sh is the shadow run (nil for none), preWarnings counts the pre
// phase's ctx.warn calls.
func (r *run) output(resp *jsonrpc.Message, sh *shadow, preWarnings int) Reply {
	p := r.p
	result := resp.Result
	r.captureResult(result)
	if inputRequired(result) { // the server asks the client first (MCP 2026-07-28)
		return r.inputRequiredReply(methods.Of(r.rec.r.Method), resp)
	}

	// 4. Built-in output rules over the upstream's original result.
	stage := time.Now()
	out, err := p.Analyzer.AnalyzeResultWithin(result, r.c.Roots)
	r.rec.stage(vocab.StageOutputRules, stage)
	r.rec.setFindings(out)
	if err == nil {
		r.remember(result, out.Findings)
	}
	verdict := r.outputVerdict(out, err)
	if verdict == engine.Block {
		return r.block()
	}

	// Outside content guardrails over the result (docs/guardrails.md).
	sh.notePost(result, out.Findings)
	var guarded bool
	var outside []engine.Finding
	var stop *Reply
	result, guarded, verdict, outside, stop = r.guardrailsPost(result, out, verdict)
	if stop != nil {
		return *stop
	}

	// 5. Post-phase policies, each on the content the previous one left. With no
	// policy acting in post the result is never decoded here: the clean path stays one scan.
	var post gate.Result
	if r.set.Acts(ctxapi.PhasePost) || sh.actsInPost() {
		content, structured, ok := splitResult(result)
		if !ok { // undecodable and fail-open: forward untouched, nothing else can read it
			return Reply{Original: resp.Raw}
		}
		postCall := r.policyCall(ctxapi.PhasePost, &ctxapi.Response{Content: content, StructuredContent: structured}, withFindings(out.Findings, outside))
		sh.deferPost(postCall) // run once the live reply is out
		if r.set.Acts(ctxapi.PhasePost) {
			post = r.policies(postCall, vocab.StagePostPolicies)
		}
		if r.ctx.Err() != nil {
			return r.upstreamFailed(ErrCancelled)
		}
		if post.Reject != nil {
			return r.reject(post.Reject, vocab.OutcomeOK)
		}
	}

	// 6. Merge: policy edits, then the Warn sanitizer over the final content.
	stage = time.Now()
	defer r.rec.stage(vocab.StageMerge, stage)
	findings := len(out.Findings)
	if post.Changed {
		r.rec.escalate(policyAction(post.Action))
		if result, err = replaceContent(result, post.Content, post.StructuredContent); err != nil {
			return r.reject(&gate.Rejection{Policy: lastOf(post.Acted), Code: vocab.ReasonBadCtxShape, Message: err.Error()}, vocab.OutcomeOK)
		}
		r.rec.outputChanged()
		var n int
		if verdict, n = r.rescan(result, verdict); verdict == engine.Block {
			return r.block()
		}
		findings += n
	}
	// ctx.warn in either phase is a warning the agent sees, like the filter's.
	warnings := preWarnings + len(post.Warnings)
	if verdict == engine.Warn || warnings > 0 {
		return r.warn(result, findings+warnings)
	}
	if !post.Changed && !guarded {
		return Reply{Original: resp.Raw} // changes are detected, not assumed
	}
	return Reply{Result: result}
}

// liveSet is the set a call of u runs on: Gate's, layered with u's tenant's when
// it has one (docs/policies.md#layers). It names u's tenant (TenantOf) in u.
func (p *Pipeline) liveSet(u *ctxapi.User) *gate.Set {
	global := p.Gate.Current()
	if p.TenantOf == nil {
		return global
	}
	u.Tenant = p.TenantOf(*u)
	if tg := p.Tenants[u.Tenant]; tg != nil {
		return gate.Layered(global, tg.Current(), u.Tenant)
	}
	return global
}

// arrive starts a call: its record, its policy set, and its one count toward the
// rate limit, taken when it arrives, even for a call rejected later
// (docs/decisions.md#rate-limit). The call runs on one policy set throughout.
func (p *Pipeline) arrive(ctx context.Context, c Call) *run {
	r := &run{p: p, ctx: ctx, c: c, rec: newRecord(p, c), set: noPolicies, limit: func(int) bool { return false },
		filterOutput: p.FilterOutput}
	r.rec.hold = holdOf(ctx)
	switch {
	case c.Policies != nil:
		r.set = c.Policies
	case p.Gate != nil:
		r.set = p.liveSet(&r.c.User)
	}
	if c.FilterOutput != nil {
		r.filterOutput = *c.FilterOutput
	}
	r.rec.setPolicySet(r.set, r.c.User.Tenant)
	switch l := p.Limiter.(type) {
	case nil:
	case *ctxapi.RateLimiter:
		user := c.User.UserID
		l.Arrive(user)
		r.limit = func(n int) bool { return l.Exceeded(user, n) }
	default:
		// A shared store (Redis) counts in the background: a call whose policies never
		// ask does not wait for the round trip; one that asks waits for this count.
		count := make(chan int, 1)
		go func() { count <- l.Hit(context.WithoutCancel(ctx), c.User.UserID) }()
		got := sync.OnceValue(func() int { return <-count })
		r.limit = func(n int) bool { return got() > n }
	}
	return r
}

// decodeRequest reads the tool name and the arguments; every other key is kept as is.
func (r *run) decodeRequest() error {
	params, name, args, err := decodeParams(r.c.Params)
	if err != nil {
		r.rec.setTool(bound.Truncate(name, bound.ToolName), "", false) // set only for a name too long
		return err
	}
	r.params, r.tool, r.args = params, name, args
	return nil
}

// lookupTool finds the tool's access tag, which may list the upstream's tools once,
// and whether the upstream listed it.
func (r *run) lookupTool() {
	var access string
	if r.c.ToolAccess != nil {
		start := time.Now()
		access = r.c.ToolAccess(r.ctx, r.tool)
		r.rec.stage(vocab.StageToolAccess, start)
	}
	r.rec.setTool(r.tool, access, r.c.Listed != nil && r.c.Listed(r.tool))
}

// inputRules scans the arguments' string leaves.
func (r *run) inputRules(args json.RawMessage) (engine.Report, error) {
	start := time.Now()
	in, err := r.p.Analyzer.AnalyzeArguments(args)
	r.rec.stage(vocab.StageInputRules, start)
	return in, err
}

// policyCall is what one phase of the policies sees; the live and the shadow set
// see the same.
func (r *run) policyCall(phase ctxapi.Phase, resp *ctxapi.Response, findings []engine.Finding) *ctxapi.Call {
	return &ctxapi.Call{
		Phase: phase, Method: r.rec.r.Method, Tool: r.tool, Server: r.c.Server, ToolAccess: r.rec.toolAccess(), Params: r.args, Response: resp,
		User: r.c.User, Findings: findings, RateLimitExceeded: r.limit,
	}
}

// policies runs one phase of the policy set and records which policies acted.
func (r *run) policies(call *ctxapi.Call, stage vocab.Stage) gate.Result {
	start := time.Now()
	res := r.set.Run(r.ctx, call)
	r.rec.stage(stage, start)
	if r.ctx.Err() == nil {
		r.rec.acted(res.Acted)
	}
	return res
}

// rewriteArguments takes a pre policy's arguments. A rewrite has no rung on the
// ladder; it is scanned again before it goes out (docs/decisions.md#changes-detected).
func (r *run) rewriteArguments(args json.RawMessage) (engine.Report, error) {
	r.args = args
	r.rec.setParamsRewritten()
	return r.p.Analyzer.AnalyzeArguments(args)
}

// outgoing is the params the upstream gets: the request's own bytes unless the
// arguments were rewritten or sent as null (TypeScript servers fail with -32603 on
// "arguments": null, so {} goes instead).
func (r *run) outgoing() json.RawMessage {
	if !r.rec.state.paramsRewritten && string(r.params["arguments"]) != "null" {
		return r.c.Params
	}
	params := make(map[string]json.RawMessage, len(r.params))
	for k, v := range r.params {
		params[k] = v
	}
	params["arguments"] = r.args
	b, _ := jsonrpc.Marshal(params)
	return b
}

// callUpstream sends the call and times the wait.
func (r *run) callUpstream(up Upstream) (*jsonrpc.Message, error) {
	start := time.Now()
	resp, err := up(r.ctx, r.outgoing())
	r.rec.stage(vocab.StageUpstream, start)
	return resp, err
}

// outputVerdict applies --filter-output and the fail mode to an analysis of output
// (docs/decisions.md#fail-modes); err is the analyzer's, for an undecodable result.
func (r *run) outputVerdict(out engine.Report, err error) engine.Verdict {
	if !r.filterOutput {
		r.rec.setFilter(vocab.FilterOff, engine.Allow)
		return engine.Allow
	}
	v := out.Verdict
	switch {
	case err != nil:
		r.rec.setReason(vocab.ReasonUndecodableResult)
		v = engine.Allow
		if r.p.FailClosed {
			v = engine.Block
			r.rec.setFailModeTriggered()
		}
	case out.Truncated && v == engine.Allow && r.p.FailClosed:
		v = engine.Block
		r.rec.setFailModeTriggered()
		r.rec.setReason(vocab.ReasonScanTruncated)
	case v == engine.Block:
		r.rec.setReason(vocab.ReasonFilterBlock)
	}
	r.rec.setFilter(vocab.FilterOn, v)
	switch v {
	case engine.Block:
		r.filterAction = vocab.Block
	case engine.Warn:
		r.filterAction = vocab.Warn
	}
	if v != engine.Allow {
		r.rec.rulesActed(out)
	}
	return v
}

// rescan runs the output rules over what the post policies wrote, so a policy can
// never put escapes back, under the same scan cap and fail mode as the upstream's
// bytes (docs/decisions.md#stage-order). It returns the stronger verdict and how many
// findings the agent's notice adds.
func (r *run) rescan(result json.RawMessage, verdict engine.Verdict) (engine.Verdict, int) {
	if !r.filterOutput {
		return verdict, 0
	}
	again, err := r.p.Analyzer.AnalyzeResultWithin(result, r.c.Roots)
	if err != nil {
		return verdict, 0 // replaceContent wrote an object: cannot happen
	}
	if again.Truncated {
		r.rec.setTruncated()
	}
	v := again.Verdict
	if again.Truncated && v == engine.Allow && r.p.FailClosed {
		v = engine.Block
	}
	if v <= verdict {
		return verdict, 0
	}
	r.rec.addFindings(again)
	if v == engine.Block && again.Verdict != engine.Block {
		r.rec.setFailModeTriggered()
		r.rec.setReason(vocab.ReasonScanTruncated)
	} else if v == engine.Block {
		r.rec.setReason(vocab.ReasonFilterBlock)
	}
	r.rec.setFilter(vocab.FilterOn, v)
	r.rec.rulesActed(again)
	return v, len(again.Findings)
}

// policyAction is the rung of a post-phase content change: mask when a mask helper
// made it, otherwise redact, including a change made without a helper
// (docs/decisions.md#ladder).
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

// warn sanitizes every text of result and puts the notice first
// (docs/decisions.md#warn-shape). A result it cannot rewrite safely is blocked
// rather than passed on with its escapes.
func (r *run) warn(result json.RawMessage, n int) Reply {
	warned, err := warnResult(result, r.rec.eventID(), n)
	if err != nil {
		r.rec.setReason(vocab.ReasonSanitizeFailed)
		return r.block()
	}
	r.rec.escalate(vocab.Warn)
	r.rec.outputChanged()
	return Reply{Result: warned}
}

// block withholds the whole result behind the placeholder
// (docs/decisions.md#block-shape).
func (r *run) block() Reply {
	r.rec.escalate(vocab.Block)
	r.rec.outputChanged()
	return Reply{Result: errorResult(blockText(r.rec.eventID()))}
}

// reject answers a policy rejection: an isError result naming the policy. The
// message goes to the client only (docs/decisions.md#reasons-without-values).
// Before the upstream ran (outcome rejected) the call was rejected; after it (outcome
// ok) the call ran and its result is withheld: the record's phase and the text say
// which (docs/policies.md#pre-or-post).
func (r *run) reject(rej *gate.Rejection, outcome vocab.Outcome) Reply {
	return Reply{Result: noticedErrorResult(r.rejection(rej, outcome))}
}

// rejection records a policy rejection (see reject) and returns the Warn notice to
// put before its text ("" for none) and the text.
func (r *run) rejection(rej *gate.Rejection, outcome vocab.Outcome) (notice, text string) {
	r.rec.setReason(rej.Code)
	r.rec.setPolicy(rej.Policy)
	r.rec.setOutcome(outcome)
	r.rec.guardrail(rej.Policy)
	r.rec.escalate(vocab.Block)
	phase, textOf := ctxapi.PhasePre, rejectText
	if outcome != vocab.OutcomeRejected {
		r.rec.outputChanged()
		phase, textOf = ctxapi.PhasePost, withheldText
	}
	r.rec.setPhase(string(phase))
	r.policyError(rej, phase, false)
	msg, notice := r.thrown(rej)
	return notice, textOf(rej.Policy, msg, r.rec.eventID())
}

// thrown is the client-facing message of a rejection and, when that message quotes
// what the rules warn or block on (injection markup, hidden text, escapes), the Warn
// notice to put before it (docs/decisions.md#rejection-shape). A thrown message may
// quote content: it is scanned like a result, what it carries is recorded as
// findings, and it gets the Warn sanitizer and a bound.
func (r *run) thrown(rej *gate.Rejection) (msg, notice string) {
	msg = rej.Message
	if msg == "" {
		msg = rejectionReasons[rej.Code]
	}
	if msg == "" {
		msg = "the policy rejected the call"
	}
	if rep := r.p.Analyzer.AnalyzeText(msg); len(rep.Findings) > 0 {
		r.rec.addFindings(rep)
		if rep.Verdict != engine.Allow {
			notice = warnText(r.rec.eventID(), len(rep.Findings))
		}
	}
	return bound.Truncate(engine.Sanitize(msg), maxRejectionText), notice
}

// hidden rejects a call to a tool withheld from the caller's listing, citing the
// record of that listing (docs/channels.md#hidden).
func (r *run) hidden(h *Hidden) Reply {
	reason, why, cite := vocab.ReasonToolHidden, "the tool is not listed for this caller", h.EventID
	if h.Reason == vocab.ReasonListingUnavailable {
		reason, why, cite = vocab.ReasonListingUnavailable, "no tools listing could be read to tell whether the tool is withheld from this caller", r.rec.eventID()
	}
	r.rec.setReason(reason)
	r.rec.setPolicy(h.Policy)
	r.rec.setOutcome(vocab.OutcomeRejected)
	r.rec.guardrail(h.Policy)
	r.rec.escalate(vocab.Block)
	return Reply{Result: errorResult(rejectText(h.Policy, why, cite))}
}

// policyError tells the operator about a policy fault (a runtime error, a limit, a
// timeout, a bad ctx shape): one warn line with the file, line, column and error class
// (never the message or a value), and a count per file for /api/status. A shadow
// set's faults are marked shadow and counted apart.
func (r *run) policyError(rej *gate.Rejection, phase ctxapi.Phase, shadow bool) {
	if !rej.IsError() {
		return
	}
	class := rej.ErrorClass
	if class == "" {
		class = string(rej.Code)
	}
	attrs := []any{"policy", rej.Policy, "line", rej.Line, "column", rej.Column, "error_class", class,
		"reason", string(rej.Code), "phase", string(phase), "event_id", r.rec.eventID()}
	if shadow {
		attrs = append(attrs, "shadow", true)
		r.p.ShadowHealth.add(rej.Policy)
	} else {
		r.p.Health.add(rej.Policy)
	}
	log := r.p.Logger
	if log == nil {
		log = slog.Default()
	}
	log.Warn("policy error; call rejected", attrs...)
}

var rejectionReasons = map[vocab.Reason]string{
	vocab.ReasonPolicyTimeout:     "the policy ran past its time limit",
	vocab.ReasonPolicyStackLimit:  "the policy exceeded the call-stack limit",
	vocab.ReasonPolicyMemoryLimit: "the policy exceeded the memory limit",
	vocab.ReasonBadCtxShape:       "the policy left ctx in an invalid shape",
	vocab.ReasonPolicyError:       "the policy failed",
}

// invalidParams answers a malformed tools/call with JSON-RPC -32602.
func (r *run) invalidParams(err error) Reply {
	r.rec.setReason(vocab.ReasonInvalidParams)
	r.rec.setOutcome(vocab.OutcomeRejected)
	r.rec.escalate(vocab.Block)
	b, _ := jsonrpc.Marshal(jsonrpc.ErrorObject{Code: methods.CodeInvalidParams, Message: "mcpgate: " + err.Error()})
	return Reply{Error: b}
}

// overloaded answers a call refused at the in-flight call limit, before the upstream.
func (r *run) overloaded(err error) Reply {
	r.rec.setReason(vocab.ReasonInflightLimit)
	r.rec.setOutcome(vocab.OutcomeRejected)
	r.rec.escalate(vocab.Block)
	b, _ := jsonrpc.Marshal(jsonrpc.ErrorObject{Code: methods.CodeUpstreamUnavailable,
		Message: "mcpgate: " + err.Error() + " (the gateway's --max-inflight-calls limit); retry later (audit log entry " + r.rec.eventID() + ")"})
	return Reply{Error: b}
}

// upstreamFailed answers a call the upstream never answered: no response for a
// cancellation (MCP sends none), a JSON-RPC error citing the record otherwise.
func (r *run) upstreamFailed(err error) Reply {
	var code int
	switch {
	case errors.Is(err, ErrCancelled):
		r.rec.setOutcome(vocab.OutcomeCancelled)
		return Reply{NoReply: true}
	case errors.Is(err, ErrTimeout):
		r.rec.setOutcome(vocab.OutcomeTimeout)
		code = methods.CodeRequestTimeout
	case errors.Is(err, ErrUnknownTool):
		r.rec.setOutcome(vocab.OutcomeUnknownTool)
		code = methods.CodeInvalidParams
	default:
		r.rec.setOutcome(vocab.OutcomeUpstreamError)
		code = methods.CodeUpstreamUnavailable
	}
	b, _ := jsonrpc.Marshal(jsonrpc.ErrorObject{Code: code, Message: "mcpgate: " + err.Error() + " (audit log entry " + r.rec.eventID() + ")"})
	return Reply{Error: b}
}

// refusedResponse fails a request whose response the gateway refused because peers
// could read it two ways (docs/decisions.md#one-reading): this record, the request's
// only one, carries the reason code and outcome upstream_error; the client gets
// -32603 citing it. A retry the revision translation refused because it is not the
// request its round was issued for (retry_mismatch, docs/decisions.md#retry-binding)
// keeps the translation's error (-32602), with outcome rejected.
func (r *run) refusedResponse(resp *jsonrpc.Message) Reply {
	reason := resp.Refused
	r.rec.setReason(reason)
	r.rec.escalate(vocab.Block)
	if reason == vocab.ReasonRetryMismatch {
		r.rec.setOutcome(vocab.OutcomeRejected)
		var eo jsonrpc.ErrorObject
		if json.Unmarshal(resp.Error, &eo) != nil || eo.Code == 0 {
			eo = jsonrpc.ErrorObject{Code: methods.CodeInvalidParams, Message: "mcpgate: the retry is not the request its requestState was issued for"}
		}
		b, _ := jsonrpc.Marshal(jsonrpc.ErrorObject{Code: eo.Code, Message: eo.Message + " (audit log entry " + r.rec.eventID() + ")"})
		return Reply{Error: b}
	}
	r.rec.setOutcome(vocab.OutcomeUpstreamError)
	b, _ := jsonrpc.Marshal(jsonrpc.ErrorObject{Code: methods.CodeInternalError,
		Message: "mcpgate: the upstream's response was dropped: it has more than one reading (" + string(reason) + "; audit log entry " + r.rec.eventID() + ")"})
	return Reply{Error: b}
}

// filterUpstreamError filters a JSON-RPC error the upstream returned, whatever the
// method: every member but code is scanned like a result, whatever its JSON type (a
// message that is missing or not a string, data, members JSON-RPC does not name). A
// block leaves code and the block text as message; a warn puts the notice in front
// of the message (read as text) and sanitizes the rest. An error that is not an
// object is read whole, and any finding replaces it with a -32603 carrying the block
// text.
func (r *run) filterUpstreamError(raw json.RawMessage) Reply {
	r.rec.setOutcome(vocab.OutcomeUpstreamError)
	var e map[string]json.RawMessage
	object := json.Unmarshal(raw, &e) == nil && e != nil
	scan := raw
	if object {
		rest := make(map[string]json.RawMessage, len(e))
		for k, v := range e {
			if k != "code" {
				rest[k] = v
			}
		}
		scan, _ = jsonrpc.Marshal(rest)
	} else {
		scan, _ = jsonrpc.Marshal(map[string]json.RawMessage{"": raw})
	}
	rep, err := r.p.Analyzer.AnalyzeArguments(scan)
	for i := range rep.Findings {
		if object {
			rep.Findings[i].Pointer = "/error" + rep.Findings[i].Pointer
		} else {
			rep.Findings[i].Pointer = "/error"
		}
	}
	r.rec.setFindings(rep)
	verdict := r.outputVerdict(rep, err)
	if verdict == engine.Allow {
		return Reply{Error: raw}
	}
	r.rec.outputChanged()
	if verdict == engine.Block || !object {
		r.rec.escalate(vocab.Block)
		out := map[string]json.RawMessage{"code": json.RawMessage(strconv.Itoa(methods.CodeInternalError))}
		if c, ok := e["code"]; object && ok {
			out["code"] = c
		}
		out["message"], _ = jsonrpc.Marshal(blockText(r.rec.eventID()))
		b, _ := jsonrpc.Marshal(out)
		return Reply{Error: b}
	}
	r.rec.escalate(vocab.Warn)
	var msg string
	if m, ok := e["message"]; ok && json.Unmarshal(m, &msg) != nil {
		msg = string(m) // not a string: its JSON text, so the client reads it as one
	}
	for k, v := range e {
		if k == "code" || k == "message" {
			continue
		}
		if clean, err := engine.SanitizeJSON(v); err == nil {
			e[k] = clean
		} else {
			delete(e, k)
		}
	}
	e["message"], _ = jsonrpc.Marshal(strings.TrimSuffix(warnText(r.rec.eventID(), len(rep.Findings))+" "+engine.Sanitize(msg), " "))
	b, _ := jsonrpc.Marshal(e)
	return Reply{Error: b}
}

// internalError fails the call closed after a panic inside the pipeline.
func (r *run) internalError(v any) Reply {
	log := r.p.Logger
	if log == nil {
		log = slog.Default()
	}
	log.Error("tools/call pipeline panicked; call blocked", "event_id", r.rec.eventID(), "panic", fmt.Sprint(v))
	r.rec.setReason(vocab.ReasonInternalError)
	return r.block()
}
