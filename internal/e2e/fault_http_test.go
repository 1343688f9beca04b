package e2e

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mcpgate/mcpgate/internal/testwait"
)

// Each fault test states the exact outcome and then checks that the gateway serves
// the next call in the same session.

func TestFaultUpstreamKilledMidCall(t *testing.T) {
	_, fake := httpBinaries(t)
	g := startHTTPGateway(t, "--", fake)
	c := newHTTPClient(g.url)
	c.initialize(t)
	before := httpResultText(c.call(t, 1, "pid", nil))

	m := c.call(t, 2, "crash", nil)
	code, msg := httpErrorOf(m)
	if code != -32000 || !strings.Contains(msg, "exited while the request was in flight") {
		t.Fatalf("crash: want -32000 \"…exited while the request was in flight…\", got %d %q", code, msg)
	}
	// The supervisor restarts the server with backoff and replays initialize; until
	// then a call gets a clear "being restarted" error.
	var after string
	id := 3
	testwait.For(t, "the upstream to be back", func() bool {
		m := c.call(t, id, "pid", nil)
		id++
		if after = httpResultText(m); after != "" {
			return true
		}
		if code, msg := httpErrorOf(m); code != -32000 || !strings.Contains(msg, "restart") {
			t.Fatalf("during restart: got %d %q", code, msg)
		}
		return false
	})
	if after == before {
		t.Fatalf("upstream not restarted: pid before %q after %q", before, after)
	}
	c.mustEcho(t, 100)
	if !strings.Contains(g.stderr.String(), "upstream MCP server restarted") {
		t.Error("no restart log line")
	}
}

func TestFaultUpstreamNeverAnswers(t *testing.T) {
	_, fake := httpBinaries(t)
	g := startHTTPGateway(t, "--call-timeout", "300ms", "--", fake)
	c := newHTTPClient(g.url)
	c.initialize(t)
	start := time.Now()
	m := c.call(t, 1, "hang", nil)
	code, msg := httpErrorOf(m)
	if code != -32001 || !strings.Contains(msg, "did not answer in time") {
		t.Fatalf("hang: want -32001 timeout, got %d %q", code, msg)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Fatalf("timeout took %s", d)
	}
	c.mustEcho(t, 2)
	httpWaitRecord(t, g, "hang", "timeout")
}

func TestFaultClientDisconnectsMidStream(t *testing.T) {
	_, fake := httpBinaries(t)
	g := startHTTPGateway(t, "--", fake)
	c := newHTTPClient(g.url)
	c.initialize(t)
	ctx, cancel := context.WithTimeout(context.Background(), 150*time.Millisecond)
	defer cancel()
	_, err := c.do(ctx, http.MethodPost, httpCallBody(1, "slow", map[string]any{"ms": 600}), nil)
	if err == nil {
		t.Fatal("expected the client-side deadline to cut the stream")
	}
	// A dropped connection is not a cancellation (MCP): the call completes upstream,
	// its record says ok, and the session goes on.
	c.mustEcho(t, 2)
	httpWaitRecord(t, g, "slow", "ok")
}

func TestFaultBadMessages(t *testing.T) {
	_, fake := httpBinaries(t)
	g := startHTTPGateway(t, "--max-message-bytes", "4096", "--max-json-depth", "64", "--", fake)
	c := newHTTPClient(g.url)
	c.initialize(t)
	tests := []struct {
		name     string
		body     string
		status   int
		code     int
		contains string
	}{
		{"malformed", `{"jsonrpc":"2.0","id":1,"method":`, 400, -32700, "malformed JSON"},
		{"not json-rpc", `{"jsonrpc":"1.0","id":1,"method":"ping"}`, 400, -32600, `"jsonrpc" must be "2.0"`},
		{"oversized", `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","arguments":{"text":"` + strings.Repeat("x", 8000) + `"}}}`, 413, -32600, "exceeds the 4096-byte limit"},
		{"batch", `[{"jsonrpc":"2.0","id":1,"method":"ping"},{"jsonrpc":"2.0","id":2,"method":"ping"}]`, 400, -32600, "batches are not supported"},
		{"too deep", `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","arguments":{"a":` + strings.Repeat("[", 100) + strings.Repeat("]", 100) + `}}}`, 400, -32600, "nested deeper than 64 levels"},
		{"empty", ``, 400, -32700, "empty request body"},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := c.post(t, tt.body)
			code, msg := httpErrorOf(r.last())
			if r.status != tt.status || code != tt.code || !strings.Contains(msg, tt.contains) {
				t.Fatalf("got HTTP %d %d %q; want HTTP %d %d …%q…", r.status, code, msg, tt.status, tt.code, tt.contains)
			}
			c.mustEcho(t, 10+i)
		})
	}
}

func TestFaultBadToken(t *testing.T) {
	_, fake := httpBinaries(t)
	sum := sha256.Sum256([]byte("s3cret-token"))
	cfg := filepath.Join(t.TempDir(), "config.json")
	httpWriteFile(t, cfg, `{"mcpgate":{"tokens":[{"sha256":"`+hex.EncodeToString(sum[:])+`","userID":"alice","callerClass":"trusted","roles":["dev"]}]}}`)
	g := startHTTPGateway(t, "--config", cfg, "--", fake)

	for _, tok := range []string{"", "wrong-token"} {
		c := newHTTPClient(g.url)
		c.token = tok
		r := c.post(t, `{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"e2e","version":"1"}}}`)
		if r.status != http.StatusUnauthorized || !strings.HasPrefix(r.header.Get("WWW-Authenticate"), "Bearer") {
			t.Fatalf("token %q: want 401 with WWW-Authenticate, got %d", tok, r.status)
		}
	}
	c := newHTTPClient(g.url)
	c.token = "s3cret-token"
	c.initialize(t)
	// The session is bound to its caller: another (invalid) token is refused.
	other := *c
	other.token = "wrong-token"
	if r := other.post(t, httpCallBody(1, "echo", map[string]any{"text": "x"})); r.status != http.StatusUnauthorized {
		t.Fatalf("bad token on a live session: want 401, got %d", r.status)
	}
	c.mustEcho(t, 2)
	rec := httpWaitRecord(t, g, "echo", "ok")
	caller, _ := rec["caller"].(map[string]any)
	if caller["user_id"] != "alice" || caller["caller_class"] != "trusted" {
		t.Fatalf("record caller = %v", caller)
	}
	if strings.Contains(g.stderr.String(), "s3cret-token") {
		t.Fatal("the token reached the gateway's stderr")
	}
}

func TestHTTPRefusesOffLoopbackWithoutTokens(t *testing.T) {
	gw, fake := httpBinaries(t)
	out, err := httpExec(gw, "gateway", "run", "--listen", "0.0.0.0:0", "--policies", t.TempDir(), "--", fake)
	if err == nil || !strings.Contains(out, "not a loopback address and no caller authentication is configured") {
		t.Fatalf("want a refusal, got err=%v\n%s", err, out)
	}
}

// httpWaitRecord waits for the audit record of tool and checks its outcome.
func httpWaitRecord(t *testing.T, g *httpGateway, tool, outcome string) map[string]any {
	t.Helper()
	var rec map[string]any
	testwait.For(t, "the audit record of "+tool, func() bool {
		for _, r := range g.stderr.records() {
			if r["tool"] == tool {
				rec = r
				return true
			}
		}
		return false
	})
	if rec["outcome"] != outcome {
		t.Fatalf("record for %s: outcome %v, want %s", tool, rec["outcome"], outcome)
	}
	return rec
}

func httpWriteFile(t *testing.T, path, content string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
}
