//go:build linux

package upstream

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// pdeathChild marks the child process TestUpstreamDiesWithGateway runs as the gateway.
const pdeathChild = "MCPGATE_TEST_PDEATH_CHILD"

// An upstream that ignores EOF on stdin (sleep) still ends when the process that
// started it is killed with SIGKILL: servers no longer stay behind, re-parented to init.
func TestUpstreamDiesWithGateway(t *testing.T) {
	if os.Getenv(pdeathChild) != "" {
		p, err := Start(Options{Argv: []string{"sleep", "300"}})
		if err != nil {
			fmt.Println("error", err)
			os.Exit(1)
		}
		fmt.Println("upstream", p.cmd.Process.Pid)
		time.Sleep(5 * time.Minute) // killed by the test
		return
	}
	gw := exec.Command(os.Args[0], "-test.run", "^TestUpstreamDiesWithGateway$", "-test.count=1")
	gw.Env = append(os.Environ(), pdeathChild+"=1")
	out, err := gw.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := gw.Start(); err != nil {
		t.Fatal(err)
	}
	defer gw.Process.Kill()
	var pid int
	sc := bufio.NewScanner(out)
	for sc.Scan() {
		if rest, ok := strings.CutPrefix(sc.Text(), "upstream "); ok {
			pid, _ = strconv.Atoi(rest)
			break
		}
	}
	if pid == 0 {
		t.Fatal("the child gateway did not start its upstream")
	}
	defer syscall.Kill(pid, syscall.SIGKILL)
	if err := gw.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_ = gw.Wait()
	// The kernel signals at once; allow a loaded machine a generous while to deliver it.
	deadline := time.Now().Add(60 * time.Second)
	for {
		if gone(pid) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("upstream %d still running 60 s after its gateway was killed", pid)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// gone reports whether pid has exited: no such process, or a zombie nobody reaped yet.
func gone(pid int) bool {
	if err := syscall.Kill(pid, 0); errors.Is(err, syscall.ESRCH) {
		return true
	}
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return true
	}
	// state is the field after the parenthesised command name
	s := string(b)
	if i := strings.LastIndexByte(s, ')'); i >= 0 && i+2 < len(s) {
		return s[i+2] == 'Z' || s[i+2] == 'X'
	}
	return false
}
