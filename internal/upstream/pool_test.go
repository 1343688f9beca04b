package upstream

import (
	"context"
	"os/exec"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/mcpgate/mcpgate/internal/jsonrpc"
	"github.com/mcpgate/mcpgate/internal/testwait"
)

// catPool is a pool of `cat` processes (each echoes what it reads) and the processes
// it started, in order.
func catPool(t *testing.T, size int) (*Pool, func() []*Process) {
	t.Helper()
	cat, err := exec.LookPath("cat")
	if err != nil {
		t.Skip("no cat")
	}
	var mu sync.Mutex
	var started []*Process
	p := NewPool(size, func() (*Process, error) {
		proc, err := Start(Options{Argv: []string{cat}})
		if err == nil {
			mu.Lock()
			started = append(started, proc)
			mu.Unlock()
		}
		return proc, err
	}, nil)
	t.Cleanup(func() {
		p.Close(context.Background(), time.Second)
		mu.Lock()
		defer mu.Unlock()
		for _, proc := range started {
			_ = proc.Close(context.Background(), time.Second)
		}
	})
	return p, func() []*Process {
		mu.Lock()
		defer mu.Unlock()
		return append([]*Process(nil), started...)
	}
}

// TestPoolHandsOutWarmProcessesOnce: a session takes a process that was started
// before it asked, the pool starts a replacement, and no process is handed out twice;
// one that exited while it waited is never handed out; Close ends the waiting ones.
func TestPoolHandsOutWarmProcessesOnce(t *testing.T) {
	p, started := catPool(t, 2)
	testwait.For(t, "two warm processes", func() bool { return p.Idle() == 2 })
	warm := started()
	got := map[*Process]bool{}
	for i := range 4 {
		proc, err := p.Take()
		if err != nil {
			t.Fatal(err)
		}
		if got[proc] {
			t.Fatalf("take %d: a process handed out twice", i)
		}
		got[proc] = true
		if i < 2 && proc != warm[0] && proc != warm[1] {
			t.Errorf("take %d: a process started on demand, not a warm one", i)
		}
		// the process is the caller's alone and uninitialized: the first line it
		// reads is the caller's
		msg, _ := jsonrpc.Parse([]byte(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{}}`))
		if err := proc.Send(msg); err != nil {
			t.Fatal(err)
		}
		if back, err := proc.Recv(); err != nil || back.Method != "initialize" {
			t.Fatalf("take %d: echo %v, %v", i, back, err)
		}
		testwait.For(t, "the pool refilled", func() bool { return p.Idle() == 2 })
	}
	if n := len(started()); n != 6 {
		t.Errorf("%d processes started, want 6 (2 warm, then one replacement per take)", n)
	}

	// a warm process that exits is dropped, not handed out
	dead := idleOf(p)
	for _, d := range dead {
		_ = syscall.Kill(d.cmd.Process.Pid, syscall.SIGKILL)
		<-d.Done()
	}
	proc, err := p.Take()
	if err != nil {
		t.Fatal(err)
	}
	if proc == dead[0] || proc == dead[1] {
		t.Fatal("a process that exited was handed out")
	}

	testwait.For(t, "the pool refilled", func() bool { return p.Idle() == 2 })
	waiting := idleOf(p)
	p.Close(context.Background(), time.Second)
	for _, w := range waiting {
		select {
		case <-w.Done():
		default:
			t.Error("Close left a waiting process running")
		}
	}
	if _, err := p.Take(); err != nil { // closed: still a process, started on demand
		t.Fatal(err)
	}
	if p.Idle() != 0 {
		t.Error("a closed pool refilled")
	}
}

// idleOf returns the processes waiting in p.
func idleOf(p *Pool) []*Process {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]*Process(nil), p.idle...)
}

// TestPoolOff: size 0 keeps no process; Take starts one on demand and nothing else.
func TestPoolOff(t *testing.T) {
	p, started := catPool(t, 0)
	if _, err := p.Take(); err != nil {
		t.Fatal(err)
	}
	if n := len(started()); n != 1 || p.Idle() != 0 {
		t.Errorf("%d started, %d idle; want 1 and 0", n, p.Idle())
	}
}
