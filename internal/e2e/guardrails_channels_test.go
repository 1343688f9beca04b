package e2e

import (
	"context"
	"encoding/json"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/mcpgate/mcpgate/internal/guardrail/guardtest"
	"github.com/mcpgate/mcpgate/internal/testwait"
)

// TestGuardrailsChannels: a content guardrail that takes resources/read and
// prompts/get judges their results over stdio and HTTP as it does a tool's: none
// passes, a block withholds the contents, an intervention replaces the text it
// names, and a failure (5xx, garbage, over 1 MiB, a hang) under fail mode closed
// withholds the message; a second guardrail with fail mode open blocks and
// intervenes alike and lets the message through on each failure; each record names
// the guardrail.
func TestGuardrailsChannels(t *testing.T) {
	svc, soft := &guardtest.Service{}, &guardtest.Service{Prefix: "SOFT:"}
	srv, srv2 := httptest.NewServer(svc), httptest.NewServer(soft)
	defer srv.Close()
	defer srv2.Close()
	cfg := writeConfig(t, map[string]any{
		"chan": map[string]any{"kind": "generic", "url": srv.URL, "methods": []string{"resources/read", "prompts/get"}, "timeout": "3s",
			"breaker": map[string]any{"failures": 1000}},
		"soft": map[string]any{"kind": "generic", "url": srv2.URL, "methods": []string{"resources/read"}, "timeout": "2s", "failMode": "open",
			"breaker": map[string]any{"failures": 1000}},
	})
	_, fake := httpBinaries(t)
	cases := []struct {
		name, uri  string
		has, hasNt string
		reason     string
		entry      map[string]string
	}{
		{"none", "test://fakeup/clean", "content of test://fakeup/clean", "", "", map[string]string{"name": "chan", "phase": "post", "verdict": "none"}},
		{"block", "test://fakeup/GUARD:post-block", "[mcpgate: ", "GUARD:post-block", "guardrail_block", map[string]string{"name": "chan", "verdict": "block"}},
		{"intervene", "test://fakeup/GUARD:post-redact/secret-abc", "[REDACTED]", "secret-abc", "", map[string]string{"name": "chan", "verdict": "intervene"}},
		{"5xx closed", "test://fakeup/GUARD:post-5xx", "[mcpgate: ", "GUARD:post-5xx", "guardrail_error", map[string]string{"name": "chan", "error": "guardrail_error"}},
		{"garbage closed", "test://fakeup/GUARD:post-garbage", "[mcpgate: ", "content of", "guardrail_error", map[string]string{"name": "chan", "detail": "malformed"}},
		{"oversized closed", "test://fakeup/GUARD:post-big", "[mcpgate: ", "content of", "guardrail_error", map[string]string{"name": "chan", "detail": "oversized"}},
		{"hang closed", "test://fakeup/GUARD:post-hang", "[mcpgate: ", "content of", "guardrail_timeout", map[string]string{"name": "chan", "error": "guardrail_timeout"}},
		{"block open", "test://fakeup/SOFT:post-block", "[mcpgate: ", "content of", "guardrail_block", map[string]string{"name": "soft", "verdict": "block"}},
		{"intervene open", "test://fakeup/SOFT:post-redact/secret-abc", "[REDACTED]", "secret-abc", "", map[string]string{"name": "soft", "verdict": "intervene"}},
		{"5xx open", "test://fakeup/SOFT:post-5xx", "content of test://fakeup/SOFT:post-5xx", "[mcpgate", "", map[string]string{"name": "soft", "detail": "status_503", "fail_mode": "open"}},
		{"garbage open", "test://fakeup/SOFT:post-garbage", "content of test://fakeup/SOFT:post-garbage", "[mcpgate", "", map[string]string{"name": "soft", "detail": "malformed"}},
		{"oversized open", "test://fakeup/SOFT:post-big", "content of test://fakeup/SOFT:post-big", "[mcpgate", "", map[string]string{"name": "soft", "detail": "oversized"}},
		{"hang open", "test://fakeup/SOFT:post-hang", "content of test://fakeup/SOFT:post-hang", "[mcpgate", "", map[string]string{"name": "soft", "error": "guardrail_timeout"}},
	}
	check := func(t *testing.T, read func(uri string) string, prompt func() string, log *stderrLog) {
		n := 0
		records := func() []map[string]any {
			var out []map[string]any
			testwait.For(t, "the channel records", func() bool {
				out = out[:0]
				for _, m := range log.allRecords() {
					if m["method"] == "resources/read" || m["method"] == "prompts/get" {
						out = append(out, m)
					}
				}
				return len(out) >= n
			})
			return out
		}
		for _, tc := range cases {
			text := read(tc.uri)
			n++
			rec := records()[n-1]
			if !strings.Contains(text, tc.has) || tc.hasNt != "" && strings.Contains(text, tc.hasNt) {
				t.Errorf("%s: text %q, want %q and not %q", tc.name, text, tc.has, tc.hasNt)
			}
			if r, _ := rec["reason"].(string); r != tc.reason || !hasEntry(rec, tc.entry) {
				t.Errorf("%s: record reason %q guardrails %v, want %q and %v", tc.name, r, rec["guardrails"], tc.reason, tc.entry)
			}
		}
		if text := prompt(); text != "hello from fakeup" {
			t.Errorf("prompt: %q", text)
		}
		n++
		if rec := records()[n-1]; rec["method"] != "prompts/get" || !hasEntry(rec, map[string]string{"name": "chan", "verdict": "none"}) {
			t.Errorf("prompt record %v", rec)
		}
	}
	t.Run("stdio", func(t *testing.T) {
		c, log := mcpClient(t, nil, binary, gatewayArgs([]string{"--config", cfg, "--policies", emptyPolicies(t)}, []string{fake})...)
		ctx := func() context.Context {
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			t.Cleanup(cancel)
			return ctx
		}
		read := func(uri string) string {
			res, err := c.ReadResource(ctx(), mcp.ReadResourceRequest{Params: mcp.ReadResourceParams{URI: uri}})
			if err != nil {
				t.Fatalf("resources/read %s: %v", uri, err)
			}
			var b strings.Builder
			for _, c := range res.Contents {
				if tc, ok := c.(mcp.TextResourceContents); ok {
					b.WriteString(tc.Text)
				}
			}
			return b.String()
		}
		prompt := func() string {
			res, err := c.GetPrompt(ctx(), mcp.GetPromptRequest{Params: mcp.GetPromptParams{Name: "greet"}})
			if err != nil || len(res.Messages) == 0 {
				t.Fatalf("prompts/get: %v", err)
			}
			tc, _ := res.Messages[0].Content.(mcp.TextContent)
			return tc.Text
		}
		check(t, read, prompt, log)
	})
	t.Run("http", func(t *testing.T) {
		g := startHTTPGateway(t, "--config", cfg, "--policies", emptyPolicies(t), "--", fake)
		c := newHTTPClient(g.url)
		c.initialize(t)
		id := 0
		post := func(method string, params map[string]any) map[string]any {
			id++
			b, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": id, "method": method, "params": params})
			res, _ := c.post(t, string(b)).last()["result"].(map[string]any)
			return res
		}
		read := func(uri string) string {
			var b strings.Builder
			contents, _ := post("resources/read", map[string]any{"uri": uri})["contents"].([]any)
			for _, item := range contents {
				m, _ := item.(map[string]any)
				s, _ := m["text"].(string)
				b.WriteString(s)
			}
			return b.String()
		}
		prompt := func() string {
			msgs, _ := post("prompts/get", map[string]any{"name": "greet"})["messages"].([]any)
			if len(msgs) == 0 {
				return ""
			}
			m, _ := msgs[0].(map[string]any)
			content, _ := m["content"].(map[string]any)
			s, _ := content["text"].(string)
			return s
		}
		check(t, read, prompt, g.stderr)
	})
}
