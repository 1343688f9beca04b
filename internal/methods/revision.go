package methods

import (
	"encoding/json"

	"github.com/mcpgate/mcpgate/internal/jsonrpc"
	"github.com/mcpgate/mcpgate/internal/jsonscan"
)

// Members of the 2026-07-28 per-request _meta envelope (schema.ts "RequestMetaObject")
// and of a result's _meta.
const (
	MetaProtocolVersion    = "io.modelcontextprotocol/protocolVersion"
	MetaClientInfo         = "io.modelcontextprotocol/clientInfo"
	MetaClientCapabilities = "io.modelcontextprotocol/clientCapabilities"
	MetaLogLevel           = "io.modelcontextprotocol/logLevel"
	MetaServerInfo         = "io.modelcontextprotocol/serverInfo"
	// MetaSubscriptionID names, in a notification's _meta, the subscriptions/listen
	// request (its id) the notification belongs to (schema.ts
	// "SubscriptionsListenResultMeta").
	MetaSubscriptionID = "io.modelcontextprotocol/subscriptionId"
)

// Envelope is the per-request _meta of a 2026-07-28 request: the revision the client
// speaks, its identity and its capabilities, carried on every request instead of an
// initialize handshake.
type Envelope struct {
	ProtocolVersion    string
	ClientInfo         json.RawMessage // {name, version, …}; nil when absent
	ClientCapabilities json.RawMessage // nil when absent
}

// EnvelopeOf reads the envelope of a request's params; ok is false when params carry
// no string _meta protocolVersion (a 2025-11-25 request). Members are read by their
// exact names.
func EnvelopeOf(params json.RawMessage) (e Envelope, ok bool) {
	if !jsonscan.MayHold(params, MetaProtocolVersion) {
		return e, false // the common case of a legacy request, without decoding
	}
	var p struct {
		Meta map[string]json.RawMessage `json:"_meta"`
	}
	var top map[string]json.RawMessage
	if json.Unmarshal(params, &top) != nil || json.Unmarshal(top["_meta"], &p.Meta) != nil {
		return e, false
	}
	if json.Unmarshal(p.Meta[MetaProtocolVersion], &e.ProtocolVersion) != nil || e.ProtocolVersion == "" {
		return Envelope{}, false
	}
	e.ClientInfo, e.ClientCapabilities = p.Meta[MetaClientInfo], p.Meta[MetaClientCapabilities]
	return e, true
}

// Meta is the envelope as a _meta object, for a request of the gateway's own:
// clientInfo is the gateway's, never the client's.
func (e Envelope) Meta(clientInfo any) map[string]any {
	caps := json.RawMessage(`{}`)
	if len(e.ClientCapabilities) > 0 {
		caps = e.ClientCapabilities
	}
	return map[string]any{MetaProtocolVersion: e.ProtocolVersion, MetaClientCapabilities: caps, MetaClientInfo: clientInfo}
}

// Conform makes a result the gateway wrote valid in the revision of version: in
// 2026-07-28 every result carries resultType ("complete" unless it says otherwise),
// and a cacheable one ttlMs and cacheScope (0 and "private" unless it has valid ones;
// schema.ts "CacheableResult"); private forces cacheScope "private" (a result changed
// for one caller). A result of an earlier revision, or one that is not an object,
// comes back as it is.
func Conform(m *Method, version string, result json.RawMessage, private bool) json.RawMessage {
	if RevisionOf(version) != Rev20260728 {
		return result
	}
	var r map[string]json.RawMessage
	if json.Unmarshal(result, &r) != nil || r == nil {
		return result
	}
	changed := false
	set := func(k, v string) { r[k], changed = json.RawMessage(v), true }
	if _, ok := r["resultType"]; !ok {
		set("resultType", `"complete"`)
	}
	if m != nil && m.Cacheable && decodedString(r["resultType"]) == "complete" {
		var ttl float64
		if json.Unmarshal(r["ttlMs"], &ttl) != nil || ttl < 0 || ttl != float64(int64(ttl)) {
			set("ttlMs", `0`)
		}
		if s := decodedString(r["cacheScope"]); private && s != "private" || s != "private" && s != "public" {
			set("cacheScope", `"private"`)
		}
	}
	if !changed {
		return result
	}
	b, err := jsonrpc.Marshal(r)
	if err != nil {
		return result
	}
	return b
}

// decodedString is the JSON string v decoded ("\u0063omplete" is "complete", as
// every peer reads it; docs/decisions.md#decoded-values), or "" when v is not a string.
func decodedString(v json.RawMessage) string {
	var s string
	_ = json.Unmarshal(v, &s)
	return s
}
