package e2e

import (
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestClientStringsBounded drives the real binary with tool names of 4 MB (the
// measured attack: forty such calls took the gateway to 1.36 GB, /metrics to 160 MB
// and the audit file to 320 MB): each is answered -32602, recorded once with the
// name cut to 128 bytes, and counted on /metrics under the one _other label; after
// a 1 MB clientInfo name every record stays small. (The gateway records no
// clientInfo; mcp-server's cut is proven in internal/relay.)
func TestClientStringsBounded(t *testing.T) {
	_, fake := httpBinaries(t)
	auditFile := filepath.Join(t.TempDir(), "audit.jsonl")
	g := startHTTPGateway(t, "--audit-file", auditFile, "--admin", "127.0.0.1:0", "--", fake)
	c := newHTTPClient(g.url)
	r := c.post(t, `{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"`+strings.Repeat("c", 1<<20)+`","version":"1"}}}`)
	if r.status != http.StatusOK {
		t.Fatalf("initialize: %d", r.status)
	}
	c.sid = r.header.Get("Mcp-Session-Id")
	c.mustEcho(t, 1)
	const calls = 5
	for i := range calls {
		m := c.call(t, 10+i, strings.Repeat("n", 4<<20), map[string]any{})
		if code, _ := httpErrorOf(m); code != -32602 {
			t.Fatalf("call %d with a 4 MB tool name: %v, want -32602", i, m)
		}
	}
	metrics := httpGet(t, "http://"+adminAddr(t, g.stderr)+"/metrics")
	if !strings.Contains(metrics, `mcpgate_tool_calls_total{action="block",tool="_other"} 5`) || strings.Contains(metrics, "nnnnnnnn") {
		t.Errorf("/metrics (%d bytes): %s", len(metrics), grepLines(metrics, "mcpgate_tool_calls_total"))
	}
	g.stop(t)
	b, err := os.ReadFile(auditFile)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	if len(lines) != calls+1 {
		t.Fatalf("%d records for %d calls", len(lines), calls+1)
	}
	for _, l := range lines {
		if len(l) > 8<<10 {
			t.Errorf("a record of %d bytes: client strings are not bounded", len(l))
		}
	}
}
