package e2e

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"syscall"
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
// per session, with --warm-pool 0 (each session starts its own, as before the pool),
// 1 (the default) and 2, for server-everything (Node) as a team runs it. Figures are
// reported, never asserted (make bench; MCPGATE_POOL_FIGURES=1).
func TestWarmPoolFigures(t *testing.T) {
	if os.Getenv("MCPGATE_POOL_FIGURES") == "" {
		t.Skip("figures: set MCPGATE_POOL_FIGURES=1 (make bench)")
	}
	server := []string{"node", nodeModule(t, "@modelcontextprotocol/server-everything/dist/index.js"), "stdio"}
	const sessions = 4
	for _, size := range []int{0, 1, 2} {
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

// TestHarnessChildrenEndWithIt: when the test binary is killed (SIGKILL: no cleanup
// runs), the gateway it started and that gateway's upstream end too, instead of
// living on under init. A helper run of this binary starts a gateway with a warm
// upstream, prints both pids and waits; this test kills it and waits for both to end.
func TestHarnessChildrenEndWithIt(t *testing.T) {
	_, fake := httpBinaries(t)
	if os.Getenv("MCPGATE_E2E_ORPHAN") != "" {
		g := startHTTPGateway(t, "--warm-pool", "1", "--", fake)
		gw := g.cmd.Process.Pid
		testwait.For(t, "the warm upstream", func() bool { return len(serverPids(gw, fake)) == 1 })
		fmt.Printf("pids %d %d\n", gw, serverPids(gw, fake)[0])
		time.Sleep(10 * time.Minute) // until killed
		return
	}
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	helper := exec.Command(self, "-test.run=^TestHarnessChildrenEndWithIt$", "-test.timeout=15m")
	helper.Env = append(os.Environ(), "MCPGATE_E2E_ORPHAN=1", "MCPGATE_E2E_BINARY="+binary)
	helper.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	out, err := helper.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := helper.Start(); err != nil {
		t.Fatal(err)
	}
	var gw, up int
	sc := bufio.NewScanner(out)
	for sc.Scan() {
		if n, _ := fmt.Sscanf(sc.Text(), "pids %d %d", &gw, &up); n == 2 {
			break
		}
	}
	if gw == 0 || up == 0 {
		_ = helper.Process.Kill()
		_ = helper.Wait()
		t.Fatal("the helper printed no pids")
	}
	t.Cleanup(func() { // a failed run leaves nothing behind either
		_ = syscall.Kill(gw, syscall.SIGKILL)
		_ = syscall.Kill(up, syscall.SIGKILL)
	})
	_ = helper.Process.Kill()
	_ = helper.Wait()
	for name, pid := range map[string]int{"the gateway": gw, "its upstream": up} {
		// the kernel signals at once; a loaded machine gets a generous while to deliver it
		if !testwait.Within(6*testwait.Timeout, func() bool { return processGone(pid) }) {
			t.Errorf("%s (%d) still runs after the test binary was killed", name, pid)
		}
	}
}

// processGone reports whether pid has exited: no such process, or a zombie nobody
// reaped yet.
func processGone(pid int) bool {
	if err := syscall.Kill(pid, 0); errors.Is(err, syscall.ESRCH) {
		return true
	}
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return true
	}
	s := string(b)
	if i := strings.LastIndexByte(s, ')'); i >= 0 && i+2 < len(s) {
		return s[i+2] == 'Z' || s[i+2] == 'X'
	}
	return false
}
