package translate

import (
	"bytes"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/mcpgate/mcpgate/internal/jsonrpc"
	"github.com/mcpgate/mcpgate/internal/methods"
	"github.com/mcpgate/mcpgate/internal/reqstate"
	"github.com/mcpgate/mcpgate/vocab"
)

// A 2026-07-28 client in front of a server that may speak only 2025-11-25
// (docs/http.md#translation-modern, docs/decisions.md#translate-modern).

// modernState is the hop's negotiation and subscriptions for a 2026-07-28 client;
// guarded by Conn.mu but out.
type modernState struct {
	held    []*jsonrpc.Message // client messages held until the phase is known
	env     methods.Envelope   // the first request's envelope
	probeID string             // id key of the deciding server/discover (the client's or the gateway's)
	probe   *jsonrpc.Message   // the client's own server/discover when it decides
	initID  string
	initRes map[string]json.RawMessage // the server's InitializeResult
	initErr string
	level   string      // the log level last set on the server
	timer   *time.Timer // the probe's, then the initialize's
	sealID  string      // this connection's id in the states it seals (newState)

	subs       map[string]*subscription // the client's subscriptions/listen requests, by id
	subscribed map[string]int           // resources/subscribe sent for a URI, by how many subscriptions want it

	out outbox
}

// sendModern forwards a 2026-07-28 client's message.
func (c *Conn) sendModern(m *jsonrpc.Message) error {
	s := &c.modern
	s.out.wait()
	c.mu.Lock()
	if c.phase == phasePassing {
		c.mu.Unlock() // a send that blocks must not keep Recv from reading the server
		return s.out.send(c, m)
	}
	defer c.mu.Unlock()
	switch {
	case c.phase == phaseOpen && c.start(m): // else start set phaseProbing: held below
	case c.phase == phaseProbing || c.phase == phaseInitializing:
		if len(s.held) >= maxOutboxQueue { // bounded like the queue the held messages go to
			c.unavailable(m, fmt.Sprintf("mcpgate: %d messages are already held until the server answers server/discover or initialize; retry later", maxOutboxQueue))
		} else {
			s.held = append(s.held, m)
		}
	case c.phase == phaseFailed:
		c.unavailable(m, s.initErr)
	default:
		c.translateSend(m)
	}
	return nil
}

// start sends the client's first message if it is server/discover (consumed), else
// a probe of the gateway's with the client's envelope.
func (c *Conn) start(m *jsonrpc.Message) (consumed bool) {
	s := &c.modern
	s.subs, s.subscribed = map[string]*subscription{}, map[string]int{}
	s.env, _ = methods.EnvelopeOf(m.Params)
	if s.env.ProtocolVersion == "" {
		s.env.ProtocolVersion = methods.Version20260728
	}
	c.phase = phaseProbing
	if m.Kind == jsonrpc.KindRequest && m.Method == methods.ServerDiscover {
		s.probeID, s.probe = m.IDKey(), m
		_ = s.out.send(c, m)
	} else {
		id := c.newID("discover", "")
		s.probeID = jsonrpc.IDKey(id)
		_ = s.out.send(c, jsonrpc.NewRequest(id, methods.ServerDiscover, map[string]any{"_meta": s.env.Meta(c.opts.ClientInfo)}))
	}
	s.timer = c.afterLocked(c.bounds.probe, func() {
		if c.phase == phaseProbing {
			c.opts.Logger.Info("the server did not answer server/discover: taking it for 2025-11-25 and translating (docs/http.md#translation-modern)", "after", c.bounds.probe)
			c.initialize()
		}
	})
	return s.probe != nil
}

// recvModern returns a server message as a 2026-07-28 client must see it; nil when
// the translation consumed it.
func (c *Conn) recvModern(m *jsonrpc.Message) *jsonrpc.Message {
	s := &c.modern
	c.mu.Lock()
	defer c.mu.Unlock()
	resp := m.Kind == jsonrpc.KindResponse
	switch {
	case c.phase == phaseTranslating:
		return c.translateRecv(m)
	case resp && c.phase == phaseProbing && m.IDKey() == s.probeID:
		return c.decide(m)
	case resp && c.phase == phaseInitializing && m.IDKey() == s.initID:
		c.initialized(m)
		return nil
	case resp && c.phase == phaseFailed && m.IDKey() == s.initID:
		return nil // a late answer to the initialize that timed out
	}
	return m
}

// decide reads the answer to server/discover: a server that lists 2026-07-28 is
// passed through; any other is initialized as 2025-11-25.
func (c *Conn) decide(m *jsonrpc.Message) *jsonrpc.Message {
	s := &c.modern
	s.timer.Stop()
	var d struct {
		SupportedVersions []string `json:"supportedVersions"`
	}
	if m.Error != nil || json.Unmarshal(m.Result, &d) != nil ||
		!slices.ContainsFunc(d.SupportedVersions, func(v string) bool { return methods.RevisionOf(v) == methods.Rev20260728 }) {
		c.initialize()
		return nil
	}
	c.phase = phasePassing
	for _, h := range s.held {
		_ = s.out.send(c, h)
	}
	s.held = nil
	s.out.pass.Store(true)
	if s.probe != nil {
		return m // the client's own server/discover
	}
	return nil
}

// initialize opens a 2025-11-25 session with the envelope's clientCapabilities and
// clientInfo (the gateway's when it sent none).
func (c *Conn) initialize() {
	s := &c.modern
	c.phase = phaseInitializing
	caps, info := methods.Object(s.env.ClientCapabilities), s.env.ClientInfo
	var ci any = c.opts.ClientInfo
	if len(info) > 0 && info[0] == '{' {
		ci = info
	}
	id := c.newID(methods.Initialize, "")
	s.initID = jsonrpc.IDKey(id)
	_ = s.out.send(c, jsonrpc.NewRequest(id, methods.Initialize, map[string]any{
		"protocolVersion": methods.Version20251125, "capabilities": caps, "clientInfo": ci}))
	key := s.initID
	s.timer = c.afterLocked(c.bounds.init, func() {
		if c.phase == phaseInitializing && s.initID == key {
			c.opts.Logger.Warn("translation to 2025-11-25: the server did not answer initialize", "after", c.bounds.init)
			c.failNegotiation("mcpgate: the server offers no 2026-07-28 and did not answer its 2025-11-25 initialize within " + c.bounds.init.String())
		}
	})
}

// initialized takes the server's InitializeResult, completes the handshake and
// sends what the client sent meanwhile.
func (c *Conn) initialized(m *jsonrpc.Message) {
	s := &c.modern
	s.timer.Stop()
	if m.Error != nil || json.Unmarshal(m.Result, &s.initRes) != nil || s.initRes == nil {
		eo := errorOf(m)
		text := "mcpgate: the server offers no 2026-07-28 and its 2025-11-25 initialize failed"
		if eo.Message != "" {
			text += ": " + eo.Message
		}
		c.opts.Logger.Warn("translation to 2025-11-25: initialize failed", "code", eo.Code)
		c.failNegotiation(text)
		return
	}
	c.opts.Logger.Info("the server speaks 2025-11-25 only: translating for the 2026-07-28 client (docs/http.md#translation-modern)")
	_ = s.out.send(c, jsonrpc.NewNotification(methods.NotificationInitialized, nil))
	c.phase = phaseTranslating
	for _, h := range s.takeHeld() {
		c.translateSend(h)
	}
}

// takeHeld returns the client's messages held during the negotiation, its own
// server/discover first.
func (s *modernState) takeHeld() []*jsonrpc.Message {
	held := s.held
	if s.probe != nil {
		held = append([]*jsonrpc.Message{s.probe}, held...)
	}
	s.held, s.probe = nil, nil
	return held
}

// failNegotiation answers every request held, and every later one, with text.
func (c *Conn) failNegotiation(text string) {
	s := &c.modern
	c.phase, s.initErr = phaseFailed, text
	for _, h := range s.takeHeld() {
		c.unavailable(h, s.initErr)
	}
}

// unavailable answers a client request with CodeUpstreamUnavailable and text.
func (c *Conn) unavailable(m *jsonrpc.Message, text string) {
	if m.Kind == jsonrpc.KindRequest {
		c.enqueueLocked(jsonrpc.NewErrorResponse(m.ID, methods.CodeUpstreamUnavailable, text))
	}
}

// discoverResult answers server/discover from the InitializeResult (schema.ts
// "DiscoverResult"); tasks are left out (an extension in 2026-07-28).
func (s *modernState) discoverResult() json.RawMessage {
	caps := object(s.initRes["capabilities"])
	delete(caps, "tasks")
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
func (c *Conn) translateSend(m *jsonrpc.Message) {
	switch {
	case m.Kind == jsonrpc.KindRequest:
		c.request(m)
	case m.Kind == jsonrpc.KindNotification && m.Method == methods.NotificationCancelled:
		c.cancelled(m)
	case m.Kind == jsonrpc.KindResponse:
		// Only a retry's inputResponses answer the server's requests (through the
		// input rules and roots pins); a response to a guessed id would skip both.
		c.opts.Logger.Debug("translation: a response of the 2026-07-28 client dropped; the server's requests are answered by a retry's inputResponses")
	default:
		_ = c.modern.out.send(c, m)
	}
}

func (c *Conn) request(m *jsonrpc.Message) {
	var params map[string]json.RawMessage // nil unless an object
	_ = json.Unmarshal(m.Params, &params)
	switch state, retry := params["requestState"]; {
	case m.Method == methods.ServerDiscover:
		c.enqueueLocked(jsonrpc.NewResponse(m.ID, c.modern.discoverResult()))
	case m.Method == methods.SubscriptionsListen:
		c.listen(m, params)
	case retry:
		c.retryRound(m, params, state)
	default:
		c.setLevel(params)
		if r := c.rounds.byClient[m.IDKey()]; r != nil {
			// The client reused the id of a request whose input requests it left
			// unanswered: that request is abandoned.
			c.abandonLocked(r, "the client reused the request's id")
		}
		r := &round{upID: c.newID("req", ""), clientID: m.ID, method: m.Method, name: nameOf(m.Method, params), bound: bindingOf(params)}
		c.rounds.byUp[jsonrpc.IDKey(r.upID)], c.rounds.byClient[m.IDKey()] = r, r
		if err := c.modern.out.send(c, jsonrpc.NewRequest(r.upID, m.Method, legacyParams(params, m.Params))); err != nil {
			c.endRound(r)
			c.unavailable(m, "mcpgate: "+err.Error())
		}
	}
}

// legacyParams is a 2026-07-28 request's params without the envelope's _meta
// members (io.modelcontextprotocol/*) and the retry members.
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
		maps.DeleteFunc(meta, func(k string, _ json.RawMessage) bool {
			return strings.HasPrefix(k, "io.modelcontextprotocol/")
		})
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
func (c *Conn) setLevel(params map[string]json.RawMessage) {
	s := &c.modern
	var meta map[string]json.RawMessage
	var level string
	if json.Unmarshal(params["_meta"], &meta) != nil || json.Unmarshal(meta[methods.MetaLogLevel], &level) != nil || level == "" || level == s.level {
		return
	}
	if object(s.initRes["capabilities"])["logging"] == nil {
		return
	}
	s.level = level
	_ = s.out.send(c, jsonrpc.NewRequest(c.newID("setLevel", ""), methods.LoggingSetLevel, map[string]string{"level": level}))
}

// cancelled ends the subscription or the round the client's cancellation names.
func (c *Conn) cancelled(m *jsonrpc.Message) {
	_, key, ok := cancelParams(m)
	if !ok {
		return
	}
	if sub := c.modern.subs[key]; sub != nil {
		c.unlisten(sub)
		return
	}
	if r := c.rounds.byClient[key]; r != nil {
		c.abandonLocked(r, "the client cancelled the request")
	}
}

// abandonLocked ends a 2026-07-28 client's round: the server's pending requests get
// an error, and the request notifications/cancelled.
func (c *Conn) abandonLocked(r *round, why string) {
	for _, q := range r.pending {
		_ = c.modern.out.send(c, jsonrpc.NewErrorResponse(q.id, methods.CodeRequestTimeout, "mcpgate: "+why+" before the input request was answered"))
	}
	r.pending = nil
	if r.final == nil {
		_ = c.modern.out.send(c, jsonrpc.NewNotification(methods.NotificationCancelled, map[string]any{"requestId": r.upID, "reason": why}))
	}
	c.endRound(r)
}

// retryRound takes a Multi Round-Trip retry: its inputResponses answer the server's
// requests, and its id gets the result or the next input_required.
func (c *Conn) retryRound(m *jsonrpc.Message, params map[string]json.RawMessage, state json.RawMessage) {
	var token string
	_ = json.Unmarshal(state, &token)
	name := nameOf(m.Method, params)
	r := c.rounds.byState[token] // then sealed for this connection, method and name
	if r == nil || r.method != m.Method || r.name != name ||
		reqstate.Default().Check(reqstate.Binding{Session: c.modern.sealID, Method: m.Method, Name: name}, token) != nil {
		c.enqueueLocked(jsonrpc.NewErrorResponse(m.ID, methods.CodeInvalidParams,
			"mcpgate: requestState is not one this connection issued for this "+m.Method+", or it expired: send the request again without requestState and inputResponses"))
		return
	}
	if bindingOf(params) != r.bound {
		// It would be judged by arguments that never ran (docs/decisions.md#retry-binding).
		c.opts.Logger.Warn("a Multi Round-Trip retry refused: its params differ from the request the server ran", "method", methods.Known(m.Method))
		e := jsonrpc.NewErrorResponse(m.ID, methods.CodeInvalidParams,
			"mcpgate: a retry must repeat the request its requestState was issued for: its arguments (and every params member but _meta, inputResponses and requestState) differ from the request the server is running")
		e.Refused = vocab.ReasonRetryMismatch
		c.enqueueLocked(e)
		return
	}
	delete(c.rounds.byState, token)
	r.state = ""
	r.expiry.Stop()
	var answers map[string]json.RawMessage
	_ = json.Unmarshal(params["inputResponses"], &answers)
	var out []*jsonrpc.Message
	var done []*inputRequest
	for _, q := range r.shown {
		a, ok := answers[q.key]
		if !ok || len(a) == 0 || a[0] != '{' {
			continue // asked again in the next round
		}
		out, done = append(out, jsonrpc.NewResponse(q.id, a)), append(done, q)
	}
	if err := c.modern.out.send(c, out...); err != nil {
		c.enqueueLocked(jsonrpc.NewErrorResponse(m.ID, methods.CodeInternalError,
			"mcpgate: the server is not reading its input, so the answers to its input requests could not be sent: send the request again later"))
		c.abandonLocked(r, "the server stopped reading its input")
		return
	}
	r.pending = slices.DeleteFunc(r.pending, func(q *inputRequest) bool { return slices.Contains(done, q) })
	r.shown = nil
	unindex(c.rounds.byClient, jsonrpc.IDKey(r.clientID), r)
	r.clientID, r.retried = m.ID, true
	c.rounds.byClient[m.IDKey()] = r
	switch {
	case r.final != nil:
		c.enqueueLocked(c.finalResponse(r, r.final))
	case len(r.pending) > 0:
		c.askInput(r)
	}
}

// bindingOf is the params a retry must repeat: every member but _meta,
// inputResponses and requestState (no arguments as {}), decoded and re-encoded with
// sorted keys and numbers as written.
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

// nameOf is the params member that names method's target (Method.NameParam), or "".
func nameOf(method string, params map[string]json.RawMessage) string {
	var name string
	if mm := methods.Of(method); mm != nil && mm.NameParam != "" {
		_ = json.Unmarshal(params[mm.NameParam], &name)
	}
	return name
}

// askInput answers the round's client id with input_required: every pending server
// request, and a fresh requestState.
func (c *Conn) askInput(r *round) {
	reqs := map[string]any{}
	for _, q := range r.pending {
		e := map[string]any{"method": q.method}
		if len(q.params) > 0 {
			e["params"] = q.params
		}
		reqs[q.key] = e
	}
	r.shown = slices.Clone(r.pending)
	r.state = c.newState(r)
	c.rounds.byState[r.state] = r
	b, _ := jsonrpc.Marshal(map[string]any{"resultType": "input_required", "inputRequests": reqs, "requestState": r.state})
	c.enqueueLocked(jsonrpc.NewResponse(r.clientID, b))
	r.asked, r.retried = true, false
	state := r.state
	c.expire(r, c.bounds.modernRound, func() {
		if c.rounds.byState[state] == r {
			c.opts.Logger.Warn("a Multi Round-Trip retry did not come in time: the server's input requests get an error and its request is cancelled", "method", methods.Known(r.method), "after", c.bounds.modernRound)
			c.abandonLocked(r, "the client did not retry within "+c.bounds.modernRound.String())
		}
	})
}

// newState is a requestState for r: 128 random bits sealed by reqstate for this
// connection, method and name (docs/decisions.md#request-state).
func (c *Conn) newState(r *round) string {
	s := &c.modern
	if s.sealID == "" {
		var id [12]byte
		_, _ = rand.Read(id[:])
		s.sealID = base64.RawURLEncoding.EncodeToString(id[:])
	}
	var b [16]byte
	_, _ = rand.Read(b[:])
	tok, _ := reqstate.Default().Seal(reqstate.Binding{Session: s.sealID, Method: r.method, Name: r.name}, base64.RawURLEncoding.EncodeToString(b[:]))
	return tok
}

// finalResponse ends r with the server's response, valid in 2026-07-28, under clientID.
func (c *Conn) finalResponse(r *round, m *jsonrpc.Message) *jsonrpc.Message {
	c.endRound(r)
	if m.Error != nil {
		var eo map[string]json.RawMessage
		if r.method == methods.ResourcesRead && json.Unmarshal(m.Error, &eo) == nil && string(eo["code"]) == strconv.Itoa(methods.CodeResourceNotFound) {
			// 2025-11-25 "resource not found" is -32002; 2026-07-28 answers -32602.
			eo["code"] = json.RawMessage(strconv.Itoa(methods.CodeInvalidParams))
			b, _ := jsonrpc.Marshal(eo)
			return &jsonrpc.Message{Raw: jsonrpc.ErrorResponseObjectRaw(r.clientID, b), Kind: jsonrpc.KindResponse, ID: r.clientID, Error: b}
		}
		return m.WithID(r.clientID)
	}
	return jsonrpc.NewResponse(r.clientID, asModern(methods.Of(r.method), m.Result))
}

// asModern makes a 2025-11-25 result valid in 2026-07-28: resultType, ttlMs and
// cacheScope are the gateway's ("complete", 0, "private"), whatever the server wrote.
func asModern(m *methods.Method, result json.RawMessage) json.RawMessage {
	if bytes.Contains(result, []byte(`"resultType"`)) || bytes.Contains(result, []byte(`"ttlMs"`)) ||
		bytes.Contains(result, []byte(`"cacheScope"`)) || bytes.Contains(result, []byte(`\u`)) {
		result = withoutMembers(result, "resultType", "ttlMs", "cacheScope")
	}
	return methods.Conform(m, methods.Version20260728, result, true)
}

// translateRecv maps a 2025-11-25 server message for the 2026-07-28 client.
func (c *Conn) translateRecv(m *jsonrpc.Message) *jsonrpc.Message {
	switch m.Kind {
	case jsonrpc.KindResponse:
		r := c.rounds.byUp[m.IDKey()]
		switch {
		case r == nil:
			return nil // the gateway's own (logging/setLevel), or a cancelled request's
		case !r.asked || r.retried:
			return c.finalResponse(r, m)
		}
		r.final = m // the retry gets it
		return nil
	case jsonrpc.KindRequest:
		c.serverRequest(m)
		return nil
	case jsonrpc.KindNotification:
		switch m.Method {
		case methods.NotificationToolsListChanged, methods.NotificationPromptsListChanged, methods.NotificationResourcesListChanged, methods.NotificationResourcesUpdated:
			return c.notifySubscriptions(m)
		case methods.NotificationElicitationComplete: // 2026-07-28 has no URL elicitation ids
			return nil
		case methods.NotificationCancelled:
			if p, key, ok := cancelParams(m); ok {
				if r := c.rounds.byUp[key]; r != nil && (!r.asked || r.retried) {
					return cancelling(m, p, r.clientID)
				}
			}
			return nil
		}
	}
	return m
}

// serverRequest makes a server request an input request of the client request it
// serves: the one Related names, else the one in flight; with none or several, an error.
func (c *Conn) serverRequest(m *jsonrpc.Message) {
	refuse := func(code int, text string) {
		_ = c.modern.out.send(c, jsonrpc.NewErrorResponse(m.ID, code, text))
	}
	if m.Method == methods.Ping {
		_ = c.modern.out.send(c, jsonrpc.NewResponse(m.ID, json.RawMessage(`{}`)))
		return
	}
	if !inputRequestMethod(m.Method) {
		refuse(methods.CodeMethodNotFound, "mcpgate: a 2026-07-28 client takes no "+m.Method+" request")
		return
	}
	var r *round
	if m.Related != nil {
		r = c.rounds.byUp[jsonrpc.IDKey(m.Related)]
	} else {
		n := 0
		for _, x := range c.rounds.byUp {
			if x.final == nil {
				r, n = x, n+1
			}
		}
		if n != 1 {
			r = nil
		}
	}
	switch {
	case r == nil || r.final != nil:
		refuse(methods.CodeInvalidRequest, "mcpgate: the 2026-07-28 client takes "+m.Method+" only as an input request of the one client request it serves, and none (or more than one) is in flight")
	case len(r.pending) >= maxInputRequests:
		refuse(methods.CodeInternalError, fmt.Sprintf("mcpgate: %d input requests already wait for the client's answer to this request", maxInputRequests))
	case r.state == "" && len(c.rounds.byState) >= c.bounds.maxWaiting:
		refuse(methods.CodeInternalError, fmt.Sprintf("mcpgate: %d Multi Round-Trip exchanges already wait for the client", c.bounds.maxWaiting))
	default:
		r.pending = append(r.pending, &inputRequest{key: "mcpgate-" + c.next(), id: m.ID, method: m.Method, params: m.Params})
		if !r.asked || r.retried {
			c.askInput(r)
		}
	}
}
