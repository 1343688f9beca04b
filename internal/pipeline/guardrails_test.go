package pipeline

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mcpgate/mcpgate/internal/argcheck"
	"github.com/mcpgate/mcpgate/internal/audit"
	"github.com/mcpgate/mcpgate/internal/guardrail"
	"github.com/mcpgate/mcpgate/internal/guardrail/guardtest"
	"github.com/mcpgate/mcpgate/internal/jsonrpc"
	"github.com/mcpgate/mcpgate/internal/motion"
	"github.com/mcpgate/mcpgate/vocab"
)

// guarded gives p the guardrails of specs; a spec without a timeout gets 10 s, so a
// loaded machine never turns an answer into a timeout.
func guarded(t *testing.T, p *Pipeline, specs map[string]guardrail.Spec) {
	t.Helper()
	for name, sp := range specs {
		if sp.Timeout == "" {
			sp.Timeout = "10s"
			specs[name] = sp
		}
	}
	s, err := guardrail.New(specs)
	if err != nil {
		t.Fatal(err)
	}
	p.Guardrails = s
}

func textResult(s string) string {
	b, _ := json.Marshal(map[string]any{"content": []any{map[string]any{"type": "text", "text": s}}})
	return string(b)
}

// TestGuardrailOutcomes: each outcome of a content guardrail in each phase, and each
// fail mode, on the ladder, with one record naming the service.
func TestGuardrailOutcomes(t *testing.T) {
	svc := &guardtest.Service{}
	srv := httptest.NewServer(svc)
	defer srv.Close()
	never := upstreamFailing(errors.New("must not be called"))
	tests := []struct {
		name     string
		mode     string
		args     string
		up       Upstream
		policies map[string]string
		// expectations
		original   bool
		textPrefix string
		notText    string
		action     vocab.Action
		outcome    vocab.Outcome
		reason     vocab.Reason
		policy     string
		phase      string
		failMode   bool
		entry      audit.GuardrailCall // the first guardrails entry (name g, kind generic)
	}{
		{name: "none passes byte for byte", args: `{"p":"a"}`, up: upstreamReturning(cleanResult, nil),
			original: true, action: "pass", outcome: "ok", entry: audit.GuardrailCall{Phase: "pre", Verdict: "none", FailMode: "closed"}},
		{name: "blocked arguments reject the call", args: `{"p":"GUARD:block"}`, up: never,
			textPrefix: "[mcpgate: call rejected by guardrail:g: test guardrail blocked — see audit log entry ",
			action:     "block", outcome: "rejected", reason: "guardrail_block", policy: "guardrail:g", phase: "pre",
			entry: audit.GuardrailCall{Phase: "pre", Verdict: "block", FailMode: "closed"}},
		{name: "blocked result is withheld", args: `{}`, up: upstreamReturning(textResult("x GUARD:block"), nil),
			textPrefix: "[mcpgate: tool output blocked — see audit log entry ", notText: "GUARD",
			action: "block", outcome: "ok", reason: "guardrail_block", policy: "guardrail:g", phase: "post",
			entry: audit.GuardrailCall{Phase: "pre", Verdict: "none", FailMode: "closed"}},
		{name: "intervened result is replaced", args: `{}`, up: upstreamReturning(textResult("GUARD:redact secret-abc"), nil),
			textPrefix: "GUARD:redact [REDACTED]", notText: "secret-abc", action: "redact", outcome: "ok",
			entry: audit.GuardrailCall{Phase: "pre", Verdict: "none", FailMode: "closed"}},
		{name: "an intervention's escape is caught by the rules", args: `{}`, up: upstreamReturning(textResult("GUARD:escape"), nil),
			textPrefix: "[mcpgate: tool output blocked", notText: "c2VjcmV0", action: "block", outcome: "ok", reason: "filter_block",
			entry: audit.GuardrailCall{Phase: "pre", Verdict: "none", FailMode: "closed"}},
		{name: "5xx closed rejects", args: `{"p":"GUARD:5xx"}`, up: never,
			textPrefix: "[mcpgate: call rejected by guardrail:g: the guardrail failed (failMode closed)",
			action:     "block", outcome: "rejected", reason: "guardrail_error", policy: "guardrail:g", phase: "pre", failMode: true,
			entry: audit.GuardrailCall{Phase: "pre", Error: "guardrail_error", Detail: "status_503", FailMode: "closed"}},
		{name: "5xx open goes on", mode: "open", args: `{"p":"GUARD:5xx"}`, up: upstreamReturning(cleanResult, nil),
			original: true, action: "pass", outcome: "ok",
			entry: audit.GuardrailCall{Phase: "pre", Error: "guardrail_error", Detail: "status_503", FailMode: "open"}},
		{name: "garbage closed blocks the result", args: `{}`, up: upstreamReturning(textResult("GUARD:garbage"), nil),
			textPrefix: "[mcpgate: tool output blocked", action: "block", outcome: "ok", reason: "guardrail_error", policy: "guardrail:g",
			phase: "post", failMode: true, entry: audit.GuardrailCall{Phase: "pre", Verdict: "none", FailMode: "closed"}},
		{name: "hang closed times out", args: `{"p":"GUARD:hang"}`, up: never,
			textPrefix: "[mcpgate: call rejected by guardrail:g: the guardrail did not answer in time",
			action:     "block", outcome: "rejected", reason: "guardrail_timeout", policy: "guardrail:g", phase: "pre", failMode: true,
			entry: audit.GuardrailCall{Phase: "pre", Error: "guardrail_timeout", Detail: "timeout", FailMode: "closed"}},
		{name: "hang open goes on", mode: "open", args: `{}`, up: upstreamReturning(textResult("GUARD:hang"), nil),
			original: true, action: "pass", outcome: "ok", entry: audit.GuardrailCall{Phase: "pre", Verdict: "none", FailMode: "open"}},
		{name: "a finding reaches the policies", args: `{"p":"GUARD:finding"}`, up: never,
			policies:   map[string]string{"f.js": `if (ctx.phase === "pre" && ctx.findings.some(f => f.source === "guardrail:g" && f.rule_id === "test_finding" && f.pointer === "/p")) { throw "guardrail said so" }`},
			textPrefix: "[mcpgate: call rejected by policy f.js: guardrail said so", action: "block", outcome: "rejected",
			reason: "policy_throw", policy: "f.js", phase: "pre", entry: audit.GuardrailCall{Phase: "pre", Verdict: "none", FailMode: "closed", Findings: 1}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p, rec := newPipeline(t, tc.policies, true, false)
			timeout := "10s"
			if strings.Contains(tc.args+textOf(tc.up), "hang") {
				timeout = "300ms"
			}
			guarded(t, p, map[string]guardrail.Spec{"g": {Kind: "generic", URL: srv.URL, FailMode: tc.mode, Timeout: timeout,
				Breaker: &guardrail.Breaker{Failures: 1000}}})
			reply := p.Handle(context.Background(), call(tc.args), tc.up)
			if tc.original {
				if reply.Original == nil {
					t.Fatalf("want the upstream's bytes, got %+v", reply)
				}
			} else {
				if got := firstText(t, reply.Result); !strings.HasPrefix(got, tc.textPrefix) {
					t.Fatalf("first text %q, want prefix %q", got, tc.textPrefix)
				}
				if tc.notText != "" && strings.Contains(string(reply.Result), tc.notText) {
					t.Fatalf("result still holds %q: %s", tc.notText, reply.Result)
				}
			}
			if len(rec.recs) != 1 {
				t.Fatalf("want one record, got %d", len(rec.recs))
			}
			r := rec.recs[0]
			if r.ActionTaken != tc.action || r.Outcome != tc.outcome || r.Reason != tc.reason || r.Policy != tc.policy ||
				r.Phase != tc.phase || r.FailModeTriggered != tc.failMode {
				t.Errorf("record action=%s outcome=%s reason=%s policy=%s phase=%s fail_mode=%v", r.ActionTaken, r.Outcome, r.Reason, r.Policy, r.Phase, r.FailModeTriggered)
			}
			if tc.policy != "" && !contains(r.GuardrailsTriggered, tc.policy) {
				t.Errorf("guardrails_triggered %v lacks %s", r.GuardrailsTriggered, tc.policy)
			}
			tc.entry.Name, tc.entry.Kind = "g", "generic"
			if len(r.Guardrails) == 0 {
				t.Fatalf("no guardrails entry")
			}
			got := r.Guardrails[0]
			got.MS = 0
			if got != tc.entry {
				t.Errorf("guardrails[0] %+v, want %+v", got, tc.entry)
			}
			if _, ok := r.StageMS["guardrail:g"]; !ok {
				t.Errorf("stage_ms %v lacks guardrail:g", r.StageMS)
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

// TestGuardrailInterveneArguments: the upstream gets exactly the replaced leaves, the
// input rules run again, and the rewrite is recorded as one.
func TestGuardrailInterveneArguments(t *testing.T) {
	srv := httptest.NewServer(&guardtest.Service{})
	defer srv.Close()
	p, rec := newPipeline(t, nil, true, false)
	guarded(t, p, map[string]guardrail.Spec{"g": {Kind: "generic", URL: srv.URL}})
	var sent json.RawMessage
	p.Handle(context.Background(), call(`{"q":"GUARD:redact secret-1","n":3,"keep":"secret-2x","x":{"y":["secret-3"]}}`), upstreamReturning(cleanResult, &sent))
	var params struct {
		Name      string          `json:"name"`
		Arguments json.RawMessage `json:"arguments"`
	}
	if err := json.Unmarshal(sent, &params); err != nil {
		t.Fatal(err)
	}
	if want := `{"keep":"[REDACTED]","n":3,"q":"GUARD:redact [REDACTED]","x":{"y":["[REDACTED]"]}}`; params.Name != "read_file" || string(params.Arguments) != want {
		t.Fatalf("upstream got %s", sent)
	}
	r := rec.recs[0]
	if !r.ParamsRewritten || !contains(r.GuardrailsTriggered, "guardrail:g") || r.Guardrails[0].Replaced != 3 {
		t.Fatalf("record %+v", r)
	}
}

// TestAuthorizationAfterRewrite: the authorization service is asked again about the
// arguments a pre policy rewrote, so a mutation cannot smuggle what was not
// authorized. Without the second ask, the call below reaches the upstream.
func TestAuthorizationAfterRewrite(t *testing.T) {
	var asked atomic.Int32
	pdp := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		asked.Add(1)
		b, _ := io.ReadAll(r.Body)
		var req struct {
			Input struct {
				Context struct {
					Arguments map[string]any `json:"arguments"`
				} `json:"context"`
			} `json:"input"`
		}
		_ = json.Unmarshal(b, &req)
		_, force := req.Input.Context.Arguments["force"]
		_, _ = io.WriteString(w, map[bool]string{true: `{"result":false}`, false: `{"result":true}`}[force])
	}))
	defer pdp.Close()
	p, rec := newPipeline(t, map[string]string{"add.js": `if (ctx.phase === "pre") { ctx.params.force = true }`}, true, false)
	guarded(t, p, map[string]guardrail.Spec{"opa": {Kind: "opa", URL: pdp.URL}})
	reply := p.Handle(context.Background(), call(`{"path":"a"}`), upstreamFailing(errors.New("must not be called")))
	if got := firstText(t, reply.Result); !strings.HasPrefix(got, "[mcpgate: call rejected by guardrail:opa: the authorization service denied the call") {
		t.Fatalf("reply %q", got)
	}
	r := rec.recs[0]
	if asked.Load() != 2 || r.Reason != vocab.ReasonGuardrailDeny || r.Outcome != vocab.OutcomeRejected || r.Policy != "guardrail:opa" ||
		len(r.Guardrails) != 2 || r.Guardrails[0].Verdict != "allow" || r.Guardrails[1].Phase != "pre_rewritten" || r.Guardrails[1].Verdict != "deny" {
		t.Fatalf("asked %d, record %+v", asked.Load(), r)
	}
}

// TestAuthorizationDeny: a deny before any policy, with the upstream never called.
func TestAuthorizationDeny(t *testing.T) {
	pdp := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.WriteString(w, `{"decision":false}`)
	}))
	defer pdp.Close()
	p, rec := newPipeline(t, nil, true, false)
	guarded(t, p, map[string]guardrail.Spec{"pdp": {Kind: "authzen", URL: pdp.URL}})
	p.Handle(context.Background(), call(`{}`), upstreamFailing(errors.New("must not be called")))
	if r := rec.recs[0]; r.Reason != vocab.ReasonGuardrailDeny || r.ActionTaken != vocab.Block || r.Outcome != vocab.OutcomeRejected {
		t.Fatalf("record %+v", r)
	}
}

// TestGuardrailCaptureReplay: --capture keeps each guardrail's verdict, replacements
// and findings; the same call replayed with them (guardrail.Replay, as mcpgate replay
// and mcpgate test fixtures do) reaches the same decision without calling out.
func TestGuardrailCaptureReplay(t *testing.T) {
	svc := &guardtest.Service{}
	srv := httptest.NewServer(svc)
	defer srv.Close()
	for _, tc := range []struct {
		name, args, result string
		action             vocab.Action
		reason             vocab.Reason
	}{
		{"blocked call", `{"q":"GUARD:block"}`, cleanResult, vocab.Block, vocab.ReasonGuardrailBlock},
		{"intervened result", `{"q":"a"}`, textResult("GUARD:redact secret-9"), vocab.Redact, ""},
		{"timed out", `{"q":"GUARD:hang"}`, cleanResult, vocab.Block, vocab.ReasonGuardrailTimeout},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p, rec := newPipeline(t, nil, true, false)
			caps := &captured{}
			p.Capture = caps
			timeout := "10s"
			if strings.Contains(tc.args, "hang") {
				timeout = "200ms"
			}
			guarded(t, p, map[string]guardrail.Spec{"g": {Kind: "generic", URL: srv.URL, Timeout: timeout}})
			p.Handle(context.Background(), call(tc.args), upstreamReturning(tc.result, nil))
			if len(caps.es) != 1 {
				t.Fatalf("want one capture entry, got %d", len(caps.es))
			}
			live := rec.recs[0]
			if live.ActionTaken != tc.action || live.Reason != tc.reason {
				t.Fatalf("live: %s %s", live.ActionTaken, live.Reason)
			}
			e := caps.es[0]
			if len(e.Guardrails) == 0 {
				t.Fatal("no guardrail verdicts captured")
			}
			before := len(svc.Requests())
			c := call(tc.args)
			c.Guardrails = guardrail.Replay(e.Guardrails)
			p.Guardrails = nil // no service to call: only the recorded verdicts
			var sent json.RawMessage
			reply := p.Handle(context.Background(), c, upstreamReturning(tc.result, &sent))
			again := rec.recs[1]
			if again.ActionTaken != tc.action || again.Reason != tc.reason || len(svc.Requests()) != before {
				t.Fatalf("replayed: %s %s, service called %d times", again.ActionTaken, again.Reason, len(svc.Requests())-before)
			}
			if tc.action == vocab.Redact && !strings.Contains(firstText(t, reply.Result), "[REDACTED]") {
				t.Fatalf("replayed result %s", reply.Result)
			}
		})
	}
}

// TestGuardrailChannels: a content guardrail that takes resources/read and
// prompts/get blocks such a result in its row's block shape, or replaces exactly the
// texts it was sent; one that takes only tools/call is not asked.
func TestGuardrailChannels(t *testing.T) {
	svc := &guardtest.Service{}
	srv := httptest.NewServer(svc)
	defer srv.Close()
	resource := func(text string) string {
		b, _ := json.Marshal(map[string]any{"contents": []any{map[string]any{"uri": "file:///a.txt", "mimeType": "text/plain", "text": text}}})
		return string(b)
	}
	prompt := func(text string) string {
		b, _ := json.Marshal(map[string]any{"messages": []any{map[string]any{"role": "user", "content": map[string]any{"type": "text", "text": text}}}})
		return string(b)
	}
	tests := []struct {
		name, method, result string
		methods              []string
		has, lacks           string
		action               vocab.Action
		reason               vocab.Reason
	}{
		{"resource blocked", "resources/read", resource("GUARD:block"), []string{"resources/read"},
			"[mcpgate: resource blocked — see audit log entry", "GUARD:block", vocab.Block, vocab.ReasonGuardrailBlock},
		{"resource intervened", "resources/read", resource("GUARD:redact secret-7"), []string{"resources/read"},
			`"text":"GUARD:redact [REDACTED]"`, "secret-7", vocab.Redact, ""},
		{"prompt blocked", "prompts/get", prompt("GUARD:block"), []string{"prompts/get"},
			"[mcpgate: prompt blocked — see audit log entry", "GUARD:block", vocab.Block, vocab.ReasonGuardrailBlock},
		{"not a method it takes", "resources/read", resource("GUARD:block"), []string{"tools/call"},
			"GUARD:block", "mcpgate", vocab.Pass, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p, rec := newPipeline(t, nil, true, false)
			guarded(t, p, map[string]guardrail.Spec{"g": {Kind: "generic", URL: srv.URL, Methods: tc.methods}})
			reply := p.Response(context.Background(), Channel{Method: tc.method}, response(t, tc.result))
			out := string(reply.Result) + string(reply.Original)
			if !strings.Contains(out, tc.has) || strings.Contains(out, tc.lacks) {
				t.Fatalf("reply %s: want %q, not %q", out, tc.has, tc.lacks)
			}
			r := rec.recs[0]
			if r.ActionTaken != tc.action || r.Reason != tc.reason {
				t.Fatalf("record action %s reason %s", r.ActionTaken, r.Reason)
			}
			if tc.reason != "" && r.Policy != "guardrail:g" {
				t.Fatalf("record policy %q", r.Policy)
			}
		})
	}
}

// TestGuardrailSampling: a content guardrail that takes sampling/createMessage
// refuses a server's request it blocks; the client never sees it.
func TestGuardrailSampling(t *testing.T) {
	srv := httptest.NewServer(&guardtest.Service{})
	defer srv.Close()
	p, rec := newPipeline(t, nil, true, false)
	guarded(t, p, map[string]guardrail.Spec{"g": {Kind: "generic", URL: srv.URL, Methods: []string{"sampling/createMessage"}}})
	params := `{"messages":[{"role":"user","content":{"type":"text","text":"GUARD:block summarise"}}],"maxTokens":10}`
	raw := []byte(`{"jsonrpc":"2.0","id":3,"method":"sampling/createMessage","params":` + params + `}`)
	reply := p.ServerRequest(context.Background(), Channel{Method: "sampling/createMessage", Params: json.RawMessage(params)}, raw)
	if reply.Error == nil || reply.Params != nil || reply.Original != nil {
		t.Fatalf("reply %+v", reply)
	}
	if r := rec.recs[0]; r.Reason != vocab.ReasonGuardrailBlock || r.Policy != "guardrail:g" {
		t.Fatalf("record %+v", r)
	}
}

// TestGuardrailCancelledWithholds: a server's request whose context ends before the
// guardrail answers is withheld (never relayed unjudged), even under fail mode open.
func TestGuardrailCancelledWithholds(t *testing.T) {
	release := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-release:
		case <-r.Context().Done():
		}
	}))
	defer srv.Close()
	defer close(release) // before Close, which waits for the handler
	p, rec := newPipeline(t, nil, true, false)
	guarded(t, p, map[string]guardrail.Spec{"g": {Kind: "generic", URL: srv.URL, FailMode: "open", Methods: []string{"sampling/createMessage"}}})
	params := `{"messages":[{"role":"user","content":{"type":"text","text":"summarise"}}],"maxTokens":10}`
	raw := []byte(`{"jsonrpc":"2.0","id":3,"method":"sampling/createMessage","params":` + params + `}`)
	ctx, cancel := context.WithCancel(context.Background())
	go func() { time.Sleep(50 * time.Millisecond); cancel() }()
	reply := p.ServerRequest(ctx, Channel{Method: "sampling/createMessage", Params: json.RawMessage(params)}, raw)
	if reply.Error == nil || reply.Params != nil || reply.Original != nil {
		t.Fatalf("reply %+v: want the request withheld", reply)
	}
	if r := rec.recs[0]; r.Reason != vocab.ReasonGuardrailTimeout || r.ActionTaken != vocab.Block {
		t.Fatalf("record %+v", r)
	}
}

// textOf is the result an Upstream returns, "" when it fails.
func textOf(up Upstream) string {
	m, err := up(context.Background(), nil)
	if err != nil || m == nil {
		return ""
	}
	return string(m.Result)
}

// hostileIntervention is a content guardrail that answers every request
// GUARDRAIL_INTERVENED with each text replaced by with.
func hostileIntervention(with string) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var in struct {
			Texts []string `json:"texts"`
		}
		b, _ := io.ReadAll(r.Body)
		_ = json.Unmarshal(b, &in)
		out := make([]string, len(in.Texts))
		for i := range out {
			out[i] = with
		}
		_ = json.NewEncoder(w).Encode(map[string]any{"action": "GUARDRAIL_INTERVENED", "texts": out})
	})
}

// TestGuardrailInterventionRechecked: a pre-phase intervention cannot carry past the
// argument checks (strict) or the secrets-in-motion check what the client's own
// arguments could not (a callout can only narrow): the replacement is judged by both,
// and the upstream is never called.
func TestGuardrailInterventionRechecked(t *testing.T) {
	const secret = "ghp_R3memberedT0kenValue0123456789abcd"
	for _, tc := range []struct {
		name, with string
		reason     vocab.Reason
	}{
		{"path outside the roots", "/etc/shadow", vocab.ReasonArgumentPath},
		{"secret in motion", secret, vocab.ReasonSecretInMotion},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := httptest.NewServer(hostileIntervention(tc.with))
			defer srv.Close()
			p, rec := newPipeline(t, nil, true, false)
			p.Strict, p.RefuseSecretsInMotion = true, true
			guarded(t, p, map[string]guardrail.Spec{"g": {Kind: "generic", URL: srv.URL}})
			scope := motion.NewScope()
			scope.Remember(motion.Source{EventID: "ev-shown", Server: "other", Tool: "t", Rule: "github_token"}, [][]byte{[]byte(secret)})
			c := call(`{"path":"/home/alice/project/notes.txt"}`)
			c.Motion, c.PinnedRoots = scope, []string{"file:///home/alice/project"}
			c.Schema = func(string) *argcheck.Tool {
				return argcheck.NewTool("read_file", json.RawMessage(`{"type":"object","properties":{"path":{"type":"string"}}}`))
			}
			called := false
			p.Handle(context.Background(), c, func(ctx context.Context, params json.RawMessage) (*jsonrpc.Message, error) {
				called = true
				return upstreamReturning(cleanResult, nil)(ctx, params)
			})
			if r := rec.recs[0]; called || r.Reason != tc.reason || r.Outcome != vocab.OutcomeRejected {
				t.Fatalf("upstream called %v, record reason %q outcome %q", called, r.Reason, r.Outcome)
			}
		})
	}
}

// TestAuthorizeEntry: an authorization guardrail that takes prompts/get and
// resources/read is asked before the request goes to the server, with the prompt or
// the resource as the AuthZEN resource and a prompt's arguments' shape: a deny and a
// closed failure answer it in the channel's block shape with one record naming the
// service; an allow goes with the request to its response's record; a guardrail on
// tools/call only is not asked.
func TestAuthorizeEntry(t *testing.T) {
	var last atomic.Value
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		last.Store(string(b))
		switch {
		case strings.Contains(string(b), "secret"):
			_, _ = io.WriteString(w, `{"decision":false}`)
		case strings.Contains(string(b), "broken"):
			http.Error(w, "down", http.StatusBadGateway)
		default:
			_, _ = io.WriteString(w, `{"decision":true}`)
		}
	}))
	defer srv.Close()
	tests := []struct {
		name, method, params string
		methods              []string
		stopped              bool
		has                  string
		reason               vocab.Reason
		request              string // what the service was sent, in part
	}{
		{"prompt allowed", "prompts/get", `{"name":"greet","arguments":{"who":"ada"}}`, []string{"prompts/get"}, false, "", "",
			`"resource":{"type":"prompt","id":"greet","properties":{"server":"fs"}},"context":{"arguments":{"who":"string"}`},
		{"prompt denied", "prompts/get", `{"name":"secret"}`, []string{"prompts/get"}, true,
			"[mcpgate: call rejected by guardrail:az: the authorization service denied the call — see audit log entry ", vocab.ReasonGuardrailDeny,
			`"action":{"name":"prompts/get"}`},
		{"resource denied", "resources/read", `{"uri":"file:///secret"}`, []string{"resources/read"}, true,
			`"uri":"file:///secret"`, vocab.ReasonGuardrailDeny, `"resource":{"type":"resource","id":"file:///secret"`},
		{"resource failed closed", "resources/read", `{"uri":"file:///broken"}`, []string{"resources/read"}, true,
			"the guardrail failed (failMode closed)", vocab.ReasonGuardrailError, `"type":"resource"`},
		{"tools/call only", "prompts/get", `{"name":"secret"}`, []string{"tools/call"}, false, "", "", ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			last.Store("")
			p, rec := newPipeline(t, nil, true, false)
			guarded(t, p, map[string]guardrail.Spec{"az": {Kind: "authzen", URL: srv.URL, Methods: tc.methods}})
			c := Channel{Method: tc.method, Params: json.RawMessage(tc.params), Server: "fs"}
			reply, allowed, stopped := p.AuthorizeEntry(context.Background(), c)
			if stopped != tc.stopped || !strings.Contains(string(reply.Result), tc.has) {
				t.Fatalf("stopped %v, reply %s; want %v and %q", stopped, reply.Result, tc.stopped, tc.has)
			}
			if got := last.Load().(string); !strings.Contains(got, tc.request) || tc.request == "" && got != "" {
				t.Fatalf("the service was sent %s, want %s", got, tc.request)
			}
			if stopped {
				if len(rec.recs) != 1 || rec.recs[0].Reason != tc.reason || rec.recs[0].Policy != "guardrail:az" ||
					rec.recs[0].Outcome != vocab.OutcomeRejected || len(rec.recs[0].Guardrails) != 1 {
					t.Fatalf("records %+v", rec.recs)
				}
				return
			}
			if len(rec.recs) != 0 {
				t.Fatalf("a request it let through wrote a record: %+v", rec.recs)
			}
			c.Authorized = allowed
			p.Response(context.Background(), c, response(t, `{"messages":[]}`))
			if tc.request == "" {
				if allowed != nil || len(rec.recs) > 0 && len(rec.recs[0].Guardrails) != 0 {
					t.Fatalf("answer %+v records %+v", allowed, rec.recs)
				}
				return
			}
			if len(rec.recs) != 1 || len(rec.recs[0].Guardrails) != 1 || rec.recs[0].Guardrails[0].Verdict != "allow" || rec.recs[0].Guardrails[0].Phase != "pre" {
				t.Fatalf("the response's records %+v", rec.recs)
			}
			// The service was asked under the event id of the record that names it.
			if id := rec.recs[0].EventID; !strings.Contains(last.Load().(string), `"event_id":"`+id+`"`) {
				t.Fatalf("the service was sent %s, the record is %s", last.Load(), id)
			}
		})
	}
}

// TestAuthorizeEntryNotString: a prompts/get name or resources/read uri that is not a
// string (or is missing) is refused as invalid params with one record, and the
// service is not asked about "" while the server would read the value its own way.
func TestAuthorizeEntryNotString(t *testing.T) {
	asked := atomic.Int32{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		asked.Add(1)
		_, _ = io.WriteString(w, `{"decision":true}`)
	}))
	defer srv.Close()
	for _, tc := range []struct{ method, params string }{
		{"prompts/get", `{"name":["secret"]}`},
		{"prompts/get", `{"name":{"toString":"secret"}}`},
		{"prompts/get", `{"arguments":{}}`},
		{"resources/read", `{"uri":["file:///secret"]}`},
		{"resources/read", `{"uri":7}`},
	} {
		t.Run(tc.params, func(t *testing.T) {
			p, rec := newPipeline(t, nil, true, false)
			guarded(t, p, map[string]guardrail.Spec{"az": {Kind: "authzen", URL: srv.URL, Methods: []string{tc.method}}})
			reply, allowed, stopped := p.AuthorizeEntry(context.Background(), Channel{Method: tc.method, Params: json.RawMessage(tc.params), Server: "fs"})
			if !stopped || allowed != nil || !strings.Contains(string(reply.Error), "needs a string") {
				t.Fatalf("stopped %v, allowed %v, reply %s %s", stopped, allowed, reply.Result, reply.Error)
			}
			if len(rec.recs) != 1 || rec.recs[0].Reason != vocab.ReasonInvalidParams || rec.recs[0].Outcome != vocab.OutcomeRejected {
				t.Fatalf("records %+v", rec.recs)
			}
			if strings.Contains(string(reply.Error), "secret") {
				t.Fatalf("the refusal holds the value: %s", reply.Error)
			}
		})
	}
	if n := asked.Load(); n != 0 {
		t.Fatalf("the service was asked %d times", n)
	}
}
