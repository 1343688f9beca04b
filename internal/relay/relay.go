// Package relay is mcpgate's transparent MCP relay over stdio: every JSON-RPC message
// goes through in both directions with its id and unknown fields intact, and only
// tools/call is handed to the pipeline.
package relay

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/mcpgate/mcpgate/ctxapi"
	"github.com/mcpgate/mcpgate/internal/bound"
	"github.com/mcpgate/mcpgate/internal/jsonrpc"
	"github.com/mcpgate/mcpgate/internal/pipeline"
)

// Upstream is the server side of a session: a stdio process or any transport that
// carries one MCP session.
type Upstream interface {
	Send(msg []byte) error
	ReadLine() ([]byte, error)
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
	// RecordClientInfo puts initialize's clientInfo into each record (mcp-server, docs/decisions.md#record-fields).
	RecordClientInfo bool
}

// Session relays one MCP session between a client and an upstream.
type Session struct {
	opts   Options
	log    *slog.Logger
	client *jsonrpc.Writer
	up     Upstream

	mu       sync.Mutex
	pending  map[string]*pending // client requests in flight upstream, by id
	inflight map[string]context.CancelFunc
	dead     error // set once the upstream is gone
	draining atomic.Bool
	closing  atomic.Bool // Run has returned; the caller closes the upstream

	tools   *toolIndex
	ownSeq  atomic.Uint64
	calls   sync.WaitGroup
	clientM sync.Mutex
	client_ map[string]string // clientInfo from initialize
}

type pending struct {
	method string
	id     json.RawMessage
	ch     chan *jsonrpc.Message // set when the gateway itself waits for the response
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
	}
	s.tools = newToolIndex(s)
	return s
}

// Run relays until the client closes its input, ctx ends, or the upstream is gone
// and the client has been told. It returns nil on a clean client EOF.
func (s *Session) Run(ctx context.Context, in io.Reader, out io.Writer) error {
	s.client = jsonrpc.NewWriter(out)
	defer s.closing.Store(true)
	parent := ctx
	ctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	defer cancel()
	upDone := make(chan struct{})
	go func() {
		defer close(upDone)
		s.readUpstream()
	}()
	clientDone := make(chan error, 1)
	go func() { clientDone <- s.readClient(ctx, in) }()

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
func (s *Session) readClient(ctx context.Context, in io.Reader) error {
	r := jsonrpc.NewReader(in, s.opts.MaxMessageBytes)
	for {
		line, err := r.ReadLine()
		switch {
		case errors.Is(err, jsonrpc.ErrTooLarge):
			s.log.Warn("client message over the size limit rejected", "limit_bytes", s.opts.MaxMessageBytes)
			s.replyError(nil, jsonrpc.CodeInvalidRequest, fmt.Sprintf("mcpgate: message exceeds the %d-byte limit", s.opts.MaxMessageBytes))
			continue
		case errors.Is(err, io.EOF):
			return nil
		case err != nil:
			return fmt.Errorf("relay: read from client: %w", err)
		}
		msg, err := jsonrpc.Parse(line)
		if err != nil {
			s.log.Warn("malformed client message rejected", "err", err)
			code := jsonrpc.CodeParseError
			if msg.ID != nil || json.Valid(line) {
				code = jsonrpc.CodeInvalidRequest
			}
			s.replyError(msg.ID, code, "mcpgate: "+err.Error())
			continue
		}
		s.fromClient(ctx, msg)
	}
}

func (s *Session) fromClient(ctx context.Context, msg *jsonrpc.Message) {
	switch msg.Kind {
	case jsonrpc.KindBatch:
		// MCP removed JSON-RPC batching; a batch must never slip past the policies.
		s.log.Warn("JSON-RPC batch rejected")
		s.replyError(nil, jsonrpc.CodeInvalidRequest, "mcpgate: JSON-RPC batches are not supported by MCP; send one message per line")
	case jsonrpc.KindRequest:
		if s.draining.Load() {
			s.replyError(msg.ID, jsonrpc.CodeUpstreamUnavailable, "mcpgate: the gateway is shutting down")
			return
		}
		if msg.Method == "tools/call" {
			s.toolCall(ctx, msg)
			return
		}
		if msg.Method == "initialize" {
			s.noteClientInfo(msg.Params)
		}
		s.forwardRequest(msg)
	case jsonrpc.KindNotification:
		if msg.Method == "notifications/cancelled" {
			s.cancelled(msg.Params)
		}
		s.send(msg.Raw)
	case jsonrpc.KindResponse: // the client answering a server-to-client request
		s.send(msg.Raw)
	}
}

// forwardRequest sends a client request upstream and remembers it, so it can be
// answered if the upstream dies.
func (s *Session) forwardRequest(msg *jsonrpc.Message) {
	s.mu.Lock()
	if s.dead != nil {
		s.mu.Unlock()
		s.replyError(msg.ID, jsonrpc.CodeUpstreamUnavailable, "mcpgate: "+pipeline.ErrUnavailable.Error())
		return
	}
	if s.busy(msg.IDKey()) {
		s.mu.Unlock()
		s.replyError(msg.ID, jsonrpc.CodeInvalidRequest, "mcpgate: request id "+string(msg.ID)+" is already in use by a request in flight")
		return
	}
	s.pending[msg.IDKey()] = &pending{method: msg.Method, id: msg.ID}
	s.mu.Unlock()
	if err := s.up.Send(msg.Raw); err != nil {
		s.upstreamGone(err)
	}
}

func (s *Session) send(raw []byte) {
	if err := s.up.Send(raw); err != nil {
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
		s.replyError(msg.ID, jsonrpc.CodeInvalidRequest, "mcpgate: request id "+string(msg.ID)+" is already in use by a request in flight")
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
		reply := s.opts.Pipeline.Handle(ctx, pipeline.Call{
			Params:     msg.Params,
			User:       s.opts.User,
			ToolAccess: s.tools.access,
			Listed:     s.tools.listed,
			ClientInfo: s.clientInfo(),
		}, func(ctx context.Context, params json.RawMessage) (*jsonrpc.Message, error) {
			return s.callUpstream(ctx, msg, params)
		})
		switch {
		case reply.NoReply:
		case reply.Original != nil:
			s.write(reply.Original)
		case reply.Error != nil:
			s.write(jsonrpc.ErrorResponseObjectRaw(msg.ID, reply.Error))
		default:
			s.write(jsonrpc.Response(msg.ID, reply.Result))
		}
	}()
}

// busy reports whether a client request with this id key is still in flight; the
// caller holds s.mu.
func (s *Session) busy(key string) bool {
	_, fwd := s.pending[key]
	_, call := s.inflight[key]
	return fwd || call
}

// callUpstream forwards a tools/call (rewritten when params changed) and waits for
// its response, the client's cancellation, or the call timeout.
func (s *Session) callUpstream(ctx context.Context, msg *jsonrpc.Message, params json.RawMessage) (*jsonrpc.Message, error) {
	raw := msg.Raw
	if string(params) != string(msg.Params) {
		raw = jsonrpc.Request(msg.ID, msg.Method, params)
	}
	return s.roundTrip(ctx, msg.ID, msg.Method, raw)
}

// roundTrip sends a request and waits for the response with the same id.
func (s *Session) roundTrip(ctx context.Context, id json.RawMessage, method string, raw []byte) (*jsonrpc.Message, error) {
	ch := make(chan *jsonrpc.Message, 1)
	key := jsonrpc.IDKey(id)
	s.mu.Lock()
	if s.dead != nil {
		s.mu.Unlock()
		return nil, fmt.Errorf("%w", pipeline.ErrUnavailable)
	}
	s.pending[key] = &pending{method: method, id: id, ch: ch}
	s.mu.Unlock()
	if err := s.up.Send(raw); err != nil {
		s.upstreamGone(err)
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
		s.abandon(key, id, "")
		return nil, pipeline.ErrCancelled
	case <-timeout:
		s.abandon(key, id, "mcpgate call timeout")
		return nil, fmt.Errorf("%w (after %s)", pipeline.ErrTimeout, s.opts.CallTimeout)
	}
}

// abandon stops waiting for a request and, with a reason, tells the upstream with
// notifications/cancelled (MCP "Cancellation").
func (s *Session) abandon(key string, id json.RawMessage, reason string) {
	s.mu.Lock()
	_, ok := s.pending[key]
	delete(s.pending, key)
	dead := s.dead != nil
	s.mu.Unlock()
	if ok && !dead && reason != "" {
		_ = s.up.Send(jsonrpc.Notification("notifications/cancelled", map[string]any{"requestId": id, "reason": reason}))
	}
}

// cancelled ends the pipeline of a tools/call the client cancelled.
func (s *Session) cancelled(params json.RawMessage) {
	var p struct {
		RequestID json.RawMessage `json:"requestId"`
	}
	if json.Unmarshal(params, &p) != nil {
		return
	}
	s.mu.Lock()
	cancel := s.inflight[jsonrpc.IDKey(p.RequestID)]
	s.mu.Unlock()
	if cancel != nil {
		cancel()
	}
}

// readUpstream handles upstream → client traffic until the upstream's stdout ends.
func (s *Session) readUpstream() {
	for {
		line, err := s.up.ReadLine()
		var tooLarge *jsonrpc.TooLargeError
		if errors.As(err, &tooLarge) {
			s.log.Warn("upstream message over the size limit dropped", "limit_bytes", s.opts.MaxMessageBytes)
			s.failDropped(tooLarge.Head, "it exceeds the gateway's message size limit (--max-message-bytes)")
			continue
		}
		if err != nil {
			s.upstreamGone(err)
			return
		}
		msg, err := jsonrpc.Parse(line)
		if err != nil {
			s.log.Warn("malformed upstream message dropped", "err", err)
			s.failDropped(line, "it is not valid JSON-RPC")
			continue
		}
		s.fromUpstream(msg)
	}
}

func (s *Session) fromUpstream(msg *jsonrpc.Message) {
	switch msg.Kind {
	case jsonrpc.KindResponse:
		s.mu.Lock()
		p := s.pending[msg.IDKey()]
		delete(s.pending, msg.IDKey())
		s.mu.Unlock()
		switch {
		case p == nil:
			// Nothing waits for this id: a late answer to a call that timed out or was
			// cancelled, or to the gateway's own request. Forwarding it would hand the
			// client an unfiltered tools/call result, so it is dropped.
			s.log.Debug("upstream response with no pending request dropped", "id", msg.IDKey())
			return
		case p.ch != nil:
			p.ch <- msg
			return
		case p.method == "initialize":
			s.write(withoutTasks(msg, s.log))
			return
		case p.method == "tools/list":
			s.tools.observe(msg.Result)
		}
	case jsonrpc.KindNotification:
		if msg.Method == "notifications/tools/list_changed" {
			s.tools.invalidate()
		}
	case jsonrpc.KindBatch:
		s.log.Warn("upstream sent a JSON-RPC batch; dropped")
		return
	}
	s.write(msg.Raw)
}

// failDropped fails the request a dropped upstream message answered, when its id can
// be read, instead of letting the client wait for the call timeout.
func (s *Session) failDropped(line []byte, why string) {
	id, ok := jsonrpc.PeekID(line)
	if !ok {
		return
	}
	if msg, err := jsonrpc.Parse(jsonrpc.ResponseError(id, why)); err == nil {
		s.fromUpstream(msg)
	}
}

func (s *Session) write(raw []byte) {
	if err := s.client.Write(raw); err != nil {
		s.log.Debug("write to client failed", "err", err)
	}
}

func (s *Session) replyError(id json.RawMessage, code int, message string) {
	s.write(jsonrpc.ErrorResponse(id, code, message))
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
		s.replyError(p.id, jsonrpc.CodeUpstreamUnavailable, "mcpgate: "+pipeline.ErrUnavailable.Error())
	}
}

func (s *Session) noteClientInfo(params json.RawMessage) {
	var p struct {
		ClientInfo struct {
			Name    string `json:"name"`
			Version string `json:"version"`
		} `json:"clientInfo"`
	}
	if json.Unmarshal(params, &p) != nil {
		return
	}
	s.clientM.Lock()
	s.client_ = map[string]string{
		"name":    bound.Truncate(p.ClientInfo.Name, bound.ClientInfo),
		"version": bound.Truncate(p.ClientInfo.Version, bound.ClientInfo),
	}
	s.clientM.Unlock()
}

func (s *Session) clientInfo() map[string]string {
	if !s.opts.RecordClientInfo {
		return nil
	}
	s.clientM.Lock()
	defer s.clientM.Unlock()
	return s.client_
}
