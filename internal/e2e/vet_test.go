package e2e

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/mcpgate/mcpgate/internal/testwait"
)

// TestVetStrictStartup: gateway run --profile strict vets its servers at start-up
// (docs/vet.md#startup) and leaves out exactly the one with a block-level finding
// (a real server-everything whose env turns TLS verification off), logging why and
// how to allow it; the others start under their prefixed names and answer the
// TypeScript client. The default profile starts all three and logs the finding.
func TestVetStrictStartup(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "note.txt"), []byte("hello"), 0o600); err != nil {
		t.Fatal(err)
	}
	insecure := nodeServer(t, "@modelcontextprotocol/server-everything", "stdio")
	insecure["env"] = map[string]string{"NODE_TLS_REJECT_UNAUTHORIZED": "0"}
	cfg := filepath.Join(t.TempDir(), "config.json")
	writeJSON(t, cfg, map[string]any{"mcpServers": map[string]any{
		"fs":         nodeServer(t, "@modelcontextprotocol/server-filesystem", dir),
		"everything": nodeServer(t, "@modelcontextprotocol/server-everything", "stdio"),
		"insecure":   insecure,
	}})
	for _, tc := range []struct {
		profile string
		started []string
		gone    []string
		log     []string
	}{
		{"strict", []string{"fs_read_text_file", "everything_echo"}, []string{"insecure_"},
			[]string{`"msg":"vet: server not started: it has block-level findings"`, `"server":"insecure"`, `"rule_ids":["vet_tls_verification_off"]`, `vetAllow`}},
		{"default", []string{"fs_read_text_file", "everything_echo", "insecure_echo"}, nil,
			[]string{`"msg":"vet finding"`, `"rule_id":"vet_tls_verification_off"`, `"server":"insecure"`}},
	} {
		t.Run(tc.profile, func(t *testing.T) {
			d := startDriver(t, map[string]any{"command": binary, "args": []string{"gateway", "run", "--log-format", "json",
				"--profile", tc.profile, "--config", cfg, "--policies", emptyPolicies(t)}})
			tools := names(d.mustRequest("tools/list", nil), "tools", "name")
			for _, p := range tc.started {
				if !hasPrefixed(tools, p) {
					t.Errorf("tools/list lacks %s: %v", p, tools)
				}
			}
			for _, p := range tc.gone {
				if hasPrefixed(tools, p) {
					t.Errorf("tools/list has %s: %v", p, tools)
				}
			}
			for _, w := range tc.log {
				if !strings.Contains(d.stderr.String(), w) {
					t.Errorf("the log lacks %s:\n%s", w, d.stderr.String())
				}
			}
			if strings.Contains(d.stderr.String(), `"NODE_TLS_REJECT_UNAUTHORIZED":"0"`) {
				t.Error("the log holds an environment value")
			}
		})
	}
}

// TestServerInfoSeveralServers: with several servers (--config) each server's own
// initialize answer is checked against its serverInfo pin. A server that later names
// itself differently is one record with vet_server_info_changed (server b, method
// initialize) and a `vet finding` line naming the member, never its value; under
// --pins-mode block that server's tools are not listed and a call to it is refused
// naming the approval, while the other server keeps working; under warn it is used.
func TestServerInfoSeveralServers(t *testing.T) {
	gw, fake := httpBinaries(t)
	dir := t.TempDir()
	pinsFile := filepath.Join(dir, "pins.json")
	config := func(name, b string) string {
		p := filepath.Join(dir, name)
		writeJSON(t, p, map[string]any{"mcpServers": map[string]any{
			"a": map[string]any{"command": fake, "args": []string{"alpha"}},
			"b": map[string]any{"command": fake, "args": []string{b}},
		}})
		return p
	}
	first, impostor := config("first.json", "beta"), config("impostor.json", "impostor")
	start := func(cfg, mode, auditFile string) *rawConn {
		return startRaw(t, nil, gw, "gateway", "run", "--log-format", "json", "--config", cfg, "--policies", emptyPolicies(t),
			"--pins", pinsFile, "--pins-mode", mode, "--audit-file", auditFile)
	}
	tools := func(c *rawConn) string { return string(c.request("tools/list", map[string]any{})) }
	c := start(first, "block", filepath.Join(dir, "first.jsonl"))
	if l := tools(c); !strings.Contains(l, `"a_echo"`) || !strings.Contains(l, `"b_echo"`) {
		t.Fatalf("first start: %s", l)
	}
	testwait.For(t, "b's serverInfo pinned", func() bool {
		b, _ := os.ReadFile(pinsFile)
		return strings.Contains(string(b), `"b#identity"`)
	})
	for _, mode := range []string{"warn", "block"} {
		t.Run(mode, func(t *testing.T) {
			auditFile := filepath.Join(dir, mode+".jsonl")
			c := start(impostor, mode, auditFile)
			l := tools(c)
			if !strings.Contains(l, `"a_echo"`) || strings.Contains(l, `"b_echo"`) != (mode == "warn") {
				t.Errorf("tools/list: %s", l)
			}
			call := string(c.request("tools/call", map[string]any{"name": "b_echo", "arguments": map[string]any{"text": "hi"}}))
			if mode == "block" && (!strings.Contains(call, `"error"`) || !strings.Contains(call, `mcpgate pins approve \"b#identity\" serverInfo`)) {
				t.Errorf("a call to b: %s", call)
			}
			if mode == "warn" && !strings.Contains(call, "impostor: hi") {
				t.Errorf("a call to b: %s", call)
			}
			if call := string(c.request("tools/call", map[string]any{"name": "a_echo", "arguments": map[string]any{"text": "hi"}})); !strings.Contains(call, "alpha: hi") {
				t.Errorf("a call to a: %s", call)
			}
			var found []map[string]any
			testwait.For(t, "the serverInfo record", func() bool {
				found = nil
				for _, r := range readRecords(t, auditFile) {
					if ids, _ := r["rule_ids"].([]any); slices.Contains(ids, any("vet_server_info_changed")) {
						found = append(found, r)
					}
				}
				return len(found) > 0
			})
			r := found[0]
			if len(found) != 1 || r["server"] != "b" || r["method"] != "initialize" || (r["reason"] == "server_info_changed") != (mode == "block") {
				t.Errorf("records %v", found)
			}
			log := c.stderr.String()
			if !strings.Contains(log, `"msg":"vet finding"`) || !strings.Contains(log, `"changed":["name"]`) {
				t.Errorf("log:\n%s", log)
			}
			if b, _ := os.ReadFile(auditFile); strings.Contains(string(b), "impostor") || strings.Contains(log, `"impostor"`) {
				t.Errorf("a value the server chose leaked:\n%s\n%s", b, log)
			}
		})
	}
}
