package pipeline

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/mcpgate/mcpgate/ctxapi"
	"github.com/mcpgate/mcpgate/engine"
	"github.com/mcpgate/mcpgate/gate"
	"github.com/mcpgate/mcpgate/internal/jsonrpc"
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
}

// Filtered reports whether Response, ServerRequest or Notification filter messages of
// method (docs/channels.md).
func Filtered(method string) bool {
	switch method {
	case "resources/read", "prompts/get", "completion/complete", "tasks/result", "initialize", "server/discover",
		"tools/list", "prompts/list", "resources/list", "resources/templates/list",
		"sampling/createMessage", "elicitation/create",
		"notifications/message", "notifications/progress":
		return true
	}
	return false
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

// blockedRequestCode is the JSON-RPC error code a blocked server-to-client request is
// answered with: the code MCP's sampling section uses for a request the user rejected.
const blockedRequestCode = -1

// arriveChannel starts the record of a channel message. Unlike a tools/call it does
// not count toward the rate limit.
func (p *Pipeline) arriveChannel(ctx context.Context, c Channel) *run {
	call := Call{User: c.User, ClientInfo: c.ClientInfo, Params: c.Params, Server: c.Server}
	r := &run{p: p, ctx: ctx, c: call, rec: newRecord(p, call), set: noPolicies,
		limit: func(int) bool { return false }, args: json.RawMessage("{}"), filterOutput: p.FilterOutput}
	r.rec.setMethod(c.Method)
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
		r.set = p.Gate.Current()
	}
	r.rec.setPolicySet(r.set.Generation, r.set.Hash)
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
		rep, err = analyzeParts(r.p.Analyzer, parts)
		addFindings(&rep, extra, r.p.StructureSeverities)
	}
	r.rec.stage(vocab.StageOutputRules, start)
	r.rec.setFindings(rep)
	return rep, r.outputVerdict(rep, err), err
}

// channelRescan runs the output rules over what a channel policy wrote, so that a
// policy can never put escapes back; it returns the stronger verdict.
func (r *run) channelRescan(method string, doc json.RawMessage, verdict engine.Verdict) engine.Verdict {
	if !r.filterOutput {
		return verdict
	}
	parts, err := partsOf(method, doc)
	if err != nil {
		return verdict
	}
	again, err := analyzeParts(r.p.Analyzer, parts)
	if err != nil || again.Verdict <= verdict {
		return verdict
	}
	r.rec.addFindings(again)
	r.rec.rulesActed(again)
	r.rec.setFilter(vocab.FilterOn, again.Verdict)
	if again.Verdict == engine.Block {
		r.rec.setReason(vocab.ReasonFilterBlock)
	}
	return again.Verdict
}

// Response filters the upstream's response to a client request of c.Method
// (resources/read, prompts/get, completion/complete, tasks/result, and the listings)
// and writes its one audit record. A clean response comes back as Original, byte for
// byte.
func (p *Pipeline) Response(ctx context.Context, c Channel, resp *jsonrpc.Message) (reply Reply) {
	if InstructionsMethod(c.Method) && resp.Error == nil && !hasInstructions(resp.Result) {
		return Reply{Original: resp.Raw} // no instructions: nothing to read, no record
	}
	r := p.arriveChannel(ctx, c)
	defer func() {
		if v := recover(); v != nil {
			p.logger().Error("channel filter panicked; response blocked", "event_id", r.rec.eventID(), "method", c.Method, "panic", fmt.Sprint(v))
			r.rec.setReason(vocab.ReasonInternalError)
			reply = r.blockChannel(c.Method, resp.Result)
		}
		if c.Internal && r.rec.r.ActionTaken == vocab.Pass {
			return
		}
		r.rec.emit(p)
	}()
	if resp.Error != nil {
		return r.filterUpstreamError(resp.Error)
	}
	switch c.Method {
	case "tasks/result":
		return r.output(resp, nil, 0)
	case "tools/list", "prompts/list", "resources/list", "resources/templates/list":
		return r.listing(c, resp)
	case "initialize", "server/discover":
		return r.instructions(c, resp)
	}
	result := resp.Result
	parts, err := partsOf(c.Method, result)
	if errors.Is(err, errNoParts) {
		parts, err = nil, nil
	}
	rep, verdict, err := r.channelRules(parts, err)
	if verdict == engine.Block {
		return r.blockChannel(c.Method, result)
	}
	if err != nil { // undecodable and fail-open
		return Reply{Original: resp.Raw}
	}

	// The resource and prompt phases, for the policies that take part in them.
	var phase ctxapi.Phase
	var stage vocab.Stage
	var key string
	switch c.Method {
	case "resources/read":
		phase, stage, key = ctxapi.PhaseResource, vocab.StageResourcePolicies, "contents"
	case "prompts/get":
		phase, stage, key = ctxapi.PhasePrompt, vocab.StagePromptPolicies, "messages"
	}
	var pol gate.Result
	if phase != "" && r.set.Acts(phase) {
		pol = r.phase(stage, &ctxapi.Call{Phase: phase, Params: orObject(c.Params),
			Response: &ctxapi.Response{Content: orArray(field(result, key))}, Findings: rep.Findings})
		if ctx.Err() != nil {
			return r.upstreamFailed(ErrCancelled)
		}
		if pol.Reject != nil {
			return r.rejectChannel(c.Method, result, pol.Reject)
		}
		if pol.Changed {
			r.rec.escalate(policyAction(pol.Action))
			r.rec.outputChanged()
			if result, err = setPath(result, []string{key}, pol.Content); err != nil {
				return r.rejectChannel(c.Method, resp.Result, &gate.Rejection{Policy: lastOf(pol.Acted), Code: vocab.ReasonBadCtxShape, Message: err.Error()})
			}
			if verdict = r.channelRescan(c.Method, result, verdict); verdict == engine.Block {
				return r.blockChannel(c.Method, resp.Result)
			}
		}
	}
	start := time.Now()
	defer r.rec.stage(vocab.StageMerge, start)
	warnings := len(pol.Warnings)
	if verdict == engine.Warn || warnings > 0 {
		warned, err := warnChannel(c.Method, result, r.rec.eventID(), r.rec.r.FindingsCount+warnings)
		if err != nil {
			r.rec.setReason(vocab.ReasonSanitizeFailed)
			return r.blockChannel(c.Method, resp.Result)
		}
		r.rec.escalate(vocab.Warn)
		r.rec.outputChanged()
		return Reply{Result: warned}
	}
	if !pol.Changed {
		return Reply{Original: resp.Raw}
	}
	return Reply{Result: result}
}

// ServerRequest filters a server-to-client request (sampling/createMessage,
// elicitation/create) and runs the server_request phase. A blocked or rejected
// request comes back as Error, to answer the server with; it never reaches the
// client. Otherwise Original (forward raw as is) or Params (forward with these).
func (p *Pipeline) ServerRequest(ctx context.Context, c Channel, raw []byte) (reply Reply) {
	r := p.arriveChannel(ctx, c)
	defer func() {
		if v := recover(); v != nil {
			p.logger().Error("server request filter panicked; request refused", "event_id", r.rec.eventID(), "method", c.Method, "panic", fmt.Sprint(v))
			r.rec.setReason(vocab.ReasonInternalError)
			reply = r.refuse(requestBlockedText(r.rec.eventID()))
		}
		r.rec.emit(p)
	}()
	params := orObject(c.Params)
	parts, err := partsOf(c.Method, params)
	if errors.Is(err, errNoParts) {
		parts, err = nil, nil
	}
	extra, narrowed := requestFindings(c, params)
	if narrowed != nil { // forwarded narrowed whatever the verdict (docs/channels.md#sampling)
		params, raw = narrowed, nil
		r.rec.outputChanged()
	}
	rep, verdict, err := r.channelRules(parts, err, extra...)
	if verdict == engine.Block {
		return r.refuse(requestBlockedText(r.rec.eventID()))
	}
	if err != nil && raw != nil {
		return Reply{Original: raw}
	} else if err != nil {
		return Reply{Params: params}
	}
	var pol gate.Result
	if r.set.Acts(ctxapi.PhaseServerRequest) {
		pol = r.phase(vocab.StageServerRequestPolicies, &ctxapi.Call{Phase: ctxapi.PhaseServerRequest, Params: params, Findings: rep.Findings})
		if rej := pol.Reject; rej != nil {
			r.rec.setReason(rej.Code)
			r.rec.setPolicy(rej.Policy)
			r.rec.guardrail(rej.Policy)
			msg, _ := r.thrown(rej) // a refused server request carries no notice
			return r.refuse(rejectText(rej.Policy, msg, r.rec.eventID()))
		}
		if pol.Changed {
			r.rec.escalate(policyAction(pol.Action))
			r.rec.outputChanged()
			params = pol.Params
			if verdict = r.channelRescan(c.Method, params, verdict); verdict == engine.Block {
				return r.refuse(requestBlockedText(r.rec.eventID()))
			}
		}
	}
	if verdict == engine.Warn || len(pol.Warnings) > 0 {
		clean, err := sanitizeChannel(c.Method, params)
		if err != nil {
			r.rec.setReason(vocab.ReasonSanitizeFailed)
			return r.refuse(requestBlockedText(r.rec.eventID()))
		}
		r.rec.escalate(vocab.Warn)
		r.rec.outputChanged()
		return Reply{Params: clean}
	}
	if !pol.Changed && raw != nil {
		return Reply{Original: raw}
	}
	return Reply{Params: params}
}

// Notification filters a server notification (notifications/message,
// notifications/progress). One with nothing to read (a progress notification without
// a message) comes back as Original and leaves no record; a blocked one is dropped
// (NoReply); a warned one comes back sanitized in Params.
func (p *Pipeline) Notification(c Channel, raw []byte) (reply Reply) {
	params := orObject(c.Params)
	parts, err := partsOf(c.Method, params)
	if errors.Is(err, errNoParts) {
		return Reply{Original: raw}
	}
	r := p.arriveChannel(context.Background(), c)
	defer func() {
		if v := recover(); v != nil {
			p.logger().Error("notification filter panicked; notification dropped", "event_id", r.rec.eventID(), "method", c.Method, "panic", fmt.Sprint(v))
			r.rec.setReason(vocab.ReasonInternalError)
			r.rec.escalate(vocab.Block)
			reply = Reply{NoReply: true}
		}
		r.rec.emit(p)
	}()
	_, verdict, err := r.channelRules(parts, err)
	switch {
	case verdict == engine.Block:
		r.rec.escalate(vocab.Block)
		r.rec.outputChanged()
		return Reply{NoReply: true}
	case verdict == engine.Warn && err == nil:
		clean, err := sanitizeParts(params, parts)
		if err != nil {
			r.rec.setReason(vocab.ReasonSanitizeFailed)
			r.rec.escalate(vocab.Block)
			return Reply{NoReply: true}
		}
		r.rec.escalate(vocab.Warn)
		r.rec.outputChanged()
		return Reply{Params: clean}
	}
	return Reply{Original: raw}
}

// sanitizeChannel runs the Warn sanitizer over what the rules read in a message.
func sanitizeChannel(method string, doc json.RawMessage) (json.RawMessage, error) {
	parts, err := partsOf(method, doc)
	if errors.Is(err, errNoParts) {
		return doc, nil
	}
	if err != nil {
		return nil, err
	}
	return sanitizeParts(doc, parts)
}

// warnChannel sanitizes a result in place and, where it holds a list of content
// items, puts the notice first as its own item (docs/channels.md#warn).
func warnChannel(method string, result json.RawMessage, eventID string, n int) (json.RawMessage, error) {
	clean, err := sanitizeChannel(method, result)
	if err != nil {
		return nil, err
	}
	var key string
	var notice json.RawMessage
	switch method {
	case "resources/read":
		key = "contents"
		notice, _ = jsonrpc.Marshal(resourceText{URI: firstURI(result), MIMEType: "text/plain", Text: warnText(eventID, n)})
	case "prompts/get":
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

// Block texts of the channels (docs/channels.md#block; the dash is U+2014).
var blockTexts = map[string]func(string) string{
	"resources/read": func(id string) string { return "[mcpgate: resource blocked — see audit log entry " + id + "]" },
	"prompts/get":    func(id string) string { return "[mcpgate: prompt blocked — see audit log entry " + id + "]" },
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

// channelResult is the result a blocked or rejected response is replaced with: the
// channel's own shape where it has one (resources/read, prompts/get), an empty
// completion for completion/complete. A notice other than "" (the Warn notice of a
// thrown text) comes first as its own item.
func channelResult(method string, orig json.RawMessage, text, notice string) json.RawMessage {
	var b []byte
	switch method {
	case "resources/read":
		items := []resourceText{{URI: firstURI(orig), MIMEType: "text/plain", Text: text}}
		if notice != "" {
			items = append([]resourceText{{URI: items[0].URI, MIMEType: "text/plain", Text: notice}}, items...)
		}
		b, _ = jsonrpc.Marshal(map[string]any{"contents": items})
	case "prompts/get":
		msgs := []json.RawMessage{promptMessage(text)}
		if notice != "" {
			msgs = append([]json.RawMessage{promptMessage(notice)}, msgs...)
		}
		b, _ = jsonrpc.Marshal(map[string]any{"messages": msgs})
	case "completion/complete":
		b, _ = jsonrpc.Marshal(map[string]any{"completion": map[string]any{"values": []string{}, "total": 0, "hasMore": false}})
	default:
		b = noticedErrorResult(notice, text)
	}
	return b
}

// blockChannel withholds a response behind its channel's placeholder.
func (r *run) blockChannel(method string, orig json.RawMessage) Reply {
	if r.rec.r.Reason == "" {
		r.rec.setReason(vocab.ReasonFilterBlock)
	}
	r.rec.escalate(vocab.Block)
	r.rec.outputChanged()
	msg := blockText(r.rec.eventID())
	if text := blockTexts[method]; text != nil {
		msg = text(r.rec.eventID())
	}
	return Reply{Result: channelResult(method, orig, msg, "")}
}

// rejectChannel answers a policy rejection in the resource or prompt phase with the
// channel's placeholder shape carrying the rejection text.
func (r *run) rejectChannel(method string, orig json.RawMessage, rej *gate.Rejection) Reply {
	r.rec.setReason(rej.Code)
	r.rec.setPolicy(rej.Policy)
	r.rec.guardrail(rej.Policy)
	r.rec.escalate(vocab.Block)
	r.rec.outputChanged()
	msg, notice := r.thrown(rej)
	return Reply{Result: channelResult(method, orig, rejectText(rej.Policy, msg, r.rec.eventID()), notice)}
}

// refuse answers a server-to-client request with a JSON-RPC error; the client never
// sees the request.
func (r *run) refuse(message string) Reply {
	if r.rec.r.Reason == "" {
		r.rec.setReason(vocab.ReasonFilterBlock)
	}
	r.rec.escalate(vocab.Block)
	r.rec.outputChanged()
	b, _ := jsonrpc.Marshal(jsonrpc.ErrorObject{Code: blockedRequestCode, Message: message})
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

func orObject(v json.RawMessage) json.RawMessage {
	if len(v) == 0 || string(v) == "null" {
		return json.RawMessage("{}")
	}
	return v
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
	if c.Method == "resources/read" { // the placeholder names the uri asked for
		var q struct {
			URI string `json:"uri"`
		}
		_ = json.Unmarshal(c.Params, &q)
		orig, _ = jsonrpc.Marshal(map[string]any{"contents": []map[string]string{{"uri": q.URI}}})
	}
	return Reply{Result: channelResult(c.Method, orig, rejectText(h.Policy, "it is not listed for this caller", h.EventID), "")}
}
