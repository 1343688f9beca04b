// Package translate wraps one server connection below the relay so that the server
// is seen in its client's revision (2025-11-25 ⇄ 2026-07-28, the 2026-07-28
// backward-compatibility sections; docs/http.md#revisions). A hop whose sides agree
// passes every message through. client2025.go serves a 2025-11-25 client of a
// 2026-07-28-only server, client2026.go the reverse; both carry a request's Multi
// Round-Trip input rounds as one round (round.go). Conn.mu guards the hop: the entry
// points (Send, Recv, Abandon, Close, the timers) take it, no callee releases it.
package translate

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"strconv"
	"sync"
	"time"

	"github.com/mcpgate/mcpgate/internal/jsonrpc"
	"github.com/mcpgate/mcpgate/internal/methods"
	"github.com/mcpgate/mcpgate/internal/upstream"
)

// Options configure a Conn.
type Options struct {
	Logger *slog.Logger
	// ClientInfo is the gateway's {name, version}, for the translation's own requests.
	ClientInfo map[string]string
}

// mode is the client's revision, decided by the first request the client sends.
type mode uint8

const (
	undecided    mode = iota
	legacyClient      // the client opened with initialize (2025-11-25): client2025.go
	modernClient      // the client's requests carry the 2026-07-28 _meta envelope: client2026.go
)

// phase is the hop's negotiation. A 2025-11-25 client's: open → initializing →
// passing, or on -32022 probing → translating (open when the probe fails); a
// 2026-07-28 client's: open → probing → passing, or initializing → translating or failed.
type phase uint8

const (
	phaseOpen phase = iota
	phaseInitializing
	phaseProbing
	phasePassing     // the server speaks the client's revision: nothing to translate
	phaseTranslating // the server speaks only the other revision
	phaseFailed      // a 2026-07-28 client's server answered neither: requests get an error
)

// The translation's bounds (docs/http.md#translation, #translation-modern).
const (
	maxQueue         = 1024    // Conn.queue, in messages: past it a client's send gets errQueueFull
	maxInputRounds   = 8       // input_required rounds of one request (the SDK shim's figure)
	maxInputRequests = 64      // input requests of one round, both ways
	maxRequestState  = 1 << 20 // bytes of a server's requestState kept and sent back
	// stateOnlyPacing is the pause before retrying an input_required result that
	// carries requestState alone, as the SDK's client driver waits.
	stateOnlyPacing = 250 * time.Millisecond
	// The outbox's, in messages: past maxQueued a 2026-07-28 client's send waits;
	// past maxOutboxQueue the translation's own messages for the server are dropped.
	maxQueued      = 64
	maxOutboxQueue = 256
)

// bounds are the translation's time and count bounds a test may lower.
type bounds struct {
	legacyRound time.Duration // for a 2025-11-25 client to answer one round's input requests
	modernRound time.Duration // for a 2026-07-28 client's retry
	maxWaiting  int           // rounds waiting for a 2026-07-28 client's retry
	probe       time.Duration // a server silent on server/discover this long is 2025-11-25
	init        time.Duration // the gateway's own initialize
}

// inputRoundTimeout is bounds.legacyRound's default (the SDK shim's); a var for tests.
var inputRoundTimeout = 10 * time.Minute

// errQueueFull is Send's error past maxQueue; the relay answers the request -32000.
var errQueueFull = fmt.Errorf("%w: the translation's queue for the client is full (the client reads nothing)", jsonrpc.ErrNotDelivered)

// Conn is a server connection seen in the client's revision (upstream.Conn).
type Conn struct {
	up     upstream.Conn
	opts   Options
	bounds bounds

	mu    sync.Mutex
	mode  mode
	phase phase
	// queue holds the messages the translation made for Recv, which returns them
	// before it reads the server again; ready wakes a waiting Recv.
	queue  []*jsonrpc.Message
	ready  chan struct{}
	seq    uint64 // the one sequence of the translation's own ids and keys (next)
	rounds roundTable
	closed bool

	// Recv alone touches these: in carries the result of the one read of the server
	// in flight (reading); inErr is the error that ended the server's stream.
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
	b := bounds{legacyRound: inputRoundTimeout, modernRound: 5 * time.Minute, maxWaiting: 64, probe: 10 * time.Second, init: 30 * time.Second}
	return &Conn{up: up, opts: opts, bounds: b, ready: make(chan struct{}, 1), in: make(chan received, 1), rounds: newRoundTable()}
}

// ownPrefix (a 2025-11-25 client's hop) and idPrefix (a 2026-07-28 client's) start
// the ids of the translation's own messages, in the gateway's namespace
// (jsonrpc.OwnIDPrefix, docs/decisions.md#reserved-ids).
var ownPrefix, idPrefix = jsonrpc.OwnIDPrefix + "t-", jsonrpc.OwnIDPrefix + "tr-"

// next is the hop's next number n, for its own ids and input request keys. The caller
// holds c.mu.
func (c *Conn) next() string {
	c.seq++
	return strconv.FormatUint(c.seq, 10)
}

// newID is the hop's next own id: idPrefix+what+"-"+n, or with what "" ownPrefix+n,
// then "-"+nonce unless nonce is "". The caller holds c.mu.
func (c *Conn) newID(what, nonce string) json.RawMessage {
	n := c.next()
	id := ownPrefix + n
	if what != "" {
		id = idPrefix + what + "-" + n
	}
	if nonce != "" {
		id += "-" + nonce
	}
	b, _ := jsonrpc.Marshal(id)
	return b
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

// Abandon ends the input rounds of the client request id (upstream.Abandoner): a
// round the translation made ends as on the client's cancellation; otherwise the
// server gets notifications/cancelled.
func (c *Conn) Abandon(id json.RawMessage, server string) error {
	c.mu.Lock()
	if c.mode == modernClient && c.phase == phaseTranslating {
		if r := c.rounds.byClient[jsonrpc.IDKey(id)]; r != nil {
			c.abandonLocked(r, "the client cancelled the request")
		}
		c.mu.Unlock()
		return nil
	}
	c.mu.Unlock()
	return c.Send(upstream.WithheldCancel(id, server))
}

// Recv returns the next server message in the client's revision, the translation's
// own first. A passing hop reads the server in the caller's goroutine; elsewhere one
// read at a time runs on its own goroutine, so that Recv can also wait on the queue
// (docs/decisions.md#direct-reads).
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
				go func() {
					m, err := c.up.Recv()
					c.in <- received{m, err}
				}()
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

// passing reports whether the hop passes every message through (only Recv enqueues).
func (c *Conn) passing() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.phase == phasePassing
}

type received struct {
	msg *jsonrpc.Message
	err error
}

// Close closes the server connection and stops the translation's timers and rounds.
func (c *Conn) Close(ctx context.Context, grace time.Duration) error {
	c.mu.Lock()
	c.closed = true
	for _, r := range c.rounds.all() {
		if c.mode == legacyClient {
			c.endRound(r)
		} else if r.expiry != nil {
			r.expiry.Stop()
		}
	}
	if c.modern.timer != nil {
		c.modern.timer.Stop()
	}
	c.mu.Unlock()
	c.modern.out.stop()
	return c.up.Close(ctx, grace)
}

// enqueueLocked hands Recv a message the translation made; the caller holds c.mu.
func (c *Conn) enqueueLocked(m *jsonrpc.Message) {
	c.queue = append(c.queue, m)
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

// afterLocked runs f once after d with c.mu held, unless the connection closed first.
func (c *Conn) afterLocked(d time.Duration, f func()) *time.Timer {
	return time.AfterFunc(d, func() {
		c.mu.Lock()
		defer c.mu.Unlock()
		if !c.closed {
			f()
		}
	})
}

// cancelParams are a notifications/cancelled's params and the id key of the request
// they name; ok is false when the params are neither an object nor null.
func cancelParams(m *jsonrpc.Message) (p map[string]json.RawMessage, key string, ok bool) {
	if json.Unmarshal(m.Params, &p) != nil {
		return nil, "", false
	}
	return p, jsonrpc.IDKey(p["requestId"]), true
}

// cancelling is the notifications/cancelled m, its params p, naming the request id.
func cancelling(m *jsonrpc.Message, p map[string]json.RawMessage, id json.RawMessage) *jsonrpc.Message {
	p["requestId"] = id
	b, _ := jsonrpc.Marshal(p)
	return m.WithParams(b)
}

// errorOf is a response's error object (zero when it has none or it is malformed).
func errorOf(m *jsonrpc.Message) (e jsonrpc.ErrorObject) {
	_ = json.Unmarshal(m.Error, &e)
	return e
}

// object is raw decoded as an object; empty (never nil) when it is none.
func object(raw json.RawMessage) map[string]json.RawMessage {
	var o map[string]json.RawMessage
	if json.Unmarshal(raw, &o) != nil || o == nil {
		return map[string]json.RawMessage{}
	}
	return o
}

// mustMarshal is v encoded, or {} when it cannot be.
func mustMarshal(v any) json.RawMessage {
	b, err := jsonrpc.Marshal(v)
	if err != nil {
		return json.RawMessage(`{}`)
	}
	return b
}
