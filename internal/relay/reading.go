package relay

import (
	"context"
	"encoding/json"

	"github.com/mcpgate/mcpgate/internal/jsonrpc"
	"github.com/mcpgate/mcpgate/internal/methods"
	"github.com/mcpgate/mcpgate/internal/pipeline"
	"github.com/mcpgate/mcpgate/vocab"
)

// One reading (docs/decisions.md#one-reading): a message that peers could read
// differently is refused where it enters, in either direction, and never forwarded.
// Each refusal leaves one record naming the reason code: a refused response, that of
// the client request it answers.

// recordRefusal writes the refusal's record, when the session has a pipeline.
func (s *Session) recordRefusal(method, server string, reason vocab.Reason, fromServer bool) string {
	if s.opts.Pipeline == nil {
		return ""
	}
	return s.opts.Pipeline.Refused(pipeline.Channel{Method: method, User: s.opts.User, ClientInfo: s.clientInfo(), Server: server}, reason, fromServer)
}

// refuseClient answers a client message with more than one reading with -32600 under
// its id (null when the id itself is ambiguous); the server never sees it.
func (s *Session) refuseClient(a *jsonrpc.AmbiguousError) {
	s.log.Warn("client message refused: it has more than one reading", "reason", a.Reason, "method", methods.Known(a.Method))
	id := s.recordRefusal(a.Method, s.opts.Server, a.Reason, false)
	s.replyError(a.ID, methods.CodeInvalidRequest, a.Refusal(id))
}

// refuseUpstream refuses a server message with more than one reading: a request is
// answered to its server with -32600, a response fails the client request it
// answers (-32603), a notification is dropped. None reaches the client.
func (s *Session) refuseUpstream(d *jsonrpc.DropError) {
	a := d.Ambiguous
	server := d.Upstream
	if server == "" {
		server = s.opts.Server
	}
	s.log.Warn("upstream message refused: it has more than one reading", "upstream", server, "reason", a.Reason, "method", methods.Known(a.Method))
	switch {
	case a.Kind == jsonrpc.KindRequest:
		id := s.recordRefusal(a.Method, server, a.Reason, true)
		answer := jsonrpc.NewErrorResponse(a.ID, methods.CodeInvalidRequest, a.Refusal(id))
		answer.Upstream = d.Upstream
		s.send(answer)
		if a.Answers && a.ID != nil { // read as a response, it answers this request too
			if !s.failRefused(a, d.Upstream) {
				s.failPending(a.ID, d.Upstream, "it has more than one reading ("+string(a.Reason)+"; audit log entry "+id+")")
			}
		}
	case a.Kind == jsonrpc.KindResponse:
		if a.ID != nil && s.failRefused(a, d.Upstream) {
			return
		}
		// Nothing of the client's waits for it (or the gateway's own request does):
		// the refusal's record is the only one.
		method := ""
		if a.ID != nil {
			s.mu.Lock()
			if p := s.pending[jsonrpc.IDKey(a.ID)]; p != nil {
				method = p.req.Method
			}
			s.mu.Unlock()
		}
		id := s.recordRefusal(method, server, a.Reason, true)
		if a.ID != nil {
			s.failPending(a.ID, d.Upstream, "it has more than one reading ("+string(a.Reason)+"; audit log entry "+id+")")
		}
	default:
		s.recordRefusal(a.Method, server, a.Reason, true)
	}
}

// failRefused fails the client request in flight under a.ID to server with the
// refusal, so that request's one record carries the reason (pipeline: Refused on the
// response) and is the one the client's -32603 cites; false when no client request
// of server's waits (none, the gateway's own, or no pipeline to record it).
func (s *Session) failRefused(a *jsonrpc.AmbiguousError, server string) bool {
	key := jsonrpc.IDKey(a.ID)
	s.mu.Lock()
	p := s.pending[key]
	s.mu.Unlock()
	if p == nil || p.route != server || s.opts.Pipeline == nil || jsonrpc.IsOwnIDKey(key) {
		return false
	}
	m := jsonrpc.ResponseErrorMessage(a.ID, "it has more than one reading ("+string(a.Reason)+")")
	m.Upstream, m.Refused = server, a.Reason
	s.fromUpstream(m)
	return true
}

// caseVariantArgument refuses a tools/call, as it is about to go upstream, when an
// argument is named like a property of the tool's inputSchema only under case
// folding: the answer (a -32600 error response) is returned in place of the
// server's, and the refusal is recorded; nil lets the call go.
func (s *Session) caseVariantArgument(ctx context.Context, msg *jsonrpc.Message, params json.RawMessage, server string) *jsonrpc.Message {
	var name string
	var args []byte
	for _, m := range jsonrpc.Members(params) {
		switch m.Name {
		case "name":
			if json.Unmarshal(m.Value, &name) != nil {
				return nil
			}
		case "arguments":
			args = m.Value
		}
	}
	if name == "" || len(args) == 0 || !s.tools.caseVariantArgument(ctx, name, args) {
		return nil
	}
	a := &jsonrpc.AmbiguousError{Reason: vocab.ReasonCaseVariantMember, Kind: jsonrpc.KindRequest, ID: msg.ID, Method: msg.Method}
	s.log.Warn("client message refused: it has more than one reading", "reason", a.Reason, "method", a.Method, "tool", name)
	return jsonrpc.NewErrorResponse(msg.ID, methods.CodeInvalidRequest, a.Refusal(s.recordRefusal(msg.Method, server, a.Reason, false)))
}

// failPending fails the request in flight under id to server ("" with one server), if
// there is one: a server cannot fail another server's request.
func (s *Session) failPending(id []byte, server, why string) {
	s.mu.Lock()
	p := s.pending[jsonrpc.IDKey(id)]
	s.mu.Unlock()
	if p != nil && p.route == server {
		s.fromUpstream(jsonrpc.ResponseErrorMessage(id, why))
	}
}
