package relay

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/mcpgate/mcpgate/ctxapi"
	"github.com/mcpgate/mcpgate/internal/bound"
	"github.com/mcpgate/mcpgate/internal/jsonrpc"
	"github.com/mcpgate/mcpgate/internal/mcpparam"
	"github.com/mcpgate/mcpgate/internal/methods"
	"github.com/mcpgate/mcpgate/internal/motion"
	"github.com/mcpgate/mcpgate/internal/pipeline"
	"github.com/mcpgate/mcpgate/internal/reqstate"
	"github.com/mcpgate/mcpgate/internal/upstream"
	"github.com/mcpgate/mcpgate/vocab"
)

// Upstream is the server side of a session: a stdio process, a restart supervisor,
// a remote client or a multiplexer (see jsonrpc.Conn for what Send and Recv report).
type Upstream = jsonrpc.Conn

// Router is implemented by an Upstream that fronts several servers. Route returns a
// client request as its server must see it, with Message.Upstream naming the server
// ("" for a request the Upstream answers itself); an error (a *jsonrpc.RequestError)
// answers the request.
type Router interface {
	Route(msg *jsonrpc.Message) (*jsonrpc.Message, error)
}

// ResponseRewriter is implemented by an Upstream that rewrites a server's response
// for the client (the multiplexer namespaces resource URIs); method is the method of
// the request it answers. It runs before the pipeline.
type ResponseRewriter interface {
	RewriteResponse(method string, msg *jsonrpc.Message) *jsonrpc.Message
}

// Exchange is one server→client message and what the relay knows of it.
type Exchange struct {
	Msg *jsonrpc.Message
	// Method is the message's method; for a response, the method of the request it
	// answers.
	Method string
	// Server is the configured name of the server it came from (Options.Server when
	// the session fronts one server).
	Server string
	// Request is, for a response, the client's request as it was sent upstream.
	Request *jsonrpc.Message
	// task is, for a response to a task method, the client's id of the task.
	task string
	// authz is what the authorization guardrails answered about the request (pending.authz).
	authz *pipeline.Authorized
}

// Options configure a Session.
type Options struct {
	Pipeline        *pipeline.Pipeline
	Logger          *slog.Logger
	User            ctxapi.User
	Access          map[string]string // configured tool access tags by tool name
	MaxMessageBytes int               // per message; jsonrpc.DefaultMaxMessageBytes when ≤ 0
	CallTimeout     time.Duration     // per upstream tools/call; 0 means none
	// DrainTimeout bounds how long in-flight calls may finish after the context
	// ends (SIGTERM); 10 s when zero.
	DrainTimeout time.Duration
	// RecordClientInfo puts the client's clientInfo (initialize's, or a 2026-07-28
	// request's _meta one) into each record (docs/telemetry.md).
	RecordClientInfo bool
	// Server is the configured name of the single server behind the session, for
	// ctx.server and the record; with a multiplexer each message names its own.
	Server string
	// Version is mcpgate's version, the clientInfo.version of the gateway's own
	// requests to a 2026-07-28 server; "dev" when empty.
	Version string
	// Roots pins the roots each server may see, by server name ("" for the only
	// server of the -- form): a root of the client's roots/list answer outside them is
	// removed (docs/channels.md#roots). A server without an entry sees the client's.
	Roots map[string][]string
	// RequestState seals the requestState of input_required results and opens it in
	// the client's retry (docs/decisions.md#request-state); reqstate.Default() when nil.
	RequestState *reqstate.Sealer
}

// Session relays one MCP session between a client and an upstream.
type Session struct {
	opts   Options
	log    *slog.Logger
	client jsonrpc.Conn
	up     Upstream
	router Router
	ctx    context.Context

	mu      sync.Mutex
	pending map[string]*pending // client requests in flight upstream, by id
	// rootsAsked: roots/list requests of servers with pinned roots the client has
	// not answered yet, by id, with the server's name.
	rootsAsked map[string]string
	// declared: the roots each server last got from the client (after its pins), by
	// server name; the output rules judge a result's file: links by them.
	declared map[string][]string
	inflight map[string]context.CancelFunc
	dead     error // set once the upstream is gone
	draining atomic.Bool
	closing  atomic.Bool // Run has returned; the caller closes the upstream

	tools *toolIndex
	views map[string]*visibility // what this caller may see, by listing method
	vis   *visibility            // views[methods.ToolsList]
	tasks taskIndex
	// motion remembers, as keyed hashes, the secret and PII values results showed this
	// session's caller (docs/decisions.md#secrets-in-motion).
	motion  *motion.Scope
	ownSeq  atomic.Uint64
	calls   sync.WaitGroup
	clientM sync.Mutex
	client_ map[string]string // clientInfo from initialize
	version string            // protocolVersion of the initialize result
	// envelope is the per-request _meta of the client's last 2026-07-28 request; nil
	// while it has sent none (docs/http.md#revisions). The gateway's own requests carry
	// it, so they never change the revision a server serves the client in.
	envelope atomic.Pointer[methods.Envelope]
	// samplingContext is whether the client's initialize declared
	// capabilities.sampling.context (docs/channels.md#sampling).
	samplingContext atomic.Bool
	// stateSession is this session's random id, to which the requestStates it seals
	// are bound (reqstate.go).
	stateSession string
}

// pending is a request in flight upstream: a client's, or the gateway's own.
type pending struct {
	req   *jsonrpc.Message      // as sent upstream (routed)
	id    json.RawMessage       // the id as the client sent it, which its answer carries back
	route string                // the server it went to ("" with one server)
	ch    chan *jsonrpc.Message // set when the gateway itself waits for the response
	// bind is, for a client's request, what a requestState in its answer is sealed
	// for (the client's own method, name and arguments); nil for the gateway's own.
	bind *reqstate.Binding
	// task is the client's id of the task a task method's request names.
	task string
	// authz are the authorization guardrails' outcomes of a prompts/get or
	// resources/read, for the record of its response.
	authz *pipeline.Authorized
}

// New returns a session over the given upstream.
func New(opts Options, up Upstream) *Session {
	if opts.MaxMessageBytes <= 0 {
		opts.MaxMessageBytes = jsonrpc.DefaultMaxMessageBytes
	}
	if opts.DrainTimeout <= 0 {
		opts.DrainTimeout = 10 * time.Second
	}
	s := &Session{
		opts:     opts,
		log:      opts.Logger,
		up:       up,
		pending:  map[string]*pending{},
		inflight: map[string]context.CancelFunc{},

		stateSession: newStateSession(),
		motion:       motion.NewScope(),
	}
	s.views = map[string]*visibility{}
	for _, m := range methods.Listings() {
		s.views[m.Name] = &visibility{}
	}
	s.vis = s.views[methods.ToolsList]
	s.tools = newToolIndex(s)
	s.router, _ = up.(Router)
	if c, ok := up.(initChecker); ok && opts.Pipeline != nil {
		c.CheckInitialize(s.checkServerInfo)
	} else if c, ok := up.(reinitChecker); ok && opts.Pipeline != nil { // one server under a supervisor
		c.CheckReinitialize(func(req, resp *jsonrpc.Message) string { return s.checkServerInfo(s.opts.Server, req, resp) })
	}
	return s
}

// Run relays between a newline-delimited client stream and the upstream (see Serve).
func (s *Session) Run(ctx context.Context, in io.Reader, out io.Writer) error {
	return s.Serve(ctx, jsonrpc.NewStream(in, out, s.opts.MaxMessageBytes))
}

// Serve relays until the client's Recv ends, ctx ends, or the upstream is gone and the
// client has been told. It returns nil on a clean client EOF.
func (s *Session) Serve(ctx context.Context, client jsonrpc.Conn) error {
	s.client = client
	defer s.closing.Store(true)
	defer s.forgetTasks()
	parent := ctx
	ctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	defer cancel()
	s.ctx = ctx
	upDone := make(chan struct{})
	go func() {
		defer close(upDone)
		s.readUpstream()
	}()
	clientDone := make(chan error, 1)
	go func() { clientDone <- s.readClient(ctx) }()

	var err error
	select {
	case err = <-clientDone:
		cancel() // the client is gone: in-flight calls end as cancelled
	case <-parent.Done():
		// SIGTERM: refuse new calls, let in-flight ones finish within DrainTimeout.
		s.draining.Store(true)
		err = parent.Err()
		drained := make(chan struct{})
		go func() { s.calls.Wait(); close(drained) }()
		select {
		case <-drained:
		case <-time.After(s.opts.DrainTimeout):
			s.log.Warn("drain timeout: cancelling in-flight calls", "timeout", s.opts.DrainTimeout)
		}
		cancel()
	}
	s.calls.Wait()
	return err
}

// readClient handles client → upstream traffic.
func (s *Session) readClient(ctx context.Context) error {
	for {
		msg, err := s.client.Recv()
		var drop *jsonrpc.DropError
		switch {
		case errors.As(err, &drop) && drop.Reason == jsonrpc.ReasonTooLarge:
			s.refuse(nil, "", methods.CodeInvalidRequest, vocab.ReasonMessageTooLarge, fmt.Sprintf("mcpgate: message exceeds the %d-byte limit", s.opts.MaxMessageBytes))
			continue
		case drop != nil && drop.Ambiguous != nil:
			s.refuseClient(drop.Ambiguous)
			continue
		case drop != nil:
			code := methods.CodeParseError
			var id json.RawMessage
			method := ""
			if msg != nil {
				id, method = msg.ID, msg.Method
			}
			if id != nil || json.Valid(drop.Head) {
				code = methods.CodeInvalidRequest
			}
			s.refuse(id, method, code, vocab.ReasonMalformedMessage, "mcpgate: "+strings.TrimPrefix(drop.Reason, jsonrpc.ReasonMalformed+": "))
			continue
		case errors.Is(err, io.EOF):
			return nil
		case err != nil:
			return fmt.Errorf("relay: read from client: %w", err)
		}
		s.fromClient(ctx, msg)
	}
}

func (s *Session) fromClient(ctx context.Context, msg *jsonrpc.Message) {
	switch msg.Kind {
	case jsonrpc.KindBatch:
		// MCP removed JSON-RPC batching; a batch must never slip past the policies.
		s.refuse(nil, "", methods.CodeInvalidRequest, vocab.ReasonBatchRefused, "mcpgate: JSON-RPC batches are not supported by MCP; send one message per line")
	case jsonrpc.KindRequest:
		if jsonrpc.IsOwnIDKey(msg.IDKey()) {
			// The gateway's own requests (listings, the multiplexer's, a restart's
			// initialize) use these ids; a client request under one could have its
			// answer taken for theirs (docs/decisions.md#reserved-ids). Another
			// gateway's own ids have another random part and pass.
			s.replyError(msg.ID, methods.CodeInvalidRequest, "mcpgate: request ids beginning with "+strconv.Quote(jsonrpc.OwnIDPrefix)+" are reserved for the gateway's own requests")
			return
		}
		if s.draining.Load() {
			s.replyError(msg.ID, methods.CodeUpstreamUnavailable, "mcpgate: the gateway is shutting down")
			return
		}
		if e, ok := methods.EnvelopeOf(msg.Params); ok {
			s.envelope.Store(&e)
		}
		if s.opts.Pipeline != nil {
			msg = s.pinInputRoots(msg)
		}
		if msg = s.openState(msg); msg == nil {
			return
		}
		row := methods.Of(msg.Method)
		if row.Does(methods.Calls) {
			s.toolCall(ctx, msg)
			return
		}
		if row.Does(methods.NotesClientInfo) {
			s.noteClientInfo(msg.Params)
		}
		if s.hiddenEntry(ctx, msg) || s.promptArguments(ctx, msg) {
			return
		}
		authz, stopped := s.authorizeEntry(ctx, msg)
		if stopped {
			return
		}
		asked := msg
		msg, task, c := s.taskRequest(msg)
		if msg == nil || s.filterRequest(ctx, msg, c) {
			return
		}
		s.forwardRequest(msg, asked, task, authz)
	case jsonrpc.KindNotification:
		row := methods.Of(msg.Method)
		if row.Does(methods.Cancels) {
			if msg = s.cancelled(msg); msg == nil {
				return
			}
		}
		if row.Does(methods.ForgetsRoots) {
			s.forgetRoots() // stale until a server asks again: judged as none declared
		}
		s.send(msg)
	case jsonrpc.KindResponse: // the client answering a server-to-client request
		s.send(s.answerRoots(msg))
	}
}

// refuse answers a client message the gateway will not forward with code and text,
// which cites the refusal's one record (docs/decisions.md#one-reading). The record
// and the log line name the reason code and a method MCP defines, never the
// message's values; text, which may quote the id, goes to the client only.
func (s *Session) refuse(id json.RawMessage, method string, code int, reason vocab.Reason, text string) {
	s.log.Warn("client message refused", "reason", reason, "method", methods.Known(method))
	if eventID := s.recordRefusal(method, s.opts.Server, reason, false); eventID != "" {
		text += " (audit log entry " + eventID + ")"
	}
	s.replyError(id, code, text)
}

// route asks a multiplexing upstream where a request goes.
func (s *Session) route(msg *jsonrpc.Message) (*jsonrpc.Message, error) {
	if s.router == nil {
		return msg, nil
	}
	return s.router.Route(msg)
}

// failSend answers a request that could not be sent; it reports false when the
// upstream itself is gone.
func (s *Session) failSend(id json.RawMessage, err error) bool {
	var re *jsonrpc.RequestError
	switch {
	case errors.As(err, &re):
		s.replyError(id, re.Code, re.Message)
	case errors.Is(err, jsonrpc.ErrNotDelivered):
		s.replyError(id, methods.CodeUpstreamUnavailable, "mcpgate: "+strings.TrimPrefix(err.Error(), "mcpgate: "))
	default:
		return false
	}
	return true
}

// forwardRequest sends a client request upstream and remembers it, so it can be
// answered if the upstream dies. asked is the request as the client sent it (a
// requestState in the answer is bound to it), task the client's id of the task it
// names ("" for none).
func (s *Session) forwardRequest(msg, asked *jsonrpc.Message, task string, authz *pipeline.Authorized) {
	routed, err := s.route(msg)
	if err != nil {
		s.failSend(msg.ID, err)
		return
	}
	key := msg.IDKey()
	s.mu.Lock()
	if s.dead != nil {
		s.mu.Unlock()
		s.replyError(msg.ID, methods.CodeUpstreamUnavailable, "mcpgate: "+pipeline.ErrUnavailable.Error())
		return
	}
	if s.busy(key) {
		s.mu.Unlock()
		s.refuse(msg.ID, msg.Method, methods.CodeInvalidRequest, vocab.ReasonIDInUse, "mcpgate: request id "+string(msg.ID)+" is already in use by a request in flight")
		return
	}
	bind := s.stateBinding(asked.Method, asked.Params)
	p := &pending{req: routed, route: routed.Upstream, id: msg.ID, bind: &bind, task: task, authz: authz}
	s.pending[key] = p
	s.mu.Unlock()
	err = s.up.Send(routed)
	if errors.Is(err, jsonrpc.ErrNotDelivered) && methods.Of(msg.Method) != nil && methods.Of(msg.Method).WaitsForRestart {
		if u, ok := s.up.(interface{ Up() <-chan struct{} }); ok {
			// A listing while the server restarts waits briefly rather than failing
			// (docs/servers.md#what-a-client-sees-during-a-restart).
			go func() { s.sent(key, p, s.retryWhenUp(u, routed)) }()
			return
		}
	}
	s.sent(key, p, err)
}

// listWait is how long a listing waits for a restarting server.
const listWait = time.Second

// retryWhenUp sends msg again once u is up, within listWait.
func (s *Session) retryWhenUp(u interface{ Up() <-chan struct{} }, msg *jsonrpc.Message) error {
	t := time.NewTimer(listWait)
	defer t.Stop()
	select {
	case <-u.Up():
		return s.up.Send(msg)
	case <-t.C:
		return fmt.Errorf("%w: %s", jsonrpc.ErrNotDelivered, "mcpgate: upstream MCP server exited; it is being restarted — retry the request")
	}
}

// sent settles a forwarded request whose Send returned err: a request that could not
// be delivered is answered at once; a gone upstream ends the session.
func (s *Session) sent(key string, p *pending, err error) {
	if err == nil {
		return
	}
	s.mu.Lock()
	if s.pending[key] == p {
		delete(s.pending, key)
	}
	s.mu.Unlock()
	if !s.failSend(p.req.ID, err) {
		s.upstreamGone(err)
	}
}

func (s *Session) send(msg *jsonrpc.Message) {
	if err := s.up.Send(msg); err != nil && !errors.Is(err, jsonrpc.ErrNotDelivered) {
		s.upstreamGone(err)
	}
}

// toolCall runs the pipeline for one tools/call in its own goroutine; responses can
// go back out of order, as MCP allows.
func (s *Session) toolCall(ctx context.Context, msg *jsonrpc.Message) {
	key := msg.IDKey()
	s.mu.Lock()
	if s.busy(key) {
		s.mu.Unlock()
		s.refuse(msg.ID, msg.Method, methods.CodeInvalidRequest, vocab.ReasonIDInUse, "mcpgate: request id "+string(msg.ID)+" is already in use by a request in flight")
		return
	}
	ctx, cancel := context.WithCancel(ctx)
	s.inflight[key] = cancel
	s.mu.Unlock()
	s.calls.Add(1)
	go func() {
		defer s.calls.Done()
		defer func() {
			s.mu.Lock()
			delete(s.inflight, key)
			s.mu.Unlock()
			cancel()
		}()
		// The call's record goes to the sinks once its reply is written
		// (docs/decisions.md#records-after-reply); every other path releases it here.
		ctx, release := pipeline.HoldRecords(ctx)
		defer release()
		// Routed once, here: the server names the call's record and policies, and the
		// route is carried to the upstream call (a pre policy rewrites the arguments,
		// never the name a route reads).
		server := s.opts.Server
		routed, routeErr := s.route(msg)
		if routeErr == nil && routed.Upstream != "" {
			server = routed.Upstream
		}
		decls, refused := s.paramHeaders(ctx, msg, server)
		if refused {
			return
		}
		info, version := s.clientOf(msg.Params)
		reply := s.opts.Pipeline.Handle(ctx, pipeline.Call{
			Params:     msg.Params,
			User:       s.opts.User,
			ToolAccess: s.tools.access,
			Listed:     s.tools.listed,
			Hidden:     s.hiddenTool,
			ClientInfo: info, ProtocolVersion: version,
			Server: server, SamplingContext: s.clientSamplingContext(),
			ClientCapabilities: envelopeCapabilities(msg.Params),
			Roots:              s.declaredRoots(server),
			PinnedRoots:        s.opts.Roots[server],
			Schema:             s.tools.schema,
			Motion:             s.motion,
		}, func(ctx context.Context, params json.RawMessage) (*jsonrpc.Message, error) {
			if refused := s.caseVariantArgument(ctx, msg, params, server); refused != nil {
				return refused, nil
			}
			resp, err := s.callUpstream(ctx, msg, routed, routeErr, params, decls)
			if err == nil {
				var task string
				if resp, task = s.tasks.created(resp, params); task != "" {
					s.ownTask(task)
				}
			}
			return resp, err
		})
		if reply.Abandoned {
			s.abandonedInput(msg.ID, routed.Upstream)
		}
		bind := s.stateBinding(msg.Method, msg.Params)
		// A client that does not take its reply (a full stdout pipe) must not keep the
		// record back, to be lost when the process ends: past recordHoldMax of writing,
		// it goes out anyway (release is idempotent).
		late := time.AfterFunc(recordHoldMax, release)
		switch {
		case reply.NoReply:
		case reply.Original != nil: // the upstream's response, unchanged but for its requestState
			s.write(s.sealState(bind, &jsonrpc.Message{Raw: reply.Original, Kind: jsonrpc.KindResponse, ID: msg.ID}))
		case reply.Error != nil:
			s.write(&jsonrpc.Message{Raw: jsonrpc.ErrorResponseObjectRaw(msg.ID, reply.Error), Kind: jsonrpc.KindResponse, ID: msg.ID, Error: reply.Error})
		default:
			s.write(s.sealState(bind, jsonrpc.NewResponse(msg.ID, conform(msg, reply.Result, false))))
		}
		late.Stop()
		release()
	}()
}

// recordHoldMax bounds how long writing a tools/call's reply holds its record back
// (docs/decisions.md#records-after-reply).
const recordHoldMax = time.Second

// busy reports whether a client request with this id key is still in flight; the
// caller holds s.mu.
func (s *Session) busy(key string) bool {
	_, fwd := s.pending[key]
	_, call := s.inflight[key]
	return fwd || call
}

// callUpstream forwards a tools/call as routed (routeErr: the route's error), with
// the pipeline's arguments when params changed, and waits for its response, the
// client's cancellation, or the call timeout.
func (s *Session) callUpstream(ctx context.Context, msg, routed *jsonrpc.Message, routeErr error, params json.RawMessage, decls []mcpparam.Declaration) (*jsonrpc.Message, error) {
	if routeErr != nil {
		return nil, routeFailed(routeErr)
	}
	if string(params) != string(msg.Params) {
		out := jsonrpc.NewRequest(msg.ID, msg.Method, params)
		if routed != msg { // the router rewrote the params: its params, the pipeline's arguments
			out = jsonrpc.NewRequest(msg.ID, msg.Method, withArguments(routed.Params, params))
			out.Upstream = routed.Upstream
		}
		routed = out
	}
	if msg.ParamHeaders == nil { // a client without headers (stdio, a translated 2025-11-25 one): the listing's
		decls = s.tools.listedDeclarations(toolNameOf(msg.Params))
	}
	if msg.ParamHeaders != nil || len(decls) > 0 { // built again from the arguments that go, which a policy may have rewritten
		c := *routed
		c.ParamHeaders = mcpparam.Headers(decls, argumentsOf(params))
		routed = &c
	}
	return s.sendAndWait(ctx, routed, false)
}

// withArguments is params with the arguments member of from (both JSON objects).
func withArguments(params, from json.RawMessage) json.RawMessage {
	var p, f map[string]json.RawMessage
	if json.Unmarshal(params, &p) != nil || json.Unmarshal(from, &f) != nil {
		return from
	}
	if a, ok := f["arguments"]; ok {
		p["arguments"] = a
	}
	b, _ := jsonrpc.Marshal(p)
	return b
}

// errIDInUse: a request of the gateway's own, or a tools/call, would take the id of a
// request still in flight, whose response would then be taken for its own.
var errIDInUse = errors.New("request id already in use by a request in flight")

// ownRoundTrip sends a request of the gateway's own (method, params) with an id of the
// jsonrpc.OwnIDPrefix namespace that no request in flight uses.
func (s *Session) ownRoundTrip(ctx context.Context, method string, params map[string]any) (*jsonrpc.Message, error) {
	if e := s.envelope.Load(); e != nil { // the revision the client speaks, with the gateway's identity
		with := map[string]any{"_meta": e.Meta(map[string]string{"name": "mcpgate", "version": cmp.Or(s.opts.Version, "dev")})}
		for k, v := range params {
			with[k] = v
		}
		params = with
	}
	var p any // no params member at all when there are none ("params": null fails TS servers)
	if params != nil {
		p = params
	}
	for try := 0; ; try++ {
		id := jsonrpc.OwnID("", s.ownSeq.Add(1))
		resp, err := s.roundTripID(ctx, jsonrpc.NewRequest(id, method, p), true)
		if !errors.Is(err, errIDInUse) || try == 16 {
			return resp, err
		}
	}
}

// roundTripID routes and sends a request and waits for the response with the same
// id; own says the id is the gateway's, so that a client request in flight under it
// (forwarded or a tools/call) also makes it errIDInUse.
func (s *Session) roundTripID(ctx context.Context, msg *jsonrpc.Message, own bool) (*jsonrpc.Message, error) {
	routed, err := s.route(msg)
	if err != nil {
		return nil, routeFailed(err)
	}
	return s.sendAndWait(ctx, routed, own)
}

// routeFailed is the pipeline's error for a request the router refused: unknown
// tool when it names no server, else unavailable.
func routeFailed(err error) error {
	var re *jsonrpc.RequestError
	if errors.As(err, &re) && re.Unknown {
		return fmt.Errorf("%w: %s", pipeline.ErrUnknownTool, strings.TrimPrefix(re.Message, "mcpgate: "))
	}
	return fmt.Errorf("%w: %w", pipeline.ErrUnavailable, err)
}

// sendAndWait sends a routed request and waits for the response with the same id (see
// roundTripID for own).
func (s *Session) sendAndWait(ctx context.Context, routed *jsonrpc.Message, own bool) (*jsonrpc.Message, error) {
	id := routed.ID
	ch := make(chan *jsonrpc.Message, 1)
	key := jsonrpc.IDKey(id)
	s.mu.Lock()
	if s.dead != nil {
		s.mu.Unlock()
		return nil, fmt.Errorf("%w", pipeline.ErrUnavailable)
	}
	if _, dup := s.pending[key]; dup || (own && s.busy(key)) {
		s.mu.Unlock()
		return nil, fmt.Errorf("%w: %w", pipeline.ErrUnavailable, errIDInUse)
	}
	p := &pending{req: routed, route: routed.Upstream, ch: ch, id: id}
	s.pending[key] = p
	s.mu.Unlock()
	if err := s.up.Send(routed); err != nil {
		s.mu.Lock()
		if s.pending[key] == p {
			delete(s.pending, key)
		}
		s.mu.Unlock()
		if errors.Is(err, jsonrpc.ErrNotDelivered) {
			return nil, fmt.Errorf("%w: %w", pipeline.ErrUnavailable, err)
		}
		s.upstreamGone(err)
		return nil, pipeline.ErrUnavailable
	}
	var timeout <-chan time.Time
	if s.opts.CallTimeout > 0 {
		t := time.NewTimer(s.opts.CallTimeout)
		defer t.Stop()
		timeout = t.C
	}
	select {
	case m := <-ch:
		if m == nil {
			return nil, pipeline.ErrUnavailable
		}
		return m, nil
	case <-ctx.Done():
		// The client's own notifications/cancelled went upstream as it was; on session
		// end the upstream is closed. Either way there is nothing more to send.
		s.abandon(key, p, "")
		return nil, pipeline.ErrCancelled
	case <-timeout:
		s.abandon(key, p, "mcpgate call timeout")
		return nil, fmt.Errorf("%w (after %s)", pipeline.ErrTimeout, s.opts.CallTimeout)
	}
}

// abandonedInput ends the input rounds of the request id answered, through the
// upstream's Abandon (upstream.Abandon): its input_required result had an input
// request withheld, so the client will not retry it (docs/channels.md#input-requests).
// Done before the client's answer, so that no later request under the same id can be
// taken for it.
func (s *Session) abandonedInput(id json.RawMessage, server string) {
	_ = upstream.Abandon(s.up, id, server)
}

// abandon stops waiting for a request and, with a reason, tells the upstream with
// notifications/cancelled (MCP "Cancellation").
func (s *Session) abandon(key string, p *pending, reason string) {
	s.mu.Lock()
	ok := s.pending[key] == p
	if ok {
		delete(s.pending, key)
	}
	dead := s.dead != nil
	s.mu.Unlock()
	if ok && !dead && reason != "" {
		n := jsonrpc.NewNotification(methods.NotificationCancelled, map[string]any{"requestId": p.req.ID, "reason": reason})
		n.Upstream = p.route
		_ = s.up.Send(n)
	}
}

// cancelled ends the pipeline of a tools/call the client cancelled, and names the
// server the cancelled request went to, so a multiplexer can pass it there; nil drops
// a cancellation of the gateway's own request.
func (s *Session) cancelled(msg *jsonrpc.Message) *jsonrpc.Message {
	var p map[string]json.RawMessage // exact keys, as the server reads them
	if json.Unmarshal(msg.Params, &p) != nil {
		return msg
	}
	key := jsonrpc.IDKey(p["requestId"])
	switch {
	case jsonrpc.IsOwnIDKey(key):
		// A request of the gateway's own (docs/decisions.md#reserved-ids): cancelling
		// its tools listing would leave the gateway without the tools it withholds.
		s.log.Warn("notifications/cancelled for a request of the gateway's own dropped")
		return nil
	}
	s.mu.Lock()
	cancel := s.inflight[key]
	route := ""
	if pe := s.pending[key]; pe != nil {
		route = pe.route
	}
	s.mu.Unlock()
	if cancel != nil {
		cancel()
	}
	if route != "" {
		c := *msg
		c.Upstream = route
		return &c
	}
	return msg
}

// readUpstream handles upstream → client traffic until the upstream's stream ends.
func (s *Session) readUpstream() {
	for {
		msg, err := s.up.Recv()
		var drop *jsonrpc.DropError
		var reset *jsonrpc.ResetError
		switch {
		case errors.As(err, &drop) && drop.Ambiguous != nil:
			s.refuseUpstream(drop)
			continue
		case errors.As(err, &drop):
			s.log.Warn("upstream message dropped", "upstream", drop.Upstream, "reason", drop.Reason, "limit_bytes", s.opts.MaxMessageBytes)
			s.failDropped(drop.Head, drop.Reason)
			continue
		case errors.As(err, &reset):
			s.reset(reset)
			continue
		case err != nil:
			s.upstreamGone(err)
			return
		}
		s.fromUpstream(msg)
	}
}

func (s *Session) fromUpstream(msg *jsonrpc.Message) {
	x := &Exchange{Msg: msg, Method: msg.Method, Server: msg.Upstream}
	var bind *reqstate.Binding // a client request's response: its requestState is sealed
	if x.Server == "" {
		x.Server = s.opts.Server
	}
	switch msg.Kind {
	case jsonrpc.KindResponse:
		s.mu.Lock()
		p := s.pending[msg.IDKey()]
		delete(s.pending, msg.IDKey())
		s.mu.Unlock()
		if p == nil {
			// Nothing waits for this id: a late answer to a call that timed out or was
			// cancelled, or to the gateway's own request. Forwarding it would hand the
			// client an unfiltered tools/call result, so it is dropped.
			s.log.Debug("upstream response with no pending request dropped", "id", msg.IDKey())
			return
		}
		if rw, ok := s.up.(ResponseRewriter); ok {
			msg = rw.RewriteResponse(p.req.Method, msg)
		}
		if p.id != nil && !bytes.Equal(msg.ID, p.id) {
			// The server may have echoed an equal id in another spelling (7e1 for 70):
			// the client gets its own bytes back.
			msg = msg.WithID(p.id)
		}
		if p.ch != nil {
			p.ch <- msg
			return
		}
		msg = s.taskIDsToClient(p.req.Method, p.task, msg)
		x.Msg, x.Method, x.Request, x.task, x.authz = msg, p.req.Method, p.req, p.task, p.authz
		bind = p.bind
		switch row := methods.Of(p.req.Method); {
		case row.Does(methods.ObservesTools):
			s.tools.observe(msg.Result)
		case row.Does(methods.ObservesPrompts):
			s.tools.observePrompts(msg.Result)
		case row.Does(methods.NotesVersion):
			s.noteVersion(msg.Result)
		}
	case jsonrpc.KindNotification:
		msg = s.taskIDsToClient(msg.Method, "", msg)
		x.Msg = msg
		if m := methods.Of(msg.Method); m != nil && m.Invalidates != "" {
			if m.Invalidates == methods.ToolsList {
				s.tools.invalidate()
			}
			s.views[m.Invalidates].invalidate()
		}
	case jsonrpc.KindRequest:
		msg = s.taskIDsToClient(msg.Method, "", msg)
		x.Msg = msg
		if methods.Of(msg.Method).AnswerPhase() == ctxapi.PhaseRoots && !s.askRoots(msg, x.Server) {
			s.send(&jsonrpc.Message{Raw: jsonrpc.ErrorResponseObjectRaw(msg.ID, rootsBusy), Kind: jsonrpc.KindResponse,
				ID: msg.ID, Error: rootsBusy, Upstream: msg.Upstream})
			return
		}
	case jsonrpc.KindBatch:
		s.log.Warn("upstream sent a JSON-RPC batch; dropped")
		return
	}
	// Every channel toward the agent or the user goes through the pipeline's filters
	// (docs/channels.md); a dropped notification or a refused server request ends here.
	out := s.filterChannel(x)
	if out == nil {
		return
	}
	x.Msg = out
	if bind != nil {
		out = s.sealState(*bind, out)
	}
	s.write(out)
}

// failDropped fails the request a dropped upstream message answered, when its id can
// be read, instead of letting the client wait for the call timeout.
func (s *Session) failDropped(head []byte, why string) {
	id, ok := jsonrpc.PeekID(head)
	if !ok {
		return
	}
	s.fromUpstream(jsonrpc.ResponseErrorMessage(id, why))
}

// reset fails every request in flight on a connection that was lost: those routed to
// its server, or all of them when the session fronts one server.
func (s *Session) reset(e *jsonrpc.ResetError) {
	s.mu.Lock()
	var lost []*pending
	for k, p := range s.pending {
		if p.route == e.Upstream {
			lost = append(lost, p)
			delete(s.pending, k)
		}
	}
	s.mu.Unlock()
	s.tools.invalidate()
	name := e.Upstream
	if name == "" {
		name = s.opts.Server
	}
	s.log.Warn("upstream connection lost; failing its requests in flight", "upstream", name, "in_flight", len(lost), "err", e.Err)
	const why = "mcpgate: upstream MCP server exited while the request was in flight; it is being restarted"
	for _, p := range lost {
		if p.ch != nil {
			p.ch <- jsonrpc.NewErrorResponse(p.req.ID, methods.CodeUpstreamUnavailable, why)
			continue
		}
		s.replyError(p.req.ID, methods.CodeUpstreamUnavailable, why)
	}
}

// conform makes a result the gateway wrote for the client request req valid in
// req's revision (methods.Conform); private marks one changed for this caller.
func conform(req *jsonrpc.Message, result json.RawMessage, private bool) json.RawMessage {
	if req == nil {
		return result
	}
	e, ok := methods.EnvelopeOf(req.Params)
	if !ok {
		return result
	}
	return methods.Conform(methods.Of(req.Method), e.ProtocolVersion, result, private)
}

func (s *Session) write(msg *jsonrpc.Message) {
	if err := s.client.Send(msg); err != nil {
		s.log.Debug("write to client failed", "err", err)
	}
}

func (s *Session) replyError(id json.RawMessage, code int, message string) {
	s.write(jsonrpc.NewErrorResponse(id, code, message))
}

// upstreamGone fails every request still waiting on the upstream with a clear error.
func (s *Session) upstreamGone(cause error) {
	s.mu.Lock()
	if s.dead != nil {
		s.mu.Unlock()
		return
	}
	s.dead = cause
	waiting := s.pending
	s.pending = map[string]*pending{}
	s.mu.Unlock()
	level := slog.LevelError
	if s.closing.Load() {
		level = slog.LevelDebug // the session ended and its upstream was closed: expected
	}
	s.log.Log(context.Background(), level, "upstream MCP server is gone; answering its requests with errors", "err", cause, "in_flight", len(waiting))
	for _, p := range waiting {
		if p.ch != nil {
			close(p.ch)
			continue
		}
		s.replyError(p.req.ID, methods.CodeUpstreamUnavailable, "mcpgate: "+pipeline.ErrUnavailable.Error())
	}
}

func (s *Session) noteClientInfo(params json.RawMessage) {
	var p struct {
		ClientInfo struct {
			Name    string `json:"name"`
			Version string `json:"version"`
		} `json:"clientInfo"`
		Capabilities struct {
			Sampling struct {
				Context json.RawMessage `json:"context"`
			} `json:"sampling"`
		} `json:"capabilities"`
	}
	if json.Unmarshal(params, &p) != nil {
		return
	}
	c := p.Capabilities.Sampling.Context
	s.samplingContext.Store(len(c) > 0 && string(c) != "null")
	s.clientM.Lock()
	s.client_ = map[string]string{
		"name":    bound.Truncate(p.ClientInfo.Name, bound.ClientInfo),
		"version": bound.Truncate(p.ClientInfo.Version, bound.ClientInfo),
	}
	s.clientM.Unlock()
}

func (s *Session) clientInfo() map[string]string {
	info, _ := s.clientOf(nil)
	return info
}

// clientOf is the client's name and version and the revision for the record of an
// exchange whose client request has params: the request's own _meta envelope (a
// 2026-07-28 request), else the client's last one, else initialize's. Both are
// bounded like every client string (docs/http.md#client-strings-are-bounded).
func (s *Session) clientOf(params json.RawMessage) (map[string]string, string) {
	e, ok := methods.EnvelopeOf(params)
	if !ok {
		if last := s.envelope.Load(); last != nil && params == nil {
			e, ok = *last, true
		}
	}
	if ok {
		var ci struct {
			Name    string `json:"name"`
			Version string `json:"version"`
		}
		var info map[string]string
		if s.opts.RecordClientInfo && json.Unmarshal(e.ClientInfo, &ci) == nil {
			info = map[string]string{"name": bound.Truncate(ci.Name, bound.ClientInfo), "version": bound.Truncate(ci.Version, bound.ClientInfo)}
		}
		return info, bound.Truncate(e.ProtocolVersion, bound.Header)
	}
	s.clientM.Lock()
	defer s.clientM.Unlock()
	if !s.opts.RecordClientInfo {
		return nil, s.version
	}
	return s.client_, s.version
}

// noteVersion keeps the protocolVersion of an initialize result for the records.
func (s *Session) noteVersion(result json.RawMessage) {
	var r map[string]json.RawMessage
	var v string
	if json.Unmarshal(result, &r) != nil || json.Unmarshal(r["protocolVersion"], &v) != nil {
		return
	}
	s.clientM.Lock()
	s.version = bound.Truncate(v, bound.Header)
	s.clientM.Unlock()
}
