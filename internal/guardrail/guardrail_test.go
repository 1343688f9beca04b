package guardrail_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mcpgate/mcpgate/ctxapi"
	"github.com/mcpgate/mcpgate/engine"
	"github.com/mcpgate/mcpgate/internal/guardrail"
	"github.com/mcpgate/mcpgate/internal/guardrail/guardtest"
)

// newSet builds specs; a spec without a timeout gets 10 s, so a loaded machine never
// turns an answer into a timeout.
func newSet(t *testing.T, specs map[string]guardrail.Spec) *guardrail.Set {
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
	return s
}

func content(texts ...string) *guardrail.Content {
	c := &guardrail.Content{Method: "tools/call", Server: "fs", Tool: "read_file", Phase: "post", EventID: "ev-1",
		User:     ctxapi.User{UserID: "u1", CallerID: "cli", CallerClass: "standard"},
		Findings: []engine.Finding{{RuleID: "pii_email", Severity: engine.SeverityInfo, Pointer: "/content/0/text", Start: 1, End: 4}}}
	for i, s := range texts {
		c.Texts = append(c.Texts, guardrail.Text{Pointer: "/content/" + string(rune('0'+i)) + "/text", Value: s})
	}
	return c
}

// TestGenericOutcomes: every answer of the test-bed service and what it becomes.
func TestGenericOutcomes(t *testing.T) {
	svc := &guardtest.Service{}
	srv := httptest.NewServer(svc)
	defer srv.Close()
	tests := []struct {
		name    string
		text    string
		mode    string
		verdict guardrail.Verdict
		failure guardrail.Failure
		detail  string
		stops   bool
	}{
		{"none", "hello", "", guardrail.None, "", "", false},
		{"blocked", "x GUARD:block", "", guardrail.Block, "", "", true},
		{"intervened", "GUARD:redact secret-abc", "", guardrail.Intervene, "", "", false},
		{"finding", "GUARD:finding", "", guardrail.None, "", "", false},
		{"garbage closed", "GUARD:garbage", "closed", "", guardrail.FailureError, "malformed", true},
		{"garbage open", "GUARD:garbage", "open", "", guardrail.FailureError, "malformed", false},
		{"5xx", "GUARD:5xx", "", "", guardrail.FailureError, "status_503", true},
		{"oversized", "GUARD:big", "", "", guardrail.FailureError, "oversized", true},
		{"hang", "GUARD:hang", "open", "", guardrail.FailureTimeout, "timeout", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := newSet(t, map[string]guardrail.Spec{"g": {Kind: "generic", URL: srv.URL, FailMode: tt.mode, Timeout: hangTimeout(tt.text),
				Breaker: &guardrail.Breaker{Failures: 1000}}})
			outs := s.Run(context.Background(), content(tt.text), nil)
			if len(outs) != 1 {
				t.Fatalf("outcomes %v", outs)
			}
			o := outs[0]
			if o.Verdict != tt.verdict || o.Failure != tt.failure || o.Detail != tt.detail || o.Stops() != tt.stops {
				t.Fatalf("got %+v", o)
			}
			switch tt.name {
			case "blocked":
				if o.Reason != "test guardrail blocked" {
					t.Fatalf("reason %q", o.Reason)
				}
			case "intervened":
				if len(o.Texts) != 1 || o.Texts[0] != "GUARD:redact [REDACTED]" || len(o.Sent) != 1 {
					t.Fatalf("texts %q sent %v", o.Texts, o.Sent)
				}
			case "finding":
				if len(o.Findings) != 1 || o.Findings[0].Source != "guardrail:g" || o.Findings[0].RuleID != "test_finding" ||
					o.Findings[0].Pointer != "/content/0/text" || o.Findings[0].Severity != engine.SeverityHigh || o.Findings[0].End != 5 {
					t.Fatalf("findings %+v", o.Findings)
				}
			}
		})
	}
}

// TestGenericRequestShape: the request is LiteLLM's shape plus mcp, carries the
// caller's ids and never a token, cookie or the caller's headers.
func TestGenericRequestShape(t *testing.T) {
	svc := &guardtest.Service{Secret: "s3cret"}
	srv := httptest.NewServer(svc)
	defer srv.Close()
	s := newSet(t, map[string]guardrail.Spec{"g": {Kind: "generic", URL: srv.URL, HMACSecret: "s3cret",
		Headers: map[string]string{"X-Api-Key": "service-key"}}})
	outs := s.Run(context.Background(), content("one", "two"), nil)
	if outs[0].Verdict != guardrail.None {
		t.Fatalf("outcome %+v", outs[0])
	}
	reqs := svc.Requests()
	if len(reqs) != 1 || !reqs[0].SignatureOK {
		t.Fatalf("requests %d, signature ok %v", len(reqs), reqs[0].SignatureOK)
	}
	h := reqs[0].Header
	if h.Get("Authorization") != "" || h.Get("Cookie") != "" || h.Get("X-Api-Key") != "service-key" {
		t.Fatalf("headers %v", h)
	}
	var body map[string]any
	if err := json.Unmarshal(reqs[0].Body, &body); err != nil {
		t.Fatal(err)
	}
	want := `{"input_type":"response","litellm_call_id":"ev-1","mcp":{"findings":[{"end":4,"pointer":"/content/0/text","rule_id":"pii_email","severity":"INFO","start":1}],"method":"tools/call","phase":"post","pointers":["/content/0/text","/content/1/text"],"server":"fs","tool":"read_file"},"request_data":{"user_api_key_alias":"cli","user_api_key_user_id":"u1"},"texts":["one","two"]}`
	if got, _ := json.Marshal(body); string(got) != want {
		t.Fatalf("body\n got %s\nwant %s", got, want)
	}
}

// TestMaxBytes: texts past maxBytes are not sent; under fail mode closed that is a
// failure, under open the rest is judged and only the sent texts can be replaced.
func TestMaxBytes(t *testing.T) {
	svc := &guardtest.Service{}
	srv := httptest.NewServer(svc)
	defer srv.Close()
	c := content("GUARD:redact secret-1", strings.Repeat("y", 100), "secret-2")
	closed := newSet(t, map[string]guardrail.Spec{"g": {Kind: "generic", URL: srv.URL, MaxBytes: 50}})
	if o := closed.Run(context.Background(), c, nil)[0]; o.Failure != guardrail.FailureError || o.Detail != "truncated" || !o.Stops() {
		t.Fatalf("closed: %+v", o)
	}
	open := newSet(t, map[string]guardrail.Spec{"g": {Kind: "generic", URL: srv.URL, MaxBytes: 50, FailMode: "open"}})
	o := open.Run(context.Background(), c, nil)[0]
	if o.Verdict != guardrail.Intervene || len(o.Sent) != 2 || o.Sent[0] != 0 || o.Sent[1] != 2 || o.Texts[1] != "[REDACTED]" {
		t.Fatalf("open: %+v", o)
	}
}

// TestInterventionCountMustMatch: an intervention with another number of texts than
// were sent is malformed: the service cannot add or drop leaves.
func TestInterventionCountMustMatch(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.WriteString(w, `{"action":"GUARDRAIL_INTERVENED","texts":["a","b","c"]}`)
	}))
	defer srv.Close()
	s := newSet(t, map[string]guardrail.Spec{"g": {Kind: "generic", URL: srv.URL}})
	if o := s.Run(context.Background(), content("one"), nil)[0]; o.Failure != guardrail.FailureError || o.Detail != "malformed" {
		t.Fatalf("%+v", o)
	}
}

// TestAuthorization: AuthZEN and OPA answers, and the request's facts (the
// arguments' shape by default, never their values).
func TestAuthorization(t *testing.T) {
	var last atomic.Value
	answer := func(body string) string {
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			b, _ := io.ReadAll(r.Body)
			last.Store(string(b))
			_, _ = io.WriteString(w, body)
		}))
		t.Cleanup(srv.Close)
		return srv.URL
	}
	a := &guardrail.Access{Method: "tools/call", Server: "fs", Tool: "write_file", EventID: "ev-2",
		User:      ctxapi.User{UserID: "u1", CallerID: "cli", CallerClass: "trusted", Roles: []string{"dev"}},
		Arguments: json.RawMessage(`{"path":"/etc/passwd","opts":{"force":true,"n":3},"list":[1]}`)}
	tests := []struct {
		name, kind, answer string
		verdict            guardrail.Verdict
		failure            guardrail.Failure
	}{
		{"authzen allow", "authzen", `{"decision":true}`, guardrail.Allow, ""},
		{"authzen deny", "authzen", `{"decision":false,"context":{"reason":"no"}}`, guardrail.Deny, ""},
		{"authzen no decision", "authzen", `{}`, "", guardrail.FailureError},
		{"opa bool", "opa", `{"result":true}`, guardrail.Allow, ""},
		{"opa object", "opa", `{"result":{"allow":false}}`, guardrail.Deny, ""},
		{"opa undefined", "opa", `{}`, "", guardrail.FailureError},
		{"opa garbage", "opa", `nope`, "", guardrail.FailureError},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := newSet(t, map[string]guardrail.Spec{"z": {Kind: tt.kind, URL: answer(tt.answer)}})
			o := s.Run(context.Background(), nil, a)[0]
			if o.Verdict != tt.verdict || o.Failure != tt.failure || !o.FailClosed {
				t.Fatalf("%+v", o)
			}
			body := last.Load().(string)
			if strings.Contains(body, "/etc/passwd") {
				t.Fatalf("an argument value was sent: %s", body)
			}
			want := `{"action":{"name":"tools/call"},"context":{"arguments":{"list":"array","opts":{"force":"boolean","n":"number"},"path":"string"},"event_id":"ev-2"},"resource":{"type":"tool","id":"write_file","properties":{"server":"fs"}},"subject":{"type":"user","id":"u1","properties":{"caller_class":"trusted","client_id":"cli","roles":["dev"],"scopes":[]}}}`
			if tt.kind == "opa" {
				want = `{"input":` + want + `}`
			}
			var v any
			_ = json.Unmarshal([]byte(body), &v)
			got, _ := json.Marshal(v)
			var w any
			_ = json.Unmarshal([]byte(want), &w)
			wantB, _ := json.Marshal(w)
			if string(got) != string(wantB) {
				t.Fatalf("request\n got %s\nwant %s", got, wantB)
			}
		})
	}
}

// TestBreaker: after the configured failures the service is not called for the
// cooldown; the failure then says circuit_open.
func TestBreaker(t *testing.T) {
	var calls atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		calls.Add(1)
		http.Error(w, "down", http.StatusBadGateway)
	}))
	defer srv.Close()
	s := newSet(t, map[string]guardrail.Spec{"g": {Kind: "generic", URL: srv.URL, FailMode: "open",
		Breaker: &guardrail.Breaker{Failures: 2, Cooldown: "1h"}}})
	var details []string
	for range 4 {
		details = append(details, s.Run(context.Background(), content("x"), nil)[0].Detail)
	}
	if got := strings.Join(details, ","); got != "status_502,status_502,circuit_open,circuit_open" || calls.Load() != 2 {
		t.Fatalf("details %s, calls %d", got, calls.Load())
	}
}

// TestParallelSharedDeadline: two hanging guardrails of one phase both time out
// within one deadline, and a third that answers still gives its verdict.
func TestParallelSharedDeadline(t *testing.T) {
	svc := &guardtest.Service{}
	srv := httptest.NewServer(svc)
	defer srv.Close()
	ok := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.WriteString(w, `{"action":"NONE"}`)
	}))
	defer ok.Close()
	s := newSet(t, map[string]guardrail.Spec{
		"a": {Kind: "generic", URL: srv.URL, Timeout: "200ms", FailMode: "open"},
		"b": {Kind: "generic", URL: srv.URL, Timeout: "200ms", FailMode: "open"},
		"c": {Kind: "generic", URL: ok.URL, Timeout: "5s", FailMode: "open"},
	})
	start := time.Now()
	outs := s.Run(context.Background(), content("GUARD:hang"), nil)
	if len(outs) != 3 || outs[0].Failure != guardrail.FailureTimeout || outs[1].Failure != guardrail.FailureTimeout || outs[2].Verdict != guardrail.None {
		t.Fatalf("%+v", outs)
	}
	t.Logf("three guardrails, two hanging: %v", time.Since(start)) // reported, not asserted
}

func TestSpecErrors(t *testing.T) {
	for _, tt := range []struct {
		spec guardrail.Spec
		want string
	}{
		{guardrail.Spec{URL: "http://x"}, `"kind" is required`},
		{guardrail.Spec{Kind: "nope", URL: "http://x"}, `"kind" "nope"`},
		{guardrail.Spec{Kind: "generic", URL: "ftp://x"}, `"url"`},
		{guardrail.Spec{Kind: "generic", URL: "http://u:p@x"}, `user:password`},
		{guardrail.Spec{Kind: "generic", URL: "http://x", FailMode: "maybe"}, `"failMode"`},
		{guardrail.Spec{Kind: "generic", URL: "http://x", Timeout: "soon"}, `"timeout"`},
		{guardrail.Spec{Kind: "generic", URL: "http://x", Methods: []string{"tools/delete"}}, `"methods"`},
		{guardrail.Spec{Kind: "opa", URL: "http://x", Methods: []string{"tools/list"}}, `an authorization guardrail takes [tools/call prompts/get resources/read], not "tools/list"`},
		{guardrail.Spec{Kind: "generic", URL: "http://x", MaxBytes: -1}, `"maxBytes"`},
		{guardrail.Spec{Kind: "generic", URL: "http://x", Arguments: "values"}, `authzen and opa only`},
		{guardrail.Spec{Kind: "generic", URL: "http://x", TLS: &guardrail.TLS{CertFile: "a"}}, `go together`},
	} {
		if err := tt.spec.Validate(); err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%+v: %v, want %q", tt.spec, err, tt.want)
		}
	}
}

func TestSign(t *testing.T) {
	ts, sig := guardrail.Sign([]byte("k"), time.Unix(1700000000, 0), []byte(`{}`))
	// echo -n '1700000000.{}' | openssl dgst -sha256 -hmac k
	if ts != "1700000000" || sig != "sha256=c6ef4734033cee2367414a0939385eca0397754aa7a59716da7463a9298b5146" {
		t.Fatalf("%s %s", ts, sig)
	}
}

// hangTimeout is a short timeout for a case that waits on a hanging service, and a
// long one for every other, which must get its answer on a loaded machine.
func hangTimeout(text string) string {
	if strings.Contains(text, "hang") {
		return "300ms"
	}
	return "10s"
}

// TestReplayFindingSource: a replayed or stubbed finding has its guardrail's source,
// as live, whatever the fixture wrote: none, or one passing it off as built-in.
func TestReplayFindingSource(t *testing.T) {
	s := guardrail.Replay([]guardrail.Recorded{{Phase: "pre", Outcome: guardrail.Outcome{Name: "inj", Kind: "generic", Verdict: guardrail.None,
		Findings: []engine.Finding{{RuleID: "a", Severity: engine.SeverityHigh}, {RuleID: "b", Source: "guardrail:other"}}}}})
	outs := s.Run(context.Background(), &guardrail.Content{Method: "tools/call", Phase: "pre"}, nil)
	if len(outs) != 1 || len(outs[0].Findings) != 2 {
		t.Fatalf("%+v", outs)
	}
	for _, f := range outs[0].Findings {
		if f.Source != "guardrail:inj" {
			t.Errorf("finding %s: source %q, want guardrail:inj", f.RuleID, f.Source)
		}
	}
}
