package upstream

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"strconv"
	"sync"
	"time"

	"github.com/mcpgate/mcpgate/internal/jsonrpc"
)

// Conn is one connection to an MCP server: a stdio process, or a remote session.
type Conn interface {
	Send(msg []byte) error
	ReadLine() ([]byte, error)
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
	// InitTimeout bounds the replayed initialize after a restart (30 s when zero).
	InitTimeout time.Duration
}

// Supervisor is a relay.Upstream that restarts its server when it dies. Requests in
// flight when it dies are answered with a JSON-RPC error (-32000) that says so; then
// the server is started again with backoff, initialize is replayed with the client's
// original params (the response is swallowed), notifications/initialized is sent if
// the client had sent it, and traffic resumes. Requests sent while it is down are
// answered with the same error at once. ReadLine never reports the death itself, so
// the relay session above goes on.
type Supervisor struct {
	opts SupervisorOptions
	log  *slog.Logger
	out  chan []byte

	mu          sync.Mutex
	conn        Conn // nil while down
	pending     map[string]json.RawMessage
	initReq     []byte // the client's initialize request
	initialized bool   // the client sent notifications/initialized
	closed      bool
	closeCh     chan struct{}
	reinit      map[string]chan []byte
	seq         uint64
	restarts    int
	fails       int // short-lived connections in a row, for the backoff
}

// ErrRestarting is the message of the error a request gets while its server restarts.
const ErrRestarting = "mcpgate: upstream MCP server exited; it is being restarted — retry the request"

// NewSupervisor starts the first connection; its error is returned as is.
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
	if err != nil {
		return nil, err
	}
	s := &Supervisor{
		opts: opts, log: opts.Logger,
		out:     make(chan []byte, 64),
		conn:    c,
		pending: map[string]json.RawMessage{},
		closeCh: make(chan struct{}),
		reinit:  map[string]chan []byte{},
	}
	go s.pump(c, time.Now())
	return s, nil
}

// Restarts returns how many times the server was restarted.
func (s *Supervisor) Restarts() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.restarts
}

// Send forwards a client message, remembering requests until they are answered.
func (s *Supervisor) Send(msg []byte) error {
	m, err := jsonrpc.Parse(msg)
	if err != nil {
		return s.sendRaw(msg)
	}
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return errors.New("upstream: supervisor closed")
	}
	switch {
	case m.Kind == jsonrpc.KindRequest && m.Method == "initialize":
		s.initReq = append([]byte(nil), msg...)
	case m.Kind == jsonrpc.KindNotification && m.Method == "notifications/initialized":
		s.initialized = true
	}
	c := s.conn
	if m.Kind == jsonrpc.KindRequest {
		if c == nil {
			s.mu.Unlock()
			s.emit(jsonrpc.ErrorResponse(m.ID, jsonrpc.CodeUpstreamUnavailable, ErrRestarting))
			return nil
		}
		s.pending[m.IDKey()] = m.ID
	}
	s.mu.Unlock()
	if c == nil {
		return nil // a notification or a response for a server that is gone
	}
	if err := c.Send(msg); err != nil {
		s.log.Debug("send to upstream failed; it is probably exiting", "err", err)
	}
	return nil
}

func (s *Supervisor) sendRaw(msg []byte) error {
	s.mu.Lock()
	c := s.conn
	s.mu.Unlock()
	if c != nil {
		_ = c.Send(msg)
	}
	return nil
}

// ReadLine returns the next server message, or io.EOF once the supervisor is closed.
func (s *Supervisor) ReadLine() ([]byte, error) {
	select {
	case line := <-s.out:
		return line, nil
	case <-s.closeCh:
		select {
		case line := <-s.out:
			return line, nil
		default:
			return nil, io.EOF
		}
	}
}

func (s *Supervisor) emit(line []byte) {
	select {
	case s.out <- line:
	case <-s.closeCh:
	}
}

// Close stops the server and ends ReadLine.
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

// pump reads one connection until it ends, then restarts.
func (s *Supervisor) pump(c Conn, started time.Time) {
	for {
		line, err := c.ReadLine()
		var tooLarge *jsonrpc.TooLargeError
		if errors.As(err, &tooLarge) {
			s.log.Warn("upstream message over the size limit dropped", "bytes", tooLarge.Size)
			s.failDropped(tooLarge.Head, "it exceeds the gateway's message size limit (--max-message-bytes)")
			continue
		}
		if err != nil {
			break
		}
		line = append([]byte(nil), line...)
		m, perr := jsonrpc.Parse(line)
		if perr != nil {
			s.log.Warn("malformed upstream message dropped", "err", perr)
			s.failDropped(line, "it is not valid JSON-RPC")
			continue
		}
		if m.Kind == jsonrpc.KindResponse {
			key := m.IDKey()
			s.mu.Lock()
			ch := s.reinit[key]
			delete(s.pending, key)
			s.mu.Unlock()
			if ch != nil {
				ch <- line
				continue
			}
		}
		s.emit(line)
	}
	s.mu.Lock()
	if s.closed || s.conn != c { // closed, or a connection that never became active
		s.mu.Unlock()
		return
	}
	s.conn = nil
	if time.Since(started) >= s.opts.StableAfter {
		s.fails = 0
	}
	backoff := s.opts.MinBackoff
	for i := 0; i < s.fails && backoff < s.opts.MaxBackoff; i++ {
		backoff *= 2
	}
	backoff = min(backoff, s.opts.MaxBackoff)
	s.fails++
	waiting := s.pending
	s.pending = map[string]json.RawMessage{}
	s.mu.Unlock()
	_ = c.Close(context.Background(), time.Second)
	s.log.Error("upstream MCP server exited; restarting it", "in_flight", len(waiting))
	for _, id := range waiting {
		s.emit(jsonrpc.ErrorResponse(id, jsonrpc.CodeUpstreamUnavailable, "mcpgate: upstream MCP server exited while the request was in flight; it is being restarted"))
	}
	s.restart(backoff)
}

// failDropped answers the pending request a dropped upstream message was meant to
// answer, when its id can be read, so the call fails at once instead of timing out.
func (s *Supervisor) failDropped(line []byte, why string) {
	id, ok := jsonrpc.PeekID(line)
	if !ok {
		return
	}
	key := jsonrpc.IDKey(id)
	s.mu.Lock()
	_, pending := s.pending[key]
	delete(s.pending, key)
	s.mu.Unlock()
	if pending {
		s.emit(jsonrpc.ResponseError(id, why))
	}
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
		if err == nil {
			err = s.reinitialize(c)
			if err != nil {
				_ = c.Close(context.Background(), time.Second)
			}
		}
		if err != nil {
			s.log.Error("upstream restart failed", "attempt", n, "err", err, "next_in", backoff*2)
			if backoff *= 2; backoff > s.opts.MaxBackoff {
				backoff = s.opts.MaxBackoff
			}
			continue
		}
		s.mu.Lock()
		if s.closed {
			s.mu.Unlock()
			_ = c.Close(context.Background(), time.Second)
			return
		}
		s.conn = c
		s.mu.Unlock()
		s.log.Info("upstream MCP server restarted", "attempt", n)
		return
	}
}

// reinitialize replays the client's initialize on a new connection. It runs the
// connection's pump so that the response can be read.
func (s *Supervisor) reinitialize(c Conn) error {
	s.mu.Lock()
	initReq, initialized := s.initReq, s.initialized
	s.seq++
	id, _ := json.Marshal("mcpgate-reinit-" + strconv.FormatUint(s.seq, 10))
	ch := make(chan []byte, 1)
	s.reinit[jsonrpc.IDKey(id)] = ch
	s.mu.Unlock()
	defer func() {
		s.mu.Lock()
		delete(s.reinit, jsonrpc.IDKey(id))
		s.mu.Unlock()
	}()
	go s.pump(c, time.Now())
	if initReq == nil {
		return nil
	}
	m, err := jsonrpc.Parse(initReq)
	if err != nil {
		return err
	}
	if err := c.Send(jsonrpc.Request(id, "initialize", m.Params)); err != nil {
		return err
	}
	t := time.NewTimer(s.opts.InitTimeout)
	defer t.Stop()
	select {
	case line := <-ch:
		if r, _ := jsonrpc.Parse(line); r != nil && r.Error != nil {
			return errors.New("upstream: replayed initialize failed: " + string(r.Error))
		}
	case <-t.C:
		return errors.New("upstream: replayed initialize timed out")
	case <-s.closeCh:
		return errors.New("upstream: closed")
	}
	if initialized {
		return c.Send(jsonrpc.Notification("notifications/initialized", nil))
	}
	return nil
}
