package methods

import "encoding/json"

// Small JSON helpers for the members of MCP messages, shared by every layer.

// OrObject is v, or {} when v is absent or JSON null: params or a result a peer left
// out read as an empty object.
func OrObject(v json.RawMessage) json.RawMessage {
	if len(v) == 0 || string(v) == "null" {
		return json.RawMessage("{}")
	}
	return v
}

// Object is v when it is a JSON object, else {}: a member the gateway writes as an
// object whatever the peer sent (v is read as the peer sent it, without spaces
// before it).
func Object(v json.RawMessage) json.RawMessage {
	if len(v) == 0 || v[0] != '{' {
		return json.RawMessage(`{}`)
	}
	return v
}
