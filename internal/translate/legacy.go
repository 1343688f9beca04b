package translate

import "github.com/mcpgate/mcpgate/internal/jsonrpc"

// legacyState is the translation for a 2025-11-25 client (one that opened with
// initialize) in front of a server that may speak only 2026-07-28.
type legacyState struct{}

// sendLegacy forwards a 2025-11-25 client's message.
func (c *Conn) sendLegacy(m *jsonrpc.Message) error { return c.up.Send(m) }

// recvLegacy returns a server message as a 2025-11-25 client must see it; nil when
// the translation consumed it.
func (c *Conn) recvLegacy(m *jsonrpc.Message) *jsonrpc.Message { return m }
