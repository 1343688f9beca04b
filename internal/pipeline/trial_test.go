package pipeline

import (
	"context"
	"encoding/json"
	"sync"
	"testing"
	"time"

	"github.com/mcpgate/mcpgate/ctxapi"
	"github.com/mcpgate/mcpgate/gate"
	"github.com/mcpgate/mcpgate/internal/jsonrpc"
	"github.com/mcpgate/mcpgate/vocab"
)

// TestTrial: a bundle trial runs the candidate as the shadow of every call, layered
// with the caller's tenant layer as the live set is, and hands each decision pair
// to Observe with the policy behind each side's block; a call stopped before the
// policies is not observed, and after EndTrial calls carry no shadow part.
func TestTrial(t *testing.T) {
	live := map[string]string{"deny_drop.js": `if (ctx.phase === "pre" && ctx.params.drop) throw "no drop"`}
	candidate := map[string]string{"deny_path.js": `if (ctx.phase === "pre" && ctx.params.path) throw "no path"`}
	for _, tc := range []struct {
		name          string
		user          ctxapi.User
		args          string
		live, shadow  vocab.Action
		livePolicy    string
		shadowPolicy  string
		observed      bool
		differsInRecs bool
	}{
		{name: "the candidate blocks", args: `{"path":"/srv"}`, live: vocab.Pass, shadow: vocab.Block, shadowPolicy: "deny_path.js", observed: true, differsInRecs: true},
		{name: "the running set blocks", args: `{"drop":true}`, live: vocab.Block, livePolicy: "deny_drop.js", shadow: vocab.Pass, observed: true, differsInRecs: true},
		{name: "neither blocks", args: `{}`, live: vocab.Pass, shadow: vocab.Pass, observed: true},
		// acme's layer blocks drop for both sets: without the layer under the
		// candidate, the trial would see a block the candidate dropped.
		{name: "a tenant's layer runs under the candidate too", user: ctxapi.User{UserID: "a", Tenant: "acme"}, args: `{"drop":true}`,
			live: vocab.Block, livePolicy: "deny_drop.js", shadow: vocab.Block, shadowPolicy: "tenant:acme/acme.js", observed: true},
		{name: "not a tools/call the policies see", args: `[]`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p, rec := newPipeline(t, live, true, false)
			p.Tenants = map[string]*gate.Gate{"acme": loadGate(t, map[string]string{"acme.js": `if (ctx.phase === "pre" && ctx.params.drop) throw "acme: no drop"`})}
			p.TenantOf = func(u ctxapi.User) string { return u.Tenant }
			cand := loadGate(t, candidate)
			var mu sync.Mutex
			var got []TrialDecision
			p.StartTrial(&Trial{Set: cand.Current(), Observe: func(d TrialDecision) {
				mu.Lock()
				got = append(got, d)
				mu.Unlock()
			}})
			c := call(tc.args)
			if tc.user.UserID != "" {
				c.User = tc.user
			}
			p.Handle(context.Background(), c, upstreamReturning(cleanResult, nil))
			<-p.EndTrial() // the shadow's record is emitted
			if !tc.observed {
				if len(got) != 0 {
					t.Fatalf("observed %+v", got)
				}
				return
			}
			if len(got) != 1 {
				t.Fatalf("observed %d decisions", len(got))
			}
			d := got[0]
			if d.Live != tc.live || d.LivePolicy != tc.livePolicy || d.Shadow.ActionTaken != tc.shadow || d.Shadow.Policy != tc.shadowPolicy || d.Tool != "read_file" || d.EventID != rec.recs[0].EventID {
				t.Errorf("decision %+v", d)
			}
			if s := rec.recs[0].Shadow; s == nil || s.Differs != tc.differsInRecs || s.PolicySetHash != cand.Current().Hash {
				t.Errorf("record shadow part %+v", s)
			}
			// After EndTrial: no shadow, nothing observed.
			p.Handle(context.Background(), c, upstreamReturning(cleanResult, nil))
			if len(got) != 1 || rec.recs[1].Shadow != nil {
				t.Errorf("after EndTrial: %d decisions, shadow %+v", len(got), rec.recs[1].Shadow)
			}
		})
	}
}

// TestEndTrialCallInFlight: EndTrial returns while a call on the trial's set waits on
// its upstream (the bundle poll must not wait on it), and its channel closes once
// that call's record is emitted, with the shadow part.
func TestEndTrialCallInFlight(t *testing.T) {
	p, rec := newPipeline(t, map[string]string{"pass.js": `void 0`}, true, false)
	cand := loadGate(t, map[string]string{"deny_path.js": `if (ctx.phase === "pre" && ctx.params.path) throw "no path"`})
	p.StartTrial(&Trial{Set: cand.Current()})
	entered, answer := make(chan struct{}), make(chan struct{})
	handled := make(chan struct{})
	go func() {
		defer close(handled)
		p.Handle(context.Background(), call(`{"path":"/srv"}`), func(ctx context.Context, params json.RawMessage) (*jsonrpc.Message, error) {
			close(entered)
			<-answer
			return upstreamReturning(cleanResult, nil)(ctx, params)
		})
	}()
	<-entered
	ended := make(chan (<-chan struct{}))
	go func() { ended <- p.EndTrial() }()
	var drained <-chan struct{}
	select {
	case drained = <-ended:
	case <-time.After(time.Minute):
		t.Fatal("EndTrial waits on a call whose upstream has not answered")
	}
	select {
	case <-drained:
		t.Fatal("drained with a call still on the set")
	default:
	}
	close(answer)
	<-handled
	<-drained
	if len(rec.recs) != 1 || rec.recs[0].Shadow == nil {
		t.Fatalf("records %d, want one with its shadow part", len(rec.recs))
	}
}
