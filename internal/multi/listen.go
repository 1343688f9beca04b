package multi

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/mcpgate/mcpgate/internal/jsonrpc"
	"github.com/mcpgate/mcpgate/internal/methods"
)

// A 2026-07-28 client's subscriptions/listen is held by the mux: it sends one listen
// of its own to each server that can send something the client asked for (a list
// change the server's capabilities have listChanged for, the resources of
// resourceSubscriptions that name it, un-namespaced, when it has subscribe), merges
// their notifications/subscriptions/acknowledged into one for the client (URIs
// namespaced again), and gives each notification of those listens the client's
// subscriptionId. The client's notifications/cancelled of the listen cancels every
// server's; a server's listen that ends (its response) leaves the others, and the
// last one's end answers the client's; a lost server ends the client's listen with an
// error, so the client listens again and reaches the server when it is back.

// listenNotifications maps each list change a listen may ask for to the capability
// whose listChanged a server needs to send it.
var listenNotifications = map[string]string{
	"toolsListChanged":     "tools",
	"promptsListChanged":   "prompts",
	"resourcesListChanged": "resources",
}

// listening is one client subscriptions/listen.
type listening struct {
	id      json.RawMessage            // the client's request id, its subscriptionId
	parts   map[string]json.RawMessage // server → the id of the mux's listen there
	unacked map[string]bool            // servers whose acknowledgement is awaited
	acked   bool                       // the client got its acknowledgement
	agreed  map[string]bool            // list changes some server acknowledged
	uris    []string                   // resourceSubscriptions acknowledged, namespaced
	subs    bool                       // some server acknowledged resourceSubscriptions
	timer   *time.Timer
}

// listenPart is one server's listen under a client's: the client's id key, the server.
type listenPart struct{ client, server string }

// listen opens the client's subscription over the servers (see above); a server whose
// listen cannot be sent is left out. The acknowledgement goes out when every server
// acknowledged, or after CallTimeout with what was acknowledged by then.
func (m *Mux) listen(msg *jsonrpc.Message) {
	var params, asked map[string]json.RawMessage
	_ = json.Unmarshal(msg.Params, &params)
	_ = json.Unmarshal(params["notifications"], &asked)
	var list []string
	_ = json.Unmarshal(asked["resourceSubscriptions"], &list)
	uris := map[string][]string{}
	for _, u := range list {
		if server, orig, ok := m.SplitURI(u); ok && !slices.Contains(uris[server], orig) {
			uris[server] = append(uris[server], orig)
		}
	}
	if params == nil {
		params = map[string]json.RawMessage{}
	}
	key := msg.IDKey()
	l := &listening{id: msg.ID, parts: map[string]json.RawMessage{}, unacked: map[string]bool{}, agreed: map[string]bool{}}
	var reqs []*jsonrpc.Message
	var servers []string
	m.mu.Lock()
	if old := m.listens[key]; old != nil { // the relay refuses an id in use; be safe
		m.mu.Unlock()
		m.replyErr(msg.ID, methods.CodeInvalidRequest, "mcpgate: a subscriptions/listen with this id is open")
		return
	}
	for _, s := range m.servers {
		n := map[string]any{}
		for k, capability := range listenNotifications {
			if string(asked[k]) == "true" && m.offersMemberLocked(s.Name, capability, "listChanged") {
				n[k] = true
			}
		}
		if len(uris[s.Name]) > 0 && m.offersMemberLocked(s.Name, "resources", "subscribe") {
			n["resourceSubscriptions"] = uris[s.Name]
		}
		if len(n) == 0 {
			continue
		}
		m.seq++
		id := jsonrpc.OwnID("mux-", m.seq)
		p := maps.Clone(params)
		p["notifications"], _ = jsonrpc.Marshal(n)
		l.parts[s.Name], l.unacked[s.Name] = id, true
		m.listenParts[jsonrpc.IDKey(id)] = listenPart{client: key, server: s.Name}
		reqs = append(reqs, jsonrpc.NewRequest(id, methods.SubscriptionsListen, p))
		servers = append(servers, s.Name)
	}
	m.listens[key] = l
	m.mu.Unlock()
	for i, req := range reqs {
		if err := m.sendTo(servers[i], req); err != nil {
			m.log.Warn("subscriptions/listen not sent; the server is left out of the subscription", "upstream", servers[i], "err", err)
			m.mu.Lock()
			delete(l.parts, servers[i])
			delete(l.unacked, servers[i])
			delete(m.listenParts, jsonrpc.IDKey(req.ID))
			m.mu.Unlock()
		}
	}
	m.mu.Lock()
	var ack *jsonrpc.Message
	if m.listens[key] == l {
		if len(l.unacked) == 0 {
			ack = l.acknowledgement()
		} else {
			l.timer = time.AfterFunc(m.opts.CallTimeout, func() {
				m.mu.Lock()
				var late *jsonrpc.Message
				if m.listens[key] == l && !l.acked {
					late = l.acknowledgement()
				}
				m.mu.Unlock()
				if late != nil {
					m.emit(late, nil)
				}
			})
		}
	}
	m.mu.Unlock()
	if ack != nil {
		m.emit(ack, nil)
	}
}

// acknowledgement is the client's notifications/subscriptions/acknowledged: what the
// servers acknowledged so far. The caller holds m.mu.
func (l *listening) acknowledgement() *jsonrpc.Message {
	l.acked = true
	if l.timer != nil {
		l.timer.Stop()
	}
	agreed := map[string]any{}
	for k := range l.agreed {
		agreed[k] = true
	}
	if l.subs {
		agreed["resourceSubscriptions"] = append([]string{}, l.uris...)
	}
	return jsonrpc.NewNotification(methods.NotificationSubscriptionsAcknowledged, map[string]any{
		"notifications": agreed, "_meta": map[string]json.RawMessage{methods.MetaSubscriptionID: l.id}})
}

// offersMemberLocked reports whether a server's capability has member true; true
// while its capabilities are unknown (the server decides, and acknowledges what it
// sends), false for a server left out of the session (CheckInitialize). The caller
// holds m.mu.
func (m *Mux) offersMemberLocked(server, capability, member string) bool {
	if m.refused[server] != "" {
		return false
	}
	c, ok := m.caps[server]
	if !ok {
		return true
	}
	v, _ := c[capability][member].(bool)
	return v
}

// subscribed handles a server notification that names a subscription in _meta: the
// acknowledgement of a listen of the mux's is merged into the client's (nil is
// returned until the client's is complete), any other notification of that listen
// gets the client's subscriptionId. A notification naming a listen that is not the
// server's own open one (ended, or another server's) is dropped (nil): the client
// holds no such subscription. Any other comes back as it is.
func (m *Mux) subscribed(server string, msg *jsonrpc.Message) *jsonrpc.Message {
	if !bytes.Contains(msg.Params, []byte(methods.MetaSubscriptionID)) {
		return msg
	}
	var params, meta map[string]json.RawMessage
	if json.Unmarshal(msg.Params, &params) != nil || json.Unmarshal(params["_meta"], &meta) != nil || meta[methods.MetaSubscriptionID] == nil {
		return msg
	}
	key := jsonrpc.IDKey(meta[methods.MetaSubscriptionID])
	m.mu.Lock()
	defer m.mu.Unlock()
	part, ok := m.listenParts[key]
	if !ok || part.server != server {
		if ok || jsonrpc.IsOwnIDKey(key) {
			return nil
		}
		return msg
	}
	l := m.listens[part.client]
	if msg.Method == methods.NotificationSubscriptionsAcknowledged {
		var n struct {
			Notifications map[string]json.RawMessage `json:"notifications"`
		}
		_ = json.Unmarshal(msg.Params, &n)
		for k := range listenNotifications {
			if string(n.Notifications[k]) == "true" {
				l.agreed[k] = true
			}
		}
		var uris []string
		if json.Unmarshal(n.Notifications["resourceSubscriptions"], &uris) == nil && n.Notifications["resourceSubscriptions"] != nil {
			l.subs = true
			for _, u := range uris {
				if u = server + "+" + u; !slices.Contains(l.uris, u) {
					l.uris = append(l.uris, u)
				}
			}
		}
		delete(l.unacked, server)
		if len(l.unacked) == 0 && !l.acked {
			return l.acknowledgement()
		}
		return nil
	}
	meta[methods.MetaSubscriptionID] = l.id
	params["_meta"], _ = jsonrpc.Marshal(meta)
	b, _ := jsonrpc.Marshal(params)
	return msg.WithParams(b)
}

// listenEnded handles a server's response to a listen of the mux's: that server's
// part ends; when it was the last, the client's listen is answered (an error as the
// server's, otherwise a result naming the subscription), after its acknowledgement
// if it had none yet and some server acknowledged. It reports whether the response
// was one.
func (m *Mux) listenEnded(server string, msg *jsonrpc.Message) bool {
	m.mu.Lock()
	part, ok := m.listenParts[msg.IDKey()]
	if !ok || part.server != server {
		m.mu.Unlock()
		return false
	}
	delete(m.listenParts, msg.IDKey())
	l := m.listens[part.client]
	delete(l.parts, server)
	_, waited := l.unacked[server]
	delete(l.unacked, server)
	var out []*jsonrpc.Message
	switch {
	case len(l.parts) > 0:
		if waited && len(l.unacked) == 0 && !l.acked {
			out = append(out, l.acknowledgement())
		}
	default:
		delete(m.listens, part.client)
		if l.timer != nil {
			l.timer.Stop()
		}
		if !l.acked && (len(l.agreed) > 0 || l.subs || msg.Error == nil) {
			out = append(out, l.acknowledgement())
		}
		if msg.Error != nil {
			out = append(out, msg.WithID(l.id))
		} else {
			res, _ := jsonrpc.Marshal(map[string]any{"_meta": map[string]json.RawMessage{methods.MetaSubscriptionID: l.id}})
			out = append(out, jsonrpc.NewResponse(l.id, res))
		}
	}
	m.mu.Unlock()
	for _, o := range out {
		m.emit(o, nil)
	}
	return true
}

// unlisten ends the client's listen whose id key is key, if one is open: each
// server's listen is cancelled. It reports whether there was one.
func (m *Mux) unlisten(key string) bool {
	m.mu.Lock()
	l := m.listens[key]
	if l == nil {
		m.mu.Unlock()
		return false
	}
	cancels := m.dropListenLocked(key, l)
	m.mu.Unlock()
	for server, id := range cancels {
		_ = m.sendTo(server, jsonrpc.NewNotification(methods.NotificationCancelled, map[string]any{"requestId": id}))
	}
	return true
}

// dropListenLocked forgets a client's listen and returns its servers' listen ids.
// The caller holds m.mu.
func (m *Mux) dropListenLocked(key string, l *listening) map[string]json.RawMessage {
	delete(m.listens, key)
	if l.timer != nil {
		l.timer.Stop()
	}
	for _, id := range l.parts {
		delete(m.listenParts, jsonrpc.IDKey(id))
	}
	return l.parts
}

// listensLost ends every client listen with a listen on a server whose connection
// was lost: the other servers' listens are cancelled and the client's is answered
// with an error, so it listens again (a restarted server holds no listen).
func (m *Mux) listensLost(server string) {
	type ended struct {
		id      json.RawMessage
		cancels map[string]json.RawMessage
	}
	var ends []ended
	m.mu.Lock()
	for key, l := range m.listens {
		if _, ok := l.parts[server]; ok {
			ends = append(ends, ended{l.id, m.dropListenLocked(key, l)})
		}
	}
	m.mu.Unlock()
	for _, e := range ends {
		for s, id := range e.cancels {
			if s != server {
				_ = m.sendTo(s, jsonrpc.NewNotification(methods.NotificationCancelled, map[string]any{"requestId": id}))
			}
		}
		m.replyErr(e.id, methods.CodeUpstreamUnavailable, fmt.Sprintf("mcpgate: the connection to upstream %q was lost; subscriptions/listen again", server))
	}
}
