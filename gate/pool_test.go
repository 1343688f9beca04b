package gate

import (
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
	go func() { postDone <- run(g, postCall(`[{"type":"text","text":"x"}]`, "")) }()
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
