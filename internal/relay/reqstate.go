package relay

import (
	"bytes"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"fmt"

	"github.com/mcpgate/mcpgate/internal/jsonrpc"
	"github.com/mcpgate/mcpgate/internal/methods"
	"github.com/mcpgate/mcpgate/internal/reqstate"
	"github.com/mcpgate/mcpgate/vocab"
)

// Multi Round-Trip state (docs/decisions.md#request-state): the requestState of an
// input_required result reaches the client sealed in the gateway's envelope
// (internal/reqstate), bound to the caller, this session, the request's method,
// name and arguments; a retry's requestState is opened back into the server's own
// before the request goes on. A retry whose state does not open (changed, another
// caller's, session's, tool's or arguments', expired, used before, or one the
// gateway never issued) is refused with -32602 and a record, and never reaches the
// server.

// newStateSession is a session's random id for the states it seals.
func newStateSession() string {
	var b [12]byte
	_, _ = rand.Read(b[:])
	return base64.RawURLEncoding.EncodeToString(b[:])
}

func (s *Session) sealer() *reqstate.Sealer {
	if s.opts.RequestState != nil {
		return s.opts.RequestState
	}
	return reqstate.Default()
}

// stateBinding is what a state issued to (or presented by) a client request of
// method with params is bound to: the client's own view of the request.
func (s *Session) stateBinding(method string, params json.RawMessage) reqstate.Binding {
	var p map[string]json.RawMessage
	_ = json.Unmarshal(params, &p)
	b := reqstate.Binding{Caller: s.opts.User.UserID + "\x00" + s.opts.User.CallerID, Session: s.stateSession, Method: method, Arguments: p["arguments"]}
	if m := methods.Of(method); m != nil && m.NameParam != "" {
		var name string
		if json.Unmarshal(p[m.NameParam], &name) == nil {
			b.Name = name
		} else {
			b.Name = string(p[m.NameParam]) // not a string: compared as written
		}
	}
	return b
}

// mayCarryState reports whether raw may hold a requestState member (possibly
// spelled with \u escapes), so that most messages skip the decoding.
func mayCarryState(raw []byte) bool {
	return bytes.Contains(raw, []byte("requestState")) || bytes.Contains(raw, []byte(`\u`))
}

// openState returns a client request with its sealed requestState opened into the
// server's own, msg itself when it carries none, or nil when it was refused.
func (s *Session) openState(msg *jsonrpc.Message) *jsonrpc.Message {
	if !mayCarryState(msg.Params) {
		return msg
	}
	var p map[string]json.RawMessage
	if json.Unmarshal(msg.Params, &p) != nil {
		return msg
	}
	raw, ok := p["requestState"]
	if !ok {
		return msg
	}
	var token string
	_ = json.Unmarshal(raw, &token)
	inner, err := s.sealer().Open(s.stateBinding(msg.Method, msg.Params), token)
	if err != nil {
		s.refuse(msg.ID, msg.Method, methods.CodeInvalidParams, vocab.ReasonRequestStateInvalid,
			"mcpgate: "+err.Error()+": send the request again without requestState and inputResponses")
		return nil
	}
	p["requestState"], _ = jsonrpc.Marshal(inner)
	b, err := jsonrpc.Marshal(p)
	if err != nil {
		return msg
	}
	return msg.WithParams(b)
}

// sealState returns a response to a client request with the requestState of its
// input_required result sealed for b; resp itself when it has none. A state too
// large to seal fails the request (-32603).
func (s *Session) sealState(b reqstate.Binding, resp *jsonrpc.Message) *jsonrpc.Message {
	if resp == nil || resp.Kind != jsonrpc.KindResponse || resp.Error != nil || !mayCarryState(resp.Raw) {
		return resp
	}
	result := resp.Result
	if result == nil {
		m, err := jsonrpc.Parse(resp.Raw)
		if err != nil || m.Error != nil {
			return resp
		}
		result = m.Result
	}
	var r map[string]json.RawMessage
	if json.Unmarshal(result, &r) != nil || r == nil {
		return resp
	}
	var kind, state string
	raw, has := r["requestState"]
	if !has || json.Unmarshal(r["resultType"], &kind) != nil || kind != "input_required" {
		return resp
	}
	if json.Unmarshal(raw, &state) != nil {
		return jsonrpc.NewErrorResponse(resp.ID, methods.CodeInternalError, "mcpgate: the server's input_required result has a requestState that is not a string")
	}
	sealed, err := s.sealer().Seal(b, state)
	if err != nil {
		return jsonrpc.NewErrorResponse(resp.ID, methods.CodeInternalError, fmt.Sprintf("mcpgate: the server's requestState is over %d bytes; the request is failed", reqstate.MaxInner))
	}
	r["requestState"], _ = jsonrpc.Marshal(sealed)
	out, err := jsonrpc.Marshal(r)
	if err != nil {
		return resp
	}
	m := jsonrpc.NewResponse(resp.ID, out)
	m.Upstream = resp.Upstream
	return m
}
