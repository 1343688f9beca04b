package httpfront

import (
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/mcpgate/mcpgate/internal/jsonrpc"
	"github.com/mcpgate/mcpgate/internal/methods"
)

// TestSessionHeaders: a 2025-11-25 session's request that carries 2026-07-28's marks
// (the MCP-Protocol-Version header or _meta protocolVersion) is -32022; Mcp-Method or
// Mcp-Name headers that disagree with the body are -32020; headers that agree, and
// none, pass.
func TestSessionHeaders(t *testing.T) {
	const call = `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"transfer_funds","arguments":{"amount":5000}}}`
	for _, tc := range []struct {
		name    string
		headers map[string]string
		body    string
		want    int
	}{
		{"plain", map[string]string{"Mcp-Protocol-Version": "2025-11-25"}, call, 0},
		{"matching headers", map[string]string{"Mcp-Method": "tools/call", "Mcp-Name": "transfer_funds"}, call, 0},
		{"base64 name that matches", map[string]string{"Mcp-Method": "tools/call", "Mcp-Name": "=?base64?dHJhbnNmZXJfZnVuZHM=?="}, call, 0},
		{"Mcp-Name of another tool", map[string]string{"Mcp-Protocol-Version": "2025-11-25", "Mcp-Method": "tools/call", "Mcp-Name": "read_calendar"}, call, methods.CodeHeaderMismatch},
		{"base64 Mcp-Name of another tool", map[string]string{"Mcp-Name": "=?base64?cmVhZF9jYWxlbmRhcg==?="}, call, methods.CodeHeaderMismatch},
		{"Mcp-Method of another method", map[string]string{"Mcp-Method": "tools/list"}, call, methods.CodeHeaderMismatch},
		{"Mcp-Name on a method without a name", map[string]string{"Mcp-Name": "x"}, `{"jsonrpc":"2.0","id":1,"method":"tools/list"}`, methods.CodeHeaderMismatch},
		{"2026-07-28 header in a session", map[string]string{"Mcp-Protocol-Version": "2026-07-28"}, call, methods.CodeUnsupportedProtocolVersion},
		{"2026-07-28 _meta in a session", nil, strings.Replace(call, `"arguments"`, `"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}},"arguments"`, 1), methods.CodeUnsupportedProtocolVersion},
		{"a notification is not checked", map[string]string{"Mcp-Method": "x"}, `{"jsonrpc":"2.0","method":"notifications/initialized"}`, 0},
	} {
		r := httptest.NewRequest("POST", "/mcp", nil)
		for k, v := range tc.headers {
			r.Header.Set(k, v)
		}
		msg, err := jsonrpc.Parse([]byte(tc.body))
		if err != nil {
			t.Fatal(err)
		}
		if code, _ := sessionHeaders(r, msg); code != tc.want {
			t.Errorf("%s: %d, want %d", tc.name, code, tc.want)
		}
	}
}
