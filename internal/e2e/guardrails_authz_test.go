package e2e

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/mcpgate/mcpgate/internal/guardrail/guardtest"
)

// authzService is a test-bed authorization service: it allows, unless the
// arguments' shape (which is all it is sent) has a member named <prefix>deny,
// <prefix>hang, <prefix>5xx, <prefix>garbage or <prefix>big, and then denies, hangs,
// answers 503, a body that is not JSON, or a decision padded past 1 MiB. It answers
// AuthZEN's {"decision"} or, for OPA, {"result"}; every request is kept.
type authzService struct {
	prefix string
	opa    bool
	mu     sync.Mutex
	reqs   []authzRequest
}

type authzRequest struct {
	header http.Header
	body   string
}

func (s *authzService) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	b, _ := io.ReadAll(r.Body)
	body := string(b)
	s.mu.Lock()
	s.reqs = append(s.reqs, authzRequest{header: r.Header.Clone(), body: body})
	s.mu.Unlock()
	has := func(marker string) bool { return strings.Contains(body, `"`+s.prefix+marker+`"`) }
	answer := func(allowed bool, pad string) {
		if s.opa {
			_, _ = io.WriteString(w, `{"result":`+map[bool]string{true: "true", false: "false"}[allowed]+pad+`}`)
			return
		}
		_, _ = io.WriteString(w, `{"decision":`+map[bool]string{true: "true", false: "false"}[allowed]+pad+`}`)
	}
	w.Header().Set("Content-Type", "application/json")
	switch {
	case has("hang"):
		<-r.Context().Done()
	case has("5xx"):
		http.Error(w, "unavailable", http.StatusServiceUnavailable)
	case has("garbage"):
		_, _ = io.WriteString(w, "<html>not json")
	case has("big"):
		answer(true, `,"pad":"`+strings.Repeat("x", 1<<20)+`"`)
	case has("deny"):
		answer(false, "")
	default:
		answer(true, "")
	}
}

func (s *authzService) requests() []authzRequest {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]authzRequest(nil), s.reqs...)
}

// TestGuardrailsAuthorizationFailures: two authorization services on loopback, one
// AuthZEN with the default fail mode (closed) and one OPA with failMode open, over
// stdio and HTTP: each allows, denies (a deny stops the call whatever the fail mode),
// hangs, answers 5xx, garbage and more than 1 MiB; under closed each failure rejects
// the call naming the service, under open the call goes on and the record says what
// failed.
func TestGuardrailsAuthorizationFailures(t *testing.T) {
	closed, open := &authzService{prefix: "c_"}, &authzService{prefix: "o_", opa: true}
	s1, s2 := httptest.NewServer(closed), httptest.NewServer(open)
	defer s1.Close()
	defer s2.Close()
	cfg := writeConfig(t, map[string]any{
		"pdp": map[string]any{"kind": "authzen", "url": s1.URL, "timeout": "2s", "breaker": map[string]any{"failures": 1000}},
		"opa": map[string]any{"kind": "opa", "url": s2.URL, "failMode": "open", "timeout": "2s", "breaker": map[string]any{"failures": 1000}},
	})
	args := func(marker string) map[string]any { return map[string]any{"text": "x", marker: true} }
	const failed = "[mcpgate: call rejected by guardrail:pdp: the guardrail failed (failMode closed)"
	guardrailTransports(t, cfg, t.TempDir(), []guardrailCase{
		{name: "allowed", args: map[string]any{"text": "x"}, text: "fakeup: x",
			entry: map[string]string{"name": "pdp", "kind": "authzen", "phase": "pre", "verdict": "allow", "fail_mode": "closed"}},
		{name: "allowed open", args: map[string]any{"text": "x"}, text: "fakeup: x",
			entry: map[string]string{"name": "opa", "kind": "opa", "phase": "pre", "verdict": "allow", "fail_mode": "open"}},
		{name: "denied closed", args: args("c_deny"), text: "[mcpgate: call rejected by guardrail:pdp: the authorization service denied the call",
			reason: "guardrail_deny", policy: "guardrail:pdp", entry: map[string]string{"name": "pdp", "verdict": "deny"}},
		{name: "denied open", args: args("o_deny"), text: "[mcpgate: call rejected by guardrail:opa: the authorization service denied the call",
			reason: "guardrail_deny", policy: "guardrail:opa", entry: map[string]string{"name": "opa", "verdict": "deny"}},
		{name: "hang closed", args: args("c_hang"), text: "[mcpgate: call rejected by guardrail:pdp: the guardrail did not answer in time",
			reason: "guardrail_timeout", policy: "guardrail:pdp", entry: map[string]string{"name": "pdp", "error": "guardrail_timeout"}},
		{name: "hang open", args: args("o_hang"), text: "fakeup: x",
			entry: map[string]string{"name": "opa", "error": "guardrail_timeout", "fail_mode": "open"}},
		{name: "5xx closed", args: args("c_5xx"), text: failed,
			reason: "guardrail_error", policy: "guardrail:pdp", entry: map[string]string{"name": "pdp", "detail": "status_503"}},
		{name: "5xx open", args: args("o_5xx"), text: "fakeup: x",
			entry: map[string]string{"name": "opa", "error": "guardrail_error", "detail": "status_503"}},
		{name: "garbage closed", args: args("c_garbage"), text: failed,
			reason: "guardrail_error", policy: "guardrail:pdp", entry: map[string]string{"name": "pdp", "detail": "malformed"}},
		{name: "garbage open", args: args("o_garbage"), text: "fakeup: x",
			entry: map[string]string{"name": "opa", "error": "guardrail_error", "detail": "malformed"}},
		{name: "oversized closed", args: args("c_big"), text: failed,
			reason: "guardrail_error", policy: "guardrail:pdp", entry: map[string]string{"name": "pdp", "detail": "oversized"}},
		{name: "oversized open", args: args("o_big"), text: "fakeup: x",
			entry: map[string]string{"name": "opa", "error": "guardrail_error", "detail": "oversized"}},
	})
	for _, r := range append(closed.requests(), open.requests()...) {
		if strings.Contains(r.body, `"x"`) {
			t.Fatalf("an argument value was sent: %s", r.body)
		}
	}
}

// TestGuardrailsCallerCredentials: over HTTP a caller's bearer token and cookie reach
// no guardrail, in a header or the body, nor the token's hash; the caller's user id
// does (request_data, subject).
func TestGuardrailsCallerCredentials(t *testing.T) {
	const token, cookie = "caller-bearer-4c1d", "session=caller-cookie-9e2f"
	content, authz := &guardtest.Service{}, &authzService{}
	s1, s2 := httptest.NewServer(content), httptest.NewServer(authz)
	defer s1.Close()
	defer s2.Close()
	_, fake := httpBinaries(t)
	sum := sha256.Sum256([]byte(token))
	hash := hex.EncodeToString(sum[:])
	cfg := filepath.Join(t.TempDir(), "config.json")
	httpWriteFile(t, cfg, `{"mcpgate":{"tokens":[{"sha256":"`+hash+`","userID":"alice"}],"guardrails":{`+
		`"content":{"kind":"generic","url":"`+s1.URL+`","timeout":"5s"},`+
		`"authz":{"kind":"authzen","url":"`+s2.URL+`","timeout":"5s"}}}}`)
	g := startHTTPGateway(t, "--config", cfg, "--", fake)
	c := newHTTPClient(g.url)
	c.token = token
	c.initialize(t)
	r, err := c.do(context.Background(), http.MethodPost, httpCallBody(1, "echo", map[string]any{"text": "hello"}), map[string]string{"Cookie": cookie})
	if err != nil {
		t.Fatal(err)
	}
	if text := httpResultText(r.last()); text != "fakeup: hello" {
		t.Fatalf("reply %q", text)
	}
	var seen []string // every header value and body the guardrails got
	for _, r := range content.Requests() {
		seen = append(seen, string(r.Body))
		for _, v := range r.Header {
			seen = append(seen, v...)
		}
	}
	for _, r := range authz.requests() {
		seen = append(seen, r.body)
		for _, v := range r.header {
			seen = append(seen, v...)
		}
	}
	if len(content.Requests()) != 2 || len(authz.requests()) != 1 {
		t.Fatalf("content guardrail asked %d times, authorization %d; want 2 and 1", len(content.Requests()), len(authz.requests()))
	}
	all := strings.Join(seen, "\n")
	for _, secret := range []string{token, "caller-cookie-9e2f", hash, c.sid} {
		if strings.Contains(all, secret) {
			t.Fatalf("a guardrail got the caller's %q", secret)
		}
	}
	if !strings.Contains(string(content.Requests()[0].Body), `"user_api_key_user_id":"alice"`) || !strings.Contains(authz.requests()[0].body, `"id":"alice"`) {
		t.Fatalf("the caller's user id did not reach the guardrails: %s", all)
	}
}
