package e2e

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
)

// TestHotReloadUnderLoad adds, breaks, renames and removes policy files while calls
// are in flight; no call may fail because of a reload, and a broken file keeps the
// last good set.
func TestHotReloadUnderLoad(t *testing.T) {
	pol := t.TempDir()
	write := func(name, src string) {
		t.Helper()
		if err := os.WriteFile(filepath.Join(pol, name), []byte(src), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	write("10-tag.js", `if (ctx.phase === "post") { ctx.response.content.push({type: "text", text: "tagged"}) }`)
	c, log := mcpClient(t, nil, binary, gatewayArgs([]string{"--policies", pol, "--log-level", "debug"}, upstreamMJS(t))...)
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("gateway stderr:\n%s", log.String())
		}
	})

	var calls, failures atomic.Int64
	var firstFailure atomic.Value
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for w := 0; w < 4; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case <-stop:
					return
				default:
				}
				ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
				req := mcp.CallToolRequest{}
				req.Params.Name, req.Params.Arguments = "echo_args", map[string]any{"n": 1}
				res, err := c.CallTool(ctx, req)
				cancel()
				calls.Add(1)
				if err != nil {
					failures.Add(1)
					firstFailure.CompareAndSwap(nil, err.Error())
					return
				}
				if res.IsError {
					failures.Add(1)
					firstFailure.CompareAndSwap(nil, res.Content[0].(mcp.TextContent).Text)
				}
			}
		}()
	}
	steps := []func(){
		func() { write("20-extra.js", `if (ctx.phase === "pre") { ctx.params.extra = true }`) },
		func() { write("30-broken.js", `if (ctx.phase === "post" {`) }, // syntax error: keep the last good set
		func() { os.Remove(filepath.Join(pol, "30-broken.js")) },
		func() { // an editor that saves by writing a temp file and renaming it over
			write(".20-extra.js.swp", `if (ctx.phase === "pre") { ctx.params.extra = "v2" }`)
			os.Rename(filepath.Join(pol, ".20-extra.js.swp"), filepath.Join(pol, "20-extra.js"))
		},
		func() { os.Remove(filepath.Join(pol, "20-extra.js")) },
	}
	for _, step := range steps {
		step()
		time.Sleep(400 * time.Millisecond)
	}
	close(stop)
	wg.Wait()
	if failures.Load() != 0 {
		t.Fatalf("%d of %d calls failed during reloads; first: %v", failures.Load(), calls.Load(), firstFailure.Load())
	}
	if calls.Load() < 20 {
		t.Fatalf("only %d calls ran", calls.Load())
	}
	logs := log.String()
	if !strings.Contains(logs, "30-broken.js") {
		t.Errorf("the broken file was not reported in the log:\n%s", logs)
	}
	// Records show more than one generation: the reloads took effect.
	gens := map[any]bool{}
	for _, r := range log.records() {
		gens[r["policy_generation"]] = true
	}
	if len(gens) < 3 {
		t.Errorf("want records from at least 3 policy generations, got %v", gens)
	}
	res := callTool(t, c, "echo_args", map[string]any{})
	if len(res.Content) != 2 || res.Content[1].(mcp.TextContent).Text != "tagged" {
		t.Errorf("the last good set should still tag results: %+v", res.Content)
	}
}
