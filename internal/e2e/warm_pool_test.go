package e2e

import (
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/mcpgate/mcpgate/internal/testwait"
)

// serverPids lists the processes below the gateway whose command line holds marker.
func serverPids(gw int, marker string) []int {
	var out []int
	for p, c := range descendants(gw) {
		if strings.Contains(c, marker) {
			out = append(out, p)
		}
	}
	slices.Sort(out)
	return out
}

// TestWarmPool: with --warm-pool 2, two processes of the server are started before
// any session asks; each new session is served by one that was already running before
// its initialize, the pool is refilled, and no process serves two sessions. With
// --warm-pool 0 no process runs before a session and each session's is new.
func TestWarmPool(t *testing.T) {
	_, fake := httpBinaries(t)
	for _, size := range []int{2, 0} {
		t.Run(fmt.Sprintf("pool%d", size), func(t *testing.T) {
			g := startHTTPGateway(t, "--warm-pool", strconv.Itoa(size), "--", fake)
			gw := g.cmd.Process.Pid
			served := map[string]bool{}
			for i := range 3 {
				testwait.For(t, fmt.Sprintf("%d waiting processes beside %d sessions", size, i), func() bool {
					return len(serverPids(gw, fake)) == i+size
				})
				before := serverPids(gw, fake)
				c := newHTTPClient(g.url)
				c.initialize(t)
				pid := httpResultText(c.call(t, 1, "pid", map[string]any{}))
				if served[pid] {
					t.Fatalf("session %d: process %s already served another session", i, pid)
				}
				served[pid] = true
				n, _ := strconv.Atoi(pid)
				if warm := slices.Contains(before, n); warm != (size > 0) {
					t.Errorf("session %d: its process %s was running before it asked: %v (running then: %v)", i, pid, warm, before)
				}
			}
		})
	}
}

// TestWarmPoolFigures reports, side by side in one run, the time an HTTP session takes
// to connect (initialize answered) and the resident memory of the server processes
// per session, with --warm-pool 0 (each session starts its own) and --warm-pool 2, for
// server-everything (Node) as a team runs it. Figures are reported, never asserted
// (make bench; MCPGATE_POOL_FIGURES=1).
func TestWarmPoolFigures(t *testing.T) {
	if os.Getenv("MCPGATE_POOL_FIGURES") == "" {
		t.Skip("figures: set MCPGATE_POOL_FIGURES=1 (make bench)")
	}
	server := []string{"node", nodeModule(t, "@modelcontextprotocol/server-everything/dist/index.js"), "stdio"}
	const sessions = 4
	for _, size := range []int{0, 2} {
		g := startHTTPGateway(t, append([]string{"--warm-pool", strconv.Itoa(size), "--"}, server...)...)
		gw := g.cmd.Process.Pid
		var connect []time.Duration
		for i := range sessions {
			testwait.For(t, "the pool to fill", func() bool { return len(serverPids(gw, "index.js")) == i+size })
			time.Sleep(2 * time.Second) // a warm process has loaded its runtime, as between real sessions
			c := newHTTPClient(g.url)
			start := time.Now()
			c.initialize(t)
			connect = append(connect, time.Since(start))
		}
		testwait.For(t, "the pool to fill", func() bool { return len(serverPids(gw, "index.js")) == sessions+size })
		var rss int
		procs := serverPids(gw, "")
		for _, p := range procs {
			rss += rssKB(p)
		}
		slices.Sort(connect)
		t.Logf("warm pool %d: connect (initialize answered) median %s, min %s, max %s over %d sessions; %d server processes %d MiB resident (%d MiB each): %d MiB per session with the pool's waiting processes counted",
			size, connect[len(connect)/2].Round(time.Millisecond), connect[0].Round(time.Millisecond), connect[len(connect)-1].Round(time.Millisecond),
			sessions, len(procs), rss>>10, rss/max(len(procs), 1)>>10, rss/sessions>>10)
		g.stop(t)
	}
}
