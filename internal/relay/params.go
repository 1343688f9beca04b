package relay

import (
	"context"
	"encoding/json"
	"net/http"

	"github.com/mcpgate/mcpgate/internal/bound"
	"github.com/mcpgate/mcpgate/internal/jsonrpc"
	"github.com/mcpgate/mcpgate/internal/mcpparam"
	"github.com/mcpgate/mcpgate/internal/methods"
	"github.com/mcpgate/mcpgate/vocab"
)

// paramHeaders checks a 2026-07-28 tools/call's Mcp-Param-* headers (from the HTTP
// front) against its arguments, for the x-mcp-header properties of the tool's
// listed inputSchema (SEP-2243 "Custom Headers"). On a disagreement the client gets
// -32020 (HeaderMismatch) with data {mismatch: {header, body}}, as the reference
// server answers, the refusal is recorded (header_mismatch) and refused is true; the
// call never goes upstream. decls are the tool's declarations, for the headers of
// the call that goes (nil for a message without headers).
func (s *Session) paramHeaders(ctx context.Context, msg *jsonrpc.Message, server string) (decls []mcpparam.Declaration, refused bool) {
	if msg.ParamHeaders == nil {
		return nil, false
	}
	var p struct {
		Name      string          `json:"name"`
		Arguments json.RawMessage `json:"arguments"`
	}
	if json.Unmarshal(msg.Params, &p) != nil || p.Name == "" {
		return nil, false // the pipeline judges the params
	}
	decls = s.tools.paramDeclarations(ctx, p.Name)
	m := mcpparam.Check(decls, p.Arguments, http.Header(msg.ParamHeaders))
	if m == nil {
		return decls, false
	}
	s.log.Warn("client message refused: an Mcp-Param header disagrees with the arguments", "reason", vocab.ReasonHeaderMismatch,
		"method", msg.Method, "header", bound.Truncate(m.Header, bound.ToolName), "why", m.Reason)
	text := m.Message()
	if eventID := s.recordRefusal(msg.Method, server, vocab.ReasonHeaderMismatch, false); eventID != "" {
		text += " (audit log entry " + eventID + ")"
	}
	data, _ := json.Marshal(map[string]any{"mismatch": map[string]string{"header": m.Header, "body": m.Body}})
	obj, _ := jsonrpc.Marshal(jsonrpc.ErrorObject{Code: methods.CodeHeaderMismatch, Message: text, Data: data})
	s.write(&jsonrpc.Message{Raw: jsonrpc.ErrorResponseObjectRaw(msg.ID, obj), Kind: jsonrpc.KindResponse, ID: msg.ID, Error: obj})
	return nil, true
}

// toolNameOf is the name member of a tools/call's params ("" when absent).
func toolNameOf(params json.RawMessage) string {
	var p struct {
		Name string `json:"name"`
	}
	_ = json.Unmarshal(params, &p)
	return p.Name
}

// argumentsOf is the arguments member of a tools/call's params (nil when absent).
func argumentsOf(params json.RawMessage) json.RawMessage {
	var p struct {
		Arguments json.RawMessage `json:"arguments"`
	}
	_ = json.Unmarshal(params, &p)
	return p.Arguments
}
