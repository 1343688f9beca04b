package translate

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/mcpgate/mcpgate/internal/jsonrpc"
	"github.com/mcpgate/mcpgate/internal/jsonscan"
	"github.com/mcpgate/mcpgate/internal/methods"
)

// The translation's own limits (docs/http.md#translation). The SDK's own 2025-era
// shim uses the same figures (8 rounds, 10 minutes a round).
const (
	// maxInputRounds bounds the input_required rounds of one request: a server
	// that asks again and again gets its request failed instead of looping.
	maxInputRounds = 8
	// maxInputRequests bounds the inputRequests entries of one round.
	maxInputRequests = 64
	// maxRequestState bounds the requestState the translation keeps and sends back.
	maxRequestState = 1 << 20
	// stateOnlyPacing is the pause before retrying an input_required result that
	// carries requestState alone (load shedding), as the SDK's client driver waits.
	stateOnlyPacing = 250 * time.Millisecond
)

// inputRoundTimeout is how long the client has to answer one round of a server's
// input requests; a var so that tests can shorten it.
var inputRoundTimeout = 10 * time.Minute

// ownPrefix starts the ids of the translation's own messages: the server/discover
// probe, retries of input_required requests and the server-to-client requests they
// become. It is apart from the relay's "mcpgate-N", the multiplexer's and the
// supervisor's.
var ownPrefix = jsonrpc.OwnIDPrefix + "t-"

// legacyPhase is where a 2025-11-25 client's hop stands.
type legacyPhase uint8

const (
	legacyOpen        legacyPhase = iota // no initialize answered yet
	legacyProbing                        // the client's initialize is with the server
	legacyDiscovering                    // the server refused it; server/discover is with the server
	legacyPassing                        // the server serves 2025-era revisions: nothing to translate
	legacyTranslating                    // the server speaks 2026-07-28 only
)

// legacyState is the translation for a 2025-11-25 client (one that opened with
// initialize) in front of a server that may speak only 2026-07-28.
type legacyState struct {
	mu    sync.Mutex
	phase legacyPhase
	// init is the client's initialize while it is with the server (or discover
	// answers it); initErr is the server's refusal, returned when discover fails.
	init    *jsonrpc.Message
	initErr *jsonrpc.Message
	// discover is the id key of the server/discover probe; probed is closed once its
	// send has returned (nil before a probe), and the client's sends wait for it.
	discover string
	probed   chan struct{}
	// meta is the per-request _meta envelope every request to the server carries,
	// built from the client's initialize (and logLevel after logging/setLevel).
	meta    map[string]json.RawMessage
	metaRaw []byte // meta encoded, for withMeta
	seq     uint64
	// sent holds the client's requests in flight that may come back input_required,
	// by their id key, so that they can be retried.
	sent map[string]*jsonrpc.Message
	// rounds maps the id key of a retry in flight to its exchange.
	rounds map[string]*exchange
	// asks maps the id key of a server-to-client request the translation made to its
	// exchange and inputRequests key.
	asks   map[string]ask
	closed bool
}

// exchange is one client request carried through input_required rounds.
type exchange struct {
	orig      *jsonrpc.Message // the client's request, under its own id
	round     int
	retry     string                     // id key of the retry in flight; "" while the client answers
	retryID   json.RawMessage            // the retry's id
	pending   map[string]string          // own id key → inputRequests key, still unanswered
	responses map[string]json.RawMessage // inputRequests key → the client's result
	state     json.RawMessage            // requestState as the server wrote it; nil when absent
	timer     *time.Timer
	done      bool // ended: answered, failed or cancelled
}

// ask is one server-to-client request the translation made from an inputRequests entry.
type ask struct {
	x      *exchange
	key    string // its inputRequests key
	method string
}

// askNonce is the random part of an input request's id (64 bits); a var so that the
// tests' scripts can spell the ids.
var askNonce = func() string {
	var b [8]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// ownID is the id of a request of the translation's own to the server (the probe,
// a retry): ownPrefix and the hop's sequence.
func (c *Conn) ownID() json.RawMessage { return c.idWith("") }

// askID is the id of an input request the client is asked: ownID's and a random
// part, so that only a client shown the request can answer it. The sequence and the
// process's prefix are guessable from one earlier request, and an answer given ahead
// of the relay (which pins a roots/list answer only for a request it forwarded) or
// in place of a request it withheld would reach the server.
func (c *Conn) askID() json.RawMessage { return c.idWith(askNonce()) }

func (c *Conn) idWith(nonce string) json.RawMessage {
	c.legacy.seq++
	id := ownPrefix + strconv.FormatUint(c.legacy.seq, 10)
	if nonce != "" {
		id += "-" + nonce
	}
	b, _ := jsonrpc.Marshal(id)
	return b
}

// sendLegacy forwards a 2025-11-25 client's message: as it is until the server has
// refused initialize, then in 2026-07-28 terms (the _meta envelope on every request;
// the gateway's own answers where 2026-07-28 has no such method; the client's answers
// to input requests gathered into a retry).
func (c *Conn) sendLegacy(m *jsonrpc.Message) error {
	l := &c.legacy
	l.mu.Lock()
	switch {
	case m.Kind == jsonrpc.KindRequest && m.Method == methods.Initialize && (l.phase == legacyOpen || l.phase == legacyPassing):
		l.phase, l.init = legacyProbing, m
		l.mu.Unlock()
		return c.up.Send(m)
	case l.phase != legacyOpen && l.phase != legacyPassing && m.Kind == jsonrpc.KindResponse && strings.HasPrefix(m.IDKey(), `"`+ownPrefix):
		// Only a hop that translates (or is about to) has input requests of its own:
		// on one that passes, such an id is the server's (a second gateway's), and
		// its answer goes to it.
		c.answered(m) // unlocks
		return nil
	case l.phase != legacyTranslating:
		probed := l.probed
		l.mu.Unlock()
		if probed != nil {
			<-probed // the probe goes first
		}
		return c.up.Send(m)
	}
	// translating
	switch m.Kind {
	case jsonrpc.KindNotification:
		switch m.Method {
		case methods.NotificationInitialized:
			l.mu.Unlock()
			return nil // 2026-07-28 has no handshake to finish
		case methods.NotificationCancelled:
			m = c.cancelledLocked(m)
		}
		l.mu.Unlock()
		if m == nil {
			return nil
		}
		return c.up.Send(m)
	case jsonrpc.KindRequest:
		if reply := c.answerLocked(m); reply != nil {
			l.mu.Unlock()
			c.enqueue(reply)
			return nil
		}
		if row := methods.Of(m.Method); row != nil && row.InputRequired { // its result may be input_required
			if l.sent == nil {
				l.sent = map[string]*jsonrpc.Message{}
			}
			l.sent[m.IDKey()] = m
		}
		out := *m // a request is jsonrpc, id, method and params: Raw is rebuilt whole
		out.Params = withMeta(m.Params, l.meta, l.metaRaw, nil)
		out.Raw = jsonrpc.Request(m.ID, m.Method, json.RawMessage(out.Params))
		l.mu.Unlock()
		return c.up.Send(&out)
	}
	l.mu.Unlock()
	return c.up.Send(m)
}

// answerLocked answers a request whose method 2026-07-28 does not have (ping,
// logging/setLevel, resources/subscribe …); nil forwards it.
func (c *Conn) answerLocked(m *jsonrpc.Message) *jsonrpc.Message {
	if methods.In(m.Method, methods.Rev20260728) != nil || methods.Of(m.Method) == nil {
		return nil
	}
	switch m.Method {
	case methods.Ping:
		return jsonrpc.NewResponse(m.ID, json.RawMessage(`{}`))
	case methods.LoggingSetLevel:
		var p struct {
			Level json.RawMessage `json:"level"`
		}
		if json.Unmarshal(m.Params, &p) != nil || len(p.Level) == 0 || p.Level[0] != '"' {
			return jsonrpc.NewErrorResponse(m.ID, methods.CodeInvalidParams, "mcpgate: logging/setLevel needs a string level")
		}
		c.legacy.meta[methods.MetaLogLevel] = p.Level // carried on every later request
		c.legacy.metaRaw = mustMarshal(c.legacy.meta)
		return jsonrpc.NewResponse(m.ID, json.RawMessage(`{}`))
	}
	return jsonrpc.NewErrorResponse(m.ID, methods.CodeMethodNotFound,
		"mcpgate: "+m.Method+" has no 2026-07-28 counterpart, and the server speaks only 2026-07-28 (docs/http.md#translation)")
}

// cancelledLocked points a client's notifications/cancelled at the attempt of its
// request now with the server, and ends the request's input rounds; nil drops it
// (the request waits on the client, not the server).
func (c *Conn) cancelledLocked(m *jsonrpc.Message) *jsonrpc.Message {
	var p map[string]json.RawMessage
	if json.Unmarshal(m.Params, &p) != nil {
		return m
	}
	key := jsonrpc.IDKey(p["requestId"])
	delete(c.legacy.sent, key)
	for _, x := range c.legacy.exchanges() {
		if x.orig.IDKey() != key {
			continue
		}
		retry := x.retryID
		c.endLocked(x)
		if retry == nil {
			return nil
		}
		p["requestId"] = retry
		b, _ := jsonrpc.Marshal(p)
		return m.WithParams(b)
	}
	return m
}

// exchanges lists the exchanges in flight (retrying or waiting on the client).
func (l *legacyState) exchanges() []*exchange {
	seen := map[*exchange]bool{}
	var out []*exchange
	for _, x := range l.rounds {
		if !seen[x] {
			seen[x] = true
			out = append(out, x)
		}
	}
	for _, a := range l.asks {
		if !seen[a.x] {
			seen[a.x] = true
			out = append(out, a.x)
		}
	}
	return out
}

// recvLegacy returns a server message as a 2025-11-25 client must see it; nil when
// the translation consumed it.
func (c *Conn) recvLegacy(m *jsonrpc.Message) *jsonrpc.Message {
	if m.Kind != jsonrpc.KindResponse {
		return m
	}
	l := &c.legacy
	l.mu.Lock()
	key := m.IDKey()
	if l.phase == legacyProbing && l.init != nil && key == l.init.IDKey() {
		out, probe := c.initAnswered(m)
		l.mu.Unlock()
		if probe != nil {
			go c.sendProbe(probe)
		}
		return out
	}
	defer l.mu.Unlock()
	switch {
	case l.phase == legacyDiscovering && key == l.discover:
		return c.discovered(m)
	case l.phase != legacyTranslating:
		return m
	}
	if x := l.rounds[key]; x != nil {
		delete(l.rounds, key)
		x.retry, x.retryID = "", nil
		return c.resultLocked(x, m)
	}
	if orig := l.sent[key]; orig != nil {
		delete(l.sent, key)
		return c.resultLocked(&exchange{orig: orig}, m)
	}
	return m
}

// initAnswered reads the server's answer to the client's initialize: a refusal of
// the revision (-32022) starts translation with a server/discover probe, returned
// for sendProbe; any other answer is the client's (out), and the hop passes through.
func (c *Conn) initAnswered(m *jsonrpc.Message) (out, probe *jsonrpc.Message) {
	l := &c.legacy
	var e struct {
		Code int `json:"code"`
	}
	if m.Error == nil || json.Unmarshal(m.Error, &e) != nil || e.Code != methods.CodeUnsupportedProtocolVersion {
		l.phase, l.init = legacyPassing, nil
		return m, nil
	}
	var p struct {
		Capabilities json.RawMessage `json:"capabilities"`
		ClientInfo   json.RawMessage `json:"clientInfo"`
	}
	_ = json.Unmarshal(l.init.Params, &p)
	l.meta = map[string]json.RawMessage{
		methods.MetaProtocolVersion:    json.RawMessage(`"` + methods.Version20260728 + `"`),
		methods.MetaClientCapabilities: methods.Object(p.Capabilities),
	}
	if len(p.ClientInfo) > 0 && p.ClientInfo[0] == '{' {
		l.meta[methods.MetaClientInfo] = p.ClientInfo
	}
	l.metaRaw = mustMarshal(l.meta)
	id := c.ownID()
	l.phase, l.initErr, l.discover, l.probed = legacyDiscovering, m, jsonrpc.IDKey(id), make(chan struct{})
	return nil, jsonrpc.NewRequest(id, methods.ServerDiscover, json.RawMessage(withMeta(nil, l.meta, l.metaRaw, nil)))
}

// sendProbe sends the server/discover probe on a goroutine of its own, without the
// hop's lock: a server that stopped reading must keep neither Recv nor Close waiting
// for it (Close ends the send). The client's sends wait for it (probed), so the
// probe reaches the server first; if it cannot be sent, the client's initialize
// gets the server's refusal through the queue.
func (c *Conn) sendProbe(probe *jsonrpc.Message) {
	err := c.up.Send(probe)
	l := &c.legacy
	l.mu.Lock()
	close(l.probed)
	if err == nil {
		l.mu.Unlock()
		c.opts.Logger.Info("the server refused the 2025-era initialize; translating for the client (docs/http.md#translation)")
		return
	}
	c.opts.Logger.Warn("server/discover could not be sent; the client's initialize gets the server's refusal", "err", err)
	var out *jsonrpc.Message
	if l.phase == legacyDiscovering && l.discover == probe.IDKey() {
		out = c.untranslatable()
	}
	l.mu.Unlock()
	if out != nil {
		c.enqueue(out)
	}
}

// untranslatable gives the client the server's refusal of its initialize.
func (c *Conn) untranslatable() *jsonrpc.Message {
	l := &c.legacy
	m := l.initErr
	l.phase, l.init, l.initErr, l.meta = legacyOpen, nil, nil, nil
	return m
}

// discovered answers the client's initialize from the server's server/discover
// result (2026-07-28 "Backward Compatibility"): the client's own 2025-era
// protocolVersion, the server's capabilities less what needs subscriptions/listen
// (listChanged, subscribe), serverInfo and instructions.
func (c *Conn) discovered(m *jsonrpc.Message) *jsonrpc.Message {
	l := &c.legacy
	var d struct {
		SupportedVersions []string                   `json:"supportedVersions"`
		Capabilities      map[string]json.RawMessage `json:"capabilities"`
		Instructions      json.RawMessage            `json:"instructions"`
		Meta              map[string]json.RawMessage `json:"_meta"`
	}
	if m.Error != nil || json.Unmarshal(m.Result, &d) != nil || !slices.Contains(d.SupportedVersions, methods.Version20260728) {
		c.opts.Logger.Warn("server/discover failed or offers no revision the gateway translates; the client's initialize gets the server's refusal")
		return c.untranslatable()
	}
	var asked struct {
		ProtocolVersion string `json:"protocolVersion"`
	}
	_ = json.Unmarshal(l.init.Params, &asked)
	version := asked.ProtocolVersion
	if version == "" || methods.RevisionOf(version) != methods.Rev20251125 {
		version = methods.Version20251125
	}
	caps := map[string]json.RawMessage{}
	for k, v := range d.Capabilities {
		caps[k] = withoutMembers(v, "listChanged", "subscribe")
	}
	info := d.Meta[methods.MetaServerInfo]
	var named struct {
		Name    *string `json:"name"`
		Version *string `json:"version"`
	}
	if json.Unmarshal(info, &named) != nil || named.Name == nil || named.Version == nil {
		info = json.RawMessage(`{"name":"unknown","version":"unknown"}`) // required in 2025-11-25
	}
	res := map[string]json.RawMessage{"capabilities": mustMarshal(caps), "serverInfo": info}
	res["protocolVersion"], _ = jsonrpc.Marshal(version)
	if len(d.Instructions) > 0 && d.Instructions[0] == '"' {
		res["instructions"] = d.Instructions
	}
	id := l.init.ID
	l.phase, l.init, l.initErr = legacyTranslating, nil, nil
	return jsonrpc.NewResponse(id, mustMarshal(res))
}

// resultLocked reads the server's answer to an attempt of x: an input_required
// result starts the next round (nil: the client gets requests, not a result); any
// other answer goes to the client under its own id.
func (c *Conn) resultLocked(x *exchange, m *jsonrpc.Message) *jsonrpc.Message {
	var kind struct {
		ResultType string `json:"resultType"`
	}
	if m.Error != nil || !jsonscan.MayHold(m.Result, "input_required") || json.Unmarshal(m.Result, &kind) != nil || kind.ResultType != "input_required" {
		c.endLocked(x)
		return m.WithID(x.orig.ID)
	}
	var r struct {
		InputRequests map[string]json.RawMessage `json:"inputRequests"`
		RequestState  json.RawMessage            `json:"requestState"`
	}
	if json.Unmarshal(m.Result, &r) != nil {
		return c.failLocked(x, methods.CodeInternalError, "mcpgate: the server's input_required result is malformed (inputRequests must be an object)")
	}
	x.round++
	if x.round > maxInputRounds {
		return c.failLocked(x, methods.CodeInternalError, fmt.Sprintf("mcpgate: the server asked for input more than %d times for this %s; the request is failed", maxInputRounds, x.orig.Method))
	}
	if len(r.RequestState) > maxRequestState {
		return c.failLocked(x, methods.CodeInternalError, fmt.Sprintf("mcpgate: the server's requestState is over %d bytes; the request is failed", maxRequestState))
	}
	if len(r.RequestState) > 0 && r.RequestState[0] != '"' {
		return c.failLocked(x, methods.CodeInternalError, "mcpgate: the server's input_required result has a requestState that is not a string")
	}
	x.state = r.RequestState
	x.responses = map[string]json.RawMessage{}
	if len(r.InputRequests) == 0 {
		if x.state == nil {
			return c.failLocked(x, methods.CodeInternalError, "mcpgate: the server's input_required result has neither inputRequests nor requestState")
		}
		x.timer = time.AfterFunc(stateOnlyPacing, func() { c.retry(x) })
		return nil
	}
	if len(r.InputRequests) > maxInputRequests {
		return c.failLocked(x, methods.CodeInternalError, fmt.Sprintf("mcpgate: the server's input_required result has more than %d inputRequests", maxInputRequests))
	}
	type out struct {
		key string
		req *jsonrpc.Message
	}
	reqs := make([]out, 0, len(r.InputRequests))
	for _, k := range slices.Sorted(maps.Keys(r.InputRequests)) {
		var e struct {
			Method string          `json:"method"`
			Params json.RawMessage `json:"params"`
		}
		if json.Unmarshal(r.InputRequests[k], &e) != nil || !inputRequestMethod(e.Method) ||
			len(e.Params) > 0 && e.Params[0] != '{' && string(e.Params) != "null" {
			return c.failLocked(x, methods.CodeInternalError, "mcpgate: the server's input_required result has an input request that is not elicitation/create, sampling/createMessage or roots/list with object params")
		}
		var params any
		if len(e.Params) > 0 && string(e.Params) != "null" {
			params = e.Params
		}
		req := jsonrpc.NewRequest(c.askID(), e.Method, params)
		req.Related = x.orig.ID
		reqs = append(reqs, out{k, req})
	}
	x.pending = map[string]string{}
	if c.legacy.asks == nil {
		c.legacy.asks = map[string]ask{}
	}
	for _, o := range reqs {
		x.pending[o.req.IDKey()] = o.key
		c.legacy.asks[o.req.IDKey()] = ask{x, o.key, o.req.Method}
	}
	x.timer = time.AfterFunc(inputRoundTimeout, func() {
		c.legacy.mu.Lock()
		if c.legacy.closed || x.done {
			c.legacy.mu.Unlock()
			return
		}
		m := c.failLocked(x, methods.CodeRequestTimeout, fmt.Sprintf("mcpgate: the client did not answer the server's input requests within %s; the request is failed", inputRoundTimeout))
		c.legacy.mu.Unlock()
		c.enqueue(m)
	})
	// The requests go to the client through Recv: the relay runs each through the
	// server-request channel (rules, the server_request phase, a record).
	for _, o := range reqs {
		c.enqueueLocked(o.req)
	}
	return nil
}

// answered takes the client's answer to one of the translation's own requests; the
// last answer of a round sends the retry. It is called with the lock held and
// releases it.
func (c *Conn) answered(m *jsonrpc.Message) {
	l := &c.legacy
	a, ok := l.asks[m.IDKey()]
	if !ok {
		l.mu.Unlock()
		c.opts.Logger.Debug("client answer to no input request in flight dropped (timed out, cancelled or before a restart)")
		return
	}
	delete(l.asks, m.IDKey())
	x := a.x
	delete(x.pending, m.IDKey())
	if m.Error != nil {
		var e jsonrpc.ErrorObject
		_ = json.Unmarshal(m.Error, &e)
		code := e.Code
		if code == 0 {
			code = methods.CodeInternalError
		}
		out := c.failLocked(x, code, "mcpgate: the server's input request ("+a.method+") was not answered: "+strings.TrimPrefix(e.Message, "mcpgate: "))
		l.mu.Unlock()
		c.enqueue(out)
		return
	}
	x.responses[a.key] = m.Result
	if len(x.pending) > 0 {
		l.mu.Unlock()
		return
	}
	x.timer.Stop()
	x.pending = nil
	l.mu.Unlock()
	c.retry(x)
}

// retry sends x's original request again with the round's inputResponses and the
// server's requestState, byte for byte, under a fresh id.
func (c *Conn) retry(x *exchange) {
	l := &c.legacy
	l.mu.Lock()
	if l.closed || x.done {
		l.mu.Unlock()
		return
	}
	extra := map[string]json.RawMessage{}
	if len(x.responses) > 0 {
		extra["inputResponses"] = mustMarshal(x.responses)
	}
	if x.state != nil {
		extra["requestState"] = x.state
	}
	id := c.ownID()
	x.retry, x.retryID, x.responses = jsonrpc.IDKey(id), id, nil
	if l.rounds == nil {
		l.rounds = map[string]*exchange{}
	}
	l.rounds[x.retry] = x
	req := jsonrpc.NewRequest(id, x.orig.Method, json.RawMessage(withMeta(x.orig.Params, l.meta, l.metaRaw, extra)))
	l.mu.Unlock()
	if err := c.up.Send(req); err != nil {
		l.mu.Lock()
		m := c.failLocked(x, methods.CodeUpstreamUnavailable, "mcpgate: the retry with the client's input could not be sent to the server")
		l.mu.Unlock()
		c.enqueue(m)
	}
}

// failLocked ends x and returns the error response its client request gets; the
// client's requests still waiting are cancelled, so nothing waits on them.
func (c *Conn) failLocked(x *exchange, code int, text string) *jsonrpc.Message {
	c.endLocked(x)
	return jsonrpc.NewErrorResponse(x.orig.ID, code, text)
}

// endLocked forgets x; the client's requests it still waits on are cancelled.
func (c *Conn) endLocked(x *exchange) {
	if x.timer != nil {
		x.timer.Stop()
	}
	for _, id := range slices.Sorted(maps.Keys(x.pending)) {
		delete(c.legacy.asks, id)
		if !c.legacy.closed {
			c.enqueueLocked(jsonrpc.NewNotification(methods.NotificationCancelled, map[string]any{
				"requestId": json.RawMessage(id), "reason": "mcpgate: the request that asked for this input has ended"}))
		}
	}
	if x.retry != "" {
		delete(c.legacy.rounds, x.retry)
	}
	x.pending, x.retry, x.retryID, x.done = nil, "", nil, true
}

// closeLegacy stops every exchange's timer; answers that arrive later are dropped.
func (c *Conn) closeLegacy() {
	l := &c.legacy
	l.mu.Lock()
	defer l.mu.Unlock()
	l.closed = true // before endLocked: no cancellation goes to a client of a closed connection
	for _, x := range l.exchanges() {
		c.endLocked(x)
	}
}

// enqueueLocked is enqueue for a caller holding legacy.mu (enqueue takes c.mu).
func (c *Conn) enqueueLocked(m *jsonrpc.Message) { c.enqueue(m) }

// inputRequestMethod reports whether m is a server request (sampling, elicitation,
// roots), which a 2026-07-28 input request may carry.
func inputRequestMethod(m string) bool {
	row := methods.Of(m)
	return row != nil && row.Direction == methods.ServerRequest
}

// withMeta returns params (a JSON object, or absent) with the envelope's members
// set in its _meta, beside the client's own (progressToken …), and extra members set
// at the top level; every other member is kept as it was written. metaRaw is meta
// encoded.
func withMeta(params json.RawMessage, meta map[string]json.RawMessage, metaRaw []byte, extra map[string]json.RawMessage) []byte {
	if p := bytes.TrimSpace(params); extra == nil && len(p) > 1 && p[0] == '{' &&
		!bytes.Contains(p, []byte(`"_meta"`)) && !bytes.Contains(p, []byte(`\u`)) {
		// No member can be _meta (not even spelled with escapes): put it first, and
		// keep the rest as the client wrote it.
		out := make([]byte, 0, len(p)+len(metaRaw)+10)
		out = append(append(append(out, `{"_meta":`...), metaRaw...), ',')
		if rest := bytes.TrimSpace(p[1:]); len(rest) > 0 && rest[0] == '}' {
			return append(out[:len(out)-1], '}')
		}
		return append(out, p[1:]...)
	}
	var p map[string]json.RawMessage
	_ = json.Unmarshal(params, &p)
	if p == nil {
		p = map[string]json.RawMessage{}
	}
	var m map[string]json.RawMessage
	if raw := p["_meta"]; len(raw) > 0 {
		_ = json.Unmarshal(raw, &m)
	}
	if m == nil { // absent, null or not an object
		m = map[string]json.RawMessage{}
	}
	for k, v := range meta {
		m[k] = v
	}
	p["_meta"] = mustMarshal(m)
	for k, v := range extra {
		p[k] = v
	}
	return mustMarshal(p)
}

// withoutMembers returns the object v without the named members; anything else as it is.
func withoutMembers(v json.RawMessage, names ...string) json.RawMessage {
	var o map[string]json.RawMessage
	if json.Unmarshal(v, &o) != nil || o == nil {
		return v
	}
	for _, n := range names {
		delete(o, n)
	}
	return mustMarshal(o)
}

func mustMarshal(v any) json.RawMessage {
	b, err := jsonrpc.Marshal(v)
	if err != nil {
		return json.RawMessage(`{}`)
	}
	return b
}
