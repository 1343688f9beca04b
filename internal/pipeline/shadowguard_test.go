package pipeline

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/mcpgate/mcpgate/internal/audit"
	"github.com/mcpgate/mcpgate/internal/guardrail"
	"github.com/mcpgate/mcpgate/internal/guardrail/guardtest"
	"github.com/mcpgate/mcpgate/vocab"
)

// guardSet builds the guardrails of specs; a spec without a timeout gets 10 s. No
// specs: a set with none (a candidate's empty guardrails file).
func guardSet(t *testing.T, specs map[string]guardrail.Spec) *guardrail.Set {
	t.Helper()
	for name, sp := range specs {
		if sp.Timeout == "" {
			sp.Timeout = "10s"
		}
		sp.Breaker = &guardrail.Breaker{Failures: 1000}
		specs[name] = sp
	}
	s, err := guardrail.New(specs)
	if err != nil {
		t.Fatal(err)
	}
	if s == nil {
		s = &guardrail.Set{}
	}
	return s
}

// TestShadowGuardrails: a --shadow candidate's own guardrails are called off the live
// path, their outcome (a block, a deny, an intervention, a failure under its fail
// mode, findings for its policies) is only in the record's shadow part, and the
// client and the server see what they see without a shadow; a candidate without
// guardrails of its own shares the live guardrails' outcome.
func TestShadowGuardrails(t *testing.T) {
	svc := &guardtest.Service{}
	content := httptest.NewServer(svc)
	defer content.Close()
	// An AuthZEN PDP that denies arguments with a "force" member.
	authz := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		_, _ = w.Write([]byte(`{"decision": ` + map[bool]string{true: "false", false: "true"}[strings.Contains(string(b), `"force"`)] + `}`))
	}))
	defer authz.Close()
	gen := func(mode, timeout string) map[string]guardrail.Spec {
		return map[string]guardrail.Spec{"g": {Kind: "generic", URL: content.URL, FailMode: mode, Timeout: timeout}}
	}
	az := map[string]guardrail.Spec{"az": {Kind: "authzen", URL: authz.URL}}
	tests := []struct {
		name          string
		live          map[string]guardrail.Spec // the live guardrails
		own           map[string]guardrail.Spec // the candidate's; nil: it shares the live ones
		shadow        map[string]string         // the candidate's policies
		args, result  string
		liveAction    vocab.Action
		shadowAction  vocab.Action
		reason        vocab.Reason
		policy        string
		differs       bool
		calls         []audit.GuardrailCall // the shadow part's callouts, MS left out
		liveGuardrail bool                  // the live record has guardrail entries
	}{
		{name: "a candidate block of the arguments", own: gen("", ""), args: `{"p":"GUARD:block"}`, result: cleanResult,
			liveAction: "pass", shadowAction: "block", reason: "guardrail_block", policy: "guardrail:g", differs: true,
			calls: []audit.GuardrailCall{{Name: "g", Kind: "generic", Phase: "pre", Verdict: "block", FailMode: "closed"}}},
		{name: "a candidate block of the result", own: gen("", ""), args: `{}`, result: textResult("x GUARD:block"),
			liveAction: "pass", shadowAction: "block", reason: "guardrail_block", policy: "guardrail:g", differs: true,
			calls: []audit.GuardrailCall{{Name: "g", Kind: "generic", Phase: "pre", Verdict: "none", FailMode: "closed"},
				{Name: "g", Kind: "generic", Phase: "post", Verdict: "block", FailMode: "closed"}}},
		{name: "a candidate intervention in the result", own: gen("", ""), args: `{}`, result: textResult("GUARD:redact secret-abc"),
			liveAction: "pass", shadowAction: "redact", differs: true,
			calls: []audit.GuardrailCall{{Name: "g", Kind: "generic", Phase: "pre", Verdict: "none", FailMode: "closed"},
				{Name: "g", Kind: "generic", Phase: "post", Verdict: "intervene", FailMode: "closed", Replaced: 1}}},
		{name: "a candidate guardrail's finding reaches the candidate's policies", own: gen("", ""),
			shadow: map[string]string{"f.js": `if (ctx.phase === "post" && ctx.findings.some(f => f.source === "guardrail:g")) { throw "found" }`},
			args:   `{}`, result: textResult("GUARD:finding"), liveAction: "pass", shadowAction: "block", reason: "policy_throw", policy: "f.js", differs: true,
			calls: []audit.GuardrailCall{{Name: "g", Kind: "generic", Phase: "pre", Verdict: "none", FailMode: "closed"},
				{Name: "g", Kind: "generic", Phase: "post", Verdict: "none", FailMode: "closed", Findings: 1}}},
		{name: "a candidate failure under fail mode open", own: gen("open", ""), args: `{"p":"GUARD:5xx"}`, result: cleanResult,
			liveAction: "pass", shadowAction: "pass",
			calls: []audit.GuardrailCall{{Name: "g", Kind: "generic", Phase: "pre", Error: "guardrail_error", Detail: "status_503", FailMode: "open"},
				{Name: "g", Kind: "generic", Phase: "post", Verdict: "none", FailMode: "open"}}},
		{name: "a candidate deny", own: az, args: `{"force":true}`, result: cleanResult,
			liveAction: "pass", shadowAction: "block", reason: "guardrail_deny", policy: "guardrail:az", differs: true,
			calls: []audit.GuardrailCall{{Name: "az", Kind: "authzen", Phase: "pre", Verdict: "deny", FailMode: "closed"}}},
		{name: "the candidate authorizes what its own policy rewrote", own: az,
			shadow: map[string]string{"force.js": `if (ctx.phase === "pre") { ctx.params.force = true }`},
			args:   `{}`, result: cleanResult, liveAction: "pass", shadowAction: "block", reason: "guardrail_deny", policy: "guardrail:az", differs: true,
			calls: []audit.GuardrailCall{{Name: "az", Kind: "authzen", Phase: "pre", Verdict: "allow", FailMode: "closed"},
				{Name: "az", Kind: "authzen", Phase: "pre_rewritten", Verdict: "deny", FailMode: "closed"}}},
		{name: "a live block a candidate without that guardrail lets through", live: gen("", ""), own: map[string]guardrail.Spec{},
			args: `{"p":"GUARD:block"}`, result: cleanResult, liveAction: "block", shadowAction: "pass", differs: true, liveGuardrail: true},
		{name: "a shared live block", live: gen("", ""), args: `{"p":"GUARD:block"}`, result: cleanResult,
			liveAction: "block", shadowAction: "block", reason: "guardrail_block", policy: "guardrail:g", liveGuardrail: true},
		{name: "a shared live block of the result", live: gen("", ""), args: `{}`, result: textResult("x GUARD:block"),
			liveAction: "block", shadowAction: "block", reason: "guardrail_block", policy: "guardrail:g", liveGuardrail: true},
		{name: "a shared live intervention", live: gen("", ""), args: `{}`, result: textResult("GUARD:redact secret-abc"),
			liveAction: "redact", shadowAction: "redact", liveGuardrail: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p, rec := newPipeline(t, nil, true, false)
			plain, plainRec := newPipeline(t, nil, true, false)
			if tc.live != nil {
				p.Guardrails, plain.Guardrails = guardSet(t, tc.live), guardSet(t, tc.live)
			}
			p.Shadow, p.ShadowHealth = loadGate(t, tc.shadow), &Health{}
			if tc.own != nil {
				p.ShadowGuardrails = guardSet(t, tc.own)
			}
			var sent, plainSent json.RawMessage
			reply := p.Handle(context.Background(), call(tc.args), upstreamReturning(tc.result, &sent))
			want := plain.Handle(context.Background(), call(tc.args), upstreamReturning(tc.result, &plainSent))
			p.Wait()
			if string(sent) != string(plainSent) {
				t.Errorf("the shadow changed what went upstream: %s, want %s", sent, plainSent)
			}
			if !sameReply(reply, want, rec.recs[0].EventID, plainRec.recs[0].EventID) {
				t.Fatalf("the shadow changed the reply:\n got %s %s\nwant %s %s", reply.Result, reply.Original, want.Result, want.Original)
			}
			r := rec.recs[0]
			if r.ActionTaken != tc.liveAction || r.Shadow == nil {
				t.Fatalf("live action %s, shadow %+v", r.ActionTaken, r.Shadow)
			}
			if (len(r.Guardrails) > 0) != tc.liveGuardrail {
				t.Errorf("the live record's guardrails: %+v", r.Guardrails)
			}
			s := r.Shadow
			if s.ActionTaken != tc.shadowAction || s.Differs != tc.differs || s.Reason != tc.reason || s.Policy != tc.policy {
				t.Errorf("shadow = %+v, want action %s differs %v reason %q policy %q", *s, tc.shadowAction, tc.differs, tc.reason, tc.policy)
			}
			var calls []audit.GuardrailCall
			for _, c := range s.Guardrails {
				c.MS = 0
				calls = append(calls, c)
			}
			if len(calls) != len(tc.calls) {
				t.Fatalf("shadow guardrails %+v, want %+v", calls, tc.calls)
			}
			for i := range calls {
				if calls[i] != tc.calls[i] {
					t.Errorf("shadow guardrails[%d] = %+v, want %+v", i, calls[i], tc.calls[i])
				}
			}
			b, _ := json.Marshal(r)
			for _, v := range []string{"GUARD:", "secret-abc", "test guardrail blocked"} {
				if strings.Contains(string(b), v) {
					t.Errorf("the record holds %q: %s", v, b)
				}
			}
		})
	}
}

// TestShadowGuardrailsNeverDelay: a candidate guardrail that hangs in either phase
// (up to its timeout) delays no live reply; the record says it timed out.
func TestShadowGuardrailsNeverDelay(t *testing.T) {
	svc := &guardtest.Service{}
	srv := httptest.NewServer(svc)
	defer srv.Close()
	for _, tc := range []struct{ phase, args, result string }{
		{"pre", `{"p":"GUARD:hang"}`, cleanResult},
		{"post", `{}`, textResult("GUARD:hang")},
	} {
		t.Run(tc.phase, func(t *testing.T) {
			p, rec := newPipeline(t, nil, true, false)
			p.Shadow = loadGate(t, nil)
			p.ShadowGuardrails = guardSet(t, map[string]guardrail.Spec{"g": {Kind: "generic", URL: srv.URL, Timeout: "1500ms"}})
			start := time.Now()
			reply := p.Handle(context.Background(), call(tc.args), upstreamReturning(tc.result, nil))
			if took := time.Since(start); took > time.Second {
				t.Fatalf("the live reply took %v behind a hanging shadow guardrail", took)
			}
			if len(reply.Original) == 0 {
				t.Fatalf("the live reply changed: %+v", reply)
			}
			p.Wait()
			rec.mu.Lock()
			defer rec.mu.Unlock()
			if len(rec.recs) != 1 || rec.recs[0].ActionTaken != vocab.Pass || rec.recs[0].Shadow == nil {
				t.Fatalf("records %+v", rec.recs)
			}
			if s := rec.recs[0].Shadow; s.Reason != vocab.ReasonGuardrailTimeout || !s.Differs {
				t.Fatalf("shadow %+v", s)
			}
		})
	}
}
