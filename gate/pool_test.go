package gate

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/mcpgate/mcpgate/ctxapi"
	"github.com/mcpgate/mcpgate/internal/testwait"
	"github.com/mcpgate/mcpgate/vocab"
)

// A pre phase gets a runtime while every shared runtime is busy with post phases: the
// pool keeps one runtime for pre phases (docs/policies.md#runtime-pool).
func TestPrePhaseNeverWaitsBehindPost(t *testing.T) {
	g := loadGate(t, map[string]string{
		"busy.js":    `if (ctx.phase === "post") { for (;;) {} }`,
		"rewrite.js": `if (ctx.phase === "pre") { ctx.params.a = 2; }`,
	}, func(o *Options) { o.PoolSize = 1; o.Timeout = 2 * time.Second * raceSlowdown })

	postDone := make(chan Result, 1)
	postCtx, cancelPost := context.WithCancel(context.Background())
	defer cancelPost()
	go func() { postDone <- g.Current().Run(postCtx, postCall(`[{"type":"text","text":"x"}]`, "")) }()
	testwait.For(t, "the post phase to hold the shared runtime", func() bool {
		g.pool.mu.Lock()
		defer g.pool.mu.Unlock()
		return len(g.pool.active) == 1
	})

	if res := run(g, preCall(`{"a":1}`)); res.Reject != nil || string(res.Params) != `{"a":2}` {
		t.Fatalf("pre phase: rejected %+v, params %s; want params {\"a\":2}", res.Reject, res.Params)
	}
	select {
	case res := <-postDone:
		t.Fatalf("the pre phase finished only after the busy post phase (%+v): it waited for its runtime", res.Reject)
	default:
	}
	cancelPost() // the busy post phase need not run to its deadline: a cancelled one stops as a timed-out one
	if res := <-postDone; res.Reject == nil || res.Reject.Code != "policy_timeout" {
		t.Fatalf("busy post phase: got %+v, want policy_timeout", res.Reject)
	}
}

// A policy of a call in flight that begins after Close is stopped at once, as close
// stops the ones running: no watchdog is left to keep its deadline.
func TestPolicyBegunAfterCloseIsStopped(t *testing.T) {
	for _, src := range []string{`if (ctx.params.a === 1) ctx.warn("one")`, `for (;;) {}`} {
		t.Run(src, func(t *testing.T) {
			g := loadGate(t, map[string]string{"10.js": src}, func(o *Options) { o.Timeout = 200 * time.Millisecond * raceSlowdown })
			s := g.Current()
			v, err := g.pool.get(nil)
			if err != nil {
				t.Fatal(err)
			}
			g.Close()
			c := &v.state
			*c = callState{set: s, call: preCall(`{"a":1}`), phase: ctxapi.PhasePre}
			c.params = newSlot("params", []byte(`{"a":1}`), false)
			v.cur = c
			done := make(chan *Rejection, 1)
			go func() { _, rej := s.runOne(v, c, s.policies[0]); done <- rej }()
			select {
			case rej := <-done:
				if rej == nil || rej.Code != vocab.ReasonPolicyError {
					t.Errorf("got %+v, want policy_error", rej)
				}
			case <-time.After(10 * s.timeout):
				v.rt.Interrupt(errClosing) // let the goroutine end
				t.Errorf("a policy begun after Close ran on past 10 deadlines")
			}
		})
	}
}

// Load readies the pool in the background (docs/policies.md#first-call): every
// runtime the pool may hold is built, the self-tested one among them, and each has
// the set's wrappers bound, so the first call builds and binds nothing. Before, Load
// built the self-tested runtime alone and a first call bound its wrappers.
func TestPoolWarmsBeforeFirstCall(t *testing.T) {
	g := loadGate(t, map[string]string{"p.js": `ctx.params.a = 2;`, "q.js": `ctx.params.b = 3;`})
	g.pool.warming.Wait()
	want := g.pool.size + 1
	if n, idle := len(g.pool.slots), len(g.pool.idle); n != want || idle != want {
		t.Fatalf("after Load: %d runtimes, %d idle; want %d, idle", n, idle, want)
	}
	set := g.Current()
	for range want {
		v := <-g.pool.idle
		if v.fnSet != set || len(v.fns) != len(set.policies) {
			t.Errorf("a runtime has %d of %d wrappers bound for the current set", len(v.fns), len(set.policies))
		}
		defer func() { g.pool.idle <- v }()
	}
}

// A sandbox that failed its self-test lends no runtime: a call a policy acts on is
// refused with policy_error, even with warm runtimes idle, and so is a test runtime.
func TestFailedSelfTestRefuses(t *testing.T) {
	g := loadGate(t, map[string]string{"p.js": `ctx.params.a = 2;`})
	g.pool.warming.Wait()
	if res := run(g, preCall(`{"a":1}`)); res.Reject != nil {
		t.Fatalf("a proven pool rejected: %+v", res.Reject)
	}
	failed := make(chan struct{})
	close(failed)
	g.pool.tested, g.pool.testErr = failed, fmt.Errorf("%w: probe", ErrLockdownFailed)
	if res := run(g, preCall(`{"a":1}`)); res.Reject == nil || res.Reject.Code != vocab.ReasonPolicyError || string(res.Params) == `{"a":2}` {
		t.Fatalf("after a failed self-test: reject %+v, params %s; want policy_error, params untouched", res.Reject, res.Params)
	}
	if _, err := g.TestRuntime(); !errors.Is(err, ErrLockdownFailed) {
		t.Fatalf("TestRuntime: %v, want ErrLockdownFailed", err)
	}
}

// The warmed runtimes serve the calls: a call builds no other.
func TestSelfTestedRuntimeServes(t *testing.T) {
	g := loadGate(t, map[string]string{"p.js": `ctx.params.a = 2;`})
	g.pool.warming.Wait()
	n := len(g.pool.slots)
	if res := run(g, preCall(`{"a":1}`)); res.Reject != nil || string(res.Params) != `{"a":2}` {
		t.Fatalf("rejected %+v, params %s", res.Reject, res.Params)
	}
	if m := len(g.pool.slots); m != n {
		t.Fatalf("after one call: %d runtimes, want %d", m, n)
	}
}
