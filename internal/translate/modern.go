package translate

import (
	"bytes"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/mcpgate/mcpgate/internal/jsonrpc"
	"github.com/mcpgate/mcpgate/internal/methods"
	"github.com/mcpgate/mcpgate/internal/reqstate"
	"github.com/mcpgate/mcpgate/vocab"
)

// This file translates for a 2026-07-28 client (its requests carry the per-request
// _meta envelope) in front of a server that speaks only 2025-11-25
// (docs/http.md#translation-modern, docs/decisions.md#translate-modern). On the
// client's first request the hop asks the server server/discover (the client's own,
// or a probe of its own); a server that offers 2026-07-28 gets every message as it
// is. Any other answer (an error, no 2026-07-28 in supportedVersions, or none within
// probeTimeout) makes the gateway initialize the server itself and translate:
// requests lose the envelope, results gain resultType (and ttlMs/cacheScope), and
// the server's own requests become Multi Round-Trip input requests of the client
// request they serve.

// Bounds of the translation.
const (
	probeTimeout = 10 * time.Second // a server silent on server/discover is taken for 2025-11-25
	// initTimeout bounds the gateway's initialize, as the supervisor bounds a replayed
	// one: then the requests held for it fail.
	initTimeout = 30 * time.Second
	// inputTimeout is how long a round of input requests waits for the client's
	// retry; then the server's requests are answered with an error and the original
	// request is cancelled.
	inputTimeout = 5 * time.Minute
	maxRounds    = 64 // rounds waiting for a retry on one connection; past it a server request gets an error
)

// idPrefix starts the ids of the translation's own messages, in the gateway's own
// namespace (jsonrpc.OwnIDPrefix), which the relay refuses from clients.
var idPrefix = jsonrpc.OwnIDPrefix + "tr-"

type modernPhase uint8

const (
	phaseProbing      modernPhase = iota // server/discover is out; client messages are held
	phaseInitializing                    // the gateway's initialize is out; client messages are held
	phasePassthrough                     // the server speaks 2026-07-28
	phaseTranslated                      // the server speaks 2025-11-25: translate
	phaseFailed                          // the server answered neither: requests get initErr
)

// modernState is the translation for a 2026-07-28 client (its requests carry the
// per-request _meta envelope) in front of a server that may speak only 2025-11-25.
type modernState struct {
	mu      sync.Mutex
	started bool
	phase   modernPhase
	held    []*jsonrpc.Message // client messages held until the phase is known
	env     methods.Envelope   // the first request's envelope
	probeID string             // id key of the discover that decides (the client's or the gateway's)
	probe   *jsonrpc.Message   // the client's own server/discover when it decides, else nil
	initID  string
	initRes map[string]json.RawMessage // the server's InitializeResult
	initErr string
	level   string // the log level last set on the server
	seq     uint64
	timer   *time.Timer // the probe's

	subs       map[string]*subscription // the client's subscriptions/listen requests, by id
	subscribed map[string]int           // resources/subscribe sent for a URI, by how many subscriptions want it

	flights  map[string]*flight // by the id the server saw
	byClient map[string]*flight // by the id the client is answered under
	rounds   map[string]*flight // by requestState
	sealID   string             // this connection's id in the states it seals (newState)
	timeout  time.Duration      // inputTimeout; tests shorten it
	maxWait  int                // maxRounds; tests lower it
	probeFor time.Duration      // probeTimeout; tests shorten it
	initFor  time.Duration      // initTimeout; tests shorten it

	out    outbox
	pass   atomic.Bool // phase is passthrough: the outbox may hand over to direct sends
	closed bool
}

// flight is one client request forwarded to a 2025-11-25 server under an id of the
// gateway's (so the client may reuse its id while the server still works on the
// original request under a Multi Round-Trip exchange).
type flight struct {
	upID     json.RawMessage // the id the server saw
	clientID json.RawMessage // the id the client is answered under: the original, then each retry's
	method   string
	// name is the request's params member its method is named by (tools/call's and
	// prompts/get's name, resources/read's uri): a retry must name the same.
	name string
	// bound is the request's params as the server ran them (bindingOf): a retry must
	// carry the same, so that the policies judge, and the record names, what ran.
	bound    string
	answered bool             // clientID got an input_required result; a retry is awaited
	waiting  bool             // a retry waits under clientID
	final    *jsonrpc.Message // the server's response, kept until the retry
	pending  []*serverRequest // the server's requests not yet answered, in arrival order
	shown    []*serverRequest // those the last input_required carried
	state    string           // the last input_required's requestState
	expiry   *time.Timer
}

// serverRequest is a 2025-11-25 server request carried as an input request.
type serverRequest struct {
	key    string // its inputRequests key
	id     json.RawMessage
	method string
	params json.RawMessage
}

// sendModern forwards a 2026-07-28 client's message.
func (c *Conn) sendModern(m *jsonrpc.Message) error {
	s := &c.modern
	s.out.wait() // a server that reads nothing holds the client, not the queue
	s.mu.Lock()
	if s.phase == phasePassthrough && s.started {
		s.mu.Unlock() // a send that blocks must not keep Recv from reading the server
		return s.out.send(c, m)
	}
	defer s.mu.Unlock()
	if !s.started && s.start(c, m) {
		return nil
	}
	switch s.phase {
	case phaseProbing, phaseInitializing:
		if len(s.held) >= maxOutboxQueue { // bounded like the queue the held messages go to
			if m.Kind == jsonrpc.KindRequest {
				c.enqueue(jsonrpc.NewErrorResponse(m.ID, methods.CodeUpstreamUnavailable, fmt.Sprintf(
					"mcpgate: %d messages are already held until the server answers server/discover or initialize; retry later", maxOutboxQueue)))
			}
			return nil
		}
		s.held = append(s.held, m)
		return nil
	case phaseFailed:
		if m.Kind == jsonrpc.KindRequest {
			c.enqueue(jsonrpc.NewErrorResponse(m.ID, methods.CodeUpstreamUnavailable, s.initErr))
		}
		return nil
	}
	s.translateSend(c, m)
	return nil
}

// start opens the negotiation on the client's first message: the client's
// server/discover (consumed is then true), or a probe of the gateway's with the
// client's envelope.
func (s *modernState) start(c *Conn, m *jsonrpc.Message) (consumed bool) {
	s.started = true
	if s.timeout == 0 {
		s.timeout = inputTimeout
	}
	if s.maxWait == 0 {
		s.maxWait = maxRounds
	}
	if s.probeFor == 0 {
		s.probeFor = probeTimeout
	}
	if s.initFor == 0 {
		s.initFor = initTimeout
	}
	s.flights, s.byClient, s.rounds = map[string]*flight{}, map[string]*flight{}, map[string]*flight{}
	s.subs, s.subscribed = map[string]*subscription{}, map[string]int{}
	s.env, _ = methods.EnvelopeOf(m.Params)
	if s.env.ProtocolVersion == "" {
		s.env.ProtocolVersion = methods.Version20260728
	}
	if m.Kind == jsonrpc.KindRequest && m.Method == methods.ServerDiscover {
		s.probeID, s.probe = m.IDKey(), m
		_ = s.out.send(c, m)
		s.phase = phaseProbing
		s.armProbe(c)
		return true
	}
	id := s.nextID("discover")
	s.probeID = jsonrpc.IDKey(id)
	_ = s.out.send(c, jsonrpc.NewRequest(id, methods.ServerDiscover, map[string]any{"_meta": s.env.Meta(c.opts.ClientInfo)}))
	s.phase = phaseProbing
	s.armProbe(c)
	return false
}

func (s *modernState) armProbe(c *Conn) {
	s.timer = time.AfterFunc(s.probeFor, func() {
		s.mu.Lock()
		defer s.mu.Unlock()
		if s.phase == phaseProbing && !s.closed {
			c.opts.Logger.Info("the server did not answer server/discover: taking it for 2025-11-25 and translating (docs/http.md#translation-modern)", "after", s.probeFor)
			s.initialize(c)
		}
	})
}

func (s *modernState) nextID(what string) json.RawMessage {
	s.seq++
	return json.RawMessage(`"` + idPrefix + what + "-" + strconv.FormatUint(s.seq, 10) + `"`)
}

// recvModern returns a server message as a 2026-07-28 client must see it; nil when
// the translation consumed it.
func (c *Conn) recvModern(m *jsonrpc.Message) *jsonrpc.Message {
	s := &c.modern
	s.mu.Lock()
	defer s.mu.Unlock()
	switch s.phase {
	case phaseProbing:
		if m.Kind == jsonrpc.KindResponse && m.IDKey() == s.probeID {
			return s.decide(c, m)
		}
		return m
	case phaseInitializing:
		if m.Kind == jsonrpc.KindResponse && m.IDKey() == s.initID {
			s.initialized(c, m)
			return nil
		}
		return m
	case phaseTranslated:
		return s.translateRecv(c, m)
	case phaseFailed:
		if m.Kind == jsonrpc.KindResponse && m.IDKey() == s.initID {
			return nil // a late answer to the initialize that timed out
		}
	}
	return m
}

// decide reads the answer to server/discover: a server that lists 2026-07-28 is
// passed through; any other is initialized as 2025-11-25.
func (s *modernState) decide(c *Conn, m *jsonrpc.Message) *jsonrpc.Message {
	s.timer.Stop()
	var d struct {
		SupportedVersions []string `json:"supportedVersions"`
	}
	modern := false
	if m.Error == nil && json.Unmarshal(m.Result, &d) == nil {
		for _, v := range d.SupportedVersions {
			modern = modern || methods.RevisionOf(v) == methods.Rev20260728
		}
	}
	if !modern {
		s.initialize(c)
		return nil
	}
	s.phase = phasePassthrough
	for _, h := range s.held {
		_ = s.out.send(c, h)
	}
	s.held = nil
	s.pass.Store(true)
	if s.probe != nil {
		return m // the client's own server/discover
	}
	return nil
}

// initialize opens a 2025-11-25 session for the client: its clientCapabilities and
// clientInfo from the envelope (the gateway's clientInfo when it sent none).
func (s *modernState) initialize(c *Conn) {
	s.phase = phaseInitializing
	caps, info := s.env.ClientCapabilities, s.env.ClientInfo
	if len(caps) == 0 || caps[0] != '{' {
		caps = json.RawMessage(`{}`)
	}
	var ci any = c.opts.ClientInfo
	if len(info) > 0 && info[0] == '{' {
		ci = info
	}
	id := s.nextID(methods.Initialize)
	s.initID = jsonrpc.IDKey(id)
	_ = s.out.send(c, jsonrpc.NewRequest(id, methods.Initialize, map[string]any{
		"protocolVersion": methods.Version20251125, "capabilities": caps, "clientInfo": ci}))
	// A server silent on initialize too must not hold the client's messages for ever.
	key := s.initID
	s.timer = time.AfterFunc(s.initFor, func() {
		s.mu.Lock()
		defer s.mu.Unlock()
		if s.phase == phaseInitializing && s.initID == key && !s.closed {
			c.opts.Logger.Warn("translation to 2025-11-25: the server did not answer initialize", "after", s.initFor)
			s.fail(c, "mcpgate: the server offers no 2026-07-28 and did not answer its 2025-11-25 initialize within "+s.initFor.String())
		}
	})
}

// initialized takes the server's InitializeResult, completes the handshake and
// sends what the client sent meanwhile.
func (s *modernState) initialized(c *Conn, m *jsonrpc.Message) {
	s.timer.Stop()
	if m.Error != nil || json.Unmarshal(m.Result, &s.initRes) != nil || s.initRes == nil {
		var eo jsonrpc.ErrorObject
		_ = json.Unmarshal(m.Error, &eo)
		text := "mcpgate: the server offers no 2026-07-28 and its 2025-11-25 initialize failed"
		if eo.Message != "" {
			text += ": " + eo.Message
		}
		c.opts.Logger.Warn("translation to 2025-11-25: initialize failed", "code", eo.Code)
		s.fail(c, text)
		return
	}
	c.opts.Logger.Info("the server speaks 2025-11-25 only: translating for the 2026-07-28 client (docs/http.md#translation-modern)")
	_ = s.out.send(c, jsonrpc.NewNotification(methods.NotificationInitialized, nil))
	s.phase = phaseTranslated
	if s.probe != nil {
		s.held = append([]*jsonrpc.Message{s.probe}, s.held...)
		s.probe = nil
	}
	held := s.held
	s.held = nil
	for _, h := range held {
		s.translateSend(c, h)
	}
}

// fail ends the negotiation: every request held, and every later one, gets text.
func (s *modernState) fail(c *Conn, text string) {
	s.phase, s.initErr = phaseFailed, text
	if s.probe != nil {
		s.held = append([]*jsonrpc.Message{s.probe}, s.held...)
		s.probe = nil
	}
	for _, h := range s.held {
		if h.Kind == jsonrpc.KindRequest {
			c.enqueue(jsonrpc.NewErrorResponse(h.ID, methods.CodeUpstreamUnavailable, s.initErr))
		}
	}
	s.held = nil
}

// discoverResult answers server/discover from the server's InitializeResult
// (schema.ts "DiscoverResult"): the one revision this hop serves the client,
// the server's capabilities (tasks left out: 2026-07-28 has them as an extension),
// its instructions, and its serverInfo under _meta.
func (s *modernState) discoverResult() json.RawMessage {
	var caps map[string]json.RawMessage
	_ = json.Unmarshal(s.initRes["capabilities"], &caps)
	delete(caps, "tasks")
	if caps == nil {
		caps = map[string]json.RawMessage{}
	}
	r := map[string]any{
		"resultType": "complete", "ttlMs": 0, "cacheScope": "private",
		"supportedVersions": []string{methods.Version20260728},
		"capabilities":      caps,
	}
	if v, ok := s.initRes["instructions"]; ok {
		r["instructions"] = v
	}
	if v, ok := s.initRes["serverInfo"]; ok {
		r["_meta"] = map[string]json.RawMessage{methods.MetaServerInfo: v}
	}
	b, _ := jsonrpc.Marshal(r)
	return b
}

// translateSend sends a client message to the 2025-11-25 server.
func (s *modernState) translateSend(c *Conn, m *jsonrpc.Message) {
	switch m.Kind {
	case jsonrpc.KindRequest:
		s.request(c, m)
	case jsonrpc.KindNotification:
		if m.Method == methods.NotificationCancelled {
			s.cancelled(c, m)
			return
		}
		_ = s.out.send(c, m)
	case jsonrpc.KindResponse:
		// A 2026-07-28 client is sent no requests: the server's reach it as input
		// requests, and only a retry's inputResponses answer them, through the input
		// rules and the roots pins. A response of its own (to a guessed id) would skip
		// both, so it is dropped.
		c.opts.Logger.Debug("translation: a response of the 2026-07-28 client dropped; the server's requests are answered by a retry's inputResponses")
	default:
		_ = s.out.send(c, m)
	}
}

func (s *modernState) request(c *Conn, m *jsonrpc.Message) {
	var params map[string]json.RawMessage
	if len(m.Params) > 0 && json.Unmarshal(m.Params, &params) != nil {
		params = nil
	}
	switch m.Method {
	case methods.ServerDiscover:
		c.enqueue(jsonrpc.NewResponse(m.ID, s.discoverResult()))
		return
	case methods.SubscriptionsListen:
		s.listen(c, m, params)
		return
	}
	if v, ok := params["requestState"]; ok {
		s.retry(c, m, params, v)
		return
	}
	s.setLevel(c, params)
	if k := m.IDKey(); s.byClient[k] != nil {
		// The client reused the id of a request whose input requests it left
		// unanswered: that request is abandoned.
		s.abandon(c, s.byClient[k], "the client reused the request's id")
	}
	f := &flight{upID: s.nextID("req"), clientID: m.ID, method: m.Method, name: nameOf(m.Method, params), bound: bindingOf(params)}
	s.flights[jsonrpc.IDKey(f.upID)] = f
	s.byClient[m.IDKey()] = f
	if err := s.out.send(c, jsonrpc.NewRequest(f.upID, m.Method, legacyParams(params, m.Params))); err != nil {
		s.drop(f)
		c.enqueue(jsonrpc.NewErrorResponse(m.ID, methods.CodeUpstreamUnavailable, "mcpgate: "+err.Error()))
	}
}

// legacyParams is a 2026-07-28 request's params as a 2025-11-25 server reads them:
// the envelope's members (io.modelcontextprotocol/*) and the retry members left out
// of _meta and params; progressToken and other _meta members stay.
func legacyParams(params map[string]json.RawMessage, raw json.RawMessage) any {
	if params == nil {
		if len(raw) == 0 {
			return nil
		}
		return raw
	}
	delete(params, "inputResponses")
	delete(params, "requestState")
	var meta map[string]json.RawMessage
	if json.Unmarshal(params["_meta"], &meta) == nil && meta != nil {
		for k := range meta {
			if strings.HasPrefix(k, "io.modelcontextprotocol/") {
				delete(meta, k)
			}
		}
		if len(meta) == 0 {
			delete(params, "_meta")
		} else {
			params["_meta"], _ = jsonrpc.Marshal(meta)
		}
	}
	return params
}

// setLevel sends logging/setLevel before a request whose envelope names a log level
// other than the last one, when the server offers logging.
func (s *modernState) setLevel(c *Conn, params map[string]json.RawMessage) {
	var meta map[string]json.RawMessage
	var level string
	if json.Unmarshal(params["_meta"], &meta) != nil || json.Unmarshal(meta[methods.MetaLogLevel], &level) != nil || level == "" || level == s.level {
		return
	}
	var caps map[string]json.RawMessage
	if json.Unmarshal(s.initRes["capabilities"], &caps) != nil || caps["logging"] == nil {
		return
	}
	s.level = level
	_ = s.out.send(c, jsonrpc.NewRequest(s.nextID("setLevel"), methods.LoggingSetLevel, map[string]string{"level": level}))
}

// cancelled forwards the client's cancellation of a request under the id the server
// saw; one of a request already answered (or never sent) is dropped. A cancellation
// of the request a round answered ends the round, as the relay's Abandon does: the
// server's requests get an error, the request is cancelled.
func (s *modernState) cancelled(c *Conn, m *jsonrpc.Message) {
	var p map[string]json.RawMessage
	if json.Unmarshal(m.Params, &p) != nil {
		return
	}
	if sub := s.subs[jsonrpc.IDKey(p["requestId"])]; sub != nil {
		s.unlisten(c, sub)
		return
	}
	f := s.byClient[jsonrpc.IDKey(p["requestId"])]
	if f == nil {
		return
	}
	s.abandon(c, f, "the client cancelled the request")
}

// abandonRound ends the round the client's request id waits on, as the client's
// cancellation of it does; false when the hop does not translate (the server made
// the input_required result and is told itself).
func (s *modernState) abandonRound(c *Conn, id json.RawMessage) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.phase != phaseTranslated {
		return false
	}
	if f := s.byClient[jsonrpc.IDKey(id)]; f != nil {
		s.abandon(c, f, "the client cancelled the request")
	}
	return true
}

// abandon ends a flight the client will not wait for: the server's pending
// requests get an error and the server is told to cancel the original request.
func (s *modernState) abandon(c *Conn, f *flight, why string) {
	for _, r := range f.pending {
		_ = s.out.send(c, jsonrpc.NewErrorResponse(r.id, methods.CodeRequestTimeout, "mcpgate: "+why+" before the input request was answered"))
	}
	f.pending, f.shown = nil, nil
	if f.final == nil {
		_ = s.out.send(c, jsonrpc.NewNotification(methods.NotificationCancelled, map[string]any{"requestId": f.upID, "reason": why}))
	}
	s.drop(f)
}

func (s *modernState) drop(f *flight) {
	if f.expiry != nil {
		f.expiry.Stop()
	}
	delete(s.flights, jsonrpc.IDKey(f.upID))
	if s.byClient[jsonrpc.IDKey(f.clientID)] == f {
		delete(s.byClient, jsonrpc.IDKey(f.clientID))
	}
	if f.state != "" {
		delete(s.rounds, f.state)
	}
}

// retry takes a client's Multi Round-Trip retry: its inputResponses answer the
// server's requests the last round carried, and the retry's id then gets the
// original request's result (or the next round of input requests).
func (s *modernState) retry(c *Conn, m *jsonrpc.Message, params map[string]json.RawMessage, state json.RawMessage) {
	var token string
	_ = json.Unmarshal(state, &token)
	f := s.rounds[token]
	if f != nil {
		// sealed for this connection, method and name; used once by s.rounds, so a
		// retry refused below for its arguments leaves the round open
		if reqstate.Default().Check(reqstate.Binding{Session: s.sealID, Method: m.Method, Name: nameOf(m.Method, params)}, token) != nil {
			f = nil
		}
	}
	// The retry's result is the issuing request's: one naming another tool, prompt
	// or resource would have it judged and recorded under that name.
	if f == nil || f.method != m.Method || f.name != nameOf(m.Method, params) {
		c.enqueue(jsonrpc.NewErrorResponse(m.ID, methods.CodeInvalidParams,
			"mcpgate: requestState is not one this connection issued for this "+m.Method+", or it expired: send the request again without requestState and inputResponses"))
		return
	}
	if bindingOf(params) != f.bound {
		// The server ran the original request: a retry with other arguments would be
		// judged, and recorded, by arguments that never ran (docs/decisions.md#retry-binding).
		// The round stays open for the request it was issued for.
		c.opts.Logger.Warn("a Multi Round-Trip retry refused: its params differ from the request the server ran", "method", methods.Known(m.Method))
		e := jsonrpc.NewErrorResponse(m.ID, methods.CodeInvalidParams,
			"mcpgate: a retry must repeat the request its requestState was issued for: its arguments (and every params member but _meta, inputResponses and requestState) differ from the request the server is running")
		e.Refused = vocab.ReasonRetryMismatch
		c.enqueue(e)
		return
	}
	delete(s.rounds, token)
	f.state = ""
	if f.expiry != nil {
		f.expiry.Stop()
	}
	var answers map[string]json.RawMessage
	_ = json.Unmarshal(params["inputResponses"], &answers)
	var out []*jsonrpc.Message
	var done []*serverRequest
	for _, r := range f.shown {
		a, ok := answers[r.key]
		if !ok || len(a) == 0 || a[0] != '{' {
			continue // asked again in the next round
		}
		out, done = append(out, jsonrpc.NewResponse(r.id, a)), append(done, r)
	}
	if err := s.out.send(c, out...); err != nil {
		// The server reads nothing: its answers cannot reach it, so the round ends
		// here rather than going on as if it had them.
		c.enqueue(jsonrpc.NewErrorResponse(m.ID, methods.CodeInternalError,
			"mcpgate: the server is not reading its input, so the answers to its input requests could not be sent: send the request again later"))
		s.abandon(c, f, "the server stopped reading its input")
		return
	}
	for _, r := range done {
		f.pending = remove(f.pending, r)
	}
	f.shown = nil
	if s.byClient[jsonrpc.IDKey(f.clientID)] == f {
		delete(s.byClient, jsonrpc.IDKey(f.clientID))
	}
	f.clientID, f.waiting = m.ID, true
	s.byClient[m.IDKey()] = f
	switch {
	case f.final != nil:
		c.enqueue(s.finalResponse(f, f.final))
	case len(f.pending) > 0:
		s.askInput(c, f)
	}
}

// bindingOf is a request's params as its round binds them: every member but _meta,
// inputResponses and requestState (no arguments counting as {}), decoded (so "\u0070ayroll" is "payroll", as the
// server reads it) and written again with sorted keys and numbers as they were
// written. A retry is the same request when its binding is equal.
func bindingOf(params map[string]json.RawMessage) string {
	rest := make(map[string]any, len(params))
	for k, v := range params {
		switch k {
		case "_meta", "inputResponses", "requestState":
			continue
		}
		var x any
		d := json.NewDecoder(bytes.NewReader(v))
		d.UseNumber()
		if d.Decode(&x) != nil {
			x = "\x00raw:" + string(v) // not JSON: compared as it was written
		}
		rest[k] = x
	}
	if _, ok := rest["arguments"]; !ok {
		rest["arguments"] = map[string]any{} // none is no arguments, as the server reads it
	}
	b, _ := json.Marshal(rest)
	return string(b)
}

// nameOf is the string params member method is named by (methods.Method.NameParam),
// or "".
func nameOf(method string, params map[string]json.RawMessage) string {
	var name string
	if mm := methods.Of(method); mm != nil && mm.NameParam != "" {
		_ = json.Unmarshal(params[mm.NameParam], &name)
	}
	return name
}

func remove(rs []*serverRequest, r *serverRequest) []*serverRequest {
	out := rs[:0]
	for _, x := range rs {
		if x != r {
			out = append(out, x)
		}
	}
	return out
}

// askInput answers the flight's client id with an input_required result carrying
// every server request still pending, and a fresh requestState for the retry.
func (s *modernState) askInput(c *Conn, f *flight) {
	reqs := map[string]any{}
	for _, r := range f.pending {
		e := map[string]any{"method": r.method}
		if len(r.params) > 0 {
			e["params"] = r.params
		}
		reqs[r.key] = e
	}
	f.shown = append([]*serverRequest(nil), f.pending...)
	f.state = s.newState(f)
	s.rounds[f.state] = f
	b, _ := jsonrpc.Marshal(map[string]any{"resultType": "input_required", "inputRequests": reqs, "requestState": f.state})
	c.enqueue(jsonrpc.NewResponse(f.clientID, b))
	f.answered, f.waiting = true, false
	// f stays under clientID until the retry: the relay abandons that id (Abandon)
	// when it withheld an input request, and the round then ends at once.
	state := f.state
	f.expiry = time.AfterFunc(s.timeout, func() {
		s.mu.Lock()
		defer s.mu.Unlock()
		if s.closed || s.rounds[state] != f {
			return
		}
		c.opts.Logger.Warn("a Multi Round-Trip retry did not come in time: the server's input requests get an error and its request is cancelled", "method", methods.Known(f.method), "after", s.timeout)
		s.abandon(c, f, "the client did not retry within "+s.timeout.String())
	})
}

// newState is a requestState for f: 128 random bits sealed by reqstate (the
// mechanism the relay seals a server's state with, docs/decisions.md#request-state)
// for this connection, f's method and name, so it opens on no other; the caller
// holds s.mu.
func (s *modernState) newState(f *flight) string {
	if s.sealID == "" {
		var id [12]byte
		_, _ = rand.Read(id[:])
		s.sealID = base64.RawURLEncoding.EncodeToString(id[:])
	}
	var b [16]byte
	_, _ = rand.Read(b[:])
	tok, _ := reqstate.Default().Seal(reqstate.Binding{Session: s.sealID, Method: f.method, Name: f.name}, base64.RawURLEncoding.EncodeToString(b[:]))
	return tok
}

// finalResponse is the server's response to a flight, under the id the client waits
// on, valid in 2026-07-28; the flight ends.
func (s *modernState) finalResponse(f *flight, m *jsonrpc.Message) *jsonrpc.Message {
	s.drop(f)
	if m.Error != nil {
		var eo map[string]json.RawMessage
		if f.method == methods.ResourcesRead && json.Unmarshal(m.Error, &eo) == nil && string(eo["code"]) == strconv.Itoa(methods.CodeResourceNotFound) {
			// 2025-11-25 "resource not found" is -32002; 2026-07-28 answers -32602.
			eo["code"] = json.RawMessage(strconv.Itoa(methods.CodeInvalidParams))
			b, _ := jsonrpc.Marshal(eo)
			return &jsonrpc.Message{Raw: jsonrpc.ErrorResponseObjectRaw(f.clientID, b), Kind: jsonrpc.KindResponse, ID: f.clientID, Error: b}
		}
		return m.WithID(f.clientID)
	}
	return jsonrpc.NewResponse(f.clientID, asModern(methods.Of(f.method), m.Result))
}

// asModern makes a 2025-11-25 server's result valid in 2026-07-28. The members
// 2025-11-25 does not have are the gateway's, whatever the server wrote: resultType
// "complete" (such a server asks for input with requests, never input_required), and
// on cacheable results ttlMs 0 and cacheScope "private" (it promised nothing about
// caching or sharing the result).
func asModern(m *methods.Method, result json.RawMessage) json.RawMessage {
	if bytes.Contains(result, []byte(`"resultType"`)) || bytes.Contains(result, []byte(`"ttlMs"`)) ||
		bytes.Contains(result, []byte(`"cacheScope"`)) || bytes.Contains(result, []byte(`\u`)) {
		var r map[string]json.RawMessage
		if json.Unmarshal(result, &r) == nil && r != nil {
			delete(r, "resultType")
			delete(r, "ttlMs")
			delete(r, "cacheScope")
			if b, err := jsonrpc.Marshal(r); err == nil {
				result = b
			}
		}
	}
	return methods.Conform(m, methods.Version20260728, result, true)
}

// translateRecv maps a 2025-11-25 server message for the 2026-07-28 client.
func (s *modernState) translateRecv(c *Conn, m *jsonrpc.Message) *jsonrpc.Message {
	switch m.Kind {
	case jsonrpc.KindResponse:
		f := s.flights[m.IDKey()]
		if f == nil {
			return nil // the gateway's own (logging/setLevel), or a cancelled request's
		}
		switch {
		case !f.answered || f.waiting:
			return s.finalResponse(f, m)
		default:
			f.final = m // the retry gets it
			return nil
		}
	case jsonrpc.KindRequest:
		s.serverRequest(c, m)
		return nil
	case jsonrpc.KindNotification:
		switch m.Method {
		case methods.NotificationToolsListChanged, methods.NotificationPromptsListChanged, methods.NotificationResourcesListChanged, methods.NotificationResourcesUpdated:
			return s.notifySubscriptions(c, m)
		case methods.NotificationElicitationComplete: // 2026-07-28 has no URL elicitation ids
			return nil
		case methods.NotificationCancelled:
			var p map[string]json.RawMessage
			if json.Unmarshal(m.Params, &p) != nil {
				return nil
			}
			if f := s.flights[jsonrpc.IDKey(p["requestId"])]; f != nil && (!f.answered || f.waiting) {
				p["requestId"] = f.clientID
				b, _ := jsonrpc.Marshal(p)
				return m.WithParams(b)
			}
			return nil
		}
	}
	return m
}

// serverRequest carries a 2025-11-25 server request to the client as an input
// request of the client request it serves: the one Related names (a url upstream's
// response stream), else the one request in flight. With none or several in flight
// the server gets an error: the gateway does not guess which request asks.
func (s *modernState) serverRequest(c *Conn, m *jsonrpc.Message) {
	if m.Method == methods.Ping {
		_ = s.out.send(c, jsonrpc.NewResponse(m.ID, json.RawMessage(`{}`)))
		return
	}
	if mm := methods.Of(m.Method); mm == nil || mm.Direction != methods.ServerRequest {
		_ = s.out.send(c, jsonrpc.NewErrorResponse(m.ID, methods.CodeMethodNotFound, "mcpgate: a 2026-07-28 client takes no "+m.Method+" request"))
		return
	}
	var f *flight
	if m.Related != nil {
		f = s.flights[jsonrpc.IDKey(m.Related)]
	} else {
		n := 0
		for _, x := range s.flights {
			if x.final == nil {
				f, n = x, n+1
			}
		}
		if n != 1 {
			f = nil
		}
	}
	if f == nil || f.final != nil {
		_ = s.out.send(c, jsonrpc.NewErrorResponse(m.ID, methods.CodeInvalidRequest,
			"mcpgate: the 2026-07-28 client takes "+m.Method+" only as an input request of the one client request it serves, and none (or more than one) is in flight"))
		return
	}
	if len(f.pending) >= maxInputRequests {
		// The requests wait in memory until the client retries, and go to it in one
		// result: a server that keeps asking must not grow either without bound.
		_ = s.out.send(c, jsonrpc.NewErrorResponse(m.ID, methods.CodeInternalError, fmt.Sprintf("mcpgate: %d input requests already wait for the client's answer to this request", maxInputRequests)))
		return
	}
	if f.state == "" && len(s.rounds) >= s.maxWait {
		_ = s.out.send(c, jsonrpc.NewErrorResponse(m.ID, methods.CodeInternalError, fmt.Sprintf("mcpgate: %d Multi Round-Trip exchanges already wait for the client", s.maxWait)))
		return
	}
	s.seq++
	f.pending = append(f.pending, &serverRequest{key: "mcpgate-" + strconv.FormatUint(s.seq, 10), id: m.ID, method: m.Method, params: m.Params})
	if !f.answered || f.waiting {
		s.askInput(c, f)
	}
	// else: the client has a round open; this one goes into the next round.
}

// close stops the timers; messages still held are dropped with the connection.
func (s *modernState) close() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.closed = true
	if s.timer != nil {
		s.timer.Stop()
	}
	for _, f := range s.flights {
		if f.expiry != nil {
			f.expiry.Stop()
		}
	}
	s.out.stop()
}

// The outbox's bounds, in messages: past maxQueued a client's send waits for the
// server as a direct send would; past maxOutboxQueue the translation's own messages
// (answers to the server's pings and requests) are dropped, so a server that stops
// reading cannot grow the queue either.
const (
	maxQueued      = 64
	maxOutboxQueue = 256
)

// outbox sends the translation's messages to the server in order from one
// goroutine, so that the reader (Recv) never blocks on a send to the server; in
// passthrough, once it is empty, messages go straight to the server.
type outbox struct {
	mu      sync.Mutex
	q       []*jsonrpc.Message
	wake    chan struct{}
	done    chan struct{}
	room    sync.Cond // signalled when q shrinks, or on stop; L is mu
	direct  bool
	stopped bool
}

// errOutboxFull is send's error past maxOutboxQueue.
var errOutboxFull = errors.New("the server is not reading its input: the gateway's queue for it is full")

// wait blocks while maxQueued messages or more wait for the server; a client's send
// calls it before it takes the hop's lock, so that only the client waits.
func (o *outbox) wait() {
	o.mu.Lock()
	for len(o.q) >= maxQueued && !o.stopped {
		o.room.L = &o.mu
		o.room.Wait()
	}
	o.mu.Unlock()
}

// send queues ms for the server in order, all or none: errOutboxFull (and none
// queued) when they do not fit under maxOutboxQueue.
func (o *outbox) send(c *Conn, ms ...*jsonrpc.Message) error {
	o.mu.Lock()
	if o.direct {
		o.mu.Unlock()
		for _, m := range ms {
			if err := c.up.Send(m); err != nil {
				return err
			}
		}
		return nil
	}
	if o.wake == nil {
		o.wake, o.done = make(chan struct{}, 1), make(chan struct{})
		go o.run(c)
	}
	if len(o.q)+len(ms) > maxOutboxQueue {
		o.mu.Unlock()
		c.opts.Logger.Debug("translation: a message for the server dropped; it reads nothing")
		return errOutboxFull
	}
	o.q = append(o.q, ms...)
	o.mu.Unlock()
	select {
	case o.wake <- struct{}{}:
	default:
	}
	return nil
}

func (o *outbox) run(c *Conn) {
	for {
		o.mu.Lock()
		if len(o.q) == 0 {
			if c.modern.pass.Load() {
				o.direct = true
				o.mu.Unlock()
				return
			}
			o.mu.Unlock()
			select {
			case <-o.wake:
				continue
			case <-o.done:
				return
			}
		}
		m := o.q[0]
		o.q = o.q[1:]
		o.room.Broadcast()
		o.mu.Unlock()
		if err := c.up.Send(m); err != nil {
			c.opts.Logger.Debug("translation: send to the server failed; it is probably exiting", "err", err)
		}
	}
}

func (o *outbox) stop() {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.stopped = true
	o.room.Broadcast()
	if o.done != nil {
		select {
		case <-o.done:
		default:
			close(o.done)
		}
	}
}

// subscription is a client's subscriptions/listen, held open by the gateway: a
// 2025-11-25 server has no such method, and sends its list_changed notifications to
// the session and resources/updated for the URIs of resources/subscribe.
type subscription struct {
	id                      json.RawMessage
	tools, prompts, resList bool
	uris                    map[string]bool
}

// listen opens a subscription (schema.ts "SubscriptionsListenRequest"): the gateway
// acknowledges what the server can send (its capabilities' listChanged and
// subscribe), subscribes the server to each URI asked for, and never answers the
// request; the client's notifications/cancelled ends it.
func (s *modernState) listen(c *Conn, m *jsonrpc.Message, params map[string]json.RawMessage) {
	var p struct {
		Notifications struct {
			Tools     bool     `json:"toolsListChanged"`
			Prompts   bool     `json:"promptsListChanged"`
			Resources bool     `json:"resourcesListChanged"`
			URIs      []string `json:"resourceSubscriptions"`
		} `json:"notifications"`
	}
	_ = json.Unmarshal(params["notifications"], &p.Notifications)
	var caps map[string]struct {
		ListChanged bool `json:"listChanged"`
		Subscribe   bool `json:"subscribe"`
	}
	_ = json.Unmarshal(s.initRes["capabilities"], &caps)
	n := p.Notifications
	sub := &subscription{id: m.ID, tools: n.Tools && caps["tools"].ListChanged, prompts: n.Prompts && caps["prompts"].ListChanged,
		resList: n.Resources && caps["resources"].ListChanged, uris: map[string]bool{}}
	agreed := map[string]any{}
	for k, v := range map[string]bool{"toolsListChanged": sub.tools, "promptsListChanged": sub.prompts, "resourcesListChanged": sub.resList} {
		if v {
			agreed[k] = true
		}
	}
	if caps["resources"].Subscribe && len(n.URIs) > 0 {
		uris := []string{}
		for _, u := range n.URIs {
			if sub.uris[u] {
				continue
			}
			sub.uris[u] = true
			uris = append(uris, u)
			if s.subscribed[u]++; s.subscribed[u] == 1 {
				_ = s.out.send(c, jsonrpc.NewRequest(s.nextID("subscribe"), methods.ResourcesSubscribe, map[string]string{"uri": u}))
			}
		}
		agreed["resourceSubscriptions"] = uris
	}
	if old := s.subs[m.IDKey()]; old != nil {
		s.unlisten(c, old)
	}
	s.subs[m.IDKey()] = sub
	c.enqueue(jsonrpc.NewNotification(methods.NotificationSubscriptionsAcknowledged, map[string]any{
		"notifications": agreed, "_meta": map[string]json.RawMessage{metaSubscriptionID: m.ID}}))
}

// metaSubscriptionID names the subscription a notification belongs to (schema.ts
// "SubscriptionsListenResultMeta").
const metaSubscriptionID = "io.modelcontextprotocol/subscriptionId"

// unlisten ends a subscription and unsubscribes the server from the URIs no other
// subscription wants.
func (s *modernState) unlisten(c *Conn, sub *subscription) {
	delete(s.subs, jsonrpc.IDKey(sub.id))
	for u := range sub.uris {
		if s.subscribed[u]--; s.subscribed[u] <= 0 {
			delete(s.subscribed, u)
			_ = s.out.send(c, jsonrpc.NewRequest(s.nextID("unsubscribe"), methods.ResourcesUnsubscribe, map[string]string{"uri": u}))
		}
	}
}

// notifySubscriptions hands a list_changed or resources/updated notification to each
// subscription that asked for it, its subscriptionId under _meta; with no
// subscription open it passes as it is, and one no subscription asked for is dropped.
func (s *modernState) notifySubscriptions(c *Conn, m *jsonrpc.Message) *jsonrpc.Message {
	if len(s.subs) == 0 {
		return m
	}
	var params map[string]json.RawMessage
	if len(m.Params) > 0 && json.Unmarshal(m.Params, &params) != nil {
		return nil
	}
	var uri string
	_ = json.Unmarshal(params["uri"], &uri)
	keys := make([]string, 0, len(s.subs))
	for k := range s.subs {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	var out []*jsonrpc.Message
	for _, k := range keys {
		sub := s.subs[k]
		want := false
		switch m.Method {
		case methods.NotificationToolsListChanged:
			want = sub.tools
		case methods.NotificationPromptsListChanged:
			want = sub.prompts
		case methods.NotificationResourcesListChanged:
			want = sub.resList
		case methods.NotificationResourcesUpdated:
			want = sub.uris[uri]
		}
		if !want {
			continue
		}
		p := maps.Clone(params)
		if p == nil {
			p = map[string]json.RawMessage{}
		}
		var meta map[string]json.RawMessage
		_ = json.Unmarshal(p["_meta"], &meta)
		if meta == nil {
			meta = map[string]json.RawMessage{}
		}
		meta[metaSubscriptionID] = sub.id
		p["_meta"], _ = jsonrpc.Marshal(meta)
		b, _ := jsonrpc.Marshal(p)
		out = append(out, jsonrpc.NewNotification(m.Method, json.RawMessage(b)))
	}
	if len(out) == 0 {
		return nil
	}
	for _, x := range out[1:] {
		c.enqueue(x)
	}
	return out[0]
}
