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

// The phases of the channels other than tools/call (docs/channels.md#phases). A
// policy file runs in one of them only when its source compares ctx.phase with that
// name.
const (
	PhaseList          Phase = "list"           // a tools/list response: ctx.tools
	PhaseResource      Phase = "resource"       // a resources/read result: ctx.response.contents
	PhasePrompt        Phase = "prompt"         // a prompts/get result: ctx.response.messages
	PhaseServerRequest Phase = "server_request" // sampling/createMessage, elicitation/create: ctx.params
	PhaseInstructions  Phase = "instructions"   // initialize, server/discover: ctx.params.instructions
	PhaseRoots         Phase = "roots"          // the client's roots/list answer to the server: ctx.params.roots
)

// User is ctx.user (docs/decisions.md#ctx): who is calling, from configuration, never from the client.
type User struct {
	UserID      string   `json:"userID"`
	CallerID    string   `json:"callerId"`
	CallerClass string   `json:"callerClass"` // "trusted", "standard" or "untrusted"
	Roles       []string `json:"roles"`
	// Scopes are the OAuth scopes of the caller's access token (docs/http.md#oauth);
	// empty for static tokens and stdio.
	Scopes []string `json:"scopes"`
	// Tenant selects the tenant policy layer that runs after the global set
	// (docs/policies.md#layers): from an OAuth claim, a token entry or the caller
	// class; "" for none.
	Tenant string `json:"tenant,omitempty"`
}

// Response is ctx.response in the post phase: the CallToolResult's content array and,
// as our extension, its structuredContent (nil when the result has none). In the
// resource phase Content is the resources/read contents array (ctx.response.contents),
// in the prompt phase the prompts/get messages array (ctx.response.messages).
type Response struct {
	Content           json.RawMessage
	StructuredContent json.RawMessage
}

// Call is everything a policy sees as ctx for one phase: of a tools/call (pre, post) or
// of another channel's message (the phases above).
type Call struct {
	Phase      Phase
	Method     string          // the JSON-RPC method behind the phase (ctx.method)
	Tool       string          // the name the client sees; "" outside pre and post
	Server     string          // the configured name of the server the message goes to or came from, or ""
	ToolAccess string          // DADL access tag: read, write, admin, dangerous, custom, or ""
	Params     json.RawMessage // tools/call arguments, or the request's params in the other phases; a JSON object
	Response   *Response       // post, resource and prompt phases
	Tools      json.RawMessage // list phase: the listed tools, a JSON array
	User       User
	Findings   []engine.Finding // built-in findings for this phase
	// RateLimitExceeded backs ctx.rateLimitExceeded(n); nil means never exceeded.
	RateLimitExceeded func(n int) bool
}
