package e2e

import (
	"encoding/json"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/mcpgate/mcpgate/internal/testwait"
)

// TestTasksSeveralServers: a v2 client pinned to 2026-07-28 behind a gateway with two
// 2026-07-28 servers that offer the tasks extension and hand out the same task ids
// (t1, t2, …); on stdio and on the HTTP front. server/discover advertises the
// extension; a task created through each server's tool gets an id of the gateway's
// (docs/decisions.md#task-owners), whose tasks/get reaches the server that made it
// (the multiplexer's <server>+<taskId>) and inlines that server's result once the
// task completed; the tasks/update and the cancel of a third task reach its server
// (its tasks/get then tells the update's inputResponses), and the server's
// notifications/tasks reaches the client under the client's id (over HTTP on the
// tasks/cancel's response, as a 2026-07-28 client has no GET stream), never under
// the multiplexer's <server>+<taskId>.
func TestTasksSeveralServers(t *testing.T) {
	nodeModule(t, "@modelcontextprotocol/server/package.json")
	cfg := filepath.Join(t.TempDir(), "config.json")
	server := func(name string) map[string]any {
		return map[string]any{"command": node22(t), "args": []string{filepath.Join(root, "testdata", "e2e", "tasks26.mjs"), name}}
	}
	writeJSON(t, cfg, map[string]any{"mcpServers": map[string]any{"a": server("a"), "b": server("b")}})
	h := startHTTPGateway(t, "--config", cfg)
	for _, front := range []string{"stdio", "http"} {
		conf := map[string]any{"tools": []string{"a_work", "b_work"}}
		if front == "http" {
			conf["url"] = h.url
		} else {
			conf["cmd"] = []string{binary, "gateway", "run", "--config", cfg, "--policies", emptyPolicies(t)}
		}
		nodeModule(t, "@modelcontextprotocol/client/package.json")
		out := scriptJSON(t, "tasks26-client.mjs", conf)
		if !strings.Contains(string(out["capabilities"]), `"io.modelcontextprotocol/tasks"`) {
			t.Errorf("%s: server/discover capabilities %s: no tasks extension", front, out["capabilities"])
		}
		if string(out["tools"]) != `["a_work","b_work"]` {
			t.Errorf("%s: tools %s", front, out["tools"])
		}
		var created, got []json.RawMessage
		if json.Unmarshal(out["created"], &created) != nil || json.Unmarshal(out["got"], &got) != nil || len(created) != 2 || len(got) != 2 {
			t.Fatalf("%s: %s", front, mustJSON(out))
		}
		ids := map[string]bool{}
		for i, server := range []string{"a", "b"} {
			id := taskIDOf(t, created[i])
			ids[id] = true
			g := string(got[i])
			if !strings.Contains(g, `"taskId":"`+id+`"`) || !strings.Contains(g, `"status":"completed"`) ||
				!strings.Contains(g, `"text":"`+server+`: from `+server+`_work"`) {
				t.Errorf("%s: tasks/get of %s's task %s: %s", front, server, id, g)
			}
		}
		held := taskIDOf(t, out["held"])
		ids[held] = true
		if len(ids) != 3 {
			t.Errorf("%s: the client holds %d ids for 3 tasks: %s", front, len(ids), mustJSON(out))
		}
		if u, g := string(out["updated"]), string(out["heldGot"]); strings.Contains(u, `"error"`) || !strings.Contains(g, `"statusMessage":"answered note"`) ||
			!strings.Contains(g, `"status":"working"`) {
			t.Errorf("%s: tasks/update %s, then tasks/get %s", front, u, g)
		}
		if c := string(out["cancelled"]); !strings.Contains(c, `"taskId":"`+held+`"`) || !strings.Contains(c, `"status":"cancelled"`) {
			t.Errorf("%s: tasks/cancel: %s", front, c)
		}
		if n := string(out["notes"]); !strings.Contains(n, `"taskId":"`+held+`"`) || !strings.Contains(n, `"status":"cancelled"`) || strings.Contains(n, "a+t") {
			t.Errorf("%s: notifications/tasks %s, want the cancelled task under %s", front, n, held)
		}
	}
}

// taskIDOf is the top-level taskId of a 2026-07-28 CreateTaskResult the client got:
// the gateway's, 22 characters of URL-safe base64 (128 bits).
func taskIDOf(t *testing.T, created json.RawMessage) string {
	t.Helper()
	var r struct {
		TaskID string `json:"taskId"`
	}
	_ = json.Unmarshal(created, &r)
	b, _ := json.Marshal(map[string]any{"task": map[string]any{"taskId": r.TaskID}})
	return gatewayTaskID(t, b)
}

// TestTasksSeveralServers2025: the 2025-11-25 tasks, with the TypeScript SDK client
// behind a gateway with two servers whose task ids are the same sequence (1, 2, …), on
// stdio and the HTTP front. The merged capabilities keep tasks; the client holds the
// gateway's id of each server's task, whose tasks/get, tasks/result (its related task
// too) and tasks/cancel reach the server that made it; tasks/list merges both
// servers' tasks under the client's ids and, over HTTP, leaves out another session's;
// the server's notifications/tasks/status of the cancel reaches the client under the
// client's id.
func TestTasksSeveralServers2025(t *testing.T) {
	nodeModule(t, "@modelcontextprotocol/sdk/package.json")
	cfg := filepath.Join(t.TempDir(), "config.json")
	s := map[string]any{"command": "node", "args": []string{filepath.Join(root, "testdata", "e2e", "tasks-server.mjs")}}
	writeJSON(t, cfg, map[string]any{"mcpServers": map[string]any{"a": s, "b": s}})
	h := startHTTPGateway(t, "--config", cfg)
	create := func(d *driver, tool, text string) string {
		t.Helper()
		b, _ := json.Marshal(d.mustRequest("tools/call", map[string]any{"name": tool, "arguments": map[string]any{"text": text}, "task": map[string]any{"ttl": 60000}}))
		return gatewayTaskID(t, b)
	}
	listed := func(d *driver) []string { return names(d.mustRequest("tasks/list", nil), "tasks", "taskId") }
	for _, front := range []string{"stdio", "http"} {
		spec := map[string]any{"url": h.url}
		if front == "stdio" {
			spec = map[string]any{"command": binary, "args": []string{"gateway", "run", "--config", cfg, "--policies", emptyPolicies(t)}}
		}
		d := startDriver(t, spec)
		if _, ok := d.caps["tasks"]; !ok {
			t.Errorf("%s: capabilities %v: no tasks", front, d.caps)
		}
		ids := map[string]string{"a": create(d, "a_work", "from a"), "b": create(d, "b_work", "from b")}
		if ids["a"] == ids["b"] {
			t.Fatalf("%s: one id for two tasks: %v", front, ids)
		}
		for server, id := range ids {
			if got := mustJSON(d.mustRequest("tasks/get", map[string]any{"taskId": id})); !strings.Contains(got, `"taskId":"`+id+`"`) || !strings.Contains(got, `"completed"`) {
				t.Errorf("%s: tasks/get of %s's task: %s", front, server, got)
			}
			if got := mustJSON(d.mustRequest("tasks/result", map[string]any{"taskId": id})); !strings.Contains(got, `"text":"from `+server+`"`) ||
				!strings.Contains(got, `"io.modelcontextprotocol/related-task":{"taskId":"`+id+`"}`) {
				t.Errorf("%s: tasks/result of %s's task: %s", front, server, got)
			}
		}
		var other string
		if front == "http" {
			second := startDriver(t, map[string]any{"url": h.url})
			other = create(second, "a_work", "another session's")
			if got := listed(second); !slices.Equal(got, []string{other}) {
				t.Errorf("the other session's tasks/list: %v, want only %s", got, other)
			}
		}
		got := listed(d)
		slices.Sort(got)
		want := []string{ids["a"], ids["b"]}
		slices.Sort(want)
		if !slices.Equal(got, want) {
			t.Errorf("%s: tasks/list %v, want %v (not %q)", front, got, want, other)
		}
		if got := mustJSON(d.mustRequest("tasks/cancel", map[string]any{"taskId": ids["b"]})); !strings.Contains(got, `"cancelled"`) || !strings.Contains(got, ids["b"]) {
			t.Errorf("%s: tasks/cancel: %s", front, got)
		}
		var notices string
		if !testwait.Within(testwait.Timeout, func() bool {
			n, _ := json.Marshal(d.send(map[string]any{"op": "notices"})["notices"])
			notices += string(n)
			return strings.Contains(notices, `"method":"notifications/tasks/status"`)
		}) || !strings.Contains(notices, `"taskId":"`+ids["b"]+`"`) || strings.Contains(notices, `"taskId":"1"`) || strings.Contains(notices, "b+") {
			t.Errorf("%s: notifications %s, want notifications/tasks/status of %s", front, notices, ids["b"])
		}
	}
}
