package httpfront

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/mcpgate/mcpgate/ctxapi"
	"github.com/mcpgate/mcpgate/internal/bound"
	"github.com/mcpgate/mcpgate/internal/jsonrpc"
	"github.com/mcpgate/mcpgate/internal/methods"
	"github.com/mcpgate/mcpgate/internal/oauth"
	"github.com/mcpgate/mcpgate/vocab"
)

// Backend is one MCP session behind the front, started by an initialize request.
type Backend interface {
	// Run relays between the session and its upstream until conn's Recv ends (the
	// session ended) or ctx is done: conn.Recv yields the client's messages, checked
	// and parsed once by the front; conn.Send routes a server message to its stream.
	Run(ctx context.Context, conn jsonrpc.Conn) error
	// Close releases what the backend holds (its upstream process); called after Run.
	Close() error
}

// StartFunc starts the backend of a new session for the caller. An error is answered
// to the initialize request as an HTTP 502 with a JSON-RPC error.
type StartFunc func(ctx context.Context, user ctxapi.User) (Backend, error)

// Options configure a Front.
type Options struct {
	Start  StartFunc
	Auth   Authenticator
	Hosts  *HostAllowlist
	Logger *slog.Logger
	// MaxMessageBytes limits one POST body (jsonrpc.DefaultMaxMessageBytes when ≤ 0).
	MaxMessageBytes int
	// MaxDepth limits JSON nesting of a client message (DefaultMaxDepth when ≤ 0).
	MaxDepth int
	// MaxSessions limits concurrent sessions (DefaultMaxSessions when ≤ 0).
	MaxSessions int
	// MaxSessionsPerCaller limits the concurrent sessions of one caller identity
	// (Identity.Key), so one caller cannot take every place (MaxSessions when ≤ 0 or
	// larger). Past it an initialize gets HTTP 429.
	MaxSessionsPerCaller int
	// IdleTimeout ends a session with no traffic and no open stream (30 min when 0).
	IdleTimeout time.Duration
	// ReplayEvents is how many events a stream keeps for Last-Event-ID (256 when ≤ 0).
	ReplayEvents int
	// ReplayBytes bounds, in bytes, what a session keeps for Last-Event-ID: the
	// events of its finished request streams together, and each open stream's events
	// but the newest (DefaultReplayBytes when ≤ 0).
	ReplayBytes int
	// MaxBodyBytesInFlight bounds the bytes of request bodies the POSTs in flight
	// read or hold, all callers together (DefaultMaxBodyBytesInFlight when 0, none
	// when < 0); past it a POST gets HTTP 503. MaxBodyBytesPerCaller bounds one
	// caller's (Identity.Key; DefaultMaxBodyBytesPerCaller, at least MaxMessageBytes,
	// when 0; none when < 0); past it HTTP 429. A body with Content-Length is
	// judged before a byte of it is read.
	MaxBodyBytesInFlight  int64
	MaxBodyBytesPerCaller int64
	// BodyReadTimeout bounds how long a POST body may take to arrive (2 min when 0,
	// none when < 0); past it HTTP 408 and the connection is closed.
	BodyReadTimeout time.Duration
	// Refused, when set, records a client message refused whole as it arrived (a.Reason
	// says why: one it could be read two ways, docs/decisions.md#one-reading, a batch,
	// an oversized or malformed body, an id in use; a.Method and a.ID when known) and
	// returns the record's event id, which the -32600/-32700 answer cites.
	Refused func(user ctxapi.User, a *jsonrpc.AmbiguousError) string
}

// Defaults for Options.
const (
	DefaultMaxDepth    = 512
	DefaultMaxSessions = 1024
	DefaultReplayBytes = 1 << 20
	// DefaultBodyReadTimeout bounds how long a POST body may take to arrive.
	DefaultBodyReadTimeout = 2 * time.Minute
)

// Front is the Streamable HTTP endpoint. Mount it with http.Handle("/mcp", front).
type Front struct {
	opts     Options
	log      *slog.Logger
	ctx      context.Context // sessions run under this context, not a request's
	cancel   context.CancelFunc
	draining atomic.Bool
	drainCh  chan struct{}
	active   atomic.Int64  // POST requests being served
	idleCh   chan struct{} // signalled when active drops to 0 while draining
	bodies   *bodyBudget   // request-body bytes in flight

	mu       sync.Mutex
	sessions map[string]*session
	starting int                    // sessions whose backend is starting: they count toward MaxSessions
	byCaller map[string]int         // open and starting sessions per Identity.Key
	modernBy map[string]*modernSlot // each caller's backend of 2026-07-28 requests
	wg       sync.WaitGroup         // running backends
}

// New returns a Front.
func New(opts Options) *Front {
	if opts.MaxMessageBytes <= 0 {
		opts.MaxMessageBytes = jsonrpc.DefaultMaxMessageBytes
	}
	if opts.MaxDepth <= 0 {
		opts.MaxDepth = DefaultMaxDepth
	}
	if opts.MaxSessions <= 0 {
		opts.MaxSessions = DefaultMaxSessions
	}
	if opts.MaxSessionsPerCaller <= 0 || opts.MaxSessionsPerCaller > opts.MaxSessions {
		opts.MaxSessionsPerCaller = opts.MaxSessions
	}
	if opts.IdleTimeout == 0 {
		opts.IdleTimeout = 30 * time.Minute
	}
	if opts.ReplayEvents <= 0 {
		opts.ReplayEvents = 256
	}
	if opts.ReplayBytes <= 0 {
		opts.ReplayBytes = DefaultReplayBytes
	}
	if opts.MaxBodyBytesPerCaller == 0 {
		opts.MaxBodyBytesPerCaller = DefaultMaxBodyBytesPerCaller
	}
	if opts.MaxBodyBytesInFlight == 0 {
		opts.MaxBodyBytesInFlight = DefaultMaxBodyBytesInFlight
	}
	// one message of the largest size always fits
	if opts.MaxBodyBytesPerCaller > 0 && opts.MaxBodyBytesPerCaller < int64(opts.MaxMessageBytes) {
		opts.MaxBodyBytesPerCaller = int64(opts.MaxMessageBytes)
	}
	if opts.MaxBodyBytesInFlight > 0 && opts.MaxBodyBytesInFlight < opts.MaxBodyBytesPerCaller {
		opts.MaxBodyBytesInFlight = opts.MaxBodyBytesPerCaller
	}
	if opts.BodyReadTimeout == 0 {
		opts.BodyReadTimeout = DefaultBodyReadTimeout
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	if opts.Hosts == nil {
		opts.Hosts = NewHostAllowlist("")
	}
	ctx, cancel := context.WithCancel(context.Background())
	f := &Front{opts: opts, log: opts.Logger, bodies: newBodyBudget(opts.MaxBodyBytesInFlight, opts.MaxBodyBytesPerCaller), ctx: ctx, cancel: cancel, drainCh: make(chan struct{}), idleCh: make(chan struct{}, 1), sessions: map[string]*session{}, byCaller: map[string]int{}}
	go f.reap()
	return f
}

// Sessions returns the number of open sessions.
func (f *Front) Sessions() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.sessions)
}

// Drain stops accepting new requests (503, with Connection: close) and ends every
// GET stream; requests in flight go on. Call it, wait for Idle (or a timeout) while
// the listener stays open, then http.Server.Shutdown, then Close.
func (f *Front) Drain() {
	if f.draining.CompareAndSwap(false, true) {
		close(f.drainCh)
		f.signalIdle()
	}
}

// Idle returns a channel that receives once no POST is in flight after Drain.
func (f *Front) Idle() <-chan struct{} { return f.idleCh }

// InFlight returns the number of POST requests being served.
func (f *Front) InFlight() int { return int(f.active.Load()) }

func (f *Front) signalIdle() {
	if f.draining.Load() && f.active.Load() == 0 {
		select {
		case f.idleCh <- struct{}{}:
		default:
		}
	}
}

// Close ends every session (closing each backend's input, then the backend) and
// waits for them, or for ctx.
func (f *Front) Close(ctx context.Context) error {
	f.Drain()
	f.mu.Lock()
	all := make([]*session, 0, len(f.sessions))
	for _, s := range f.sessions {
		all = append(all, s)
	}
	f.mu.Unlock()
	for _, s := range all {
		s.end("gateway shutting down")
	}
	done := make(chan struct{})
	go func() { f.wg.Wait(); close(done) }()
	select {
	case <-done:
		f.cancel()
		return nil
	case <-ctx.Done():
		f.cancel() // backends still running are cancelled
		return ctx.Err()
	}
}

// ServeHTTP implements the MCP endpoint: POST, GET and DELETE.
func (f *Front) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if err := f.opts.Hosts.Check(r.Host, r.Header.Get("Origin")); err != nil {
		f.log.Warn("request rejected: DNS rebinding protection",
			"host", bound.Truncate(r.Host, bound.Header), "origin", bound.Truncate(r.Header.Get("Origin"), bound.Header))
		httpError(w, http.StatusForbidden, nil, methods.CodeInvalidRequest, "mcpgate: "+err.Error())
		return
	}
	id, err := f.opts.Auth(r)
	if err != nil {
		f.refuse(w, r, err)
		return
	}
	switch r.Method {
	case http.MethodPost:
		f.post(w, r, id)
	case http.MethodGet:
		f.get(w, r, id)
	case http.MethodDelete:
		f.delete(w, r, id)
	default:
		w.Header().Set("Allow", "GET, POST, DELETE")
		httpError(w, http.StatusMethodNotAllowed, nil, methods.CodeInvalidRequest, "mcpgate: method not allowed")
	}
}

// supportedVersions are the MCP protocol versions accepted in MCP-Protocol-Version.
var supportedVersions = map[string]bool{"2024-11-05": true, "2025-03-26": true, "2025-06-18": true, "2025-11-25": true}

func (f *Front) post(w http.ResponseWriter, r *http.Request, id Identity) {
	f.active.Add(1)
	defer func() {
		if f.active.Add(-1) == 0 {
			f.signalIdle()
		}
	}()
	if f.draining.Load() {
		w.Header().Set("Connection", "close")
		httpError(w, http.StatusServiceUnavailable, nil, methods.CodeUpstreamUnavailable, "mcpgate: the gateway is shutting down")
		return
	}
	sse, ok := acceptsSSE(r.Header.Get("Accept"))
	if !ok {
		httpError(w, http.StatusNotAcceptable, nil, methods.CodeInvalidRequest, "mcpgate: Accept must include application/json or text/event-stream")
		return
	}
	if ct := r.Header.Get("Content-Type"); ct != "" && !strings.HasPrefix(strings.ToLower(ct), "application/json") {
		httpError(w, http.StatusUnsupportedMediaType, nil, methods.CodeInvalidRequest, "mcpgate: Content-Type must be application/json")
		return
	}
	max := f.opts.MaxMessageBytes
	if r.ContentLength > int64(max) { // refused before a byte of the body is read
		w.Header().Set("Connection", "close")
		f.refuseMessage(w, id.User, http.StatusRequestEntityTooLarge, nil, "", methods.CodeInvalidRequest, vocab.ReasonMessageTooLarge, fmt.Sprintf("mcpgate: message exceeds the %d-byte limit", max))
		return
	}
	body, release, status, text := f.readBody(w, r, id.Key)
	defer release()
	switch status {
	case 0:
	case http.StatusRequestEntityTooLarge:
		f.refuseMessage(w, id.User, http.StatusRequestEntityTooLarge, nil, "", methods.CodeInvalidRequest, vocab.ReasonMessageTooLarge, fmt.Sprintf("mcpgate: message exceeds the %d-byte limit", max))
		return
	case http.StatusBadRequest:
		httpError(w, http.StatusBadRequest, nil, methods.CodeParseError, text)
		return
	default: // the body budget (429, 503) or its read timeout (408): the rest of the body is never read
		w.Header().Set("Connection", "close")
		if status != http.StatusRequestTimeout {
			w.Header().Set("Retry-After", "1")
		}
		f.log.Warn(fmt.Sprintf("request body refused (%d)", status), "remote", r.RemoteAddr, "user_id", id.User.UserID, "caller_id", id.User.CallerID,
			"content_length", r.ContentLength, "body_bytes_in_flight", f.bodies.inFlight())
		httpError(w, status, nil, methods.CodeUpstreamUnavailable, text)
		return
	}
	msg, status, code, text, a, reason := f.checkMessage(body)
	if a != nil {
		f.log.Warn("client message refused: it has more than one reading", "reason", a.Reason)
		var eventID string
		if f.opts.Refused != nil {
			eventID = f.opts.Refused(id.User, a)
		}
		httpError(w, status, a.ID, code, a.Refusal(eventID))
		return
	}
	if status != 0 {
		var rid json.RawMessage
		if msg != nil {
			rid = msg.ID
		}
		method := ""
		if msg != nil {
			method = msg.Method
		}
		f.refuseMessage(w, id.User, status, rid, method, code, reason, "mcpgate: "+text)
		return
	}

	sid := r.Header.Get("Mcp-Session-Id")
	if sid == "" && isModern(r, msg) { // 2026-07-28: no session
		f.modern(w, r, id, msg, sse)
		return
	}
	var s *session
	var err error
	if sid == "" {
		if msg.Kind != jsonrpc.KindRequest || msg.Method != methods.Initialize {
			httpError(w, http.StatusBadRequest, msg.ID, methods.CodeInvalidRequest, "mcpgate: missing Mcp-Session-Id header: start a session with initialize")
			return
		}
		if s, err = f.newSession(id); err != nil {
			status := http.StatusBadGateway
			switch {
			case errors.Is(err, errTooManySessions):
				status = http.StatusServiceUnavailable
			case errors.Is(err, errCallerSessions):
				status = http.StatusTooManyRequests
			}
			httpError(w, status, msg.ID, methods.CodeUpstreamUnavailable, "mcpgate: "+err.Error())
			return
		}
	} else {
		if s = f.lookup(sid); s == nil {
			httpError(w, http.StatusNotFound, msg.ID, methods.CodeSessionNotFound, "mcpgate: session not found (it ended or never existed): start a new one with initialize")
			return
		}
		if !f.boundTo(w, r, s, id, msg.ID) {
			return
		}
		if v := r.Header.Get("Mcp-Protocol-Version"); v != "" && !supportedVersions[v] {
			httpError(w, http.StatusBadRequest, msg.ID, methods.CodeInvalidRequest, fmt.Sprintf("mcpgate: unsupported MCP-Protocol-Version %q", bound.Truncate(v, bound.Header)))
			return
		}
		if code, text := sessionHeaders(r, msg); code != 0 {
			f.refuseMessage(w, id.User, http.StatusBadRequest, msg.ID, msg.Method, code, vocab.ReasonHeaderMismatch, "mcpgate: "+text)
			return
		}
	}
	s.touch()

	if msg.Kind != jsonrpc.KindRequest { // notification or response: accepted, no body
		if err := s.send(msg); err != nil {
			httpError(w, http.StatusNotFound, nil, methods.CodeSessionNotFound, "mcpgate: session ended")
			return
		}
		w.Header().Set("Mcp-Session-Id", s.id)
		w.WriteHeader(http.StatusAccepted)
		return
	}
	st, err := s.openRequest(msg, !sse)
	if errors.Is(err, errSessionEnded) {
		httpError(w, http.StatusNotFound, msg.ID, methods.CodeSessionNotFound, "mcpgate: session ended")
		return
	}
	if errors.Is(err, errIDInUse) {
		f.refuseMessage(w, id.User, http.StatusBadRequest, msg.ID, msg.Method, methods.CodeInvalidRequest, vocab.ReasonIDInUse, "mcpgate: "+err.Error())
		return
	}
	if err != nil {
		httpError(w, http.StatusBadRequest, msg.ID, methods.CodeInvalidRequest, "mcpgate: "+err.Error())
		return
	}
	if err := s.send(msg); err != nil {
		s.dropRequest(st, msg)
		httpError(w, http.StatusNotFound, msg.ID, methods.CodeSessionNotFound, "mcpgate: session ended")
		return
	}
	w.Header().Set("Mcp-Session-Id", s.id)
	if sse {
		s.serveSSE(w, r, st, 0)
		return
	}
	s.serveJSON(w, r, st)
}

// refuseMessage answers a client message refused whole as it arrived with code and
// text, citing the refusal's one record: the record and the log line hold the reason
// code only, never the message's values (text, which may quote the id, goes to the
// client only).
func (f *Front) refuseMessage(w http.ResponseWriter, user ctxapi.User, status int, rid json.RawMessage, method string, code int, reason vocab.Reason, text string) {
	f.log.Warn("client message refused", "reason", reason)
	if f.opts.Refused != nil {
		if eventID := f.opts.Refused(user, &jsonrpc.AmbiguousError{Reason: reason, Method: method, ID: rid}); eventID != "" {
			text += " (audit log entry " + eventID + ")"
		}
	}
	httpError(w, status, rid, code, text)
}

// checkMessage validates one POST body: JSON, no batch, nesting depth, JSON-RPC
// shape. It returns the message, parsed once from the compacted body (the only parse
// it gets on its way to the upstream), or an HTTP status and error; amb is set for a
// message with more than one reading (docs/decisions.md#one-reading).
func (f *Front) checkMessage(body []byte) (msg *jsonrpc.Message, status, code int, text string, amb *jsonrpc.AmbiguousError, reason vocab.Reason) {
	trimmed := bytes.TrimSpace(body)
	if len(trimmed) == 0 {
		return nil, http.StatusBadRequest, methods.CodeParseError, "empty request body", nil, vocab.ReasonMalformedMessage
	}
	if !json.Valid(trimmed) {
		return nil, http.StatusBadRequest, methods.CodeParseError, "malformed JSON", nil, vocab.ReasonMalformedMessage
	}
	if trimmed[0] == '[' {
		return nil, http.StatusBadRequest, methods.CodeInvalidRequest, "JSON-RPC batches are not supported by MCP (removed in 2025-06-18); send one message per request", nil, vocab.ReasonBatchRefused
	}
	if checkDepth(trimmed, f.opts.MaxDepth) != nil {
		return nil, http.StatusBadRequest, methods.CodeInvalidRequest, fmt.Sprintf("message nested deeper than %d levels", f.opts.MaxDepth), nil, vocab.ReasonMalformedMessage
	}
	var buf bytes.Buffer
	buf.Grow(len(trimmed))
	if err := json.Compact(&buf, trimmed); err != nil {
		return nil, http.StatusBadRequest, methods.CodeParseError, "malformed JSON", nil, vocab.ReasonMalformedMessage
	}
	msg, err := jsonrpc.Parse(buf.Bytes())
	if err != nil {
		errors.As(err, &amb)
		return msg, http.StatusBadRequest, methods.CodeInvalidRequest, strings.TrimPrefix(err.Error(), "jsonrpc: "), amb, vocab.ReasonMalformedMessage
	}
	return msg, 0, 0, "", nil, ""
}

func (f *Front) get(w http.ResponseWriter, r *http.Request, id Identity) {
	if sse, ok := acceptsSSE(r.Header.Get("Accept")); !ok || !sse {
		httpError(w, http.StatusNotAcceptable, nil, methods.CodeInvalidRequest, "mcpgate: GET needs Accept: text/event-stream")
		return
	}
	s := f.lookup(r.Header.Get("Mcp-Session-Id"))
	if s == nil {
		httpError(w, http.StatusNotFound, nil, methods.CodeSessionNotFound, "mcpgate: session not found: start a new one with initialize")
		return
	}
	if !f.boundTo(w, r, s, id, nil) {
		return
	}
	if f.draining.Load() {
		w.Header().Set("Connection", "close")
		httpError(w, http.StatusServiceUnavailable, nil, methods.CodeUpstreamUnavailable, "mcpgate: the gateway is shutting down")
		return
	}
	s.touch()
	st, after := s.standalone, uint64(0)
	if last := r.Header.Get("Last-Event-ID"); last != "" && len(last) <= bound.SessionID {
		var ok bool
		if st, after, ok = s.resume(last); !ok {
			httpError(w, http.StatusNotFound, nil, methods.CodeInvalidRequest, "mcpgate: Last-Event-ID names no stream this session still keeps")
			return
		}
	}
	w.Header().Set("Mcp-Session-Id", s.id)
	s.serveSSE(w, r, st, after)
}

// boundTo reports whether the request may use session s: its caller must be the one
// that opened it (else 403), and its token must grant exactly what the opening token
// granted (else 403 too: the session's backend judges every message as the user it
// was opened for, so a token with fewer scopes, another client or other roles must
// start a session of its own, docs/decisions.md#principal-per-token).
func (f *Front) boundTo(w http.ResponseWriter, r *http.Request, s *session, id Identity, rid json.RawMessage) bool {
	if s.key != id.Key {
		f.wrongCaller(r, s, id)
		httpError(w, http.StatusForbidden, rid, methods.CodeInvalidRequest, "mcpgate: this session belongs to another caller")
		return false
	}
	if s.grant != grant(id.User) {
		f.log.Warn("request rejected: the token grants other scopes, client or roles than the session's (403)", "method", r.Method,
			"remote", r.RemoteAddr, "session", s.id, "user_id", id.User.UserID, "caller_id", id.User.CallerID)
		httpError(w, http.StatusForbidden, rid, methods.CodeInvalidRequest, "mcpgate: this session was opened with a token that grants other scopes, "+
			"client or roles than this one: start a new session (initialize) with this token")
		return false
	}
	s.subject.Set(id.token)
	return true
}

// wrongCaller logs a 403 for a request naming another caller's session.
func (f *Front) wrongCaller(r *http.Request, s *session, id Identity) {
	f.log.Warn("request rejected: the session belongs to another caller (403)", "method", r.Method,
		"remote", r.RemoteAddr, "session", s.id, "user_id", id.User.UserID, "caller_id", id.User.CallerID)
}

func (f *Front) delete(w http.ResponseWriter, r *http.Request, id Identity) {
	s := f.lookup(r.Header.Get("Mcp-Session-Id"))
	if s == nil {
		httpError(w, http.StatusNotFound, nil, methods.CodeSessionNotFound, "mcpgate: session not found")
		return
	}
	if s.key != id.Key {
		f.wrongCaller(r, s, id)
		httpError(w, http.StatusForbidden, nil, methods.CodeInvalidRequest, "mcpgate: this session belongs to another caller")
		return
	}
	s.end("client ended the session")
	w.WriteHeader(http.StatusNoContent)
}

var (
	errTooManySessions = errors.New("too many open sessions (the gateway's --max-sessions); try again later")
	errCallerSessions  = errors.New("this caller has as many sessions open as it may (the gateway's --max-sessions-per-caller); end one (DELETE /mcp) or try again later")
)

// newSession reserves a place under MaxSessions and the caller's
// MaxSessionsPerCaller before the backend starts, so concurrent initialize requests
// never open more sessions than either cap.
func (f *Front) newSession(id Identity) (*session, error) { return f.startSession(id, false) }

// startSession starts a session's backend. A modern one (a caller's 2026-07-28
// backend) is never named to the client and counts toward no cap.
func (f *Front) startSession(id Identity, modern bool) (*session, error) {
	f.mu.Lock()
	if modern {
		f.mu.Unlock()
		return f.runSession(id, true)
	}
	if len(f.sessions)+f.starting >= f.opts.MaxSessions {
		f.mu.Unlock()
		f.log.Warn("initialize refused: the session cap is reached (503)", "max_sessions", f.opts.MaxSessions)
		return nil, errTooManySessions
	}
	if f.byCaller[id.Key] >= f.opts.MaxSessionsPerCaller {
		f.mu.Unlock()
		f.log.Warn("initialize refused: the caller's session cap is reached (429)", "user_id", id.User.UserID,
			"caller_id", id.User.CallerID, "max_sessions_per_caller", f.opts.MaxSessionsPerCaller)
		return nil, errCallerSessions
	}
	f.starting++
	f.byCaller[id.Key]++
	f.mu.Unlock()
	return f.runSession(id, false)
}

// runSession starts the backend of a session whose places are taken (none for a
// modern one) and runs it until it ends.
func (f *Front) runSession(id Identity, modern bool) (*session, error) {
	holder := &oauth.SubjectToken{}
	holder.Set(id.token)
	be, err := f.opts.Start(oauth.WithSubjectToken(f.ctx, holder), id.User)
	if err != nil {
		f.mu.Lock()
		if !modern {
			f.starting--
			f.release(id.Key)
		}
		f.mu.Unlock()
		f.log.Error("could not start the session's upstream", "err", err)
		return nil, fmt.Errorf("could not start the upstream MCP server: %w", err)
	}
	s := newSession(f, randomID(), id)
	s.modern, s.subject = modern, holder
	f.mu.Lock()
	if !modern {
		f.starting--
	}
	f.sessions[s.id] = s
	f.mu.Unlock()
	f.wg.Add(1)
	go func() {
		defer f.wg.Done()
		err := be.Run(f.ctx, s)
		if err != nil && !errors.Is(err, context.Canceled) {
			f.log.Warn("session ended with an error", "session", s.id, "err", err)
		}
		s.end("backend ended")
		if err := be.Close(); err != nil {
			f.log.Debug("closing the session's upstream", "session", s.id, "err", err)
		}
		f.remove(s)
		f.log.Info("session closed", "session", s.id)
	}()
	f.log.Info("session opened", "session", s.id, "user_id", id.User.UserID, "caller_id", id.User.CallerID)
	return s, nil
}

func (f *Front) lookup(sid string) *session {
	if sid == "" || len(sid) > bound.SessionID {
		return nil
	}
	f.mu.Lock()
	s := f.sessions[sid]
	f.mu.Unlock()
	if s == nil {
		return nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.ended || s.modern { // ending: its backend is shutting down; modern: never named
		return nil
	}
	return s
}

func (f *Front) remove(s *session) {
	f.mu.Lock()
	if f.sessions[s.id] == s {
		delete(f.sessions, s.id)
		if !s.modern {
			f.release(s.key)
		}
	}
	f.mu.Unlock()
	s.end("backend ended")
}

// release gives back a place of the caller key; f.mu is held.
func (f *Front) release(key string) {
	if f.byCaller[key]--; f.byCaller[key] <= 0 {
		delete(f.byCaller, key)
	}
}

// reap ends sessions idle for longer than IdleTimeout.
func (f *Front) reap() {
	every := f.opts.IdleTimeout / 4
	if every > time.Minute {
		every = time.Minute
	}
	if every <= 0 {
		return
	}
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-f.ctx.Done():
			return
		case <-t.C:
		}
		f.mu.Lock()
		var idle []*session
		for _, s := range f.sessions {
			if s.idle(f.opts.IdleTimeout) {
				idle = append(idle, s)
			}
		}
		f.mu.Unlock()
		for _, s := range idle {
			f.log.Info("ending idle session", "session", s.id)
			s.end("idle timeout")
		}
	}
}

// acceptsSSE reads an Accept header: sse says whether text/event-stream is
// acceptable, ok whether anything we can send is.
func acceptsSSE(accept string) (sse, ok bool) {
	if strings.TrimSpace(accept) == "" {
		return true, true
	}
	a := strings.ToLower(accept)
	sse = strings.Contains(a, "text/event-stream") || strings.Contains(a, "*/*")
	js := strings.Contains(a, "application/json") || strings.Contains(a, "application/*") || strings.Contains(a, "*/*")
	return sse, sse || js
}

func randomID() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// httpError answers with an HTTP status and a JSON-RPC error body.
func httpError(w http.ResponseWriter, status int, id json.RawMessage, code int, message string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = w.Write(jsonrpc.ErrorResponse(id, code, message))
}
