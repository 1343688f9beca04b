package translate

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/mcpgate/mcpgate/internal/jsonrpc"
	"github.com/mcpgate/mcpgate/internal/jsonscan"
	"github.com/mcpgate/mcpgate/internal/methods"
)

// A 2025-11-25 client (it opened with initialize) in front of a server that may speak
// only 2026-07-28 (docs/http.md#translation, docs/decisions.md#translate-legacy).

// legacyState is the hop's negotiation for a 2025-11-25 client; guarded by Conn.mu.
type legacyState struct {
	// init is the client's initialize while the server or discover answers it;
	// initErr the server's refusal, the client's answer when discover fails.
	init, initErr *jsonrpc.Message
	discover      string        // the server/discover probe's id key
	probed        chan struct{} // closed once the probe's send returned; the client's sends wait
	// meta is the _meta envelope every request to the server carries (from the
	// initialize, and logging/setLevel); metaRaw is it encoded.
	meta    map[string]json.RawMessage
	metaRaw []byte
}

// askNonce is the random part (64 bits) of the id of an input request asked of the
// client, so that only a client shown the request (by the relay) can answer it; a var
// for tests.
var askNonce = func() string {
	var b [8]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// sendLegacy forwards a 2025-11-25 client's message: as it is until the server has
// refused initialize, then in 2026-07-28 terms.
func (c *Conn) sendLegacy(m *jsonrpc.Message) error {
	l := &c.legacy
	c.mu.Lock()
	switch {
	case m.Kind == jsonrpc.KindRequest && m.Method == methods.Initialize && (c.phase == phaseOpen || c.phase == phasePassing):
		c.phase, l.init = phaseInitializing, m
		c.mu.Unlock()
		return c.up.Send(m)
	case c.phase != phaseOpen && c.phase != phasePassing && m.Kind == jsonrpc.KindResponse && strings.HasPrefix(m.IDKey(), `"`+ownPrefix):
		// On a passing hop such an id is the server's (a second gateway's).
		retry := c.answeredLocked(m)
		c.mu.Unlock()
		if retry != nil {
			c.retry(retry)
		}
		return nil
	case c.phase != phaseTranslating:
		probed := l.probed
		c.mu.Unlock()
		if probed != nil {
			<-probed // the probe goes first
		}
		return c.up.Send(m)
	}
	out := m
	switch {
	case m.Kind == jsonrpc.KindNotification && m.Method == methods.NotificationInitialized:
		out = nil // 2026-07-28 has no handshake to finish
	case m.Kind == jsonrpc.KindNotification && m.Method == methods.NotificationCancelled:
		out = c.cancelledLocked(m)
	case m.Kind == jsonrpc.KindRequest:
		if reply := c.answerLocked(m); reply != nil {
			c.enqueueLocked(reply)
			out = nil
			break
		}
		if row := methods.Of(m.Method); row != nil && row.InputRequired { // its result may be input_required
			r := &round{method: m.Method, params: m.Params, clientID: m.ID, upID: m.ID}
			c.rounds.byUp[m.IDKey()], c.rounds.byClient[m.IDKey()] = r, r
		}
		req := *m // a request is jsonrpc, id, method and params: Raw is rebuilt whole
		req.Params = withMeta(m.Params, l.meta, l.metaRaw, nil)
		req.Raw = jsonrpc.Request(m.ID, m.Method, json.RawMessage(req.Params))
		out = &req
	}
	c.mu.Unlock()
	if out == nil {
		return nil
	}
	return c.up.Send(out)
}

// answerLocked answers a request whose method 2026-07-28 does not have (ping,
// logging/setLevel, resources/subscribe …); nil forwards it.
func (c *Conn) answerLocked(m *jsonrpc.Message) *jsonrpc.Message {
	if methods.In(m.Method, methods.Rev20260728) != nil || methods.Of(m.Method) == nil {
		return nil
	}
	switch m.Method {
	case methods.LoggingSetLevel:
		var p struct {
			Level json.RawMessage `json:"level"`
		}
		if json.Unmarshal(m.Params, &p) != nil || len(p.Level) == 0 || p.Level[0] != '"' {
			return jsonrpc.NewErrorResponse(m.ID, methods.CodeInvalidParams, "mcpgate: logging/setLevel needs a string level")
		}
		c.legacy.meta[methods.MetaLogLevel] = p.Level // carried on every later request
		c.legacy.metaRaw = mustMarshal(c.legacy.meta)
		fallthrough
	case methods.Ping:
		return jsonrpc.NewResponse(m.ID, json.RawMessage(`{}`))
	}
	return jsonrpc.NewErrorResponse(m.ID, methods.CodeMethodNotFound,
		"mcpgate: "+m.Method+" has no 2026-07-28 counterpart, and the server speaks only 2026-07-28 (docs/http.md#translation)")
}

// cancelledLocked points a client's notifications/cancelled at the attempt now with
// the server and ends the round; nil drops it (the client holds the round).
func (c *Conn) cancelledLocked(m *jsonrpc.Message) *jsonrpc.Message {
	p, key, ok := cancelParams(m)
	if !ok {
		return m
	}
	r := c.rounds.byClient[key]
	if r == nil || r.count > 0 && r.upID == nil && len(r.pending) == 0 { // none, or pacing a state-only retry
		return m
	}
	c.endRound(r) // which leaves count and upID
	switch {
	case r.count == 0: // the request itself is with the server
		return m
	case r.upID == nil:
		return nil
	}
	return cancelling(m, p, r.upID)
}

// recvLegacy returns a server message as a 2025-11-25 client must see it; nil when
// the translation consumed it.
func (c *Conn) recvLegacy(m *jsonrpc.Message) *jsonrpc.Message {
	if m.Kind != jsonrpc.KindResponse {
		return m
	}
	l := &c.legacy
	c.mu.Lock()
	key := m.IDKey()
	if c.phase == phaseInitializing && l.init != nil && key == l.init.IDKey() {
		out, probe := c.initAnswered(m)
		c.mu.Unlock()
		if probe != nil {
			go c.sendProbe(probe)
		}
		return out
	}
	defer c.mu.Unlock()
	switch {
	case c.phase == phaseProbing && key == l.discover:
		return c.discovered(m)
	case c.phase != phaseTranslating:
		return m
	}
	if r := c.rounds.byUp[key]; r != nil {
		delete(c.rounds.byUp, key)
		r.upID = nil
		return c.resultLocked(r, m)
	}
	return m
}

// initAnswered reads the answer to the client's initialize: -32022 starts
// translation with the server/discover probe returned; any other is the client's.
func (c *Conn) initAnswered(m *jsonrpc.Message) (out, probe *jsonrpc.Message) {
	l := &c.legacy
	if m.Error == nil || errorOf(m).Code != methods.CodeUnsupportedProtocolVersion {
		c.phase, l.init = phasePassing, nil
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
	id := c.newID("", "")
	c.phase, l.initErr, l.discover, l.probed = phaseProbing, m, jsonrpc.IDKey(id), make(chan struct{})
	return nil, jsonrpc.NewRequest(id, methods.ServerDiscover, json.RawMessage(withMeta(nil, l.meta, l.metaRaw, nil)))
}

// sendProbe sends the probe without the hop's lock (a server that stopped reading
// holds neither Recv nor Close); if it fails the initialize gets the server's refusal.
func (c *Conn) sendProbe(probe *jsonrpc.Message) {
	err := c.up.Send(probe)
	l := &c.legacy
	c.mu.Lock()
	defer c.mu.Unlock()
	close(l.probed)
	if err == nil {
		c.opts.Logger.Info("the server refused the 2025-era initialize; translating for the client (docs/http.md#translation)")
		return
	}
	c.opts.Logger.Warn("server/discover could not be sent; the client's initialize gets the server's refusal", "err", err)
	if c.phase == phaseProbing && l.discover == probe.IDKey() {
		c.enqueueLocked(c.untranslatable())
	}
}

// untranslatable gives the client the server's refusal of its initialize.
func (c *Conn) untranslatable() *jsonrpc.Message {
	l := &c.legacy
	m := l.initErr
	c.phase, l.init, l.initErr, l.meta = phaseOpen, nil, nil, nil
	return m
}

// discovered answers the client's initialize from the server/discover result
// (2026-07-28 "Backward Compatibility"): capabilities less listChanged and subscribe.
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
	c.phase, l.init, l.initErr = phaseTranslating, nil, nil
	return jsonrpc.NewResponse(id, mustMarshal(res))
}

// resultLocked reads the server's answer to an attempt of r: input_required starts
// the next round (nil); any other answer goes to the client under its id.
func (c *Conn) resultLocked(r *round, m *jsonrpc.Message) *jsonrpc.Message {
	var kind struct {
		ResultType string `json:"resultType"`
	}
	if m.Error != nil || !jsonscan.MayHold(m.Result, "input_required") || json.Unmarshal(m.Result, &kind) != nil || kind.ResultType != "input_required" {
		c.endRound(r)
		return m.WithID(r.clientID)
	}
	var res struct {
		InputRequests map[string]json.RawMessage `json:"inputRequests"`
		RequestState  json.RawMessage            `json:"requestState"`
	}
	fail := func(text string) *jsonrpc.Message { return c.failRound(r, methods.CodeInternalError, "mcpgate: "+text) }
	if json.Unmarshal(m.Result, &res) != nil {
		return fail("the server's input_required result is malformed (inputRequests must be an object)")
	}
	r.count++
	switch state := res.RequestState; {
	case r.count > maxInputRounds:
		return fail(fmt.Sprintf("the server asked for input more than %d times for this %s; the request is failed", maxInputRounds, r.method))
	case len(state) > maxRequestState:
		return fail(fmt.Sprintf("the server's requestState is over %d bytes; the request is failed", maxRequestState))
	case len(state) > 0 && state[0] != '"':
		return fail("the server's input_required result has a requestState that is not a string")
	case len(res.InputRequests) == 0 && len(state) == 0:
		return fail("the server's input_required result has neither inputRequests nor requestState")
	case len(res.InputRequests) > maxInputRequests:
		return fail(fmt.Sprintf("the server's input_required result has more than %d inputRequests", maxInputRequests))
	}
	r.state, r.answers = string(res.RequestState), map[string]json.RawMessage{}
	if len(res.InputRequests) == 0 {
		r.expiry = time.AfterFunc(stateOnlyPacing, func() { c.retry(r) })
		return nil
	}
	reqs, asked := make([]*jsonrpc.Message, 0, len(res.InputRequests)), make([]*inputRequest, 0, len(res.InputRequests))
	for _, k := range slices.Sorted(maps.Keys(res.InputRequests)) {
		var e struct {
			Method string          `json:"method"`
			Params json.RawMessage `json:"params"`
		}
		if json.Unmarshal(res.InputRequests[k], &e) != nil || !inputRequestMethod(e.Method) ||
			len(e.Params) > 0 && e.Params[0] != '{' && string(e.Params) != "null" {
			return fail("the server's input_required result has an input request that is not elicitation/create, sampling/createMessage or roots/list with object params")
		}
		var params any
		if len(e.Params) > 0 && string(e.Params) != "null" {
			params = e.Params
		}
		req := jsonrpc.NewRequest(c.newID("", askNonce()), e.Method, params)
		req.Related = r.clientID
		reqs = append(reqs, req)
		asked = append(asked, &inputRequest{key: k, id: req.ID, method: e.Method})
	}
	r.pending = asked
	for _, q := range r.pending {
		c.rounds.byAsk[jsonrpc.IDKey(q.id)] = r
	}
	c.expire(r, c.bounds.legacyRound, func() {
		c.enqueueLocked(c.failRound(r, methods.CodeRequestTimeout, fmt.Sprintf("mcpgate: the client did not answer the server's input requests within %s; the request is failed", c.bounds.legacyRound)))
	})
	for _, req := range reqs {
		c.enqueueLocked(req)
	}
	return nil
}

// answeredLocked takes the client's answer to an input request; after a round's
// last it returns the round to retry.
func (c *Conn) answeredLocked(m *jsonrpc.Message) *round {
	r := c.rounds.byAsk[m.IDKey()]
	if r == nil {
		c.opts.Logger.Debug("client answer to no input request in flight dropped (timed out, cancelled or before a restart)")
		return nil
	}
	delete(c.rounds.byAsk, m.IDKey())
	i := slices.IndexFunc(r.pending, func(p *inputRequest) bool { return jsonrpc.IDKey(p.id) == m.IDKey() })
	q := r.pending[i] // byAsk holds the ids of r.pending only
	r.pending = slices.Delete(r.pending, i, i+1)
	if m.Error != nil {
		e := errorOf(m)
		if e.Code == 0 {
			e.Code = methods.CodeInternalError
		}
		c.enqueueLocked(c.failRound(r, e.Code, "mcpgate: the server's input request ("+q.method+") was not answered: "+strings.TrimPrefix(e.Message, "mcpgate: ")))
		return nil
	}
	r.answers[q.key] = m.Result
	if len(r.pending) > 0 {
		return nil
	}
	r.expiry.Stop()
	return r
}

// retry sends r's original request again with the round's inputResponses and the
// server's requestState, byte for byte, under a fresh id.
func (c *Conn) retry(r *round) {
	l := &c.legacy
	c.mu.Lock()
	if c.closed || r.done {
		c.mu.Unlock()
		return
	}
	extra := map[string]json.RawMessage{}
	if len(r.answers) > 0 {
		extra["inputResponses"] = mustMarshal(r.answers)
	}
	if r.state != "" {
		extra["requestState"] = json.RawMessage(r.state)
	}
	r.upID, r.answers = c.newID("", ""), nil
	c.rounds.byUp[jsonrpc.IDKey(r.upID)] = r
	req := jsonrpc.NewRequest(r.upID, r.method, json.RawMessage(withMeta(r.params, l.meta, l.metaRaw, extra)))
	c.mu.Unlock()
	if err := c.up.Send(req); err != nil {
		c.mu.Lock()
		c.enqueueLocked(c.failRound(r, methods.CodeUpstreamUnavailable, "mcpgate: the retry with the client's input could not be sent to the server"))
		c.mu.Unlock()
	}
}

// inputRequestMethod reports whether m is a server request an input request may carry.
func inputRequestMethod(m string) bool {
	row := methods.Of(m)
	return row != nil && row.Direction == methods.ServerRequest
}

// withMeta returns params (an object, or absent) with meta's members set in its
// _meta and extra's at the top level; metaRaw is meta encoded.
func withMeta(params json.RawMessage, meta map[string]json.RawMessage, metaRaw []byte, extra map[string]json.RawMessage) []byte {
	if p := bytes.TrimSpace(params); extra == nil && len(p) > 1 && p[0] == '{' &&
		!bytes.Contains(p, []byte(`"_meta"`)) && !bytes.Contains(p, []byte(`\u`)) {
		// No member can be _meta, even escaped: _meta goes first, the rest as written.
		out := make([]byte, 0, len(p)+len(metaRaw)+10)
		out = append(append(append(out, `{"_meta":`...), metaRaw...), ',')
		if rest := bytes.TrimSpace(p[1:]); len(rest) > 0 && rest[0] == '}' {
			return append(out[:len(out)-1], '}')
		}
		return append(out, p[1:]...)
	}
	p := object(params)
	m := object(p["_meta"])
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
