package pipeline

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/mcpgate/mcpgate/ctxapi"
	"github.com/mcpgate/mcpgate/engine"
	"github.com/mcpgate/mcpgate/gate"
	"github.com/mcpgate/mcpgate/internal/bound"
	"github.com/mcpgate/mcpgate/internal/jsonrpc"
	"github.com/mcpgate/mcpgate/internal/methods"
	"github.com/mcpgate/mcpgate/internal/motion"
	"github.com/mcpgate/mcpgate/vocab"
)

// Channel is one message a server sends toward the agent or the user outside a
// tools/call result (docs/channels.md): a response to a client request, a
// server-to-client request, or a notification.
type Channel struct {
	// Method is the JSON-RPC method: of the client request a response answers, or of
	// the server's own request or notification.
	Method string
	// Params are the client request's params (responses) or the server message's
	// params (requests, notifications).
	Params     json.RawMessage
	User       ctxapi.User
	ClientInfo map[string]string
	// ProtocolVersion is the MCP revision of the exchange, for the record.
	ProtocolVersion string
	// Via, for an input request of an input_required result, is the method whose
	// result carried it (the record's via).
	Via string
	// Server names the upstream in tool pins ("" for the only one).
	Server string
	// Tool, ToolAccess and Arguments are, for tasks/result, the tools/call that
	// created the task: its post phase sees them as ctx.tool, ctx.toolAccess and
	// ctx.params.
	Tool, ToolAccess string
	Arguments        json.RawMessage
	// Internal marks the gateway's own request (a tools/list to learn access tags and
	// what the caller may see): its response never reaches the client, so it is
	// recorded only when something acted on it (a tool withheld or changed, a warning).
	Internal bool
	// Policies, when set, is the policy set the message runs on instead of
	// Gate.Current() (mcpgate test).
	Policies *gate.Set
	// SplitName, set when the session fronts several servers, splits a listed tool
	// name into its server and the server's own name (multi.Mux.SplitName), for the
	// cross-server check of tools/list.
	SplitName func(exposed string) (server, name string, ok bool)
	// SamplingContext is whether the client declared sampling.context; without it a
	// sampling request's includeContext is narrowed to "none".
	SamplingContext bool
	// ClientCapabilities is the clientCapabilities of the 2026-07-28 request's _meta
	// envelope (a response's request), nil when it has none: an input_required result
	// asking for input it does not declare is answered -32021 (docs/channels.md#input-requests).
	ClientCapabilities json.RawMessage
	// Authorized is, for a response to prompts/get or resources/read, what the
	// authorization guardrails answered about its request (AuthorizeEntry): the
	// response's record takes its event id and its outcomes.
	Authorized *Authorized
	// Roots is Call.Roots, for the file: targets in every message read here
	// (a tasks/result's CallToolResult, resources/read contents, prompts/get messages).
	Roots []string
	// Motion is Call.Motion: a tasks/result's values are remembered like a tools/call's.
	Motion *motion.Scope
}

// Hidden is a tool withheld from a caller's listing: by the output rules, a list
// policy or tool pinning. A tools/call to it is rejected citing EventID, the record of
// the listing that withheld it.
type Hidden struct {
	Tool    string
	EventID string
	Policy  string       // the policy file, or output-filter or tool-pinning
	Reason  vocab.Reason // the listing record's reason code
}

// Names of the stages that withhold a listing entry, in rejection texts and records.
const (
	HiddenByFilter = "output-filter"
	HiddenByPin    = "tool-pinning"
	// HiddenByUnreadListing withholds every tool while no listing could be read to
	// tell which are withheld; such a Hidden has no EventID (the call's own is cited).
	HiddenByUnreadListing = "tool-listing"
)

// arriveChannel starts the record of a channel message. Unlike a tools/call it does
// not count toward the rate limit.
func (p *Pipeline) arriveChannel(ctx context.Context, c Channel) *run {
	call := Call{User: c.User, ClientInfo: c.ClientInfo, ProtocolVersion: c.ProtocolVersion, Params: c.Params, Server: c.Server,
		SamplingContext: c.SamplingContext, ClientCapabilities: c.ClientCapabilities, Roots: c.Roots, Motion: c.Motion}
	r := &run{p: p, ctx: ctx, c: call, rec: newRecord(p, call), set: noPolicies,
		limit: func(int) bool { return false }, args: json.RawMessage("{}"), filterOutput: p.FilterOutput}
	r.rec.hold = holdOf(ctx)
	method := c.Method
	if methods.Of(method) == nil { // an error answering a method the gateway does not know
		method = bound.Truncate(method, bound.ToolName)
	}
	r.rec.setMethod(method)
	r.rec.r.Via = methods.Known(c.Via) // a made-up method may carry values
	if c.Tool != "" {
		r.tool = c.Tool
		r.rec.setTool(c.Tool, c.ToolAccess, false)
		if len(c.Arguments) > 0 && c.Arguments[0] == '{' {
			r.args = c.Arguments
		}
	}
	switch {
	case c.Policies != nil:
		r.set = c.Policies
	case p.Gate != nil:
		r.set = p.liveSet(&r.c.User)
	}
	r.rec.setPolicySet(r.set, r.c.User.Tenant)
	if l := p.Limiter; l != nil {
		user := c.User.UserID
		r.limit = func(n int) bool { return l.Peek(context.Background(), user) > n }
	}
	return r
}

func (p *Pipeline) logger() *slog.Logger {
	if p.Logger == nil {
		return slog.Default()
	}
	return p.Logger
}

// phase runs one of the channel phases and records which policies acted.
func (r *run) phase(stage vocab.Stage, call *ctxapi.Call) gate.Result {
	start := time.Now()
	call.User, call.RateLimitExceeded = r.c.User, r.limit
	call.Method, call.Server = r.rec.r.Method, r.c.Server
	res := r.set.Run(r.ctx, call)
	r.rec.stage(stage, start)
	if r.ctx.Err() == nil {
		r.rec.acted(res.Acted)
	}
	return res
}

// channelRules runs the output rules over the parts of a channel message, adds the
// structural findings extra, and applies --filter-output and the fail mode, as for a
// tools/call result.
func (r *run) channelRules(parts []part, err error, extra ...engine.Finding) (engine.Report, engine.Verdict, error) {
	start := time.Now()
	var rep engine.Report
	if err == nil {
		rep, err = analyzeParts(r.p.Analyzer, parts, r.c.Roots)
		addFindings(&rep, extra, r.p.StructureSeverities)
	}
	r.rec.stage(vocab.StageOutputRules, start)
	r.rec.setFindings(rep)
	return rep, r.outputVerdict(rep, err), err
}

// channelRescan runs the output rules over what a channel policy wrote, so that a
// policy can never put escapes back; it returns the stronger verdict.
func (r *run) channelRescan(m *methods.Method, doc json.RawMessage, verdict engine.Verdict) engine.Verdict {
	if !r.filterOutput {
		return verdict
	}
	parts, err := partsOf(m, doc)
	if err != nil {
		return verdict
	}
	return r.channelRescanParts(parts, verdict)
}

// Response filters the upstream's response to a client request of c.Method and
// writes its one audit record: a JSON-RPC error whatever the method, otherwise as the
// method's row says (tools/call's output stages for a CallToolResult, a listing's
// entries, or the members it names). A clean response comes back as Original, byte
// for byte.
func (p *Pipeline) Response(ctx context.Context, c Channel, resp *jsonrpc.Message) (reply Reply) {
	m := methods.Of(c.Method)
	info := p.serverInfoChange(c, resp)
	if info == nil && resp.Error == nil && m.Filtered() && m.Record == methods.WhenText && !holdsText(m, resp.Result) && c.Authorized == nil {
		return Reply{Original: resp.Raw} // nothing to read, no record
	}
	r := p.arriveChannel(ctx, c)
	if a := c.Authorized; a != nil {
		r.rec.r.EventID = a.EventID // the id the services were asked under
		for _, o := range a.Outcomes {
			r.rec.guardrailCall(o, guardPre)
		}
	}
	defer func() {
		if v := recover(); v != nil {
			p.logger().Error("channel filter panicked; response blocked", "event_id", r.rec.eventID(), "method", r.rec.r.Method, "panic", fmt.Sprint(v))
			r.rec.setReason(vocab.ReasonInternalError)
			reply = r.blockMessage(m, resp.Result, nil, blockTextOf(m, r.rec.eventID()), "")
		} else {
			reply = r.cacheHints(c, m, resp, reply)
		}
		if c.Internal && r.rec.state.action == vocab.Pass {
			return
		}
		r.rec.emit(p)
	}()
	if info != nil {
		refusal, found := r.serverInfoChanged(c, info)
		if refusal != "" {
			b, _ := jsonrpc.Marshal(jsonrpc.ErrorObject{Code: methods.CodeInternalError, Message: refusal})
			return Reply{Error: b}
		}
		defer r.rec.addFindings(found) // after the result's own findings are set
	}
	if resp.Refused != "" {
		return r.refusedResponse(resp)
	}
	if resp.Error != nil {
		return r.filterUpstreamError(resp.Error)
	}
	if m != nil && m.Direction == methods.ClientRequest && inputRequired(resp.Result) {
		return r.inputRequiredReply(m, resp)
	}
	if c.Tool != "" && m != nil && m.InlinesTaskResult && inlinedToolResult(resp.Result) != nil {
		return r.taskFlow(c, m, resp.Result, resp.Raw, false) // a tasks/get that inlines the task's result
	}
	switch {
	case m == nil || m.Shape == methods.NoText:
		return Reply{Original: resp.Raw}
	case m.Shape == methods.ToolResult:
		return r.output(resp, nil, 0)
	case m.Shape == methods.Listing:
		return r.listing(c, m, resp)
	case m.Phase == ctxapi.PhaseInstructions:
		return r.instructions(c, resp)
	}
	return r.flow(c, m, resp.Result, resp.Raw)
}

// ServerRequest filters a server-to-client request (sampling/createMessage,
// elicitation/create) and runs the server_request phase. A blocked or rejected
// request comes back as Error, to answer the server with; it never reaches the
// client. Otherwise Original (forward raw as is) or Params (forward with these).
func (p *Pipeline) ServerRequest(ctx context.Context, c Channel, raw []byte) Reply {
	reply, rec := p.serverRequest(ctx, c, raw)
	rec.emit(p)
	return reply
}

// serverRequest is ServerRequest leaving the record to its caller to emit, so that an
// input request's record can say whether its entry reached the client.
func (p *Pipeline) serverRequest(ctx context.Context, c Channel, raw []byte) (reply Reply, rec *record) {
	m := methods.Of(c.Method)
	r := p.arriveChannel(ctx, c)
	rec = r.rec
	defer func() {
		if v := recover(); v != nil {
			p.logger().Error("server request filter panicked; request refused", "event_id", r.rec.eventID(), "method", r.rec.r.Method, "panic", fmt.Sprint(v))
			r.rec.setReason(vocab.ReasonInternalError)
			reply = r.refuse(requestBlockedText(r.rec.eventID()))
		}
	}()
	if !m.Filtered() {
		return Reply{Original: raw}, rec
	}
	return r.flow(c, m, methods.OrObject(c.Params), raw), rec
}

// Notification filters a server notification (notifications/message,
// notifications/progress, notifications/tasks/status, notifications/tasks, …). One with nothing to read (a
// progress notification without a message) comes back as Original and leaves no
// record; a blocked one is dropped (NoReply) or has its text replaced; a warned one
// comes back sanitized in Params.
func (p *Pipeline) Notification(c Channel, raw []byte) (reply Reply) {
	m := methods.Of(c.Method)
	if !m.Filtered() {
		return Reply{Original: raw}
	}
	if m.Record == methods.WhenText && !holdsText(m, methods.OrObject(c.Params)) {
		return Reply{Original: raw}
	}
	r := p.arriveChannel(context.Background(), c)
	defer func() {
		if v := recover(); v != nil {
			p.logger().Error("notification filter panicked; notification dropped", "event_id", r.rec.eventID(), "method", r.rec.r.Method, "panic", fmt.Sprint(v))
			r.rec.setReason(vocab.ReasonInternalError)
			r.rec.escalate(vocab.Block)
			reply = Reply{NoReply: true}
		}
		r.rec.emit(p)
	}()
	if c.Tool != "" && m.InlinesTaskResult && inlinedToolResult(c.Params) != nil { // a task status that carries the task's result
		return r.taskFlow(c, m, methods.OrObject(c.Params), raw, true)
	}
	return r.flow(c, m, methods.OrObject(c.Params), raw)
}

// holdsText reports whether a message of m holds anything for the rules to read; an
// undecodable one does (the fail modes decide).
func holdsText(m *methods.Method, doc json.RawMessage) bool {
	_, err := partsOf(m, doc)
	return !errors.Is(err, errNoParts)
}

// flow is the one channel flow, for every row whose Shape is Fields: the rules over
// the members the row names, the row's policy phase, then the merge. doc is what the
// rules read (a response's result, a request's or notification's params), raw the
// message as it came; c.Params is the client request's params for a response.
//
//	output rules → phase policies → rescan → merge (warn) → record
func (r *run) flow(c Channel, m *methods.Method, doc json.RawMessage, raw []byte) Reply {
	orig := doc
	parts, err := partsOf(m, doc)
	if errors.Is(err, errNoParts) {
		parts, err = nil, nil
	}
	var extra []engine.Finding
	if m.Name == methods.ResourcesRead {
		extra = appFindings(doc, r.p.Strict)
	}
	if m.Direction == methods.ServerRequest {
		var narrowed json.RawMessage
		if extra, narrowed = requestFindings(c, doc); narrowed != nil {
			// forwarded narrowed whatever the verdict (docs/channels.md#sampling)
			doc, raw = narrowed, nil
			r.rec.outputChanged()
		}
	}
	rep, verdict, err := r.channelRules(parts, err, extra...)
	if err == nil && len(parts) > 0 { // what the client is shown, for secrets in motion
		r.rememberShown(m, c.Params, orig, rep.Findings)
	}
	if verdict == engine.Block {
		return r.blockMessage(m, doc, parts, blockTextOf(m, r.rec.eventID()), "")
	}
	if err != nil { // undecodable and fail-open
		return r.unchanged(m, raw, doc)
	}

	// Outside content guardrails that take the method (docs/guardrails.md).
	doc, guarded, verdict, outside, stop := r.guardrailsChannel(m, doc, orig, parts, rep, verdict)
	if stop != nil {
		return *stop
	}

	// The row's policy phase, for the policies that take part in it.
	var pol gate.Result
	if m.Phase != "" && r.set.Acts(m.Phase) {
		call := &ctxapi.Call{Phase: m.Phase, Findings: withFindings(rep.Findings, outside)}
		if m.Direction == methods.ServerRequest { // the request itself, mutable
			call.Params = doc
		} else { // the request read-only, the result's member as ctx.response.content
			call.Params = methods.OrObject(c.Params)
			call.Response = &ctxapi.Response{Content: orArray(field(doc, m.PhaseKey))}
		}
		pol = r.phase(phaseStages[m.Phase], call)
		if r.ctx.Err() != nil && m.Direction == methods.ClientRequest {
			return r.upstreamFailed(ErrCancelled)
		}
		if rej := pol.Reject; rej != nil {
			r.rec.setReason(rej.Code)
			r.rec.setPolicy(rej.Policy)
			r.rec.guardrail(rej.Policy)
			msg, notice := r.thrown(rej)
			return r.blockMessage(m, orig, parts, rejectText(rej.Policy, msg, r.rec.eventID()), notice)
		}
		if pol.Changed {
			r.rec.escalate(policyAction(pol.Action))
			r.rec.outputChanged()
			if m.Direction == methods.ServerRequest {
				doc = pol.Params
			} else if doc, err = setPath(doc, []string{m.PhaseKey}, pol.Content); err != nil {
				rej := &gate.Rejection{Policy: lastOf(pol.Acted), Code: vocab.ReasonBadCtxShape, Message: err.Error()}
				r.rec.setReason(rej.Code)
				r.rec.setPolicy(rej.Policy)
				r.rec.guardrail(rej.Policy)
				msg, notice := r.thrown(rej)
				return r.blockMessage(m, orig, parts, rejectText(rej.Policy, msg, r.rec.eventID()), notice)
			}
			if verdict = r.channelRescan(m, doc, verdict); verdict == engine.Block {
				return r.blockMessage(m, orig, parts, blockTextOf(m, r.rec.eventID()), "")
			}
		}
	}

	// The merge: the Warn sanitizer over what the rules read, the notice where the row
	// has a list of content items.
	start := time.Now()
	defer r.rec.stage(vocab.StageMerge, start)
	if warnings := len(pol.Warnings); verdict == engine.Warn || warnings > 0 {
		warned, err := warnMessage(m, doc, r.rec.eventID(), r.rec.state.findings+warnings)
		if err != nil {
			r.rec.setReason(vocab.ReasonSanitizeFailed)
			return r.blockMessage(m, orig, parts, blockTextOf(m, r.rec.eventID()), "")
		}
		r.rec.escalate(vocab.Warn)
		r.rec.outputChanged()
		return r.changed(m, warned)
	}
	if !pol.Changed && !guarded {
		return r.unchanged(m, raw, doc)
	}
	return r.changed(m, doc)
}

// unchanged is the reply for a message nothing in the flow changed: raw as it came,
// or doc when a check before the flow rewrote it (raw is then nil).
func (r *run) unchanged(m *methods.Method, raw []byte, doc json.RawMessage) Reply {
	if raw != nil {
		return Reply{Original: raw}
	}
	return r.changed(m, doc)
}

// phaseStages is the record's stage of each channel phase.
var phaseStages = map[ctxapi.Phase]vocab.Stage{
	ctxapi.PhaseResource:      vocab.StageResourcePolicies,
	ctxapi.PhasePrompt:        vocab.StagePromptPolicies,
	ctxapi.PhaseServerRequest: vocab.StageServerRequestPolicies,
	ctxapi.PhaseList:          vocab.StageListPolicies,
}

// changed is a reply carrying doc: a response's result, or a request's or
// notification's params.
func (r *run) changed(m *methods.Method, doc json.RawMessage) Reply {
	if m.Direction == methods.ClientRequest {
		return Reply{Result: doc}
	}
	return Reply{Params: doc}
}

// blockMessage withholds a message as its row's Block says, with text (the block text,
// or a rejection's): a placeholder result, a refused request, a dropped notification,
// or the text members replaced. doc is the message as the rules read it, parts what
// they read in it (nil when it could not be read). A notice other than "" (the Warn
// notice of a thrown text) comes first in a placeholder result, as its own item.
func (r *run) blockMessage(m *methods.Method, doc json.RawMessage, parts []part, text, notice string) Reply {
	if r.rec.state.reason == "" {
		r.rec.setReason(vocab.ReasonFilterBlock)
	}
	r.rec.escalate(vocab.Block)
	r.rec.outputChanged()
	block := methods.ToolOutput
	if m != nil {
		block = m.Block
	}
	switch block {
	case methods.Refuse:
		b, _ := jsonrpc.Marshal(jsonrpc.ErrorObject{Code: methods.CodeUserRejected, Message: text})
		return Reply{Error: b}
	case methods.Drop:
		return Reply{NoReply: true}
	case methods.ReplaceText:
		if len(parts) > 0 {
			val, _ := jsonrpc.Marshal(text)
			item, _ := jsonrpc.Marshal(textItem{"text", text}) // a content block stays one
			out := doc
			var err error
			for _, p := range parts {
				v := val
				switch t := bytes.TrimSpace(p.raw); {
				case p.block && !p.resource:
					v = item
				case len(t) > 0 && t[0] == '{': // an object stays one (structuredContent)
					v = json.RawMessage(`{}`)
				case len(t) > 0 && t[0] == '[':
					v = json.RawMessage(`[]`)
				}
				if out, err = setPath(out, p.path, v); err != nil {
					break
				}
			}
			if err == nil {
				return r.changed(m, out)
			}
		}
		if m.Direction != methods.ClientRequest {
			return Reply{NoReply: true}
		}
	}
	return Reply{Result: blockedResult(block, doc, text, notice)}
}

// sanitizeChannel runs the Warn sanitizer over what the rules read in a message.
func sanitizeChannel(m *methods.Method, doc json.RawMessage) (json.RawMessage, error) {
	parts, err := partsOf(m, doc)
	if errors.Is(err, errNoParts) {
		return doc, nil
	}
	if err != nil {
		return nil, err
	}
	return sanitizeParts(doc, parts)
}

// warnMessage sanitizes a message in place and, where its row's block shape is a list
// of content items, puts the notice first as its own item (docs/channels.md#warn).
func warnMessage(m *methods.Method, doc json.RawMessage, eventID string, n int) (json.RawMessage, error) {
	clean, err := sanitizeChannel(m, doc)
	if err != nil {
		return nil, err
	}
	var key string
	var notice json.RawMessage
	switch m.Block {
	case methods.ResourceContents:
		key = "contents"
		notice, _ = jsonrpc.Marshal(resourceText{URI: firstURI(doc), MIMEType: "text/plain", Text: warnText(eventID, n)})
	case methods.PromptMessages:
		key = "messages"
		notice = promptMessage(warnText(eventID, n))
	default:
		return clean, nil
	}
	var items []json.RawMessage
	if v := field(clean, key); len(v) > 0 {
		if err := json.Unmarshal(v, &items); err != nil {
			return nil, err
		}
	}
	all, _ := jsonrpc.Marshal(append([]json.RawMessage{notice}, items...))
	return setPath(clean, []string{key}, all)
}

// blockTextOf is the block text of a method's row (docs/channels.md#block; the dash is
// U+2014).
func blockTextOf(m *methods.Method, id string) string {
	if m == nil {
		return blockText(id)
	}
	switch m.Block {
	case methods.ResourceContents:
		return "[mcpgate: resource blocked — see audit log entry " + id + "]"
	case methods.PromptMessages:
		return "[mcpgate: prompt blocked — see audit log entry " + id + "]"
	case methods.Refuse:
		return requestBlockedText(id)
	case methods.ReplaceText:
		return "[mcpgate: text blocked — see audit log entry " + id + "]"
	}
	return blockText(id)
}

func requestBlockedText(eventID string) string {
	return "[mcpgate: request blocked — see audit log entry " + eventID + "]"
}

type resourceText struct {
	URI      string `json:"uri"`
	MIMEType string `json:"mimeType"`
	Text     string `json:"text"`
}

// promptMessage is one user message with one text block.
func promptMessage(text string) json.RawMessage {
	b, _ := jsonrpc.Marshal(struct {
		Role    string   `json:"role"`
		Content textItem `json:"content"`
	}{"user", textItem{"text", text}})
	return b
}

// blockedResult is the result a blocked or rejected response is replaced with, of
// its row's shape: one contents item, one prompt message, an empty completion, or
// the tools/call block shape. A notice other than "" (the Warn notice of a thrown
// text) comes first as its own item.
func blockedResult(block methods.Block, orig json.RawMessage, text, notice string) json.RawMessage {
	var b []byte
	switch block {
	case methods.ResourceContents:
		items := []resourceText{{URI: firstURI(orig), MIMEType: "text/plain", Text: text}}
		if notice != "" {
			items = append([]resourceText{{URI: items[0].URI, MIMEType: "text/plain", Text: notice}}, items...)
		}
		b, _ = jsonrpc.Marshal(map[string]any{"contents": items})
	case methods.PromptMessages:
		msgs := []json.RawMessage{promptMessage(text)}
		if notice != "" {
			msgs = append([]json.RawMessage{promptMessage(notice)}, msgs...)
		}
		b, _ = jsonrpc.Marshal(map[string]any{"messages": msgs})
	case methods.EmptyCompletion:
		b, _ = jsonrpc.Marshal(map[string]any{"completion": map[string]any{"values": []string{}, "total": 0, "hasMore": false}})
	default:
		b = noticedErrorResult(notice, text)
	}
	return b
}

// refuse answers a server-to-client request with a JSON-RPC error; the client never
// sees the request.
func (r *run) refuse(message string) Reply {
	if r.rec.state.reason == "" {
		r.rec.setReason(vocab.ReasonFilterBlock)
	}
	r.rec.escalate(vocab.Block)
	r.rec.outputChanged()
	b, _ := jsonrpc.Marshal(jsonrpc.ErrorObject{Code: methods.CodeUserRejected, Message: message})
	return Reply{Error: b}
}

// field returns the member key of a JSON object, or nil.
func field(doc json.RawMessage, key string) json.RawMessage {
	var m map[string]json.RawMessage
	if json.Unmarshal(doc, &m) != nil {
		return nil
	}
	return m[key]
}

// firstURI is the uri of a resources/read result's first contents item, or "".
func firstURI(result json.RawMessage) string {
	var r struct {
		Contents []struct {
			URI string `json:"uri"`
		} `json:"contents"`
	}
	if json.Unmarshal(result, &r) != nil || len(r.Contents) == 0 {
		return ""
	}
	return r.Contents[0].URI
}

// HiddenEntry answers a prompts/get or resources/read of a prompt or resource that a
// listing withheld from this caller (docs/channels.md#hidden): the channel's block
// shape carrying the rejection text, citing the listing's record. It writes the
// request's one record; the server is never asked.
func (p *Pipeline) HiddenEntry(ctx context.Context, c Channel, h *Hidden) (reply Reply) {
	r := p.arriveChannel(ctx, c)
	defer r.rec.emit(p)
	r.rec.setReason(vocab.ReasonEntryHidden)
	r.rec.setPolicy(h.Policy)
	r.rec.setOutcome(vocab.OutcomeRejected)
	r.rec.guardrail(h.Policy)
	r.rec.escalate(vocab.Block)
	var orig json.RawMessage
	if m := methods.Of(c.Method); m != nil && m.Block == methods.ResourceContents { // the placeholder names the uri asked for
		var q struct {
			URI string `json:"uri"`
		}
		_ = json.Unmarshal(c.Params, &q)
		orig, _ = jsonrpc.Marshal(map[string]any{"contents": []map[string]string{{"uri": q.URI}}})
	}
	block := methods.ToolOutput
	if m := methods.Of(c.Method); m != nil {
		block = m.Block
	}
	return Reply{Result: blockedResult(block, orig, rejectText(h.Policy, "it is not listed for this caller", h.EventID), "")}
}
