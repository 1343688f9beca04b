package translate

import "github.com/mcpgate/mcpgate/internal/jsonrpc"

// modernState is the translation for a 2026-07-28 client (its requests carry the
// per-request _meta envelope) in front of a server that may speak only 2025-11-25.
type modernState struct{}

// sendModern forwards a 2026-07-28 client's message.
func (c *Conn) sendModern(m *jsonrpc.Message) error { return c.up.Send(m) }

// recvModern returns a server message as a 2026-07-28 client must see it; nil when
// the translation consumed it.
func (c *Conn) recvModern(m *jsonrpc.Message) *jsonrpc.Message { return m }
