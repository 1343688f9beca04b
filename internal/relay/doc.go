// Package relay is mcpgate's transparent MCP relay, one Session per client: every
// JSON-RPC message goes through in both directions with its id and unknown fields
// intact. It owns the session's state around the messages: the pending client
// requests and their cancellation, the caller's visibility (the tools the last
// filtered listing withheld, so a call to one is rejected), the tool access tags
// (configured, else the server's annotations), the task index of task-augmented
// tools/calls, and the one-reading refusals at the door (reading.go). What a message
// may carry is decided by the pipeline: tools/call goes to Pipeline.Handle, every
// other server→client message to Options.Intercept.
//
// The relay is the only owner of pending client requests. Both sides are
// jsonrpc.Conn values carrying parsed messages (parsed once where they enter the
// gateway); below the relay, the restart supervisor, the multiplexer and the remote
// client keep no request tables: a dropped server message comes up as a
// *jsonrpc.DropError (the relay fails the request it answered), a lost connection as a
// *jsonrpc.ResetError naming its server (the relay fails the requests routed there),
// and a request that cannot be delivered as a Send error.
//
// # Intercepting server messages
//
// Options.Intercept sees every server→client message before it is written to the
// client: responses (with Exchange.Method set to the method of the request they
// answer, e.g. resources/read, prompts/get, tools/list, initialize), server→client
// requests (sampling/createMessage, elicitation/create, roots/list, ping) and
// notifications, each with the server it came from. It returns the message to write
// (the same one to pass it byte for byte, another to replace it, nil to drop it). A
// replaced or dropped response still settles its pending request. The responses of
// tools/call are the exception: the pipeline filters and records them, so they never
// reach Intercept.
package relay
