package relay

import (
	"strings"
	"testing"
	"time"

	"github.com/mcpgate/mcpgate/internal/audit"
)

// record waits briefly for the next record; an empty one stands for none.
func (h *harness) record() *audit.Record {
	select {
	case r := <-h.recs.ch:
		return r
	case <-time.After(2 * time.Second):
		return &audit.Record{}
	}
}

// TestRelayEveryTextFiltered: the text of every method reaches the rules: a task's
// statusMessage (tasks/get, tasks/list, tasks/cancel, notifications/tasks/status)
// and the JSON-RPC error of a method outside the filtered channels (ping,
// resources/subscribe, logging/setLevel, a method the gateway does not know), each
// with one record naming the method.
func TestRelayEveryTextFiltered(t *testing.T) {
	h := newHarness(t, 0)
	responses := []struct{ method, result, keep string }{
		{"tasks/get", `{"taskId":"t1","status":"working","statusMessage":"x` + osc52 + `","createdAt":"2026-01-01T00:00:00Z","lastUpdatedAt":"2026-01-01T00:00:00Z","ttl":null}`, `"taskId":"t1"`},
		{"tasks/cancel", `{"taskId":"t1","status":"cancelled","statusMessage":"x` + osc52 + `","createdAt":"2026-01-01T00:00:00Z","lastUpdatedAt":"2026-01-01T00:00:00Z","ttl":null}`, `"status":"cancelled"`},
		{"tasks/list", `{"tasks":[{"taskId":"t1","status":"working","statusMessage":"x` + osc52 + `"},{"taskId":"t2","status":"completed"}]}`, `"taskId":"t2"`},
	}
	for i, c := range responses {
		id := string(rune('a' + i))
		h.client(`{"jsonrpc":"2.0","id":"` + id + `","method":"` + c.method + `","params":{}}`)
		h.upstreamGets()
		h.up.lines <- `{"jsonrpc":"2.0","id":"` + id + `","result":` + c.result + `}`
		got := h.clientGets()
		if strings.Contains(got, `\u001b`) || !strings.Contains(got, "[mcpgate: text blocked") || !strings.Contains(got, c.keep) {
			t.Errorf("%s: client got %s", c.method, got)
		}
		if rec := h.record(); rec.Method != c.method || rec.ActionTaken != "block" {
			t.Errorf("%s: record %+v", c.method, rec)
		}
	}
	h.up.lines <- `{"jsonrpc":"2.0","method":"notifications/tasks/status","params":{"taskId":"t1","status":"working","statusMessage":"x` + osc52 + `"}}`
	if got := h.clientGets(); strings.Contains(got, `\u001b`) || !strings.Contains(got, `"taskId":"t1"`) {
		t.Errorf("notifications/tasks/status: client got %s", got)
	}
	if rec := h.record(); rec.Method != "notifications/tasks/status" || rec.ActionTaken != "block" {
		t.Errorf("notifications/tasks/status: record %+v", rec)
	}

	for i, method := range []string{"ping", "resources/subscribe", "logging/setLevel", "vendor/custom"} {
		id := string(rune('p' + i))
		h.client(`{"jsonrpc":"2.0","id":"` + id + `","method":"` + method + `","params":{}}`)
		h.upstreamGets()
		h.up.lines <- `{"jsonrpc":"2.0","id":"` + id + `","error":{"code":-32000,"message":"x` + osc52 + `","data":"y` + osc52 + `"}}`
		got := h.clientGets()
		if strings.Contains(got, `\u001b`) || !strings.Contains(got, "tool output blocked") || !strings.Contains(got, `"code":-32000`) {
			t.Errorf("%s error: client got %s", method, got)
		}
		if rec := h.record(); rec.Method != method || rec.ActionTaken != "block" {
			t.Errorf("%s error: record %+v", method, rec)
		}
	}
	// A clean error passes byte for byte.
	h.client(`{"jsonrpc":"2.0","id":"z","method":"ping"}`)
	h.upstreamGets()
	clean := `{"jsonrpc":"2.0","id":"z","error":{"code":-32601,"message":"Method not found"}}`
	h.up.lines <- clean
	if got := h.clientGets(); got != clean {
		t.Errorf("clean error: client got %s", got)
	}
}
