package e2e

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mcpgate/mcpgate/internal/testwait"
)

// TestStrictArguments: with "profile": "strict" in the configuration, a real client
// (the TypeScript SDK, over stdio and HTTP) in front of two real servers
// (server-filesystem pinned to a folder, the go-sdk everything-server) gets honest
// calls answered, and a call whose path leaves the pinned folder, one whose argument
// breaks the listed schema and a prompts/get with an undeclared argument refused with
// -32602; each refusal has one record naming the rule and the member's pointer, and
// no record holds the value.
func TestStrictArguments(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "notes.md"), []byte("hello\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	fs := nodeServer(t, "@modelcontextprotocol/server-filesystem", dir)
	fs["roots"] = []string{"file://" + dir}
	ev := map[string]any{"command": everythingServer(t)[0]}
	cfg := filepath.Join(t.TempDir(), "config.json")
	writeJSON(t, cfg, map[string]any{"mcpServers": map[string]any{"fs": fs, "ev": ev}, "mcpgate": map[string]any{"profile": "strict"}})
	for _, tr := range []string{"stdio", "http"} {
		t.Run(tr, func(t *testing.T) {
			d, log := gatewaySession(t, tr, cfg, emptyPolicies(t))
			d.mustRequest("tools/list", map[string]any{})
			d.mustRequest("prompts/list", map[string]any{})
			ok := func(method string, params map[string]any) {
				t.Helper()
				if r, e := d.request(method, params); r == nil || r["isError"] == true {
					t.Fatalf("%s %v: %v %s", method, params, r, e)
				}
			}
			refused := func(method string, params map[string]any, rule string) {
				t.Helper()
				r, e := d.request(method, params)
				if r != nil || !strings.HasPrefix(e, "-32602 ") || !strings.Contains(e, rule) {
					t.Fatalf("%s %v: %v %q, want -32602 %s", method, params, r, e, rule)
				}
			}
			ok("tools/call", map[string]any{"name": "fs_write_file", "arguments": map[string]any{"path": filepath.Join(dir, "table.md"),
				"content": "| a | b |\n|---|---|\n| ls \\| wc | $(make) && make test |\n"}})
			ok("tools/call", map[string]any{"name": "fs_read_text_file", "arguments": map[string]any{"path": filepath.Join(dir, "notes.md")}})
			ok("tools/call", map[string]any{"name": "ev_test_simple_text", "arguments": map[string]any{}})
			refused("tools/call", map[string]any{"name": "fs_read_text_file", "arguments": map[string]any{"path": "/etc/passwd"}}, "argument_path_outside_roots at /path")
			refused("tools/call", map[string]any{"name": "fs_read_text_file", "arguments": map[string]any{"path": filepath.Join(dir, "notes.md"), "head": "ten-lines"}}, "argument_schema at /head")
			refused("tools/call", map[string]any{"name": "ev_test_x_mcp_header", "arguments": map[string]any{"region": "eu", "level": "high-level"}}, "argument_schema at /level")
			refused("prompts/get", map[string]any{"name": "ev_test_prompt_with_arguments", "arguments": map[string]any{"arg1": "a", "arg2": "b", "arg3": "c"}}, "argument_schema at /arg3")

			refusals := func() (n int) {
				for _, r := range log.allRecords() {
					if reason, _ := r["reason"].(string); strings.HasPrefix(reason, "argument_") {
						n++
					}
				}
				return n
			}
			if !testwait.Within(testwait.Timeout, func() bool { return refusals() >= 4 }) {
				t.Fatalf("%d refusal records; stderr:\n%s", refusals(), log.String())
			}
			var reasons []string
			for _, r := range log.allRecords() {
				if reason, _ := r["reason"].(string); strings.HasPrefix(reason, "argument_") {
					reasons = append(reasons, reason)
					ac, _ := r["argument_check"].(map[string]any)
					if ac == nil || ac["findings"] == nil {
						t.Errorf("a refusal's record has no argument_check: %v", r)
					}
				}
			}
			if strings.Join(reasons, ",") != "argument_path,argument_schema,argument_schema,argument_schema" {
				t.Errorf("reasons %v", reasons)
			}
			b, _ := json.Marshal(log.allRecords())
			for _, v := range []string{"/etc/passwd", "ten-lines", "high-level"} {
				if strings.Contains(string(b), v) {
					t.Errorf("a record holds the value %q", v)
				}
			}
		})
	}
}
