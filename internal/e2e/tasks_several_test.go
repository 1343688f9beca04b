package e2e

import (
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"
)

// TestTasksSeveralServers: a v2 client pinned to 2026-07-28 behind a gateway with two
// 2026-07-28 servers that offer the tasks extension and hand out the same task ids
// (t1, t2, …); on stdio and on the HTTP front. server/discover advertises the
// extension; a task created through each server's tool gets an id of the gateway's
// (docs/decisions.md#task-owners), whose tasks/get reaches the server that made it
// (the multiplexer's <server>+<taskId>) and inlines that server's result once the
// task completed; the cancel of a third task reaches its server, and the server's
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
