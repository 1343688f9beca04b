// Package translate carries one hop between an MCP client and an MCP server of
// different revisions (2025-11-25 ⇄ 2026-07-28), as the 2026-07-28 specification's
// backward-compatibility sections describe: it wraps one server's connection below
// the relay and the multiplexer, so everything above it sees the server in the
// client's revision. Where both sides speak the client's revision it passes every
// message through unchanged. docs/http.md#revisions says which combinations are
// translated and how.
package translate

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/mcpgate/mcpgate/internal/jsonrpc"
	"github.com/mcpgate/mcpgate/internal/methods"
	"github.com/mcpgate/mcpgate/internal/upstream"
)

// Options configure a Conn.
type Options struct {
	Logger *slog.Logger
	// ClientInfo is the gateway's own clientInfo ({name, version}), for the requests
	// the translation makes itself.
	ClientInfo map[string]string
}

// mode is the client's revision, decided by the first request the client sends.
type mode uint8

const (
	undecided    mode = iota
	legacyClient      // the client opened with initialize (2025-11-25): legacy.go
	modernClient      // the client's requests carry the 2026-07-28 _meta envelope: modern.go
)

// maxQueue bounds Conn.queue, in messages. Past it a client's send is refused
// (errQueueFull): the client is then not reading what the relay hands it, and each
// send can add an answer. The queue's other producers add at most one message per
// piece of state the translation already holds and frees as it does (a flight's or
// exchange's expiry, a probe's failure, a subscription's copy of a server
// notification Recv reads), and Recv empties the queue before it reads the server
// again.
const maxQueue = 1024

// errQueueFull is Send's error past maxQueue; the relay answers the request -32000.
var errQueueFull = fmt.Errorf("%w: the translation's queue for the client is full (the client reads nothing)", jsonrpc.ErrNotDelivered)

// Conn is a server connection seen in the client's revision (upstream.Conn).
type Conn struct {
	up   upstream.Conn
	opts Options

	mu   sync.Mutex
	mode mode
	// queue holds messages for Recv that the translation made itself (answers it
	// gives in the server's place, requests it maps from the other revision); Recv
	// returns them before it reads the server again. ready wakes a waiting Recv.
	queue []*jsonrpc.Message
	ready chan struct{}

	// Recv alone (it has one caller at a time) touches these: in carries what the one
	// read of the server in flight (readOnce, reading set) got; inErr is the error
	// that ended the server's stream, once one did.
	in      chan received
	reading bool
	inErr   error

	legacy legacyState
	modern modernState
}

// Wrap returns up seen in its client's revision.
func Wrap(up upstream.Conn, opts Options) *Conn {
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	return &Conn{up: up, opts: opts, ready: make(chan struct{}, 1), in: make(chan received, 1)}
}

// Send forwards a client message, translated when the server speaks another revision.
func (c *Conn) Send(m *jsonrpc.Message) error {
	c.mu.Lock()
	if len(c.queue) >= maxQueue {
		c.mu.Unlock()
		return errQueueFull
	}
	if c.mode == undecided && m.Kind == jsonrpc.KindRequest {
		if m.Method == methods.Initialize {
			c.mode = legacyClient
		} else if _, ok := methods.EnvelopeOf(m.Params); ok || m.Method == methods.ServerDiscover {
			c.mode = modernClient
		}
	}
	md := c.mode
	c.mu.Unlock()
	switch md {
	case legacyClient:
		return c.sendLegacy(m)
	case modernClient:
		return c.sendModern(m)
	}
	return c.up.Send(m)
}

// Abandon ends the input rounds of the client request id, whose input_required
// result the client will not answer (upstream.Abandoner). Where the translation made
// that result (a 2026-07-28 client of a 2025-11-25 server) it ends the round itself,
// as the client's cancellation does; elsewhere the server made it and gets the
// notifications/cancelled, sent as the client's messages are.
func (c *Conn) Abandon(id json.RawMessage, server string) error {
	c.mu.Lock()
	md := c.mode
	c.mu.Unlock()
	if md == modernClient && c.modern.abandonRound(c, id) {
		return nil
	}
	return c.Send(upstream.WithheldCancel(id, server))
}

// Recv returns the next server message in the client's revision. A message the
// translation made itself goes first; one server message and its error come as read
// (jsonrpc.Conn says which errors end the stream). On a hop that passes everything
// through (a 2025-11-25 client whose server answered its initialize) Recv reads the
// server itself, in the caller's goroutine; elsewhere one read at a time runs on a
// goroutine of its own (readOnce), so that Recv can wait on the server and on the
// translation's own messages at once (docs/decisions.md#direct-reads).
func (c *Conn) Recv() (*jsonrpc.Message, error) {
	for {
		if m := c.dequeue(); m != nil {
			return m, nil
		}
		if c.inErr != nil {
			return nil, c.inErr
		}
		var r received
		if !c.reading && c.passing() {
			// Nothing enqueues on a passing hop but Recv itself: a second initialize
			// that ends the passing is answered by the server, which wakes this read.
			r.msg, r.err = c.up.Recv()
		} else {
			if !c.reading {
				c.reading = true
				go c.readOnce()
			}
			select {
			case <-c.ready:
				continue
			case r = <-c.in:
				c.reading = false
			}
		}
		if r.err != nil {
			if !jsonrpc.Transient(r.err) {
				c.inErr = r.err
				continue // the queue first, then the error
			}
			return r.msg, r.err
		}
		c.mu.Lock()
		md := c.mode
		c.mu.Unlock()
		m := r.msg
		switch md {
		case legacyClient:
			m = c.recvLegacy(m)
		case modernClient:
			m = c.recvModern(m)
		}
		if m != nil {
			return m, nil
		}
	}
}

// passing reports whether the hop passes every message through, and only Recv can
// enqueue (legacyPassing: Send forwards as it is, no exchange or timer exists).
func (c *Conn) passing() bool {
	c.mu.Lock()
	md := c.mode
	c.mu.Unlock()
	if md != legacyClient {
		return false
	}
	c.legacy.mu.Lock()
	defer c.legacy.mu.Unlock()
	return c.legacy.phase == legacyPassing
}

type received struct {
	msg *jsonrpc.Message
	err error
}

// readOnce reads one server message for Recv.
func (c *Conn) readOnce() {
	m, err := c.up.Recv()
	c.in <- received{m, err}
}

// Close closes the server connection and stops the translation's timers.
func (c *Conn) Close(ctx context.Context, grace time.Duration) error {
	c.closeLegacy()
	c.modern.close()
	return c.up.Close(ctx, grace)
}

// enqueue hands Recv a message the translation made.
func (c *Conn) enqueue(m *jsonrpc.Message) {
	c.mu.Lock()
	c.queue = append(c.queue, m)
	c.mu.Unlock()
	select {
	case c.ready <- struct{}{}:
	default:
	}
}

func (c *Conn) dequeue() *jsonrpc.Message {
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.queue) == 0 {
		return nil
	}
	m := c.queue[0]
	c.queue = c.queue[1:]
	return m
}
