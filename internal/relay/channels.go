package relay

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"math"
	"strings"
	"sync"
	"time"

	"github.com/mcpgate/mcpgate/ctxapi"
	"github.com/mcpgate/mcpgate/internal/bound"
	"github.com/mcpgate/mcpgate/internal/jsonrpc"
	"github.com/mcpgate/mcpgate/internal/jsonscan"
	"github.com/mcpgate/mcpgate/internal/methods"
	"github.com/mcpgate/mcpgate/internal/pipeline"
	"github.com/mcpgate/mcpgate/vocab"
)

// visibility is what this session's caller may see of the upstream's tools: the
// tools the last filtered tools/list withheld (by the output rules, a list policy or
// tool pinning), so that a call to one is rejected (docs/channels.md#hidden).
type visibility struct {
	mu      sync.Mutex
	hidden  map[string]pipeline.Hidden // the last whole listing's, and stray pages'
	next    map[string]pipeline.Hidden // the listing in progress, from its first page
	known   bool                       // a whole filtered listing has been seen since the last list_changed
	all     *pipeline.Hidden           // a page of the last listing could not be read: everything is withheld
	nextAll *pipeline.Hidden
}

// listed takes one filtered listing page: the first page (no cursor) starts a new
// listing, which replaces what is withheld only once its last page (no nextCursor)
// is in, so that listing page 1 again never forgets a tool page 2 withheld. A page
// of a listing not seen to start only adds to what is withheld.
func (v *visibility) listed(first, last bool, hidden []pipeline.Hidden, all *pipeline.Hidden) {
	v.mu.Lock()
	defer v.mu.Unlock()
	if first {
		v.next, v.nextAll = map[string]pipeline.Hidden{}, nil
	}
	if v.next == nil {
		if v.hidden == nil {
			v.hidden = map[string]pipeline.Hidden{}
		}
		for _, h := range hidden {
			v.hidden[h.Tool] = h
		}
		if all != nil {
			v.all = all
		}
		return
	}
	for _, h := range hidden {
		v.next[h.Tool] = h
	}
	if all != nil {
		v.nextAll = all
	}
	if last {
		v.hidden, v.next, v.known = v.next, nil, true
		v.all, v.nextAll = v.nextAll, nil
	}
}

func (v *visibility) invalidate() {
	v.mu.Lock()
	v.known = false
	v.mu.Unlock()
}

func (v *visibility) lookup(tool string) (h *pipeline.Hidden, known bool) {
	v.mu.Lock()
	defer v.mu.Unlock()
	if x, ok := v.hidden[tool]; ok {
		return &x, v.known
	}
	if x, ok := v.next[tool]; ok {
		return &x, v.known
	}
	for _, a := range []*pipeline.Hidden{v.all, v.nextAll} {
		if a != nil {
			x := *a
			x.Tool = tool
			return &x, v.known
		}
	}
	return nil, v.known
}

// listingHides reports whether a filtered listing can withhold a tool from this
// caller: with the output filter on, tools pinned in block mode, a content guardrail
// on tools/list, or a list policy.
func (s *Session) listingHides() bool {
	p := s.opts.Pipeline
	if p == nil {
		return false
	}
	if p.FilterOutput || (p.Pins != nil && p.PinBlock) || p.ListingGuarded() {
		return true
	}
	return p.Gate != nil && p.Gate.Current().Acts(ctxapi.PhaseList)
}

// hiddenTool is pipeline.Call.Hidden: whether tool is withheld from this caller. When
// no whole listing has been filtered since the last list_changed, the gateway lists
// the tools itself first, so a caller that never lists cannot call a hidden tool.
func (s *Session) hiddenTool(ctx context.Context, tool string) *pipeline.Hidden {
	if !s.listingHides() {
		return nil
	}
	h, known := s.vis.lookup(tool)
	if !known {
		s.tools.fetch(ctx)
		h, known = s.vis.lookup(tool)
	}
	if h == nil && !known && s.unreadListingRejects() {
		return &pipeline.Hidden{Tool: tool, Policy: pipeline.HiddenByUnreadListing, Reason: vocab.ReasonListingUnavailable}
	}
	return h
}

// listingPerCaller reports whether a listing can differ between callers: a list
// policy takes part (it sees ctx.user), or a content guardrail judges tools/list (it
// is sent the caller). Such a listing is cacheScope "private".
func (s *Session) listingPerCaller() bool {
	p := s.opts.Pipeline
	return p != nil && (p.ListingGuarded() || p.Gate != nil && p.Gate.Current().Acts(ctxapi.PhaseList))
}

// unreadListingRejects reports whether a call is rejected when no tools listing could
// be read to tell whether the tool is withheld (docs/channels.md#hidden): always when
// a list policy, blocking pins or a content guardrail on tools/list with fail mode
// closed would decide (a policy that cannot run rejects, a guardrail that cannot judge
// withholds), and under --fail-mode closed when only the output filter would.
func (s *Session) unreadListingRejects() bool {
	p := s.opts.Pipeline
	return p.FailClosed || (p.Pins != nil && p.PinBlock) || p.Guardrails.FailsClosed(methods.ToolsList) ||
		(p.Gate != nil && p.Gate.Current().Acts(ctxapi.PhaseList))
}

// hiddenEntry answers a prompts/get or resources/read of a prompt or resource this
// caller's listing withheld, and reports whether it did; the server is never asked.
func (s *Session) hiddenEntry(ctx context.Context, msg *jsonrpc.Message) bool {
	m := methods.Of(msg.Method)
	if m == nil || m.Withholds == "" {
		return false
	}
	v, field := s.views[m.Withholds], m.Asks
	// Keys are read exactly as the server reads them: encoding/json would match "NAME"
	// or "Uri" to a struct field, and the last of them would win.
	var params map[string]json.RawMessage
	var key string
	if s.opts.Pipeline == nil || json.Unmarshal(msg.Params, &params) != nil || json.Unmarshal(params[field], &key) != nil {
		return false
	}
	if field == "uri" {
		key = resourceKey(key)
	}
	h, _ := v.lookup(key)
	if h == nil {
		return false
	}
	info, version := s.clientOf(msg.Params)
	reply := s.opts.Pipeline.HiddenEntry(ctx, pipeline.Channel{Method: msg.Method, Params: msg.Params,
		User: s.opts.User, ClientInfo: info, ProtocolVersion: version, Server: s.opts.Server}, h)
	s.write(jsonrpc.NewResponse(msg.ID, conform(msg, reply.Result, false)))
	return true
}

// authorizeEntry asks the authorization guardrails about a prompts/get or
// resources/read before it goes to the server (docs/guardrails.md#prompts-and-resources).
// stopped: the gateway answered it (a deny, a closed failure) or the client left; the
// server is never asked. Otherwise the outcomes go with the request to its response's
// record.
func (s *Session) authorizeEntry(ctx context.Context, msg *jsonrpc.Message) (authz *pipeline.Authorized, stopped bool) {
	p := s.opts.Pipeline
	if p == nil || msg.Method != methods.PromptsGet && msg.Method != methods.ResourcesRead || !p.Guardrails.Authorizes(msg.Method) {
		return nil, false
	}
	server := s.opts.Server
	if routed, err := s.route(msg); err == nil && routed.Upstream != "" {
		server = routed.Upstream
	}
	info, version := s.clientOf(msg.Params)
	reply, authz, stopped := p.AuthorizeEntry(ctx, pipeline.Channel{Method: msg.Method, Params: msg.Params,
		User: s.opts.User, ClientInfo: info, ProtocolVersion: version, Server: server})
	switch {
	case stopped && reply.Error != nil:
		s.write(&jsonrpc.Message{Raw: jsonrpc.ErrorResponseObjectRaw(msg.ID, reply.Error), Kind: jsonrpc.KindResponse, ID: msg.ID, Error: reply.Error})
	case stopped && !reply.NoReply:
		s.write(jsonrpc.NewResponse(msg.ID, conform(msg, reply.Result, false)))
	}
	return authz, stopped
}

// filterChannel runs a server→client message through the pipeline's channel filters
// (docs/channels.md) and returns what to write to the client: the message itself
// when it is clean, a rewritten one, or nil (a dropped notification, or a
// server-to-client request the gateway answered itself).
func (s *Session) filterChannel(x *Exchange) *jsonrpc.Message {
	p := s.opts.Pipeline
	msg := x.Msg
	// A JSON-RPC error is read whatever the method; otherwise the method's row says.
	if p == nil || !(methods.Of(x.Method).Filtered() || msg.Kind == jsonrpc.KindResponse && msg.Error != nil) {
		return x.Msg
	}
	var reqParams json.RawMessage
	if x.Request != nil {
		reqParams = x.Request.Params
	}
	info, version := s.clientOf(reqParams)
	ch := pipeline.Channel{Method: x.Method, User: s.opts.User, ClientInfo: info, ProtocolVersion: version, Server: x.Server, Authorized: x.authz,
		SamplingContext: s.clientSamplingContext(), Roots: s.declaredRoots(x.Server), Motion: s.motion}
	if sp, ok := s.up.(nameSplitter); ok {
		ch.SplitName = sp.SplitName
	}
	switch msg.Kind {
	case jsonrpc.KindResponse:
		if x.Request != nil {
			ch.Params = x.Request.Params
			ch.ClientCapabilities = envelopeCapabilities(ch.Params)
		}
		// tasks/result, and a tasks/get that inlines the task's result, run the post
		// phase of the task's tool (docs/decisions.md#task-results).
		if row := methods.Of(x.Method); x.Method == methods.TasksResult || row != nil && row.InlinesTaskResult && msg.Error == nil && pipeline.InlinesToolResult(msg.Result) {
			c, ok := s.tasks.get(x.task)
			if !ok { // forgotten while the request was in flight: no tool to judge it by
				return s.unknownTaskError(msg.ID, x.Method, x.Server)
			}
			ch.Tool, ch.Arguments = c.tool, c.args
			ch.ToolAccess = s.tools.cached(c.tool) // never list here: this is the upstream's reader
		}
		reply := p.Response(s.ctx, ch, msg)
		if reply.Abandoned {
			s.abandonedInput(msg.ID, msg.Upstream)
		}
		if v := s.views[x.Method]; v != nil && msg.Error == nil {
			hidden := reply.Hidden
			if methods.Of(x.Method).List.Entry == "uri" {
				hidden = make([]pipeline.Hidden, len(reply.Hidden))
				for i, h := range reply.Hidden {
					h.Tool = resourceKey(h.Tool)
					hidden[i] = h
				}
			}
			v.listed(firstPage(ch.Params), lastPage(msg.Result), hidden, reply.HiddenAll)
		}
		if reply.Result != nil {
			reply.Result = conform(x.Request, reply.Result, s.views[x.Method] != nil)
		} else if v := s.views[x.Method]; v != nil && reply.Original != nil && msg.Error == nil && s.listingPerCaller() {
			// unchanged for this caller, but a list policy could change it for another
			if out := conform(x.Request, msg.Result, true); string(out) != string(msg.Result) {
				reply.Original, reply.Result = nil, out
			}
		}
		return responseMessage(msg, reply)
	case jsonrpc.KindRequest:
		ch.Params, ch.Via = msg.Params, s.relatedMethod(msg)
		reply := p.ServerRequest(s.ctx, ch, msg.Raw)
		switch {
		case reply.Error != nil: // answered here; the client never sees it
			s.send(&jsonrpc.Message{Raw: jsonrpc.ErrorResponseObjectRaw(msg.ID, reply.Error), Kind: jsonrpc.KindResponse,
				ID: msg.ID, Error: reply.Error, Upstream: msg.Upstream})
			return nil
		case reply.Params != nil:
			return msg.WithParams(reply.Params)
		}
		return msg
	case jsonrpc.KindNotification:
		ch.Params = msg.Params
		if row := methods.Of(x.Method); row != nil && row.InlinesTaskResult && pipeline.InlinesToolResult(msg.Params) {
			c, ok := s.tasks.of(msg.Params)
			if !ok { // a result no tool's post phase can judge: dropped, never relayed
				s.log.Warn("a task status carrying a result for a task the session does not hold was dropped", "upstream", x.Server)
				s.recordRefusal(x.Method, x.Server, vocab.ReasonTaskUnknown, true)
				return nil
			}
			ch.Tool, ch.Arguments = c.tool, c.args
			ch.ToolAccess = s.tools.cached(c.tool)
		}
		reply := p.Notification(ch, msg.Raw)
		switch {
		case reply.NoReply:
			return nil
		case reply.Params != nil:
			return msg.WithParams(reply.Params)
		}
		return msg
	}
	return msg
}

// relatedMethod is the method of the client request a server request was sent in
// relation to (jsonrpc.Message.Related: a translated input request, or a Streamable
// HTTP server's request on that request's stream), for the record's via; "" when
// none is in flight.
func (s *Session) relatedMethod(msg *jsonrpc.Message) string {
	if msg.Related == nil {
		return ""
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if p := s.pending[jsonrpc.IDKey(msg.Related)]; p != nil && p.route == msg.Upstream {
		return p.req.Method
	}
	return ""
}

// clientSamplingContext reports whether the client declared sampling.context: in its
// initialize (2025-11-25), or in the clientCapabilities of its latest request's
// _meta envelope (2026-07-28).
func (s *Session) clientSamplingContext() bool {
	if s.samplingContext.Load() {
		return true
	}
	e := s.envelope.Load()
	if e == nil || len(e.ClientCapabilities) == 0 {
		return false
	}
	var caps struct {
		Sampling struct {
			Context json.RawMessage `json:"context"`
		} `json:"sampling"`
	}
	return json.Unmarshal(e.ClientCapabilities, &caps) == nil && len(caps.Sampling.Context) > 0 && string(caps.Sampling.Context) != "null"
}

// nameSplitter is implemented by an upstream that fronts several servers
// (multi.Mux): it splits a listed tool name into its server and the server's name.
type nameSplitter interface {
	SplitName(exposed string) (server, name string, ok bool)
}

// initChecker is implemented by an upstream that answers the client's initialize
// itself from several servers' answers (multi.Mux): check reads each server's own.
type initChecker interface {
	CheckInitialize(check func(server string, req, resp *jsonrpc.Message) (refusal string))
}

// reinitChecker is an upstream that replays initialize after a restart and reads
// the answer with check (upstream.Supervisor, one server).
type reinitChecker interface {
	CheckReinitialize(check func(req, resp *jsonrpc.Message) (refusal string))
}

// checkServerInfo checks one server's own initialize answer against its serverInfo
// pin (docs/vet.md#identity); a refusal leaves the server out of the session.
func (s *Session) checkServerInfo(server string, req, resp *jsonrpc.Message) string {
	info, version := s.clientOf(req.Params)
	if version == "" { // the server's own, before the gateway's answer sets the session's
		var r struct {
			ProtocolVersion string `json:"protocolVersion"`
		}
		_ = json.Unmarshal(resp.Result, &r)
		version = bound.Truncate(r.ProtocolVersion, bound.Header)
	}
	ctx := s.ctx
	if ctx == nil {
		ctx = context.Background()
	}
	method := methods.Initialize
	if req.Method == methods.ServerDiscover { // a 2026-07-28 server names itself there
		method = methods.ServerDiscover
	}
	return s.opts.Pipeline.ServerInfo(ctx, pipeline.Channel{Method: method, Params: req.Params,
		User: s.opts.User, ClientInfo: info, ProtocolVersion: version, Server: server}, resp)
}

// responseMessage turns a pipeline reply into the response to write.
func responseMessage(msg *jsonrpc.Message, reply pipeline.Reply) *jsonrpc.Message {
	switch {
	case reply.Original != nil:
		return msg
	case reply.Error != nil:
		return &jsonrpc.Message{Raw: jsonrpc.ErrorResponseObjectRaw(msg.ID, reply.Error), Kind: jsonrpc.KindResponse,
			ID: msg.ID, Error: reply.Error, Upstream: msg.Upstream}
	case reply.Result != nil:
		m := jsonrpc.NewResponse(msg.ID, reply.Result)
		m.Upstream = msg.Upstream
		return m
	}
	return msg
}

// firstPage reports whether list params ask for the first page (no cursor).
func firstPage(params json.RawMessage) bool {
	var p map[string]json.RawMessage // exact keys: encoding/json would match "CURSOR" too
	var cursor string
	_ = json.Unmarshal(params, &p)
	_ = json.Unmarshal(p["cursor"], &cursor)
	return cursor == ""
}

// lastPage reports whether a listing result is the last page (no nextCursor).
func lastPage(result json.RawMessage) bool {
	var r struct {
		NextCursor string `json:"nextCursor"`
	}
	_ = json.Unmarshal(result, &r)
	return r.NextCursor == ""
}

// taskIndex remembers each task a task-augmented tools/call of this session created:
// the tool it runs, so that its tasks/result runs the post phase with the same
// ctx.tool and ctx.params (docs/channels.md#tasks), and the id its upstream gave it.
// The client holds another id, drawn by the gateway (128 random bits,
// docs/decisions.md#task-owners); a request naming any id the index does not hold is
// refused. A task is kept for its ttl (the lifetime the server gave it; without one,
// for the session), at most maxTasks of them, the oldest forgotten first.
type taskIndex struct {
	mu    sync.Mutex
	tasks map[string]taskCall // by the client's id
	byUp  map[string]string   // the client's id of each upstream id
	order []taskRef           // oldest first; an entry whose seq is not its task's is stale
	seq   uint64              // the last taskCall.seq given
	now   func() time.Time    // nil means time.Now
}

type taskCall struct {
	tool    string
	args    json.RawMessage
	up      string    // the id the upstream gave the task (the multiplexer's <server>+<taskId>)
	expires time.Time // zero: no ttl
	seq     uint64
}

type taskRef struct {
	id  string
	seq uint64
}

// maxTasks bounds the remembered tasks of one session; past it the oldest is
// forgotten, and a request for it is then refused.
const maxTasks = 4096

func (t *taskIndex) clock() time.Time {
	if t.now != nil {
		return t.now()
	}
	return time.Now()
}

// mayHoldTask reports whether a result has a member that a decoder reads as a
// struct field tagged "task" or "taskId" (a CreateTaskResult of either revision): most
// results create no task, and one look at the member names, which encoding/json
// matches case-insensitively, spares decoding them (docs/decisions.md#read-members).
func mayHoldTask(result json.RawMessage) bool {
	task := false
	jsonscan.Members(result, func(name, _ []byte) {
		task = task || jsonscan.StringFolds(name, "task") || jsonscan.StringFolds(name, "taskId")
	})
	return task
}

// newTaskID draws the id a client holds for a task: 128 random bits, URL-safe base64.
func newTaskID() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	return base64.RawURLEncoding.EncodeToString(b[:])
}

// created notes the task a tools/call response created under a new id of the
// gateway's, and returns the response with the task's id replaced by it, and that id;
// a response that created no task comes back as it was, with "". A task is created by
// a CreateTaskResult: MCP 2025-11-25 "Tasks" nests it (task.taskId, task.ttl in
// milliseconds or null), the 2026-07-28 tasks extension puts it at the top
// (resultType "task", taskId, ttlMs).
func (t *taskIndex) created(resp *jsonrpc.Message, params json.RawMessage) (*jsonrpc.Message, string) {
	if resp == nil || resp.Result == nil {
		return resp, ""
	}
	if !mayHoldTask(resp.Result) {
		return resp, ""
	}
	var res map[string]json.RawMessage // exact keys, as the client reads them
	if json.Unmarshal(resp.Result, &res) != nil {
		return resp, ""
	}
	holder, nested := res, false // the object that carries taskId
	var resultType string
	if _ = json.Unmarshal(res["resultType"], &resultType); resultType != "task" {
		var task map[string]json.RawMessage
		if json.Unmarshal(res["task"], &task) != nil || task == nil {
			return resp, ""
		}
		holder, nested = task, true
	}
	var up string
	if json.Unmarshal(holder["taskId"], &up) != nil || up == "" {
		return resp, ""
	}
	var ttl *float64
	if _ = json.Unmarshal(holder["ttl"], &ttl); ttl == nil {
		_ = json.Unmarshal(holder["ttlMs"], &ttl)
	}
	id := newTaskID()
	holder["taskId"], _ = jsonrpc.Marshal(id)
	if nested {
		res["task"], _ = jsonrpc.Marshal(holder)
	}
	b, err := jsonrpc.Marshal(res)
	if err != nil {
		return resp, ""
	}
	var p map[string]json.RawMessage // exact keys, as the pipeline and the server read them
	_ = json.Unmarshal(params, &p)
	var name string
	_ = json.Unmarshal(p["name"], &name)
	t.mu.Lock()
	defer t.mu.Unlock()
	now := t.clock()
	if t.tasks == nil {
		t.tasks, t.byUp = map[string]taskCall{}, map[string]string{}
	}
	t.seq++
	c := taskCall{tool: name, args: p["arguments"], up: up, seq: t.seq}
	if ttl != nil && *ttl >= 0 && *ttl < float64(math.MaxInt64/int64(time.Millisecond)) {
		c.expires = now.Add(time.Duration(*ttl) * time.Millisecond)
	}
	if old, ok := t.byUp[up]; ok { // a re-created upstream id starts anew
		t.forget(old)
	}
	for _, ref := range t.order { // when full, expired tasks go first
		if len(t.tasks) < maxTasks {
			break
		}
		if old, ok := t.tasks[ref.id]; ok && old.seq == ref.seq && !old.expires.IsZero() && !now.Before(old.expires) {
			t.forget(ref.id)
		}
	}
	for len(t.tasks) >= maxTasks { // then the oldest
		ref := t.order[0]
		t.order = t.order[1:]
		if old, ok := t.tasks[ref.id]; ok && old.seq == ref.seq {
			t.forget(ref.id)
		}
	}
	t.tasks[id] = c
	t.byUp[up] = id
	t.order = append(t.order, taskRef{id, c.seq})
	if len(t.order) > 2*len(t.tasks)+64 { // drop the stale entries
		kept := make([]taskRef, 0, len(t.tasks))
		for _, ref := range t.order {
			if old, ok := t.tasks[ref.id]; ok && old.seq == ref.seq {
				kept = append(kept, ref)
			}
		}
		t.order = kept
	}
	return resp.WithResult(b), id
}

// forget drops the task the client holds as id; the caller holds t.mu.
func (t *taskIndex) forget(id string) {
	if c, ok := t.tasks[id]; ok {
		if t.byUp[c.up] == id {
			delete(t.byUp, c.up)
		}
		delete(t.tasks, id)
	}
}

// taskRequest resolves the task a client request of a task method (tasks/get,
// tasks/result, tasks/cancel, tasks/update) names by the id the gateway gave the
// client, and returns the request with params.taskId the upstream's id, the client's
// id and the task. A request naming an id this session does not hold (another
// caller's, forgotten, expired, an upstream's own id, or none) is answered here with
// -32602, MCP's code for an unknown taskId, and one record, and taskRequest returns
// nil: the server is never asked, since it may serve any task to anyone and no phase
// could judge the answer by its tool (docs/decisions.md#task-owners). Another method's
// request comes back as it was.
func (s *Session) taskRequest(msg *jsonrpc.Message) (*jsonrpc.Message, string, taskCall) {
	if m := methods.Of(msg.Method); m == nil || m.Route != methods.ByTask {
		return msg, "", taskCall{}
	}
	var p map[string]json.RawMessage // exact keys: encoding/json would match "TASKID" too
	var id string
	_ = json.Unmarshal(msg.Params, &p)
	_ = json.Unmarshal(p["taskId"], &id)
	c, ok := s.tasks.get(id)
	if !ok {
		if id != "" && s.ownedElsewhere(id) { // another caller's task
			s.write(s.notOwnedTaskError(msg.ID, msg.Method, s.opts.Server))
		} else {
			s.write(s.unknownTaskError(msg.ID, msg.Method, s.opts.Server))
		}
		return nil, "", taskCall{}
	}
	p["taskId"], _ = jsonrpc.Marshal(c.up)
	b, err := jsonrpc.Marshal(p)
	if err != nil {
		s.write(s.unknownTaskError(msg.ID, msg.Method, s.opts.Server))
		return nil, "", taskCall{}
	}
	return msg.WithParams(b), id, c
}

// unknownTaskError records a refused task request (method) and returns its error
// response.
func (s *Session) unknownTaskError(id json.RawMessage, method, server string) *jsonrpc.Message {
	ev := s.recordRefusal(method, server, vocab.ReasonTaskUnknown, false)
	return jsonrpc.NewErrorResponse(id, methods.CodeInvalidParams, "mcpgate: the task is not known to this session "+
		"(its ttl passed, it was forgotten, or it was not created through the gateway), so "+method+" cannot be "+
		"filtered and is not relayed (audit log entry "+ev+")")
}

// envelopeCapabilities is the clientCapabilities of a 2026-07-28 request's _meta
// envelope ({} when the envelope names none), nil for a request without one.
func envelopeCapabilities(params json.RawMessage) json.RawMessage {
	e, ok := methods.EnvelopeOf(params)
	switch {
	case !ok:
		return nil
	case len(e.ClientCapabilities) == 0:
		return json.RawMessage(`{}`)
	}
	return e.ClientCapabilities
}

// filterRequest runs a client request whose row has a request phase (tasks/update)
// through the input rules and that phase, with ctx.tool and ctx.params of c, the
// tools/call that created its task (taskRequest ran first); a rejection is answered
// here, and filterRequest reports true.
func (s *Session) filterRequest(ctx context.Context, msg *jsonrpc.Message, c taskCall) bool {
	if s.opts.Pipeline == nil || methods.Of(msg.Method).RequestPhase() == "" {
		return false
	}
	server := s.opts.Server
	if routed, err := s.route(msg); err == nil && routed.Upstream != "" {
		server = routed.Upstream
	}
	info, version := s.clientOf(msg.Params)
	reply := s.opts.Pipeline.Request(ctx, pipeline.Channel{Method: msg.Method, Params: msg.Params, User: s.opts.User,
		ClientInfo: info, ProtocolVersion: version, Server: server,
		Tool: c.tool, ToolAccess: s.tools.cached(c.tool), Arguments: c.args})
	if reply.Error == nil {
		return false
	}
	s.write(&jsonrpc.Message{Raw: jsonrpc.ErrorResponseObjectRaw(msg.ID, reply.Error), Kind: jsonrpc.KindResponse, ID: msg.ID, Error: reply.Error})
	return true
}

// of returns the task a client request names (params.taskId, the client's id).
func (t *taskIndex) of(params json.RawMessage) (taskCall, bool) {
	var p map[string]json.RawMessage // exact keys: encoding/json would match "TASKID" too
	var id string
	if json.Unmarshal(params, &p) != nil || json.Unmarshal(p["taskId"], &id) != nil {
		return taskCall{}, false
	}
	return t.get(id)
}

// get returns the task the client holds as id, unless its ttl has passed.
func (t *taskIndex) get(id string) (taskCall, bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	c, ok := t.tasks[id]
	if ok && !c.expires.IsZero() && !t.clock().Before(c.expires) {
		t.forget(id)
		return taskCall{}, false
	}
	return c, ok
}

// client returns the id the client holds for the task its upstream gave the id up.
// With several servers (server is the sender) up is <server>+<taskId> or a bare id
// of server's own; a server names only its own tasks, so "b+t" sent by server a is
// a's task "b+t", never b's task t.
func (t *taskIndex) client(up, server string) (string, bool) {
	if server != "" && !strings.HasPrefix(up, server+"+") {
		up = server + "+" + up
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	id, ok := t.byUp[up]
	return id, ok
}
