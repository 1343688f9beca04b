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

// createTask makes the session hold a task: a task-augmented tools/call (request id
// id) whose server answers with task upID; it returns the client's id of the task.
func (h *harness) createTask(id, upID string) string {
	h.t.Helper()
	h.client(`{"jsonrpc":"2.0","id":"` + id + `","method":"tools/call","params":{"name":"slow","arguments":{},"task":{"ttl":60000}}}`)
	if got := h.upstreamGets(); strings.Contains(got, `"method":"tools/list"`) { // the gateway's own listing first
		own := got[strings.Index(got, `"id":`)+5 : strings.Index(got, `,"method"`)]
		h.up.lines <- `{"jsonrpc":"2.0","id":` + own + `,"result":{"tools":[{"name":"slow","inputSchema":{"type":"object"}}]}}`
		h.upstreamGets()
	}
	h.up.lines <- `{"jsonrpc":"2.0","id":"` + id + `","result":{"task":{"taskId":"` + upID + `","status":"working","ttl":60000}}}`
	task := clientTaskID(h.t, h.clientGets())
	h.recs.call()
	return task
}

// TestRelayEveryTextFiltered: the text of every method reaches the rules: a task's
// statusMessage (tasks/get, tasks/list, tasks/cancel, notifications/tasks/status and
// the 2026-07-28 extension's notifications/tasks)
// and the JSON-RPC error of a method outside the filtered channels (ping,
// resources/subscribe, logging/setLevel, a method the gateway does not know), each
// with one record naming the method.
func TestRelayEveryTextFiltered(t *testing.T) {
	h := newHarness(t, 0)
	t1, t2 := h.createTask("c1", "t1"), h.createTask("c2", "t2")
	responses := []struct{ method, params, result, keep string }{
		{"tasks/get", `{"taskId":"` + t1 + `"}`, `{"taskId":"t1","status":"working","statusMessage":"x` + osc52 + `","createdAt":"2026-01-01T00:00:00Z","lastUpdatedAt":"2026-01-01T00:00:00Z","ttl":null}`, `"taskId":"` + t1 + `"`},
		{"tasks/cancel", `{"taskId":"` + t1 + `"}`, `{"taskId":"t1","status":"cancelled","statusMessage":"x` + osc52 + `","createdAt":"2026-01-01T00:00:00Z","lastUpdatedAt":"2026-01-01T00:00:00Z","ttl":null}`, `"status":"cancelled"`},
		{"tasks/list", `{}`, `{"tasks":[{"taskId":"t1","status":"working","statusMessage":"x` + osc52 + `"},{"taskId":"t2","status":"completed"}]}`, `"taskId":"` + t2 + `"`},
	}
	for i, c := range responses {
		id := string(rune('a' + i))
		h.client(`{"jsonrpc":"2.0","id":"` + id + `","method":"` + c.method + `","params":` + c.params + `}`)
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
	for _, method := range []string{"notifications/tasks/status", "notifications/tasks"} { // 2025-11-25, the 2026-07-28 extension
		h.up.lines <- `{"jsonrpc":"2.0","method":"` + method + `","params":{"taskId":"t1","status":"working","statusMessage":"x` + osc52 + `"}}`
		if got := h.clientGets(); strings.Contains(got, `\u001b`) || !strings.Contains(got, `"taskId":"`+t1+`"`) {
			t.Errorf("%s: client got %s", method, got)
		}
		if rec := h.record(); rec.Method != method || rec.ActionTaken != "block" {
			t.Errorf("%s: record %+v", method, rec)
		}
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

// TestRelayRecordsRevisionAndClient: a record names the revision of its exchange and
// the client's name and version: initialize's for a 2025-11-25 session, the request's
// _meta envelope for a 2026-07-28 request, each bounded.
func TestRelayRecordsRevisionAndClient(t *testing.T) {
	h := newHarness(t, 0, func(o *Options) { o.RecordClientInfo = true })
	h.client(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"old","version":"1.0"}}}`)
	h.upstreamGets()
	h.up.lines <- `{"jsonrpc":"2.0","id":1,"result":{"protocolVersion":"2025-06-18","capabilities":{},"serverInfo":{"name":"s","version":"1"}}}`
	h.clientGets()
	h.client(`{"jsonrpc":"2.0","id":9,"method":"tools/list"}`)
	h.upstreamGets()
	h.up.lines <- `{"jsonrpc":"2.0","id":9,"result":{"tools":[{"name":"x","inputSchema":{"type":"object"}}]}}`
	h.clientGets()
	h.record() // the listing's
	h.client(`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"x"}}`)
	h.upstreamGets()
	h.up.lines <- `{"jsonrpc":"2.0","id":2,"result":{"content":[]}}`
	h.clientGets()
	if r := h.record(); r.ProtocolVersion != "2025-06-18" || r.ClientInfo["name"] != "old" || r.ClientInfo["version"] != "1.0" {
		t.Errorf("legacy record: %q %v", r.ProtocolVersion, r.ClientInfo)
	}
	long := strings.Repeat("n", 300)
	h.client(`{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"x","_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{},"io.modelcontextprotocol/clientInfo":{"name":"` + long + `","version":"2.4.0"}}}}`)
	h.upstreamGets()
	h.up.lines <- `{"jsonrpc":"2.0","id":3,"result":{"content":[],"resultType":"complete"}}`
	h.clientGets()
	if r := h.record(); r.ProtocolVersion != "2026-07-28" || len(r.ClientInfo["name"]) > 256 || r.ClientInfo["version"] != "2.4.0" {
		t.Errorf("modern record: %q %v", r.ProtocolVersion, r.ClientInfo)
	}
}

// TestRelayOwnListingParams: the gateway's own tools/list sends no params at all in a
// 2025-11-25 session ("params": null fails TypeScript servers), and in a 2026-07-28
// one the client's _meta envelope with the gateway's own clientInfo.
func TestRelayOwnListingParams(t *testing.T) {
	h := newHarness(t, 0)
	h.client(`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"x"}}`)
	if got := h.upstreamGets(); !strings.Contains(got, `"method":"tools/list"`) || strings.Contains(got, `"params"`) {
		t.Errorf("legacy own listing: %s", got)
	}
	h = newHarness(t, 0)
	h.client(`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"x","_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{"elicitation":{}},"io.modelcontextprotocol/clientInfo":{"name":"c","version":"1"}}}}`)
	got := h.upstreamGets()
	for _, want := range []string{`"method":"tools/list"`, `"io.modelcontextprotocol/protocolVersion":"2026-07-28"`, `"io.modelcontextprotocol/clientCapabilities":{"elicitation":{}}`, `"io.modelcontextprotocol/clientInfo":{"name":"mcpgate"`} {
		if !strings.Contains(got, want) {
			t.Errorf("modern own listing: %s lacks %s", got, want)
		}
	}
}
