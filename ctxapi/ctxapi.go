package ctxapi

import (
	"encoding/json"

	"github.com/mcpgate/mcpgate/engine"
)

// Phase is "pre" (before the upstream call) or "post" (after it), docs/decisions.md#policies.
type Phase string

// The two policy phases (docs/decisions.md#policies).
const (
	PhasePre  Phase = "pre"
	PhasePost Phase = "post"
)

// User is ctx.user (docs/decisions.md#ctx): who is calling, from configuration, never from the client.
type User struct {
	UserID      string   `json:"userID"`
	CallerID    string   `json:"callerId"`
	CallerClass string   `json:"callerClass"` // "trusted", "standard" or "untrusted"
	Roles       []string `json:"roles"`
}

// Response is ctx.response in the post phase: the CallToolResult's content array and,
// as our extension, its structuredContent (nil when the result has none).
type Response struct {
	Content           json.RawMessage
	StructuredContent json.RawMessage
}

// Call is everything a policy sees as ctx for one phase of one tools/call.
type Call struct {
	Phase      Phase
	Tool       string          // the name the client sees
	ToolAccess string          // DADL access tag: read, write, admin, dangerous, custom, or ""
	Params     json.RawMessage // tools/call arguments, always a JSON object
	Response   *Response       // post phase only
	User       User
	Findings   []engine.Finding // built-in findings for this phase
	// RateLimitExceeded backs ctx.rateLimitExceeded(n); nil means never exceeded.
	RateLimitExceeded func(n int) bool
}
