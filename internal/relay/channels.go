package relay

import (
	"context"
	"encoding/json"
	"math"
	"sync"
	"time"

	"github.com/mcpgate/mcpgate/ctxapi"
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
// caller: with the output filter on, tools pinned in block mode, or a list policy.
func (s *Session) listingHides() bool {
	p := s.opts.Pipeline
	if p == nil {
		return false
	}
	if p.FilterOutput || (p.Pins != nil && p.PinBlock) {
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
// policy takes part (it sees ctx.user). Such a listing is cacheScope "private".
func (s *Session) listingPerCaller() bool {
	p := s.opts.Pipeline
	return p != nil && p.Gate != nil && p.Gate.Current().Acts(ctxapi.PhaseList)
}

// unreadListingRejects reports whether a call is rejected when no tools listing could
// be read to tell whether the tool is withheld (docs/channels.md#hidden): always when
// a list policy or blocking pins would decide (a policy that cannot run rejects), and
// under --fail-mode closed when only the output filter would.
func (s *Session) unreadListingRejects() bool {
	p := s.opts.Pipeline
	return p.FailClosed || (p.Pins != nil && p.PinBlock) || (p.Gate != nil && p.Gate.Current().Acts(ctxapi.PhaseList))
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
	ch := pipeline.Channel{Method: x.Method, User: s.opts.User, ClientInfo: info, ProtocolVersion: version, Server: x.Server,
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
		if x.Method == methods.TasksResult || x.Method == methods.TasksGet && msg.Error == nil && pipeline.InlinesToolResult(msg.Result) {
			c, ok := s.tasks.of(ch.Params)
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
		if x.Method == methods.NotificationTasksStatus && pipeline.InlinesToolResult(msg.Params) {
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

// taskIndex remembers which tool each task of a task-augmented tools/call runs, so
// that its tasks/result runs the post phase with the same ctx.tool and ctx.params
// (docs/channels.md#tasks). A task is kept for its ttl (the lifetime the server gave
// it; without one, for the session), at most maxTasks of them, the oldest forgotten
// first. A tasks/result for a task it does not hold is refused, never relayed
// (docs/decisions.md#tasks).
type taskIndex struct {
	mu    sync.Mutex
	tasks map[string]taskCall
	order []taskRef        // oldest first; an entry whose seq is not its task's is stale
	seq   uint64           // the last taskCall.seq given
	now   func() time.Time // nil means time.Now
}

type taskCall struct {
	tool    string
	args    json.RawMessage
	expires time.Time // zero: no ttl
	seq     uint64
}

type taskRef struct {
	id  string
	seq uint64
}

// maxTasks bounds the remembered tasks of one session; past it the oldest is
// forgotten, and a tasks/result for it is then refused.
const maxTasks = 4096

func (t *taskIndex) clock() time.Time {
	if t.now != nil {
		return t.now()
	}
	return time.Now()
}

// mayHoldTask reports whether a result has a member that a decoder reads as a
// struct field tagged "task": most results create no task, and one look at the member
// names, which encoding/json matches case-insensitively, spares decoding them
// (docs/decisions.md#read-members).
func mayHoldTask(result json.RawMessage) bool {
	task := false
	jsonscan.Members(result, func(name, _ []byte) { task = task || jsonscan.StringFolds(name, "task") })
	return task
}

// created notes the task a tools/call response created (a CreateTaskResult, MCP
// 2025-11-25 "Tasks": task.taskId, and task.ttl in milliseconds or null).
func (t *taskIndex) created(resp *jsonrpc.Message, params json.RawMessage) {
	if resp == nil || resp.Result == nil {
		return
	}
	if !mayHoldTask(resp.Result) {
		return
	}
	var r struct {
		Task *struct {
			TaskID string   `json:"taskId"`
			TTL    *float64 `json:"ttl"`
		} `json:"task"`
	}
	if json.Unmarshal(resp.Result, &r) != nil || r.Task == nil || r.Task.TaskID == "" {
		return
	}
	var p map[string]json.RawMessage // exact keys, as the pipeline and the server read them
	_ = json.Unmarshal(params, &p)
	var name string
	_ = json.Unmarshal(p["name"], &name)
	t.mu.Lock()
	defer t.mu.Unlock()
	now := t.clock()
	if t.tasks == nil {
		t.tasks = map[string]taskCall{}
	}
	t.seq++
	c := taskCall{tool: name, args: p["arguments"], seq: t.seq}
	if ttl := r.Task.TTL; ttl != nil && *ttl >= 0 && *ttl < float64(math.MaxInt64/int64(time.Millisecond)) {
		c.expires = now.Add(time.Duration(*ttl) * time.Millisecond)
	}
	delete(t.tasks, r.Task.TaskID) // a re-created id starts anew
	for _, ref := range t.order {  // when full, expired tasks go first
		if len(t.tasks) < maxTasks {
			break
		}
		if old, ok := t.tasks[ref.id]; ok && old.seq == ref.seq && !old.expires.IsZero() && !now.Before(old.expires) {
			delete(t.tasks, ref.id)
		}
	}
	for len(t.tasks) >= maxTasks { // then the oldest
		ref := t.order[0]
		t.order = t.order[1:]
		if old, ok := t.tasks[ref.id]; ok && old.seq == ref.seq {
			delete(t.tasks, ref.id)
		}
	}
	t.tasks[r.Task.TaskID] = c
	t.order = append(t.order, taskRef{r.Task.TaskID, c.seq})
	if len(t.order) > 2*len(t.tasks)+64 { // drop the stale entries
		kept := make([]taskRef, 0, len(t.tasks))
		for _, ref := range t.order {
			if old, ok := t.tasks[ref.id]; ok && old.seq == ref.seq {
				kept = append(kept, ref)
			}
		}
		t.order = kept
	}
}

// unknownTask answers a client's request for a task the session does not hold, of
// a task method whose phase needs the task's tool (tasks/result: post; tasks/update:
// pre), with -32602 (MCP's code for an unknown taskId) and one record, and reports
// true; the server is never asked, since the phase could not judge it by its tool
// (docs/decisions.md#tasks).
func (s *Session) unknownTask(msg *jsonrpc.Message) bool {
	m := methods.Of(msg.Method)
	if m == nil || m.Route != methods.ByTask || s.opts.Pipeline == nil {
		return false
	}
	if _, ok := s.tasks.of(msg.Params); ok {
		return false
	}
	if s.ownedElsewhere(msg.Params) { // another caller's task (docs/decisions.md#task-owners)
		s.write(s.notOwnedTaskError(msg.ID, msg.Method, s.opts.Server))
		return true
	}
	if m.Phase == "" {
		return false
	}
	s.write(s.unknownTaskError(msg.ID, msg.Method, s.opts.Server))
	return true
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
// through the input rules and that phase, with ctx.tool and ctx.params of the
// tools/call that created its task (unknownTask ran first); a rejection is answered
// here, and filterRequest reports true.
func (s *Session) filterRequest(ctx context.Context, msg *jsonrpc.Message) bool {
	if s.opts.Pipeline == nil || methods.Of(msg.Method).RequestPhase() == "" {
		return false
	}
	c, _ := s.tasks.of(msg.Params)
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

// of returns the tool and arguments of the task a tasks/result asks for.
func (t *taskIndex) of(params json.RawMessage) (taskCall, bool) {
	var p map[string]json.RawMessage // exact keys: encoding/json would match "TASKID" too
	var id string
	if json.Unmarshal(params, &p) != nil || json.Unmarshal(p["taskId"], &id) != nil {
		return taskCall{}, false
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	c, ok := t.tasks[id]
	if ok && !c.expires.IsZero() && !t.clock().Before(c.expires) {
		delete(t.tasks, id)
		return taskCall{}, false
	}
	return c, ok
}
