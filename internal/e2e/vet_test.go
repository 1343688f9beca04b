package e2e

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
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
