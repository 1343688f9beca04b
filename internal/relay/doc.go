// Package relay is mcpgate's transparent MCP relay, one Session per client: every
// JSON-RPC message goes through in both directions with its id and unknown fields
// intact. It keeps the session's state around the messages: the pending client
// requests it forwarded and their cancellation, the caller's visibility (the tools the
// last filtered listing withheld, so a call to one is rejected), the tool access tags
// (configured, else the server's annotations), the task index of task-augmented
// tools/calls and who owns each task (taskowners.go), and the one-reading refusals at
// the door (reading.go). What a message does beside being relayed (a call through the
// pipeline, a listing observed, a cancellation settled) is the method table's Effects.
//
// What a message may carry is decided by the pipeline: a tools/call goes to
// Pipeline.Handle, and every other server→client message (responses, with
// Exchange.Method set to the method of the request they answer; server→client
// requests; notifications) through the pipeline's channel filters before it is
// written to the client (channels.go), which may pass it byte for byte, replace it or
// drop it. A replaced or dropped response still settles its pending request.
//
// Both sides are jsonrpc.Conn values carrying parsed messages (parsed once where they
// enter the gateway). The relay owns the client requests it forwards: their pending
// table, their timeouts and the cancellations it sends. Below it, the translation
// between revisions (internal/translate) keeps the rounds of a request it carries
// across revisions (the retries of an input_required request and the server requests
// they become, under its own ids); the multiplexer keeps its own fan-out requests and
// which server asked each server→client request; the restart supervisor and the
// remote client keep no request tables. A dropped server message comes up as a
// *jsonrpc.DropError (the relay fails the request it answered), a lost connection as
// a *jsonrpc.ResetError naming its server (the relay fails the requests routed there),
// and a request that cannot be delivered as a Send error. A request whose
// input_required result had an input request withheld is ended through the
// upstream's Abandon (upstream.Abandon, abandonedInput): the translation ends a round
// it made itself, and a server that made the result gets notifications/cancelled.
package relay
