package e2e

import (
	"context"
	"net/http"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/mcpgate/mcpgate/internal/testwait"
)

// TestHTTPDrainUnderLoad proves the SIGTERM behaviour docs/http.md promises: while
// calls are in flight, new requests — on kept-alive connections and on new ones —
// get 503, never a reset or a refused connection; the calls in flight finish with
// their results; then the gateway exits.
func TestHTTPDrainUnderLoad(t *testing.T) {
	_, fake := httpBinaries(t)
	g := startHTTPGateway(t, "--drain-timeout", "20s", "--", fake)
	const slow, probes = 4, 8
	busy := make([]*httpClient, slow)
	for i := range busy {
		busy[i] = newHTTPClient(g.url)
		busy[i].initialize(t)
	}
	idle := make([]*httpClient, probes)
	for i := range idle {
		idle[i] = newHTTPClient(g.url) // their connections stay alive in the pool
		idle[i].initialize(t)
	}

	// Start slow calls; each is in flight once its progress notification arrives.
	results := make([]string, slow)
	var wg sync.WaitGroup
	for i, c := range busy {
		body := `{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"slow","arguments":{"ms":4000},"_meta":{"progressToken":"p` + string(rune('a'+i)) + `"}}}`
		ch := c.sseEvents(t, t.Context(), body)
		if m := <-ch; m["method"] != "notifications/progress" {
			t.Fatalf("first event %v, want progress", m)
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			for m := range ch {
				results[i] = httpResultText(m)
			}
		}()
	}

	if err := g.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	waitForLog(t, g, "shutting down: draining")

	fresh := &httpClient{url: g.url, hc: &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{}}}
	for i, c := range append(idle, fresh) {
		r, err := c.do(context.Background(), http.MethodPost, httpCallBody(100+i, "echo", map[string]any{"text": "late"}), nil)
		if err != nil {
			t.Fatalf("probe %d during drain: %v (want a 503, not a transport error)", i, err)
		}
		if r.status != http.StatusServiceUnavailable {
			t.Fatalf("probe %d during drain: status %d, want 503", i, r.status)
		}
		if code, msg := httpErrorOf(r.last()); code != -32000 || !strings.Contains(msg, "shutting down") {
			t.Fatalf("probe %d: error %d %q", i, code, msg)
		}
	}
	wg.Wait()
	for i, got := range results {
		if got != "slept 4000" {
			t.Errorf("in-flight call %d ended with %q, want its result", i, got)
		}
	}
	select {
	case <-g.done:
	case <-time.After(15 * time.Second):
		t.Fatal("the gateway did not exit after the calls in flight finished")
	}
}

// waitForLog waits until the gateway's stderr holds s.
func waitForLog(t *testing.T, g *httpGateway, s string) {
	t.Helper()
	if !testwait.Within(testwait.Timeout, func() bool { return strings.Contains(g.stderr.String(), s) }) {
		t.Fatalf("the gateway never logged %q:\n%s", s, g.stderr.String())
	}
}
