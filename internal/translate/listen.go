package translate

import (
	"encoding/json"
	"maps"
	"slices"

	"github.com/mcpgate/mcpgate/internal/jsonrpc"
	"github.com/mcpgate/mcpgate/internal/methods"
)

// subscription is a client's subscriptions/listen, which the gateway holds open for a
// 2025-11-25 server.
type subscription struct {
	id   json.RawMessage
	want map[string]bool // the list_changed methods it gets
	uris map[string]bool // the URIs whose resources/updated it gets
}

// listen opens a subscription (schema.ts "SubscriptionsListenRequest"): it
// acknowledges what the server's capabilities can send and subscribes each URI.
func (c *Conn) listen(m *jsonrpc.Message, params map[string]json.RawMessage) {
	s := &c.modern
	var n struct {
		Tools     bool     `json:"toolsListChanged"`
		Prompts   bool     `json:"promptsListChanged"`
		Resources bool     `json:"resourcesListChanged"`
		URIs      []string `json:"resourceSubscriptions"`
	}
	_ = json.Unmarshal(params["notifications"], &n)
	var caps map[string]struct {
		ListChanged bool `json:"listChanged"`
		Subscribe   bool `json:"subscribe"`
	}
	_ = json.Unmarshal(s.initRes["capabilities"], &caps)
	sub := &subscription{id: m.ID, want: map[string]bool{}, uris: map[string]bool{}}
	agreed := map[string]any{}
	for _, x := range []struct {
		asked                      bool
		capability, member, method string
	}{
		{n.Tools, "tools", "toolsListChanged", methods.NotificationToolsListChanged},
		{n.Prompts, "prompts", "promptsListChanged", methods.NotificationPromptsListChanged},
		{n.Resources, "resources", "resourcesListChanged", methods.NotificationResourcesListChanged},
	} {
		if x.asked && caps[x.capability].ListChanged {
			sub.want[x.method], agreed[x.member] = true, true
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
				_ = s.out.send(c, jsonrpc.NewRequest(c.newID("subscribe", ""), methods.ResourcesSubscribe, map[string]string{"uri": u}))
			}
		}
		agreed["resourceSubscriptions"] = uris
	}
	if old := s.subs[m.IDKey()]; old != nil {
		c.unlisten(old)
	}
	s.subs[m.IDKey()] = sub
	c.enqueueLocked(jsonrpc.NewNotification(methods.NotificationSubscriptionsAcknowledged, map[string]any{
		"notifications": agreed, "_meta": map[string]json.RawMessage{methods.MetaSubscriptionID: m.ID}}))
}

// unlisten ends a subscription and unsubscribes the URIs no other one wants.
func (c *Conn) unlisten(sub *subscription) {
	s := &c.modern
	delete(s.subs, jsonrpc.IDKey(sub.id))
	for u := range sub.uris {
		if s.subscribed[u]--; s.subscribed[u] <= 0 {
			delete(s.subscribed, u)
			_ = s.out.send(c, jsonrpc.NewRequest(c.newID("unsubscribe", ""), methods.ResourcesUnsubscribe, map[string]string{"uri": u}))
		}
	}
}

// notifySubscriptions copies a list_changed or resources/updated notification to
// each subscription that asked for it (subscriptionId in _meta); with none open it passes.
func (c *Conn) notifySubscriptions(m *jsonrpc.Message) *jsonrpc.Message {
	s := &c.modern
	if len(s.subs) == 0 {
		return m
	}
	var params map[string]json.RawMessage
	if len(m.Params) > 0 && json.Unmarshal(m.Params, &params) != nil {
		return nil
	}
	var uri string
	_ = json.Unmarshal(params["uri"], &uri)
	var out []*jsonrpc.Message
	for _, k := range slices.Sorted(maps.Keys(s.subs)) {
		sub := s.subs[k]
		if !sub.want[m.Method] && (m.Method != methods.NotificationResourcesUpdated || !sub.uris[uri]) {
			continue
		}
		p := map[string]json.RawMessage{}
		maps.Copy(p, params)
		meta := object(p["_meta"])
		meta[methods.MetaSubscriptionID] = sub.id
		p["_meta"], _ = jsonrpc.Marshal(meta)
		b, _ := jsonrpc.Marshal(p)
		out = append(out, jsonrpc.NewNotification(m.Method, json.RawMessage(b)))
	}
	if len(out) == 0 {
		return nil
	}
	for _, x := range out[1:] {
		c.enqueueLocked(x)
	}
	return out[0]
}
