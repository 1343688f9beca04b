package upstream

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"sync"
	"time"

	"github.com/mcpgate/mcpgate/internal/jsonrpc"
	"github.com/mcpgate/mcpgate/internal/methods"
)

// Conn is one connection to an MCP server: a stdio process, a remote session, or a
// supervisor over either (see jsonrpc.Conn for Send and Recv).
type Conn interface {
	jsonrpc.Conn
	Close(ctx context.Context, grace time.Duration) error
}

// SupervisorOptions configure a Supervisor.
type SupervisorOptions struct {
	// Start opens a new connection (starts the process).
	Start  func() (Conn, error)
	Logger *slog.Logger
	// MinBackoff and MaxBackoff bound the wait between restarts (100 ms and 30 s
	// when zero). The wait doubles on each failure and resets once a connection has
	// stayed up for StableAfter (30 s when zero).
	MinBackoff, MaxBackoff, StableAfter time.Duration
	// InitTimeout bounds the replayed initialize after a restart (30 s when zero); a
	// process that exits before answering fails the attempt at once.
	InitTimeout time.Duration
	// StartDown makes a failed first start not an error: the supervisor begins down
	// and retries with backoff, as after a crash (used when several servers are
	// configured, so one broken server does not keep the others from serving).
	StartDown bool
}

// Supervisor is an upstream.Conn that restarts its server when it dies. It keeps no
// table of requests: when the connection is lost, Recv reports a
// *jsonrpc.ResetError and the relay, which owns the pending requests, fails those
// that went to this server. Then the server is started again with backoff,
// initialize is replayed with the client's original params (the response is
// swallowed), notifications/initialized is sent if the client had sent it,
// resources/subscribe is replayed for every subscribed URI, and list_changed
// notifications tell the client to list again (for each of tools, prompts and
// resources that the server offers). A request sent while the server is down gets a
// Send error wrapping jsonrpc.ErrNotDelivered at once.
type Supervisor struct {
	opts SupervisorOptions
	log  *slog.Logger
	out  chan item

	mu          sync.Mutex
	conn        Conn          // nil while down
	up          chan struct{} // closed when a connection is active; replaced when it is lost
	initParams  json.RawMessage
	initSeen    bool // the client sent initialize
	initialized bool // the client sent notifications/initialized
	subs        map[string]bool
	closed      bool
	closeCh     chan struct{}
	reinitID    string // id key of the replayed initialize in flight
	reinitCh    chan *jsonrpc.Message
	seq         uint64
	restarts    int
	fails       int // short-lived connections in a row, for the backoff
	// check reads the replayed initialize's answer (CheckReinitialize)
	check func(req, resp *jsonrpc.Message) (refusal string)
}

// CheckReinitialize sets check, which reads the answer resp to the initialize req
// replayed after a restart, as the first answer was read (the serverInfo pin,
// docs/vet.md#identity): a non-empty refusal fails the restart, so the server stays
// down (requests to it fail at once) and is tried again with backoff.
func (s *Supervisor) CheckReinitialize(check func(req, resp *jsonrpc.Message) (refusal string)) {
	s.mu.Lock()
	s.check = check
	s.mu.Unlock()
}

type item struct {
	msg *jsonrpc.Message
	err error
}

// errRestarting is the message of the error a request gets while its server restarts.
const errRestarting = "mcpgate: upstream MCP server exited; it is being restarted — retry the request"

// NewSupervisor starts the first connection; its error is returned as is unless
// StartDown is set.
func NewSupervisor(opts SupervisorOptions) (*Supervisor, error) {
	if opts.MinBackoff <= 0 {
		opts.MinBackoff = 100 * time.Millisecond
	}
	if opts.MaxBackoff <= 0 {
		opts.MaxBackoff = 30 * time.Second
	}
	if opts.StableAfter <= 0 {
		opts.StableAfter = 30 * time.Second
	}
	if opts.InitTimeout <= 0 {
		opts.InitTimeout = 30 * time.Second
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	c, err := opts.Start()
	if err != nil && !opts.StartDown {
		return nil, err
	}
	s := &Supervisor{
		opts: opts, log: opts.Logger,
		out:     make(chan item, 64),
		up:      make(chan struct{}),
		subs:    map[string]bool{},
		closeCh: make(chan struct{}),
	}
	if err != nil {
		s.log.Error("upstream MCP server failed to start; it is left out and retried with backoff", "err", err, "next_in", opts.MinBackoff)
		s.fails = 1
		go s.restart(opts.MinBackoff)
		return s, nil
	}
	s.conn = c
	close(s.up)
	go s.pump(c, time.Now(), nil)
	return s, nil
}

// Restarts returns how many times the server was (re)started after the first start.
func (s *Supervisor) Restarts() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.restarts
}

// Up returns a channel that is closed while a connection is active (a new channel
// after each loss), so a caller can wait briefly for a restart.
func (s *Supervisor) Up() <-chan struct{} {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.up
}

// Send forwards a client message. It notes initialize, notifications/initialized and
// resource subscriptions for replay after a restart.
func (s *Supervisor) Send(m *jsonrpc.Message) error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return errors.New("upstream: supervisor closed")
	}
	switch {
	case m.Kind == jsonrpc.KindRequest && m.Method == methods.Initialize:
		s.initParams, s.initSeen = m.Params, true
	case m.Kind == jsonrpc.KindNotification && m.Method == methods.NotificationInitialized:
		s.initialized = true
	case m.Kind == jsonrpc.KindRequest && (m.Method == methods.ResourcesSubscribe || m.Method == methods.ResourcesUnsubscribe):
		var p struct {
			URI string `json:"uri"`
		}
		if json.Unmarshal(m.Params, &p) == nil && p.URI != "" {
			if m.Method == methods.ResourcesSubscribe {
				s.subs[p.URI] = true
			} else {
				delete(s.subs, p.URI)
			}
		}
	}
	c := s.conn
	s.mu.Unlock()
	if c == nil {
		if m.Kind == jsonrpc.KindRequest {
			return fmt.Errorf("%w: %s", jsonrpc.ErrNotDelivered, errRestarting)
		}
		return nil // a notification or a response for a server that is gone
	}
	if err := c.Send(m); err != nil {
		// The pump sees the exit and reports the reset; the relay fails the request.
		s.log.Debug("send to upstream failed; it is probably exiting", "err", err)
	}
	return nil
}

// Abandon ends a client request's input rounds on the current connection
// (upstream.Abandon); with none (the server is restarting) there is nothing to end.
func (s *Supervisor) Abandon(id json.RawMessage, server string) error {
	s.mu.Lock()
	c := s.conn
	s.mu.Unlock()
	if c == nil {
		return nil
	}
	return Abandon(c, id, server)
}

// Recv returns the next server message, a *jsonrpc.DropError or *jsonrpc.ResetError
// (the stream goes on), or io.EOF once the supervisor is closed.
func (s *Supervisor) Recv() (*jsonrpc.Message, error) {
	select {
	case it := <-s.out:
		return it.msg, it.err
	case <-s.closeCh:
		select {
		case it := <-s.out:
			return it.msg, it.err
		default:
			return nil, io.EOF
		}
	}
}

func (s *Supervisor) emit(msg *jsonrpc.Message, err error) {
	select {
	case s.out <- item{msg, err}:
	case <-s.closeCh:
	}
}

// Close stops the server and ends Recv.
func (s *Supervisor) Close(ctx context.Context, grace time.Duration) error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil
	}
	s.closed = true
	c := s.conn
	close(s.closeCh)
	s.mu.Unlock()
	if c != nil {
		return c.Close(ctx, grace)
	}
	return nil
}

// pump reads one connection until it ends. For the active connection it then
// reports the reset and restarts; for a connection still being initialized it closes
// dead, which fails the attempt at once.
func (s *Supervisor) pump(c Conn, started time.Time, dead chan struct{}) {
	var cause error
	for {
		m, err := c.Recv()
		if err != nil {
			if jsonrpc.Transient(err) {
				var d *jsonrpc.DropError
				if errors.As(err, &d) {
					s.log.Warn("upstream message dropped", "reason", d.Reason)
				}
				s.emit(nil, err)
				continue
			}
			cause = err
			break
		}
		if m.Kind == jsonrpc.KindResponse {
			s.mu.Lock()
			ch := s.reinitCh
			own := s.reinitID != "" && m.IDKey() == s.reinitID
			s.mu.Unlock()
			if own {
				ch <- m
				continue
			}
		}
		s.emit(m, nil)
	}
	if dead != nil {
		close(dead)
	}
	s.mu.Lock()
	if s.closed || s.conn != c { // closed, or a connection that never became active
		s.mu.Unlock()
		return
	}
	s.conn = nil
	s.up = make(chan struct{})
	if time.Since(started) >= s.opts.StableAfter {
		s.fails = 0
	}
	backoff := s.backoffLocked()
	s.fails++
	s.mu.Unlock()
	_ = c.Close(context.Background(), time.Second)
	if errors.Is(cause, io.EOF) || errors.Is(cause, os.ErrClosed) {
		cause = exitCause(c)
	}
	s.log.Error("upstream MCP server exited; restarting it", "err", cause, "next_in", backoff)
	s.emit(nil, &jsonrpc.ResetError{Err: cause})
	s.restart(backoff)
}

// exitCause says why a connection's output ended: the process's exit status when
// the connection is a process that has exited ("exit status 3", "signal: killed").
func exitCause(c Conn) error {
	if p, ok := c.(interface {
		Done() <-chan struct{}
		ExitErr() error
	}); ok {
		select {
		case <-p.Done():
			if err := p.ExitErr(); err != nil {
				return fmt.Errorf("the server exited: %w", err)
			}
			return errors.New("the server exited: exit status 0")
		default:
		}
	}
	return errors.New("the server closed its output")
}

// backoffLocked is MinBackoff doubled once per recent failure, at most MaxBackoff.
func (s *Supervisor) backoffLocked() time.Duration {
	backoff := s.opts.MinBackoff
	for i := 0; i < s.fails && backoff < s.opts.MaxBackoff; i++ {
		backoff *= 2
	}
	return min(backoff, s.opts.MaxBackoff)
}

func (s *Supervisor) restart(backoff time.Duration) {
	for {
		t := time.NewTimer(backoff)
		select {
		case <-s.closeCh:
			t.Stop()
			return
		case <-t.C:
		}
		s.mu.Lock()
		s.restarts++
		n := s.restarts
		s.mu.Unlock()
		c, err := s.opts.Start()
		var caps map[string]json.RawMessage
		if err == nil {
			caps, err = s.reinitialize(c)
			if err != nil {
				_ = c.Close(context.Background(), time.Second)
			}
		}
		if err != nil {
			if backoff *= 2; backoff > s.opts.MaxBackoff {
				backoff = s.opts.MaxBackoff
			}
			s.log.Error("upstream restart failed", "attempt", n, "err", err, "next_in", backoff)
			continue
		}
		s.mu.Lock()
		if s.closed {
			s.mu.Unlock()
			_ = c.Close(context.Background(), time.Second)
			return
		}
		s.conn = c
		close(s.up)
		s.mu.Unlock()
		s.log.Info("upstream MCP server restarted", "attempt", n)
		// The server's lists may differ from what the client saw before (or the
		// client never saw them): tell it to list again.
		for _, n := range []string{methods.NotificationToolsListChanged, methods.NotificationPromptsListChanged, methods.NotificationResourcesListChanged} {
			if _, ok := caps[methods.Of(methods.Of(n).Invalidates).List.Capability]; ok { // tools, prompts, resources
				s.emit(jsonrpc.NewNotification(n, nil), nil)
			}
		}
		return
	}
}

// reinitialize replays the client's initialize on a new connection and returns the
// server's capabilities. It runs the connection's pump so that the response can be
// read; a connection that ends first fails the attempt at once.
func (s *Supervisor) reinitialize(c Conn) (map[string]json.RawMessage, error) {
	s.mu.Lock()
	params, seen, initialized := s.initParams, s.initSeen, s.initialized
	subs := make([]string, 0, len(s.subs))
	for u := range s.subs {
		subs = append(subs, u)
	}
	ch := make(chan *jsonrpc.Message, 1)
	next := func() json.RawMessage {
		s.seq++
		id := jsonrpc.OwnID("reinit-", s.seq)
		s.reinitID = jsonrpc.IDKey(id)
		s.reinitCh = ch
		return id
	}
	id := next()
	s.mu.Unlock()
	defer func() {
		s.mu.Lock()
		s.reinitID, s.reinitCh = "", nil
		s.mu.Unlock()
	}()
	dead := make(chan struct{})
	go s.pump(c, time.Now(), dead)
	if !seen {
		return nil, nil
	}
	call := func(id json.RawMessage, method string, params any) (*jsonrpc.Message, error) {
		if err := c.Send(jsonrpc.NewRequest(id, method, params)); err != nil {
			return nil, err
		}
		t := time.NewTimer(s.opts.InitTimeout)
		defer t.Stop()
		select {
		case r := <-ch:
			if r.Error != nil {
				return nil, fmt.Errorf("upstream: replayed %s failed: %s", method, r.Error)
			}
			return r, nil
		case <-dead:
			return nil, fmt.Errorf("upstream: the server exited before answering the replayed %s", method)
		case <-t.C:
			return nil, fmt.Errorf("upstream: replayed %s timed out", method)
		case <-s.closeCh:
			return nil, errors.New("upstream: closed")
		}
	}
	r, err := call(id, methods.Initialize, params)
	if err != nil {
		return nil, err
	}
	s.mu.Lock()
	check := s.check
	s.mu.Unlock()
	if check != nil {
		if why := check(jsonrpc.NewRequest(id, methods.Initialize, params), r); why != "" {
			return nil, fmt.Errorf("upstream: the restarted server's initialize answer was refused: %s", why)
		}
	}
	var res struct {
		Capabilities map[string]json.RawMessage `json:"capabilities"`
	}
	_ = json.Unmarshal(r.Result, &res)
	if initialized {
		if err := c.Send(jsonrpc.NewNotification(methods.NotificationInitialized, nil)); err != nil {
			return nil, err
		}
	}
	for _, u := range subs {
		s.mu.Lock()
		id := next()
		s.mu.Unlock()
		if _, err := call(id, methods.ResourcesSubscribe, map[string]string{"uri": u}); err != nil {
			s.log.Warn("could not re-establish a resource subscription after the restart", "err", err)
		}
	}
	return res.Capabilities, nil
}
