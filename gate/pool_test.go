package gate

import (
	"testing"
	"time"

	"github.com/mcpgate/mcpgate/internal/testwait"
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
