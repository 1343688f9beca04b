// Package httpfront serves MCP over Streamable HTTP (MCP 2025-11-25, "Transports:
// Streamable HTTP") at one endpoint, normally /mcp, in front of any MCP session
// backend that speaks parsed messages (jsonrpc.Conn).
//
// Each HTTP MCP session (Mcp-Session-Id) gets its own Backend, started by the
// initialize request: mcpgate's gateway starts one stdio upstream per session and runs
// a relay.Session over it (docs/decisions.md#http-sessions). The session is the
// backend's jsonrpc.Conn, so a message is parsed once on its way through:
//
//   - a POST body is checked (size, nesting, batches, JSON-RPC shape), compacted to
//     one line, parsed, and handed to the backend's Recv;
//   - each message the backend Sends is routed: a response goes to the POST that carries the
//     same request id (as application/json or as an SSE stream); a progress
//     notification goes to the request whose progressToken it names; server-to-client
//     requests and log messages go to an in-flight request's stream when there is one,
//     otherwise — like every other notification — to the session's GET stream.
//
// Every stream has event ids ("<stream>/<seq>") and keeps a bounded replay buffer, so a
// client that lost a stream can resume it with GET and Last-Event-ID.
//
// DNS rebinding: the Host and Origin headers must name a loopback host, the listen
// host or an explicitly allowed host. Callers: an Authenticator maps the request to a
// ctxapi.User (bearer tokens, or the configured local user on loopback); a session is
// bound to the caller that created it.
package httpfront
