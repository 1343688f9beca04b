package e2e

import (
	"context"
	"encoding/json"
	"net/http"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

func TestHTTPSessionLifecycle(t *testing.T) {
	_, fake := httpBinaries(t)
	g := startHTTPGateway(t, "--", fake)
	c := newHTTPClient(g.url)

	// Without a session, only initialize is accepted.
	if r := c.post(t, `{"jsonrpc":"2.0","id":1,"method":"ping"}`); r.status != http.StatusBadRequest {
		t.Fatalf("ping without session: %d", r.status)
	}
	c.initialize(t)
	// A single upstream after -- keeps its tool names, and every page is relayed.
	r := c.post(t, `{"jsonrpc":"2.0","id":1,"method":"tools/list"}`)
	res, _ := r.last()["result"].(map[string]any)
	if tools, _ := res["tools"].([]any); len(tools) != 3 || res["nextCursor"] != "2" {
		t.Fatalf("tools/list page 1: %v", res)
	}
	c.mustEcho(t, 2)

	// Two sessions have two upstream processes.
	c2 := newHTTPClient(g.url)
	c2.initialize(t)
	if a, b := httpResultText(c.call(t, 3, "pid", nil)), httpResultText(c2.call(t, 1, "pid", nil)); a == b || a == "" {
		t.Fatalf("sessions share an upstream: %q %q", a, b)
	}

	// DELETE ends the session; its id is then unknown.
	if r, err := c.do(context.Background(), http.MethodDelete, "", nil); err != nil || r.status != http.StatusNoContent {
		t.Fatalf("DELETE: %v %d", err, r.status)
	}
	if r := c.post(t, httpCallBody(4, "echo", map[string]any{"text": "x"})); r.status != http.StatusNotFound {
		t.Fatalf("after DELETE: %d %v", r.status, r.msgs)
	}
	c2.mustEcho(t, 2)
}

func TestHTTPDNSRebinding(t *testing.T) {
	_, fake := httpBinaries(t)
	g := startHTTPGateway(t, "--allow-host", "mcp.internal", "--", fake)
	init := `{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"e2e","version":"1"}}}`
	tests := []struct {
		name, host, origin string
		status             int
	}{
		{"evil host", "evil.example.com", "", 403},
		{"evil origin", "127.0.0.1", "http://evil.example.com", 403},
		{"localhost", "localhost:1234", "http://localhost:1234", 200},
		{"allowed host", "mcp.internal", "https://mcp.internal", 200},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			req, _ := http.NewRequest(http.MethodPost, g.url, strings.NewReader(init))
			req.Host = tt.host
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("Accept", "application/json, text/event-stream")
			if tt.origin != "" {
				req.Header.Set("Origin", tt.origin)
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if resp.StatusCode != tt.status {
				t.Fatalf("status %d, want %d", resp.StatusCode, tt.status)
			}
		})
	}
}

func TestHTTPServerToClient(t *testing.T) {
	_, fake := httpBinaries(t)
	g := startHTTPGateway(t, "--", fake)
	c := newHTTPClient(g.url)
	c.initialize(t)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()

	// Progress goes to the stream of the request that asked for it, before the result.
	var kinds []string
	for m := range c.sseEvents(t, ctx, `{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"slow","arguments":{"ms":50},"_meta":{"progressToken":"tok"}}}`) {
		if m["method"] != nil {
			kinds = append(kinds, m["method"].(string))
		} else {
			kinds = append(kinds, "response:"+httpResultText(m))
		}
	}
	if strings.Join(kinds, ",") != "notifications/progress,response:slept 50" {
		t.Fatalf("stream: %v", kinds)
	}

	// Sampling: the server's request arrives on the call's stream; the client answers
	// with a POST; the answer reaches the server, whose result quotes it.
	events := c.sseEvents(t, ctx, httpCallBody(8, "ask", nil))
	req := <-events
	if req["method"] != "sampling/createMessage" {
		t.Fatalf("want sampling/createMessage, got %v", req)
	}
	id, _ := json.Marshal(req["id"])
	answer := `{"jsonrpc":"2.0","id":` + string(id) + `,"result":{"role":"assistant","content":{"type":"text","text":"hi"},"model":"m"}}`
	if r := c.post(t, answer); r.status != http.StatusAccepted {
		t.Fatalf("answer: %d", r.status)
	}
	resp := <-events
	if got := httpResultText(resp); !strings.Contains(got, `"text":"hi"`) {
		t.Fatalf("ask result: %q", got)
	}
}

func TestHTTPResumeWithLastEventID(t *testing.T) {
	_, fake := httpBinaries(t)
	g := startHTTPGateway(t, "--", fake)
	c := newHTTPClient(g.url)
	c.initialize(t)
	ctx, cancel := context.WithCancel(context.Background())
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, c.url, strings.NewReader(`{"jsonrpc":"2.0","id":9,"method":"tools/call","params":{"name":"slow","arguments":{"ms":400},"_meta":{"progressToken":1}}}`))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "text/event-stream")
	req.Header.Set("Mcp-Session-Id", c.sid)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	// Read the progress event's id, then drop the connection.
	buf := make([]byte, 4096)
	n, _ := resp.Body.Read(buf)
	first := string(buf[:n])
	cancel()
	resp.Body.Close()
	var last string
	for _, line := range strings.Split(first, "\n") {
		if v, ok := strings.CutPrefix(line, "id: "); ok {
			last = v
		}
	}
	if last == "" {
		t.Fatalf("no event id in %q", first)
	}
	r, err := c.do(context.Background(), http.MethodGet, "", map[string]string{"Last-Event-ID": last, "Accept": "text/event-stream"})
	if err != nil || r.status != http.StatusOK {
		t.Fatalf("GET resume: %v %d", err, r.status)
	}
	if len(r.msgs) != 1 || httpResultText(r.msgs[0]) != "slept 400" {
		t.Fatalf("resumed stream: %v", r.msgs)
	}
}

func TestHTTPMultiUpstream(t *testing.T) {
	_, fake := httpBinaries(t)
	cfg := filepath.Join(t.TempDir(), "config.json")
	httpWriteFile(t, cfg, `{"mcpServers":{"alpha":{"command":"`+fake+`","args":["alpha"]},"beta":{"command":"`+fake+`","args":["beta"]}}}`)
	g := startHTTPGateway(t, "--config", cfg)
	c := newHTTPClient(g.url)
	c.initialize(t)

	r := c.post(t, `{"jsonrpc":"2.0","id":1,"method":"tools/list"}`)
	res, _ := r.last()["result"].(map[string]any)
	tools, _ := res["tools"].([]any)
	var names []string
	for _, x := range tools {
		names = append(names, x.(map[string]any)["name"].(string))
	}
	slices.Sort(names)
	half := len(names) / 2
	if len(names) < 12 || len(names)%2 != 0 || names[0] != "alpha_ask" || names[half] != "beta_ask" || names[len(names)-1] != "beta_slow" || res["nextCursor"] != nil {
		t.Fatalf("merged tools (every page of both): %v", names)
	}
	for i, tt := range []struct{ tool, want string }{
		{"alpha_echo", "alpha: x"},
		{"beta_echo", "beta: x"},
	} {
		if got := httpResultText(c.call(t, 10+i, tt.tool, map[string]any{"text": "x"})); got != tt.want {
			t.Fatalf("%s: %q", tt.tool, got)
		}
	}
	// ctx.tool and the audit record use the name the client sees.
	httpWaitRecord(t, g, "beta_echo", "ok")
	if code, _ := httpErrorOf(c.call(t, 20, "gamma_echo", nil)); code != -32602 {
		t.Fatalf("unknown prefix: code %d", code)
	}
	// Prompts are prefixed the same way; resources are routed by URI.
	r = c.post(t, `{"jsonrpc":"2.0","id":21,"method":"prompts/get","params":{"name":"beta_greet"}}`)
	if !strings.Contains(httpJSON(r.last()), "hello from beta") {
		t.Fatalf("prompts/get: %v", r.last())
	}
	r = c.post(t, `{"jsonrpc":"2.0","id":22,"method":"resources/read","params":{"uri":"alpha+test://alpha/a"}}`)
	if !strings.Contains(httpJSON(r.last()), "from alpha") {
		t.Fatalf("resources/read: %v", r.last())
	}
}

func httpJSON(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

// TestHTTPRemoteUpstream chains two gateways: the second has the first as a remote
// (url) upstream, exercising the Streamable HTTP client side, sampling included.
func TestHTTPRemoteUpstream(t *testing.T) {
	_, fake := httpBinaries(t)
	first := startHTTPGateway(t, "--", fake)
	cfg := filepath.Join(t.TempDir(), "config.json")
	httpWriteFile(t, cfg, `{"mcpServers":{"far":{"url":"`+first.url+`"}}}`)
	g := startHTTPGateway(t, "--config", cfg)
	c := newHTTPClient(g.url)
	c.initialize(t)
	c.mustEcho(t, 1)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	events := c.sseEvents(t, ctx, httpCallBody(2, "ask", nil))
	req := <-events
	if req["method"] != "sampling/createMessage" {
		t.Fatalf("want sampling through two gateways, got %v", req)
	}
	id, _ := json.Marshal(req["id"])
	c.post(t, `{"jsonrpc":"2.0","id":`+string(id)+`,"result":{"role":"assistant","content":{"type":"text","text":"far"},"model":"m"}}`)
	if got := httpResultText(<-events); !strings.Contains(got, `"text":"far"`) {
		t.Fatalf("ask: %q", got)
	}
	httpWaitRecord(t, first, "ask", "ok")
}
