package relay

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mcpgate/mcpgate/gate"
)

// TestRelayTasksUpdate: a tasks/update (MCP 2026-07-28 tasks extension) goes through
// the input rules and the pre phase before the server sees it: the policy sees
// ctx.method tasks/update, ctx.tool and ctx.params of the tools/call that created the
// task, and the input rules' findings over inputResponses; a rejection is answered
// -32600 citing one record and never forwarded; a clean update is forwarded byte for
// byte with no record; an update of a task the session does not hold is refused
// -32602 (task_unknown), as a tasks/result is.
func TestRelayTasksUpdate(t *testing.T) {
	dir := t.TempDir()
	policy := `if (ctx.phase === "pre" && ctx.method === "tasks/update" && ctx.findings.length > 0) {
  throw "update of " + ctx.tool + " n=" + ctx.params.n + " at " + ctx.findings[0].pointer;
}`
	if err := os.WriteFile(filepath.Join(dir, "update.js"), []byte(policy), 0o644); err != nil {
		t.Fatal(err)
	}
	h := newHarnessWith(t, newFakeUpstream(), func(o *Options) {
		g, err := gate.Load(context.Background(), gate.Options{Dir: dir, Analyzer: o.Pipeline.Analyzer, Logger: o.Logger})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { g.Close() })
		o.Pipeline.Gate = g
	})
	// a task-augmented tools/call creates task t-1 of slow_tool
	h.client(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"slow_tool","arguments":{"n":7},"task":{"ttl":60000}}}`)
	list := h.upstreamGets()
	h.up.lines <- `{"jsonrpc":"2.0","id":` + list[strings.Index(list, `"id":`)+5:strings.Index(list, `,"method"`)] + `,"result":{"tools":[{"name":"slow_tool","inputSchema":{"type":"object"}}]}}`
	h.upstreamGets()
	h.up.lines <- `{"jsonrpc":"2.0","id":1,"result":{"task":{"taskId":"t-1","status":"working"}}}`
	id := clientTaskID(t, h.clientGets()) // the gateway's id for t-1
	if rec := h.recs.call(); rec.Tool != "slow_tool" {
		t.Fatalf("tools/call record %+v", rec)
	}

	// an answer carrying an OSC 52 write: rejected, one record
	evil := `{"jsonrpc":"2.0","id":2,"method":"tasks/update","params":{"taskId":"` + id + `","inputResponses":{"e1":{"action":"accept","content":{"note":"x` + osc52 + `"}}}}}`
	h.client(evil)
	got := h.clientGets()
	if errorCode(t, got) != -32600 || !strings.Contains(got, "call rejected by policy update.js: update of slow_tool n=7 at /inputResponses/e1/content/note") {
		t.Fatalf("rejected tasks/update: %s", got)
	}
	rec := <-h.recs.ch
	if rec.Method != "tasks/update" || rec.Tool != "slow_tool" || rec.Outcome != "rejected" || rec.Phase != "pre" || !strings.Contains(got, rec.EventID) {
		t.Fatalf("record %+v", rec)
	}

	// a clean answer: forwarded as sent, no record
	clean := `{"id":3,"jsonrpc":"2.0","method":"tasks/update","params":{"inputResponses":{"e1":{"action":"accept","content":{"note":"fine"}}},"taskId":"t-1"}}`
	h.client(strings.Replace(clean, "t-1", id, 1))
	if up := h.upstreamGets(); up != clean {
		t.Fatalf("the upstream got %s, want %s (the server's task id)", up, clean)
	}
	h.up.lines <- `{"jsonrpc":"2.0","id":3,"result":{}}`
	if got := h.clientGets(); !strings.Contains(got, `"id":3`) || strings.Contains(got, "error") {
		t.Fatalf("clean tasks/update: %s", got)
	}

	// an unknown task
	h.client(`{"jsonrpc":"2.0","id":4,"method":"tasks/update","params":{"taskId":"t-9","inputResponses":{}}}`)
	if got := h.clientGets(); errorCode(t, got) != -32602 || !strings.Contains(got, "not known") {
		t.Fatalf("unknown task: %s", got)
	}
	if rec := <-h.recs.ch; rec.Method != "tasks/update" || rec.Reason != "task_unknown" {
		t.Fatalf("record %+v", rec)
	}
	select {
	case l := <-h.up.sent:
		t.Fatalf("the upstream got %s", l)
	case rec := <-h.recs.ch:
		t.Fatalf("a record too many: %+v", rec)
	default:
	}
}
