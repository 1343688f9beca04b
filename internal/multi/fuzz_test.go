package multi

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/mcpgate/mcpgate/internal/jsonrpc"
)

// FuzzRoute: routing any client request never panics; a routed request keeps its id
// and method, is valid JSON on one line, and names a configured server.
func FuzzRoute(f *testing.F) {
	for _, s := range []string{
		`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"a_x","arguments":{}}}`,
		`{"jsonrpc":"2.0","id":"r","method":"resources/read","params":{"uri":"b+demo://x/{y}"}}`,
		`{"jsonrpc":"2.0","id":2,"method":"completion/complete","params":{"ref":{"type":"ref/prompt","name":"a_p"}}}`,
		`{"jsonrpc":"2.0","id":3,"method":"prompts/get","params":[]}`,
	} {
		f.Add([]byte(s))
	}
	m := &Mux{byName: map[string]*Server{"a": {Name: "a"}, "b": {Name: "b"}}}
	f.Fuzz(func(t *testing.T, line []byte) {
		msg, err := jsonrpc.Parse(line)
		if err != nil || msg.Kind != jsonrpc.KindRequest {
			return
		}
		out, err := m.Route(msg)
		if err != nil || out == msg {
			return
		}
		if out.Upstream != "a" && out.Upstream != "b" {
			t.Fatalf("routed to %q", out.Upstream)
		}
		back, err := jsonrpc.Parse(out.Raw)
		if err != nil || strings.ContainsAny(string(out.Raw), "\n\r") {
			t.Fatalf("routed raw %q: %v", out.Raw, err)
		}
		if back.IDKey() != msg.IDKey() || back.Method != msg.Method {
			t.Fatalf("routed %q from %q", out.Raw, line)
		}
	})
}

// FuzzRewriteResponse: namespacing any server response never panics and yields a
// valid response with the same id; an unchanged response is the same message.
func FuzzRewriteResponse(f *testing.F) {
	f.Add("tools/call", []byte(`{"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"resource_link","uri":"demo://x"}]}}`))
	f.Add("resources/read", []byte(`{"jsonrpc":"2.0","id":1,"result":{"contents":[{"uri":"file:///a"},7]}}`))
	f.Add("prompts/get", []byte(`{"jsonrpc":"2.0","id":1,"result":{"messages":[{"content":{"type":"resource","resource":{"uri":""}}}]}}`))
	m := &Mux{byName: map[string]*Server{"s": {Name: "s"}}}
	f.Fuzz(func(t *testing.T, method string, line []byte) {
		msg, err := jsonrpc.Parse(line)
		if err != nil || msg.Kind != jsonrpc.KindResponse {
			return
		}
		msg.Upstream = "s"
		out := m.RewriteResponse(method, msg)
		if out == msg {
			return
		}
		back, err := jsonrpc.Parse(out.Raw)
		if err != nil || back.IDKey() != msg.IDKey() || !json.Valid(out.Result) {
			t.Fatalf("rewrote %q into %q: %v", line, out.Raw, err)
		}
		if !strings.Contains(string(out.Result), `"s+`) {
			t.Fatalf("rewrote without namespacing: %q", out.Raw)
		}
	})
}
