package relay

import (
	"encoding/json"

	"github.com/mcpgate/mcpgate/internal/jsonrpc"
	"github.com/mcpgate/mcpgate/internal/jsonscan"
	"github.com/mcpgate/mcpgate/internal/methods"
	"github.com/mcpgate/mcpgate/internal/pipeline"
)

// maxRootsAsked bounds the roots/list requests a session keeps waiting for the
// client's answer; a server asking for more while they wait is refused, so no answer
// reaches it unfiltered.
const maxRootsAsked = 256

// rootsBusy answers a roots/list request over maxRootsAsked.
var rootsBusy, _ = jsonrpc.Marshal(jsonrpc.ErrorObject{Code: methods.CodeInternalError,
	Message: "mcpgate: too many roots/list requests wait for the client's answer"})

// askRoots notes a server's roots/list request, so that the client's answer goes
// through Pipeline.Roots (the server's pinned roots, the input rules, the roots
// phase). It reports false when the request must
// be refused (too many waiting).
func (s *Session) askRoots(msg *jsonrpc.Message, server string) bool {
	if s.opts.Pipeline == nil {
		return true
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.rootsAsked == nil {
		s.rootsAsked = map[string]string{}
	}
	if len(s.rootsAsked) >= maxRootsAsked {
		return false
	}
	s.rootsAsked[msg.IDKey()] = server
	return true
}

// answerRoots runs the client's answer to a roots/list request through
// Pipeline.Roots (docs/channels.md#roots); any other response is returned as it is.
func (s *Session) answerRoots(msg *jsonrpc.Message) *jsonrpc.Message {
	s.mu.Lock()
	server, asked := s.rootsAsked[msg.IDKey()]
	delete(s.rootsAsked, msg.IDKey())
	s.mu.Unlock()
	if !asked || msg.Error != nil || s.opts.Pipeline == nil {
		return msg
	}
	info, version := s.clientOf(nil)
	out, changed := s.opts.Pipeline.Roots(pipeline.Channel{User: s.opts.User, ClientInfo: info, ProtocolVersion: version, Server: server},
		msg.Result, s.opts.Roots[server])
	s.declare(server, out)
	if !changed {
		return msg
	}
	m := jsonrpc.NewResponse(msg.ID, out)
	m.Upstream = msg.Upstream
	return m
}

// pinInputRoots runs a 2026-07-28 retry's inputResponses that answer roots/list (a
// ListRootsResult: a member "roots") through Pipeline.Roots for the server the
// request goes to, as answerRoots does a 2025-11-25 answer.
func (s *Session) pinInputRoots(msg *jsonrpc.Message) *jsonrpc.Message {
	if !jsonscan.MayHold(msg.Params, "inputResponses") { // "input\u0052esponses" too
		return msg
	}
	server := s.opts.Server
	if routed, err := s.route(msg); err == nil && routed.Upstream != "" {
		server = routed.Upstream
	}
	pins := s.opts.Roots[server]
	var params map[string]json.RawMessage
	var answers map[string]json.RawMessage
	if json.Unmarshal(msg.Params, &params) != nil || json.Unmarshal(params["inputResponses"], &answers) != nil {
		return msg
	}
	changed := false
	for k, a := range answers {
		var r map[string]json.RawMessage
		if json.Unmarshal(a, &r) != nil || r["roots"] == nil {
			continue
		}
		info, version := s.clientOf(msg.Params)
		out, ch := s.opts.Pipeline.Roots(pipeline.Channel{User: s.opts.User, ClientInfo: info, ProtocolVersion: version, Server: server,
			Via: msg.Method}, a, pins)
		s.declare(server, out)
		if ch {
			answers[k], changed = out, true
		}
	}
	if !changed {
		return msg
	}
	params["inputResponses"], _ = json.Marshal(answers)
	p, _ := json.Marshal(params)
	return msg.WithParams(p)
}

// declare keeps the roots a server got (a ListRootsResult, after Pipeline.Roots) as
// the client's latest declared roots for it; an unreadable result declares none.
func (s *Session) declare(server string, result json.RawMessage) {
	var v struct {
		Roots []struct {
			URI string `json:"uri"`
		} `json:"roots"`
	}
	_ = json.Unmarshal(result, &v)
	uris := make([]string, 0, len(v.Roots))
	for _, r := range v.Roots {
		if r.URI != "" {
			uris = append(uris, r.URI)
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.declared == nil {
		s.declared = map[string][]string{}
	}
	s.declared[server] = uris
}

// declaredRoots are the roots server last got from the client (nil: none known), for
// the output rules of its results (pipeline.Call.Roots).
func (s *Session) declaredRoots(server string) []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.declared[server]
}

// forgetRoots drops every server's declared roots when the client says its roots
// changed (notifications/roots/list_changed): until a server asks again, its results
// are judged as with no roots declared, not by roots the client no longer has.
func (s *Session) forgetRoots() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.declared = nil
}
