package httpfront

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/mcpgate/mcpgate/ctxapi"
	"github.com/mcpgate/mcpgate/internal/jsonrpc"
	"github.com/mcpgate/mcpgate/internal/methods"
)

// TestSubscriptionMeta: a listen stream's notifications and closing response name the
// client's own request id as subscriptionId; other messages are left as they are.
func TestSubscriptionMeta(t *testing.T) {
	n, _ := jsonrpc.Parse([]byte(`{"jsonrpc":"2.0","method":"notifications/tools/list_changed","params":{"_meta":{"io.modelcontextprotocol/subscriptionId":"m7"}}}`))
	if got := string(subscriptionMeta(n, json.RawMessage(`42`)).Raw); !strings.Contains(got, `"io.modelcontextprotocol/subscriptionId":42`) {
		t.Errorf("notification: %s", got)
	}
	r, _ := jsonrpc.Parse([]byte(`{"jsonrpc":"2.0","id":"m7","result":{"resultType":"complete","_meta":{"io.modelcontextprotocol/subscriptionId":"m7"}}}`))
	if got := string(subscriptionMeta(r.WithID(json.RawMessage(`42`)), json.RawMessage(`42`)).Raw); !strings.Contains(got, `"io.modelcontextprotocol/subscriptionId":42`) || !strings.Contains(got, `"id":42`) {
		t.Errorf("response: %s", got)
	}
	// the member name is read decoded, as the client reads it
	for _, name := range []string{`"io.modelcontextprotocol/subscription\u0049d"`, `"io.modelcontextprotocol\/subscriptionId"`} {
		e, _ := jsonrpc.Parse([]byte(`{"jsonrpc":"2.0","method":"notifications/tools/list_changed","params":{"_meta":{` + name + `:"m7"}}}`))
		if got := string(subscriptionMeta(e, json.RawMessage(`42`)).Raw); !strings.Contains(got, `"io.modelcontextprotocol/subscriptionId":42`) {
			t.Errorf("%s: %s", name, got)
		}
	}
	plain, _ := jsonrpc.Parse([]byte(`{"jsonrpc":"2.0","method":"notifications/message","params":{"level":"info","data":"x"}}`))
	if got := subscriptionMeta(plain, json.RawMessage(`42`)); got != plain {
		t.Errorf("plain notification changed: %s", got.Raw)
	}
}

// TestCheckHeaders: MCP-Protocol-Version, Mcp-Method and Mcp-Name must match the body
// (-32020), a base64 sentinel is decoded, and Mcp-Name is only asked of the methods
// that mirror a params member.
func TestCheckHeaders(t *testing.T) {
	msg, _ := jsonrpc.Parse([]byte(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"é"}}`))
	list, _ := jsonrpc.Parse([]byte(`{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{}}`))
	for _, c := range []struct {
		m       *jsonrpc.Message
		headers map[string]string
		code    int
	}{
		{msg, map[string]string{"Mcp-Protocol-Version": "2026-07-28", "Mcp-Method": "tools/call", "Mcp-Name": "=?base64?w6k=?="}, 0},
		{msg, map[string]string{"Mcp-Protocol-Version": "2026-07-28", "Mcp-Method": "tools/call", "Mcp-Name": "e"}, methods.CodeHeaderMismatch},
		{msg, map[string]string{"Mcp-Protocol-Version": "2026-07-28", "Mcp-Method": "tools/call"}, methods.CodeHeaderMismatch},
		{msg, map[string]string{"Mcp-Protocol-Version": "2025-11-25", "Mcp-Method": "tools/call", "Mcp-Name": "=?base64?w6k=?="}, methods.CodeHeaderMismatch},
		{list, map[string]string{"Mcp-Protocol-Version": "2026-07-28", "Mcp-Method": "tools/list"}, 0},
		{list, map[string]string{"Mcp-Protocol-Version": "2026-07-28", "Mcp-Method": "tools/call"}, methods.CodeHeaderMismatch},
		{list, map[string]string{"Mcp-Protocol-Version": "2026-07-28"}, methods.CodeHeaderMismatch},
	} {
		r := httptestRequest(c.headers)
		if code, text := checkHeaders(r, c.m, "2026-07-28"); code != c.code {
			t.Errorf("%s %v: code %d (%s), want %d", c.m.Method, c.headers, code, text, c.code)
		}
	}
}

func httptestRequest(headers map[string]string) *http.Request {
	r, _ := http.NewRequest("POST", "http://127.0.0.1/mcp", nil)
	for k, v := range headers {
		r.Header.Set(k, v)
	}
	return r
}

// TestModernStatus: the 2026-07-28 errors -32020 to -32022 answer 400 Bad Request;
// results and other errors answer 200.
func TestModernStatus(t *testing.T) {
	for _, c := range []struct {
		resp string
		want int
	}{
		{`{"jsonrpc":"2.0","id":1,"error":{"code":-32021,"message":"m","data":{"requiredCapabilities":{"sampling":{}}}}}`, http.StatusBadRequest},
		{`{"jsonrpc":"2.0","id":1,"error":{"code":-32020,"message":"m"}}`, http.StatusBadRequest},
		{`{"jsonrpc":"2.0","id":1,"error":{"code":-32022,"message":"m"}}`, http.StatusBadRequest},
		{`{"jsonrpc":"2.0","id":1,"error":{"code":-32602,"message":"m"}}`, http.StatusOK},
		{`{"jsonrpc":"2.0","id":1,"error":{"code":-32019,"message":"m"}}`, http.StatusOK},
		{`{"jsonrpc":"2.0","id":1,"result":{"resultType":"complete"}}`, http.StatusOK},
		{`not json`, http.StatusOK},
	} {
		if got := modernStatus([]byte(c.resp)); got != c.want {
			t.Errorf("%s: %d, want %d", c.resp, got, c.want)
		}
	}
}

// TestTaskStatusOnTaskRequest: a 2026-07-28 client has no GET stream, so a task's
// status notification (notifications/tasks, notifications/tasks/status) goes on the
// SSE stream of its in-flight request for that task (tasks/cancel here), never on
// another request's; one naming a task no request is for, and one for a task whose
// request asked for JSON, go where they went before (the GET stream, which
// 2026-07-28 has not).
func TestTaskStatusOnTaskRequest(t *testing.T) {
	f := New(Options{Auth: LocalAuth(ctxapi.User{UserID: "u"}),
		Start: func(context.Context, ctxapi.User) (Backend, error) { return echoBackend{}, nil }})
	t.Cleanup(func() { _ = f.Close(context.Background()) })
	s := newSession(f, "sid", Identity{Key: "local"})
	open := func(id int, method, params string, jsonMode bool) *stream {
		t.Helper()
		req, err := jsonrpc.Parse([]byte(fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":%q,"params":%s}`, id, method, params)))
		if err != nil {
			t.Fatal(err)
		}
		st, err := s.openRequest(req, jsonMode)
		if err != nil {
			t.Fatal(err)
		}
		st.clientID = req.ID // a 2026-07-28 request
		return st
	}
	call := open(1, "tools/call", `{"name":"work","arguments":{}}`, false)
	cancel := open(2, "tasks/cancel", `{"taskId":"T"}`, false)
	asJSON := open(3, "tasks/get", `{"taskId":"J"}`, true)
	events := func(st *stream) string {
		s.mu.Lock()
		defer s.mu.Unlock()
		var b strings.Builder
		for _, e := range st.events {
			b.Write(e.data)
		}
		return b.String()
	}
	for _, method := range []string{"notifications/tasks", "notifications/tasks/status"} {
		for _, id := range []string{"T", "U", "J"} {
			n, _ := jsonrpc.Parse([]byte(`{"jsonrpc":"2.0","method":"` + method + `","params":{"taskId":"` + id + `","status":"cancelled"}}`))
			s.deliver(n)
		}
		if got := events(cancel); !strings.Contains(got, `"method":"`+method+`","params":{"taskId":"T"`) || strings.Contains(got, `"U"`) || strings.Contains(got, `"J"`) {
			t.Errorf("%s: the task's request stream got %s", method, got)
		}
	}
	if got := events(call) + events(asJSON); got != "" {
		t.Errorf("other request streams got %s", got)
	}
	if got := events(s.standalone); !strings.Contains(got, `"U"`) || !strings.Contains(got, `"J"`) || strings.Contains(got, `"T"`) {
		t.Errorf("the GET stream got %s", got)
	}
}
