package e2e

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mcpgate/mcpgate/internal/testwait"
)

// TestTaskBoundToCaller: on the HTTP front with two bearer identities, a v2 client
// pinned to 2026-07-28 (alice) creates a task through a server that names it t2 and
// serves any task id to anyone; alice holds the gateway's id for it (128 random bits),
// and gets and cancels it. The other identity (bob), asking tasks/get and tasks/cancel
// of alice's id (as if it leaked) gets -32602 as for an unknown task, each with a
// record task_not_owned, and of the server's own id t2 the same with task_unknown; his
// server never sees the requests (docs/decisions.md#task-owners).
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
	id := gatewayTaskID(t, alice["created"])
	if !strings.Contains(string(alice["got"]), `"taskId":"`+id+`"`) || strings.Contains(string(alice["got"]), "t2") {
		t.Fatalf("alice's own task: %s", mustJSON(alice))
	}
	bob := scriptJSON(t, "task-owner-client.mjs", map[string]any{"url": g.url, "token": "tok-bob", "taskIds": []string{id, "t2"}})
	var tries []map[string]json.RawMessage
	if json.Unmarshal(bob["tries"], &tries) != nil || len(tries) != 2 {
		t.Fatalf("bob: %s", mustJSON(bob))
	}
	for _, try := range tries {
		for _, step := range []string{"got", "cancelled"} {
			if got := string(try[step]); !strings.Contains(got, `"code":-32602`) || strings.Contains(got, "bob@example.com") || strings.Contains(got, `"status"`) {
				t.Errorf("bob's %s of %s: %s", step, try["taskId"], got)
			}
		}
	}
	waitTaskRefusals(t, audit, "bob", map[string]int{"task_not_owned tasks/get": 1, "task_not_owned tasks/cancel": 1,
		"task_unknown tasks/get": 1, "task_unknown tasks/cancel": 1})
}

// TestTaskBoundToSession: the 2025-11-25 revision, with the TypeScript SDK client and a
// server whose task ids are sequential and served to anyone. On stdio, the client
// holds the gateway's id of its task, whose tasks/get, tasks/result (and its related
// task), tasks/list and tasks/cancel work by it, while the server's own id "1" is
// refused (task_unknown). Over HTTP, another session asking for the first session's
// task by its id is refused (task_not_owned), and its own server never sees it
// (docs/decisions.md#task-owners).
func TestTaskBoundToSession(t *testing.T) {
	nodeModule(t, "@modelcontextprotocol/sdk/package.json")
	up := []string{"node", filepath.Join(root, "testdata", "e2e", "tasks-server.mjs")}
	refused := func(d *driver, method, id string) {
		t.Helper()
		res, errText := d.request(method, map[string]any{"taskId": id})
		if res != nil || !strings.Contains(errText, "not known to this session") {
			t.Fatalf("%s of %q: %v %s", method, id, res, errText)
		}
	}
	t.Run("stdio", func(t *testing.T) {
		audit := filepath.Join(t.TempDir(), "audit.jsonl")
		d := startDriver(t, map[string]any{"command": binary, "args": gatewayArgs([]string{"--policies", emptyPolicies(t), "--audit-file", audit}, up)})
		created := d.mustRequest("tools/call", map[string]any{"name": "work", "arguments": map[string]any{"text": "the answer"}, "task": map[string]any{"ttl": 60000}})
		b, _ := json.Marshal(created)
		id := gatewayTaskID(t, b)
		for _, method := range []string{"tasks/get", "tasks/result"} {
			res := d.mustRequest(method, map[string]any{"taskId": id})
			if s := mustJSON(res); strings.Contains(s, `"taskId":"1"`) || method == "tasks/get" && !strings.Contains(s, `"taskId":"`+id+`"`) ||
				method == "tasks/result" && (!strings.Contains(s, "the answer") || !strings.Contains(s, `"io.modelcontextprotocol/related-task":{"taskId":"`+id+`"}`)) {
				t.Fatalf("%s: %s", method, s)
			}
		}
		if s := mustJSON(d.mustRequest("tasks/list", nil)); !strings.Contains(s, `"taskId":"`+id+`"`) || strings.Contains(s, `"taskId":"1"`) {
			t.Fatalf("tasks/list: %s", s)
		}
		for _, method := range []string{"tasks/get", "tasks/result", "tasks/cancel"} {
			refused(d, method, "1")
		}
		if s := mustJSON(d.mustRequest("tasks/cancel", map[string]any{"taskId": id})); !strings.Contains(s, `"cancelled"`) {
			t.Fatalf("tasks/cancel: %s", s)
		}
		waitTaskRefusals(t, audit, "", map[string]int{"task_unknown tasks/get": 1, "task_unknown tasks/result": 1, "task_unknown tasks/cancel": 1})
	})
	t.Run("http", func(t *testing.T) {
		audit := filepath.Join(t.TempDir(), "audit.jsonl")
		g := startHTTPGateway(t, append([]string{"--audit-file", audit, "--"}, up...)...)
		first, second := startDriver(t, map[string]any{"url": g.url}), startDriver(t, map[string]any{"url": g.url})
		created := first.mustRequest("tools/call", map[string]any{"name": "work", "arguments": map[string]any{}, "task": map[string]any{"ttl": 60000}})
		b, _ := json.Marshal(created)
		id := gatewayTaskID(t, b)
		second.mustRequest("tools/call", map[string]any{"name": "work", "arguments": map[string]any{}, "task": map[string]any{"ttl": 60000}}) // its own "1"
		for _, method := range []string{"tasks/get", "tasks/result", "tasks/cancel"} {
			refused(second, method, id)
		}
		if s := mustJSON(first.mustRequest("tasks/get", map[string]any{"taskId": id})); !strings.Contains(s, `"taskId":"`+id+`"`) {
			t.Fatalf("the first session's tasks/get: %s", s)
		}
		waitTaskRefusals(t, audit, "", map[string]int{"task_not_owned tasks/get": 1, "task_not_owned tasks/result": 1, "task_not_owned tasks/cancel": 1})
	})
}

// gatewayTaskID is the task id of a CreateTaskResult the client got: the gateway's,
// 22 characters of URL-safe base64 (128 bits).
func gatewayTaskID(t *testing.T, created json.RawMessage) string {
	t.Helper()
	var r struct {
		Task struct {
			TaskID string `json:"taskId"`
		} `json:"task"`
	}
	if json.Unmarshal(created, &r) != nil || len(r.Task.TaskID) != 22 || strings.Trim(r.Task.TaskID, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_") != "" {
		t.Fatalf("no task id of the gateway's in %s", created)
	}
	return r.Task.TaskID
}

// waitTaskRefusals waits until the audit file holds exactly want records ("<reason>
// <method>" → count) of task refusals (of user, when not ""), each of outcome
// rejected.
func waitTaskRefusals(t *testing.T, audit, user string, want map[string]int) {
	t.Helper()
	count := func() map[string]int {
		got := map[string]int{}
		b, _ := os.ReadFile(audit)
		for _, line := range strings.Split(string(b), "\n") {
			var r map[string]any
			if json.Unmarshal([]byte(line), &r) != nil || (r["reason"] != "task_not_owned" && r["reason"] != "task_unknown") || r["outcome"] != "rejected" {
				continue
			}
			if c, _ := r["caller"].(map[string]any); user != "" && (c == nil || c["user_id"] != user) {
				continue
			}
			got[fmt.Sprint(r["reason"], " ", r["method"])]++
		}
		return got
	}
	if !testwait.Within(testwait.Timeout, func() bool { return fmt.Sprint(count()) == fmt.Sprint(want) }) {
		b, _ := os.ReadFile(audit)
		t.Errorf("task refusal records %v, want %v:\n%s", count(), want, b)
	}
}
