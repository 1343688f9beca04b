package upstream

import (
	"encoding/json"

	"github.com/mcpgate/mcpgate/internal/jsonrpc"
	"github.com/mcpgate/mcpgate/internal/methods"
)

// Abandoner is a connection that can end a client request's input rounds
// (2026-07-28 "Multi Round-Trip Requests") directly: the relay withheld an input
// request of the input_required result answering id, so the client will not retry
// it (docs/channels.md#input-requests). server names the server the request went to
// ("" when the session fronts one).
type Abandoner interface {
	Abandon(id json.RawMessage, server string) error
}

// Abandon ends the input rounds of the client request id on c: through c's own
// Abandon when it has one, else with a notifications/cancelled of id, which is what
// a server that speaks 2026-07-28 itself is told (MCP "Cancellation").
func Abandon(c jsonrpc.Conn, id json.RawMessage, server string) error {
	if a, ok := c.(Abandoner); ok {
		return a.Abandon(id, server)
	}
	return c.Send(WithheldCancel(id, server))
}

// WithheldCancel is the notifications/cancelled of the client request id for a
// server that made its input_required result itself, Upstream set to server.
func WithheldCancel(id json.RawMessage, server string) *jsonrpc.Message {
	n := jsonrpc.NewNotification(methods.NotificationCancelled, map[string]any{"requestId": id,
		"reason": "mcpgate: an input request was withheld; the client will not retry"})
	n.Upstream = server
	return n
}
