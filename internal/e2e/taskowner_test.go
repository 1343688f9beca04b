package e2e

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mcpgate/mcpgate/internal/testwait"
)

// TestTaskBoundToCaller: on the HTTP front with two bearer identities, a v2 client
// pinned to 2026-07-28 (alice) creates task t2 through a server that serves any task
// id to anyone, and gets and cancels it; the other identity (bob) asking tasks/get
// and tasks/cancel of t2 gets -32602 as for an unknown task, each with a record
// task_not_owned, and its server never sees the requests (docs/decisions.md#task-owners).
func TestTaskBoundToCaller(t *testing.T) {
	up := hostile26Server(t)
	nodeModule(t, "@modelcontextprotocol/client/package.json")
	var entries []string
	for _, u := range []string{"alice", "bob"} {
		sum := sha256.Sum256([]byte("tok-" + u))
		entries = append(entries, `{"sha256":"`+hex.EncodeToString(sum[:])+`","userID":"`+u+`","callerClass":"standard"}`)
	}
	cfg := filepath.Join(t.TempDir(), "config.json")
	if err := os.WriteFile(cfg, []byte(`{"mcpgate":{"tokens":[`+strings.Join(entries, ",")+`]}}`), 0o600); err != nil {
		t.Fatal(err)
	}
	audit := filepath.Join(t.TempDir(), "audit.jsonl")
	g := startHTTPGateway(t, append([]string{"--config", cfg, "--audit-file", audit, "--"}, up...)...)

	alice := scriptJSON(t, "task-owner-client.mjs", map[string]any{"url": g.url, "token": "tok-alice", "create": true})
	if !strings.Contains(string(alice["created"]), `"t2"`) || !strings.Contains(string(alice["got"]), `"taskId":"t2"`) {
		t.Fatalf("alice's own task: %s", mustJSON(alice))
	}
	bob := scriptJSON(t, "task-owner-client.mjs", map[string]any{"url": g.url, "token": "tok-bob"})
	for _, step := range []string{"got", "cancelled"} {
		if got := string(bob[step]); !strings.Contains(got, `"code":-32602`) || strings.Contains(got, "bob@example.com") || strings.Contains(got, `"status"`) {
			t.Errorf("bob's %s of alice's task: %s", step, got)
		}
	}
	want := map[string]bool{"tasks/get": false, "tasks/cancel": false}
	ok := testwait.Within(testwait.Timeout, func() bool {
		b, _ := os.ReadFile(audit)
		for _, line := range strings.Split(string(b), "\n") {
			var r map[string]any
			if json.Unmarshal([]byte(line), &r) != nil || r["reason"] != "task_not_owned" {
				continue
			}
			if c, _ := r["caller"].(map[string]any); c != nil && c["user_id"] == "bob" {
				want[r["method"].(string)] = true
			}
		}
		return want["tasks/get"] && want["tasks/cancel"]
	})
	if !ok {
		b, _ := os.ReadFile(audit)
		t.Errorf("no task_not_owned record of bob for each of %v:\n%s", want, b)
	}
}
