// Package translate carries one hop between an MCP client and an MCP server of
// different revisions (2025-11-25 ⇄ 2026-07-28), as the 2026-07-28 specification's
// backward-compatibility sections describe: it wraps one server's connection below
// the relay and the multiplexer, so everything above it sees the server in the
// client's revision. Where both sides speak the client's revision it passes every
// message through unchanged, and Recv reads the server directly. docs/http.md#revisions
// says which combinations are translated and how.
//
// Both directions carry a client request through Multi Round-Trip input rounds as
// one round (round.go): client2025.go serves a 2025-11-25 client in front of a
// server that speaks only 2026-07-28 (the server's inputRequests become requests to
// the client, its answers a retry), client2026.go a 2026-07-28 client in front of a
// server that speaks only 2025-11-25 (the server's requests become inputRequests,
// the client's retry their answers). One mutex (Conn.mu) guards the hop's state: the
// entry points (Send, Recv, Abandon, Close, the timers) take it and no callee
// releases it; with it held, messages for the server only go into the outbox's
// queue. A round ends in one place (endRound), also when the relay withheld one of
// its input requests (Abandon).
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
	// ClientInfo is the gateway's own clientInfo ({name, version}), for the requests
	// the translation makes itself.
	ClientInfo map[string]string
}

// mode is the client's revision, decided by the first request the client sends.
type mode uint8

const (
	undecided    mode = iota
	legacyClient      // the client opened with initialize (2025-11-25): client2025.go
	modernClient      // the client's requests carry the 2026-07-28 _meta envelope: client2026.go
)

// phase is where the hop's negotiation stands. A 2025-11-25 client's goes open →
// initializing (its initialize is with the server) → passing, or on the server's
// -32022 → probing (server/discover is out) → translating (or open again when the
// probe fails); a 2026-07-28 client's goes open → probing (its messages held) →
// passing, or initializing (the gateway's initialize is out) → translating or failed.
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
	// maxQueue bounds Conn.queue, in messages. Past it a client's send is refused
	// (errQueueFull): the client is then not reading what the relay hands it, and
	// each send can add an answer. The queue's other producers add at most one
	// message per piece of state the translation already holds and frees as it does
	// (a round's expiry, a probe's failure, a subscription's copy of a server
	// notification Recv reads), and Recv empties the queue before it reads the
	// server again.
	maxQueue = 1024
	// maxInputRounds bounds the input_required rounds of one request a 2025-11-25
	// client's server asks (the SDK's own 2025-era shim's figure): a server that asks
	// again and again gets its request failed instead of looping.
	maxInputRounds = 8
	// maxInputRequests bounds the input requests of one round, both ways.
	maxInputRequests = 64
	// maxRequestState bounds the requestState the translation keeps and sends back.
	maxRequestState = 1 << 20
	// stateOnlyPacing is the pause before retrying an input_required result that
	// carries requestState alone (load shedding), as the SDK's client driver waits.
	stateOnlyPacing = 250 * time.Millisecond
	// The outbox's bounds, in messages: past maxQueued a 2026-07-28 client's send
	// waits for the server as a direct send would; past maxOutboxQueue the
	// translation's own messages (answers to the server's pings and requests) are
	// dropped, so a server that stops reading cannot grow the queue either.
	maxQueued      = 64
	maxOutboxQueue = 256
)

// bounds are the translation's time and count bounds a test may lower.
type bounds struct {
	// legacyRound is how long a 2025-11-25 client has to answer one round of the
	// server's input requests (the SDK shim's 10 minutes).
	legacyRound time.Duration
	// modernRound is how long a round waits for a 2026-07-28 client's retry; then the
	// server's requests get an error and the original request is cancelled.
	modernRound time.Duration
	// maxWaiting bounds the rounds waiting for a 2026-07-28 client's retry on one
	// connection; past it a server request gets an error.
	maxWaiting int
	// probe: a server silent on server/discover this long is taken for 2025-11-25.
	probe time.Duration
	// init bounds the gateway's own initialize, as the supervisor bounds a replayed
	// one: then the requests held for it fail.
	init time.Duration
}

// inputRoundTimeout is bounds.legacyRound's default; a var so that tests can shorten it.
var inputRoundTimeout = 10 * time.Minute

func defaultBounds() bounds {
	return bounds{legacyRound: inputRoundTimeout, modernRound: 5 * time.Minute, maxWaiting: 64, probe: 10 * time.Second, init: 30 * time.Second}
}

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
	// queue holds messages for Recv that the translation made itself (answers it
	// gives in the server's place, requests it maps from the other revision); Recv
	// returns them before it reads the server again. ready wakes a waiting Recv.
	queue  []*jsonrpc.Message
	ready  chan struct{}
	seq    uint64 // the one sequence of the translation's own ids (newID)
	rounds roundTable
	closed bool

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
	return &Conn{up: up, opts: opts, bounds: defaultBounds(), ready: make(chan struct{}, 1), in: make(chan received, 1), rounds: newRoundTable()}
}

// ownPrefix and idPrefix start the ids of the translation's own messages (the
// probes, the gateway's initialize, the retries and requests of input rounds), in
// the gateway's own namespace (jsonrpc.OwnIDPrefix), which the relay refuses from
// clients and which is apart from the relay's, the multiplexer's and the
// supervisor's: ownPrefix on a 2025-11-25 client's hop, idPrefix (with what the id
// is for) on a 2026-07-28 client's.
var ownPrefix, idPrefix = jsonrpc.OwnIDPrefix + "t-", jsonrpc.OwnIDPrefix + "tr-"

// newID is the id of a message of the translation's own from the hop's one
// sequence: idPrefix, what and the sequence, or with what "" ownPrefix, the
// sequence and nonce when there is one (askID). The caller holds c.mu.
func (c *Conn) newID(what, nonce string) json.RawMessage {
	c.seq++
	id := ownPrefix + strconv.FormatUint(c.seq, 10)
	if what != "" {
		id = idPrefix + what + "-" + strconv.FormatUint(c.seq, 10)
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

// Abandon ends the input rounds of the client request id, whose input_required
// result the client will not answer (upstream.Abandoner). Where the translation made
// that result (a 2026-07-28 client of a 2025-11-25 server) it ends the round itself,
// as the client's cancellation does; elsewhere the server made it and gets the
// notifications/cancelled, sent as the client's messages are.
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

// Recv returns the next server message in the client's revision. A message the
// translation made itself goes first; one server message and its error come as read
// (jsonrpc.Conn says which errors end the stream). On a hop that passes everything
// through Recv reads the server itself, in the caller's goroutine; elsewhere one
// read at a time runs on a goroutine of its own (readOnce), so that Recv can wait on
// the server and on the translation's own messages at once
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
// enqueue: a 2025-11-25 client whose server answered its initialize (Send forwards
// as it is, no round or timer exists), or a 2026-07-28 client whose server offers
// 2026-07-28 (Send goes to the outbox, which hands over to direct sends).
func (c *Conn) passing() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.phase == phasePassing
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

// Close closes the server connection and stops the translation's timers and
// rounds; answers that arrive later are dropped, and a 2025-11-25 client of a closed
// connection is sent no cancellation.
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

// enqueue hands Recv a message the translation made.
func (c *Conn) enqueue(m *jsonrpc.Message) {
	c.mu.Lock()
	c.enqueueLocked(m)
	c.mu.Unlock()
}

// enqueueLocked is enqueue for a caller holding c.mu.
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
// they name; ok is false when the params are not a JSON object (or null).
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

// mustMarshal is v encoded, or {} when it cannot be.
func mustMarshal(v any) json.RawMessage {
	b, err := jsonrpc.Marshal(v)
	if err != nil {
		return json.RawMessage(`{}`)
	}
	return b
}
