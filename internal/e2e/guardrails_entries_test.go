package e2e

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/mcpgate/mcpgate/internal/testwait"
)

// TestGuardrailsEntryAuthorization: an authorization service (OPA's data API shape)
// that takes prompts/get and resources/read is asked before the server, over stdio
// and HTTP: an allowed prompt and resource reach the client, their records carrying
// the allow; a denied one is answered in its channel's block shape naming the
// service (guardrail_deny) and the server never sees it.
func TestGuardrailsEntryAuthorization(t *testing.T) {
	var asked atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		asked.Add(1)
		b, _ := io.ReadAll(r.Body)
		_, _ = io.WriteString(w, map[bool]string{true: `{"result":false}`, false: `{"result":true}`}[strings.Contains(string(b), "classified")])
	}))
	defer srv.Close()
	cfg := writeConfig(t, map[string]any{
		"opa": map[string]any{"kind": "opa", "url": srv.URL, "methods": []string{"tools/call", "prompts/get", "resources/read"}, "timeout": "5s"},
	})
	_, fake := httpBinaries(t)
	const denied = "[mcpgate: call rejected by guardrail:opa: the authorization service denied the call — see audit log entry "
	cases := []struct {
		method, key, has string
		reason           string
		entry            map[string]string
	}{
		{"prompts/get", "greet", "hello from fakeup", "", map[string]string{"name": "opa", "phase": "pre", "verdict": "allow"}},
		{"prompts/get", "classified", denied, "guardrail_deny", map[string]string{"name": "opa", "phase": "pre", "verdict": "deny"}},
		{"resources/read", "test://fakeup/a", "content of test://fakeup/a from fakeup", "", map[string]string{"name": "opa", "verdict": "allow"}},
		{"resources/read", "test://fakeup/classified", denied, "guardrail_deny", map[string]string{"name": "opa", "verdict": "deny"}},
	}
	check := func(t *testing.T, get func(method, key string) string, log *stderrLog) {
		asked.Store(0)
		for i, tc := range cases {
			text := get(tc.method, tc.key)
			if !strings.Contains(text, tc.has) || tc.reason != "" && strings.Contains(text, "from fakeup") {
				t.Errorf("%s %s: %q, want %q", tc.method, tc.key, text, tc.has)
			}
			var recs []map[string]any
			testwait.For(t, "the records", func() bool {
				recs = recs[:0]
				for _, m := range log.allRecords() {
					if m["method"] == "prompts/get" || m["method"] == "resources/read" {
						recs = append(recs, m)
					}
				}
				return len(recs) > i
			})
			rec := recs[i]
			if r, _ := rec["reason"].(string); rec["method"] != tc.method || r != tc.reason || !hasEntry(rec, tc.entry) ||
				tc.reason != "" && rec["policy"] != "guardrail:opa" {
				t.Errorf("%s %s: record %v, want reason %q and %v", tc.method, tc.key, rec, tc.reason, tc.entry)
			}
		}
		if n := asked.Load(); n != int64(len(cases)) {
			t.Errorf("the service was asked %d times, want %d", n, len(cases))
		}
	}
	t.Run("stdio", func(t *testing.T) {
		c, log := mcpClient(t, nil, binary, gatewayArgs([]string{"--config", cfg, "--policies", emptyPolicies(t)}, []string{fake})...)
		get := func(method, key string) string {
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			if method == "prompts/get" {
				res, err := c.GetPrompt(ctx, mcp.GetPromptRequest{Params: mcp.GetPromptParams{Name: key}})
				if err != nil || len(res.Messages) == 0 {
					t.Fatalf("prompts/get: %v", err)
				}
				tc, _ := res.Messages[0].Content.(mcp.TextContent)
				return tc.Text
			}
			res, err := c.ReadResource(ctx, mcp.ReadResourceRequest{Params: mcp.ReadResourceParams{URI: key}})
			if err != nil {
				t.Fatalf("resources/read: %v", err)
			}
			var b strings.Builder
			for _, c := range res.Contents {
				if tc, ok := c.(mcp.TextResourceContents); ok {
					b.WriteString(tc.Text)
				}
			}
			return b.String()
		}
		check(t, get, log)
	})
	t.Run("http", func(t *testing.T) {
		g := startHTTPGateway(t, "--config", cfg, "--", fake)
		c := newHTTPClient(g.url)
		c.initialize(t)
		id := 0
		get := func(method, key string) string {
			id++
			params := map[string]any{"name": key}
			if method == "resources/read" {
				params = map[string]any{"uri": key}
			}
			b, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": id, "method": method, "params": params})
			res, _ := c.post(t, string(b)).last()["result"].(map[string]any)
			out, _ := json.Marshal(res)
			return strings.ReplaceAll(string(out), `\u0026`, "&")
		}
		check(t, get, g.stderr)
	})
}
