package e2e

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/mcpgate/mcpgate/internal/testsvc"
)

// openfgaModel is the authorization model of TestGuardrailsOpenFGA: a tool's
// relation named as mcpgate's AuthZEN action is, so an evaluation's
// user:<id> tools/call tool:<name> is an OpenFGA check of that tuple.
const openfgaModel = `{"schema_version": "1.1", "type_definitions": [
  {"type": "user"},
  {"type": "tool",
   "relations": {"tools/call": {"this": {}}},
   "metadata": {"relations": {"tools/call": {"directly_related_user_types": [{"type": "user"}]}}}}]}`

// openfgaPost sends body to the OpenFGA HTTP API at base+path and decodes a 2xx
// answer into out.
func openfgaPost(t *testing.T, base, path, body string, out any) {
	t.Helper()
	hc := &http.Client{Timeout: 10 * time.Second}
	resp, err := hc.Post(strings.TrimSuffix(base, "/")+path, "application/json", bytes.NewReader([]byte(body)))
	if err != nil {
		t.Fatalf("POST %s: %v", path, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if resp.StatusCode/100 != 2 {
		t.Fatalf("POST %s: %s: %s", path, resp.Status, b)
	}
	if out != nil {
		if err := json.Unmarshal(b, out); err != nil {
			t.Fatalf("POST %s: %v: %s", path, err, b)
		}
	}
}

// TestGuardrailsOpenFGA: the kind "authzen" against a real AuthZEN PDP, OpenFGA's
// experimental AuthZEN evaluation API (POST /stores/{store_id}/access/v1/evaluation),
// over stdio and HTTP. A store of its own holds the model above and one tuple, user:alice
// tools/call tool:echo: alice calling echo is allowed, alice calling another tool and
// bob calling echo are denied, each record naming the guardrail.
func TestGuardrailsOpenFGA(t *testing.T) {
	base := testsvc.OpenFGAURL(t)
	var store struct {
		ID string `json:"id"`
	}
	openfgaPost(t, base, "/stores", `{"name": "mcpgate-e2e"}`, &store)
	if store.ID == "" {
		t.Fatal("OpenFGA created a store without an id")
	}
	openfgaPost(t, base, "/stores/"+store.ID+"/authorization-models", openfgaModel, nil)
	openfgaPost(t, base, "/stores/"+store.ID+"/write",
		`{"writes": {"tuple_keys": [{"user": "user:alice", "relation": "tools/call", "object": "tool:echo"}]}}`, nil)

	_, fake := httpBinaries(t)
	gateway := func(t *testing.T, user string) (call func(tool string) (string, map[string]any)) {
		b, _ := json.Marshal(map[string]any{"mcpgate": map[string]any{
			"user": map[string]any{"userID": user, "callerId": "e2e"},
			"guardrails": map[string]any{"fga": map[string]any{"kind": "authzen",
				"url": strings.TrimSuffix(base, "/") + "/stores/" + store.ID + "/access/v1/evaluation", "timeout": "5s"}},
		}})
		cfg := filepath.Join(t.TempDir(), "config.json")
		if err := os.WriteFile(cfg, b, 0o600); err != nil {
			t.Fatal(err)
		}
		c, log := mcpClient(t, nil, binary, gatewayArgs([]string{"--config", cfg, "--policies", emptyPolicies(t)}, []string{fake})...)
		n := 0
		return func(tool string) (string, map[string]any) {
			res := callTool(t, c, tool, map[string]any{"text": "hello"})
			text := ""
			if len(res.Content) > 0 {
				if tc, ok := res.Content[0].(mcp.TextContent); ok {
					text = tc.Text
				}
			}
			n++
			return text, log.waitRecords(t, n)[n-1]
		}
	}
	const denied = "[mcpgate: call rejected by guardrail:fga: the authorization service denied the call"
	check := func(t *testing.T, name, text string, rec map[string]any, wantText, verdict string) {
		t.Helper()
		if !strings.HasPrefix(text, wantText) {
			t.Errorf("%s: first text %q, want prefix %q", name, text, wantText)
		}
		if !hasEntry(rec, map[string]string{"name": "fga", "kind": "authzen", "phase": "pre", "verdict": verdict}) {
			t.Errorf("%s: guardrails %v lack fga's %s", name, rec["guardrails"], verdict)
		}
		if verdict == "deny" && (rec["reason"] != "guardrail_deny" || rec["policy"] != "guardrail:fga") {
			t.Errorf("%s: reason %v, policy %v, want guardrail_deny by guardrail:fga", name, rec["reason"], rec["policy"])
		}
	}
	t.Run("stdio", func(t *testing.T) {
		alice := gateway(t, "alice")
		text, rec := alice("echo")
		check(t, "alice calls echo", text, rec, "fakeup: hello", "allow")
		text, rec = alice("pid")
		check(t, "alice calls pid", text, rec, denied, "deny")
		bob := gateway(t, "bob")
		text, rec = bob("echo")
		check(t, "bob calls echo", text, rec, denied, "deny")
	})
	t.Run("http", func(t *testing.T) {
		// Two callers of one gateway, told apart by their bearer tokens.
		sum := func(tok string) string { h := sha256.Sum256([]byte(tok)); return hex.EncodeToString(h[:]) }
		b, _ := json.Marshal(map[string]any{"mcpgate": map[string]any{
			"tokens": []any{map[string]any{"sha256": sum("alice-token"), "userID": "alice"}, map[string]any{"sha256": sum("bob-token"), "userID": "bob"}},
			"guardrails": map[string]any{"fga": map[string]any{"kind": "authzen",
				"url": strings.TrimSuffix(base, "/") + "/stores/" + store.ID + "/access/v1/evaluation", "timeout": "5s"}},
		}})
		cfg := filepath.Join(t.TempDir(), "config.json")
		if err := os.WriteFile(cfg, b, 0o600); err != nil {
			t.Fatal(err)
		}
		g := startHTTPGateway(t, "--config", cfg, "--", fake)
		n := 0
		client := func(token string) func(tool string) (string, map[string]any) {
			c := newHTTPClient(g.url)
			c.token = token
			c.initialize(t)
			return func(tool string) (string, map[string]any) {
				n++
				text := httpResultText(c.call(t, n, tool, map[string]any{"text": "hello"}))
				return text, g.stderr.waitRecords(t, n)[n-1]
			}
		}
		alice, bob := client("alice-token"), client("bob-token")
		text, rec := alice("echo")
		check(t, "alice calls echo", text, rec, "fakeup: hello", "allow")
		text, rec = alice("pid")
		check(t, "alice calls pid", text, rec, denied, "deny")
		text, rec = bob("echo")
		check(t, "bob calls echo", text, rec, denied, "deny")
	})
}
