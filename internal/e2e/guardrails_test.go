package e2e

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/mcpgate/mcpgate/internal/guardrail/guardtest"
	"github.com/mcpgate/mcpgate/internal/testsvc"
	"github.com/mcpgate/mcpgate/internal/testwait"
)

// guardrailCase is one call through a gateway with outside guardrails, and what the
// client and the record must show.
type guardrailCase struct {
	name   string
	args   map[string]any
	text   string // the first content text begins with this
	reason string // the record's reason ("" for none)
	policy string
	entry  map[string]string // one guardrails entry the record must hold (name, phase, verdict or error)
}

// guardrailTransports runs the cases over stdio and over HTTP, against the fakeup
// upstream, with the given configuration and policies directory.
func guardrailTransports(t *testing.T, cfg, pol string, cases []guardrailCase) {
	_, fake := httpBinaries(t)
	check := func(t *testing.T, tc guardrailCase, text string, rec map[string]any) {
		t.Helper()
		if !strings.HasPrefix(text, tc.text) {
			t.Errorf("%s: first text %q, want prefix %q", tc.name, text, tc.text)
		}
		if r, _ := rec["reason"].(string); r != tc.reason {
			t.Errorf("%s: reason %q, want %q; record %v", tc.name, r, tc.reason, rec)
		}
		if p, _ := rec["policy"].(string); p != tc.policy {
			t.Errorf("%s: policy %q, want %q", tc.name, p, tc.policy)
		}
		if tc.entry != nil && !hasEntry(rec, tc.entry) {
			t.Errorf("%s: guardrails %v lack %v", tc.name, rec["guardrails"], tc.entry)
		}
		b, _ := json.Marshal(rec)
		if strings.Contains(string(b), "secret-") || strings.Contains(string(b), "GUARD:") {
			t.Errorf("%s: the record holds a value: %s", tc.name, b)
		}
	}
	t.Run("stdio", func(t *testing.T) {
		c, log := mcpClient(t, nil, binary, gatewayArgs([]string{"--config", cfg, "--policies", pol}, []string{fake})...)
		for i, tc := range cases {
			res := callTool(t, c, "echo", tc.args)
			text := ""
			if len(res.Content) > 0 {
				if tc, ok := res.Content[0].(mcp.TextContent); ok {
					text = tc.Text
				}
			}
			check(t, tc, text, log.waitRecords(t, i+1)[i])
		}
	})
	t.Run("http", func(t *testing.T) {
		g := startHTTPGateway(t, "--config", cfg, "--policies", pol, "--", fake)
		c := newHTTPClient(g.url)
		c.initialize(t)
		for i, tc := range cases {
			m := c.call(t, i+1, "echo", tc.args)
			check(t, tc, httpResultText(m), g.stderr.waitRecords(t, i+1)[i])
		}
	})
}

func hasEntry(rec map[string]any, want map[string]string) bool {
	list, _ := rec["guardrails"].([]any)
	for _, e := range list {
		m, _ := e.(map[string]any)
		ok := true
		for k, v := range want {
			if s, _ := m[k].(string); s != v {
				ok = false
			}
		}
		if ok {
			return true
		}
	}
	return false
}

func writeConfig(t *testing.T, guardrails map[string]any) string {
	t.Helper()
	b, _ := json.Marshal(map[string]any{"mcpgate": map[string]any{"guardrails": guardrails}})
	path := filepath.Join(t.TempDir(), "config.json")
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestGuardrailsContent: a test-bed content service speaking LiteLLM's Generic
// Guardrail API on loopback answers none, blocks (arguments and a result), intervenes
// (arguments and a result), hangs, answers garbage, 5xx and more than 1 MiB, each
// under fail mode closed ("strict", signed) and open ("soft"), over stdio and HTTP; a third ("trip", open) opens its circuit breaker on its first failure,
// and is then not asked at all until its cooldown ends.
func TestGuardrailsContent(t *testing.T) {
	strict := &guardtest.Service{Secret: "e2e-secret"}
	soft := &guardtest.Service{Prefix: "SOFT:"}
	trip := &guardtest.Service{Prefix: "TRIP:"}
	s1, s2, s3 := httptest.NewServer(strict), httptest.NewServer(soft), httptest.NewServer(trip)
	defer s1.Close()
	defer s2.Close()
	defer s3.Close()
	t.Setenv("E2E_GUARD_HMAC", "e2e-secret")
	cfg := writeConfig(t, map[string]any{
		"strict": map[string]any{"kind": "generic", "url": s1.URL, "timeout": "3s", "hmacSecret": "${E2E_GUARD_HMAC}",
			"breaker": map[string]any{"failures": 1000}},
		"soft": map[string]any{"kind": "generic", "url": s2.URL, "failMode": "open", "timeout": "2s",
			"breaker": map[string]any{"failures": 1000}},
		"trip": map[string]any{"kind": "generic", "url": s3.URL, "failMode": "open", "timeout": "2s", "methods": []string{"tools/call"},
			"breaker": map[string]any{"failures": 1, "cooldown": "10m"}},
	})
	pol := t.TempDir()
	if err := os.WriteFile(filepath.Join(pol, "flag.js"), []byte(
		`if (ctx.phase === "pre" && ctx.findings.some(f => f.source === "guardrail:strict" && f.rule_id === "test_finding")) { throw "flagged" }`), 0o600); err != nil {
		t.Fatal(err)
	}
	guardrailTransports(t, cfg, pol, []guardrailCase{
		{name: "none", args: map[string]any{"text": "hello"}, text: "fakeup: hello",
			entry: map[string]string{"name": "strict", "phase": "post", "verdict": "none"}},
		{name: "blocked call", args: map[string]any{"text": "GUARD:block"},
			text:   "[mcpgate: call rejected by guardrail:strict: test guardrail blocked — see audit log entry ",
			reason: "guardrail_block", policy: "guardrail:strict", entry: map[string]string{"name": "strict", "phase": "pre", "verdict": "block"}},
		{name: "blocked result", args: map[string]any{"text": "GUARD:post-block"}, text: "[mcpgate: tool output blocked — see audit log entry ",
			reason: "guardrail_block", policy: "guardrail:strict", entry: map[string]string{"name": "strict", "phase": "post", "verdict": "block"}},
		{name: "intervened result", args: map[string]any{"text": "GUARD:post-redact secret-abc"}, text: "fakeup: GUARD:post-redact [REDACTED]",
			entry: map[string]string{"name": "strict", "phase": "post", "verdict": "intervene"}},
		{name: "finding reaches a policy", args: map[string]any{"text": "GUARD:finding"},
			text: "[mcpgate: call rejected by policy flag.js: flagged", reason: "policy_throw", policy: "flag.js"},
		{name: "5xx closed", args: map[string]any{"text": "GUARD:5xx"}, text: "[mcpgate: call rejected by guardrail:strict: the guardrail failed",
			reason: "guardrail_error", policy: "guardrail:strict", entry: map[string]string{"name": "strict", "error": "guardrail_error", "detail": "status_503"}},
		{name: "garbage closed", args: map[string]any{"text": "GUARD:garbage"}, text: "[mcpgate: call rejected by guardrail:strict: the guardrail failed",
			reason: "guardrail_error", policy: "guardrail:strict", entry: map[string]string{"name": "strict", "detail": "malformed"}},
		{name: "intervened arguments", args: map[string]any{"text": "GUARD:redact secret-abc"}, text: "fakeup: GUARD:redact [REDACTED]",
			entry: map[string]string{"name": "strict", "phase": "pre", "verdict": "intervene"}},
		{name: "none open", args: map[string]any{"text": "plain"}, text: "fakeup: plain",
			entry: map[string]string{"name": "soft", "phase": "post", "verdict": "none"}},
		{name: "blocked call open", args: map[string]any{"text": "SOFT:block"},
			text:   "[mcpgate: call rejected by guardrail:soft: test guardrail blocked — see audit log entry ",
			reason: "guardrail_block", policy: "guardrail:soft", entry: map[string]string{"name": "soft", "phase": "pre", "verdict": "block"}},
		{name: "blocked result open", args: map[string]any{"text": "SOFT:post-block"}, text: "[mcpgate: tool output blocked — see audit log entry ",
			reason: "guardrail_block", policy: "guardrail:soft", entry: map[string]string{"name": "soft", "phase": "post", "verdict": "block"}},
		{name: "intervened arguments open", args: map[string]any{"text": "SOFT:redact secret-abc"}, text: "fakeup: SOFT:redact [REDACTED]",
			entry: map[string]string{"name": "soft", "phase": "pre", "verdict": "intervene"}},
		{name: "intervened result open", args: map[string]any{"text": "SOFT:post-redact secret-abc"}, text: "fakeup: SOFT:post-redact [REDACTED]",
			entry: map[string]string{"name": "soft", "phase": "post", "verdict": "intervene"}},
		{name: "garbage open", args: map[string]any{"text": "SOFT:garbage"}, text: "fakeup: SOFT:garbage",
			entry: map[string]string{"name": "soft", "phase": "pre", "error": "guardrail_error", "detail": "malformed"}},
		{name: "hang closed", args: map[string]any{"text": "GUARD:hang"}, text: "[mcpgate: call rejected by guardrail:strict: the guardrail did not answer in time",
			reason: "guardrail_timeout", policy: "guardrail:strict", entry: map[string]string{"name": "strict", "error": "guardrail_timeout"}},
		{name: "hang open", args: map[string]any{"text": "SOFT:hang"}, text: "fakeup: SOFT:hang",
			entry: map[string]string{"name": "soft", "phase": "pre", "error": "guardrail_timeout"}},
		{name: "5xx open", args: map[string]any{"text": "SOFT:5xx"}, text: "fakeup: SOFT:5xx",
			entry: map[string]string{"name": "soft", "phase": "pre", "error": "guardrail_error", "detail": "status_503"}},
		{name: "oversized closed", args: map[string]any{"text": "GUARD:big"}, text: "[mcpgate: call rejected by guardrail:strict: the guardrail failed",
			reason: "guardrail_error", policy: "guardrail:strict", entry: map[string]string{"name": "strict", "error": "guardrail_error", "detail": "oversized"}},
		{name: "oversized open", args: map[string]any{"text": "SOFT:big"}, text: "fakeup: SOFT:big",
			entry: map[string]string{"name": "soft", "phase": "pre", "error": "guardrail_error", "detail": "oversized"}},
		{name: "a failure opens the breaker", args: map[string]any{"text": "TRIP:5xx"}, text: "fakeup: TRIP:5xx",
			entry: map[string]string{"name": "trip", "phase": "pre", "error": "guardrail_error", "detail": "status_503"}},
		{name: "an open breaker asks nothing", args: map[string]any{"text": "TRIP:block"}, text: "fakeup: TRIP:block",
			entry: map[string]string{"name": "trip", "phase": "pre", "error": "guardrail_error", "detail": "circuit_open"}},
	})
	// The failure that opened trip's breaker reached it (once per transport); the
	// block after it never did, nor did anything else.
	tripped, after := 0, 0
	for _, r := range trip.Requests() {
		switch {
		case strings.Contains(string(r.Body), "TRIP:5xx"):
			tripped++
		case strings.Contains(string(r.Body), "TRIP:block"):
			after++
		}
	}
	if tripped != 2 || after != 0 {
		t.Fatalf("trip was asked about the failure %d times and after it %d times, want 2 and 0", tripped, after)
	}
	for _, r := range strict.Requests() {
		if !r.SignatureOK || r.Header.Get("Authorization") != "" || r.Header.Get("Cookie") != "" || r.Header.Get("Mcp-Session-Id") != "" {
			t.Fatalf("a request was unsigned or carried the caller's headers: %v", r.Header)
		}
	}
}

// TestGuardrailsOPA: a real OPA server with a Rego policy over the input authorizes
// each call, over stdio and HTTP; a pre policy that adds "force" to allowed arguments
// is caught, since the rewritten arguments are authorized again (without that second
// ask the call reaches the upstream).
func TestGuardrailsOPA(t *testing.T) {
	base := testsvc.OPAURL(t)
	cfg := writeConfig(t, map[string]any{"opa": map[string]any{"kind": "opa", "url": base + "/v1/data/mcpgate/allow", "timeout": "5s"}})
	pol := t.TempDir()
	if err := os.WriteFile(filepath.Join(pol, "force.js"), []byte(
		`if (ctx.phase === "pre" && ctx.params.text === "please force") { ctx.params.force = true }`), 0o600); err != nil {
		t.Fatal(err)
	}
	guardrailTransports(t, cfg, pol, []guardrailCase{
		{name: "allowed", args: map[string]any{"text": "hello"}, text: "fakeup: hello",
			entry: map[string]string{"name": "opa", "phase": "pre", "verdict": "allow"}},
		{name: "denied", args: map[string]any{"text": "x", "force": true},
			text:   "[mcpgate: call rejected by guardrail:opa: the authorization service denied the call",
			reason: "guardrail_deny", policy: "guardrail:opa", entry: map[string]string{"name": "opa", "phase": "pre", "verdict": "deny"}},
		{name: "denied after a rewrite", args: map[string]any{"text": "please force"},
			text:   "[mcpgate: call rejected by guardrail:opa: the authorization service denied the call",
			reason: "guardrail_deny", policy: "guardrail:opa", entry: map[string]string{"name": "opa", "phase": "pre_rewritten", "verdict": "deny"}},
	})
}

// TestGuardrailsAuthZEN: the kind "authzen" against OPA's AuthZEN-compatible route
// (its simple API, POST /, answering testdata/e2e/opa/authzen.rego's
// {"decision": …}) on the real OPA server, over stdio and HTTP: an allowed call, a
// denied one, and a pre policy's rewrite caught when it is authorized again.
func TestGuardrailsAuthZEN(t *testing.T) {
	base := testsvc.OPAURL(t)
	cfg := writeConfig(t, map[string]any{"pdp": map[string]any{"kind": "authzen", "url": strings.TrimSuffix(base, "/") + "/", "timeout": "5s"}})
	pol := t.TempDir()
	if err := os.WriteFile(filepath.Join(pol, "force.js"), []byte(
		`if (ctx.phase === "pre" && ctx.params.text === "please force") { ctx.params.force = true }`), 0o600); err != nil {
		t.Fatal(err)
	}
	guardrailTransports(t, cfg, pol, []guardrailCase{
		{name: "allowed", args: map[string]any{"text": "hello"}, text: "fakeup: hello",
			entry: map[string]string{"name": "pdp", "kind": "authzen", "phase": "pre", "verdict": "allow"}},
		{name: "denied", args: map[string]any{"text": "x", "force": true},
			text:   "[mcpgate: call rejected by guardrail:pdp: the authorization service denied the call",
			reason: "guardrail_deny", policy: "guardrail:pdp", entry: map[string]string{"name": "pdp", "kind": "authzen", "phase": "pre", "verdict": "deny"}},
		{name: "denied after a rewrite", args: map[string]any{"text": "please force"},
			text:   "[mcpgate: call rejected by guardrail:pdp: the authorization service denied the call",
			reason: "guardrail_deny", policy: "guardrail:pdp", entry: map[string]string{"name": "pdp", "phase": "pre_rewritten", "verdict": "deny"}},
	})
}

// TestGuardrailsToolsList: a content guardrail that takes tools/list withholds the
// tool whose description it flags (BLOCKED with a finding on that text) from the
// listing the client gets, over stdio and HTTP, a call to that tool is refused citing
// the listing's record, and a second identical listing is judged from the verdict
// cache.
func TestGuardrailsToolsList(t *testing.T) {
	var calls atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		calls.Add(1)
		var in struct {
			Texts []string `json:"texts"`
		}
		_ = json.NewDecoder(r.Body).Decode(&in)
		for i, s := range in.Texts {
			if s == "crash" {
				_ = json.NewEncoder(w).Encode(map[string]any{"action": "BLOCKED", "blocked_reason": "flagged",
					"findings": []any{map[string]any{"rule_id": "tool_poisoning", "severity": "HIGH", "index": i}}})
				return
			}
		}
		_ = json.NewEncoder(w).Encode(map[string]any{"action": "NONE"})
	}))
	defer srv.Close()
	cfg := writeConfig(t, map[string]any{
		"listing": map[string]any{"kind": "generic", "url": srv.URL, "methods": []string{"tools/list"}, "timeout": "3s"},
	})
	_, fake := httpBinaries(t)
	check := func(t *testing.T, listed func() []string, call func(tool string) string, log *stderrLog) {
		calls.Store(0)
		listings := func(n int) []map[string]any {
			t.Helper()
			var out []map[string]any
			ok := testwait.Within(testwait.Timeout, func() bool {
				out = out[:0]
				for _, m := range log.allRecords() {
					if m["method"] == "tools/list" {
						out = append(out, m)
					}
				}
				return len(out) >= n
			})
			if !ok {
				t.Fatalf("want %d tools/list records, have %d; stderr:\n%s", n, len(out), log.String())
			}
			return out
		}
		names := listed()
		if slices.Contains(names, "crash") || !slices.Contains(names, "echo") {
			t.Fatalf("listed %v", names)
		}
		// fakeup lists two pages: one record, and one callout, each
		var withheld map[string]any
		for _, rec := range listings(2) {
			if rec["reason"] == "guardrail_block" && rec["policy"] == "guardrail:listing" {
				withheld = rec
			}
		}
		if withheld == nil {
			t.Fatalf("no listing record names the guardrail: %v", listings(2))
		}
		if text, want := call("crash"), "call rejected by policy guardrail:listing: the tool is not listed for this caller — see audit log entry "+withheld["event_id"].(string); !strings.Contains(text, want) {
			t.Fatalf("call to the withheld tool: %q", text)
		}
		if again := listed(); !slices.Equal(again, names) {
			t.Fatalf("second listing %v, first %v", again, names)
		}
		recs := listings(4)
		if n := calls.Load(); n != 2 || !hasCached(recs[2]) || !hasCached(recs[3]) {
			t.Fatalf("%d calls to the service for two identical listings of two pages; second listing's records %v", n, recs[2:])
		}
	}
	t.Run("stdio", func(t *testing.T) {
		c, log := mcpClient(t, nil, binary, gatewayArgs([]string{"--config", cfg, "--policies", emptyPolicies(t)}, []string{fake})...)
		listed := func() []string {
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			list, err := c.ListTools(ctx, mcp.ListToolsRequest{})
			if err != nil {
				t.Fatal(err)
			}
			var names []string
			for _, tool := range list.Tools {
				names = append(names, tool.Name)
			}
			return names
		}
		call := func(tool string) string {
			res := callTool(t, c, tool, map[string]any{})
			if len(res.Content) > 0 {
				if tc, ok := res.Content[0].(mcp.TextContent); ok {
					return tc.Text
				}
			}
			return ""
		}
		check(t, listed, call, log)
	})
	t.Run("http", func(t *testing.T) {
		g := startHTTPGateway(t, "--config", cfg, "--policies", emptyPolicies(t), "--", fake)
		c := newHTTPClient(g.url)
		c.initialize(t)
		id := 100
		listed := func() []string {
			var names []string
			cursor := ""
			for page := 0; page < 10; page++ {
				id++
				params := map[string]any{}
				if cursor != "" {
					params["cursor"] = cursor
				}
				b, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": id, "method": "tools/list", "params": params})
				res, _ := c.post(t, string(b)).last()["result"].(map[string]any)
				tools, _ := res["tools"].([]any)
				for _, tool := range tools {
					m, _ := tool.(map[string]any)
					names = append(names, m["name"].(string))
				}
				if cursor, _ = res["nextCursor"].(string); cursor == "" {
					break
				}
			}
			return names
		}
		call := func(tool string) string {
			id++
			return httpResultText(c.call(t, id, tool, map[string]any{}))
		}
		check(t, listed, call, g.stderr)
	})
}

func hasCached(rec map[string]any) bool {
	list, _ := rec["guardrails"].([]any)
	for _, e := range list {
		if m, _ := e.(map[string]any); m["cached"] == true {
			return true
		}
	}
	return false
}

// TestGuardrailsShadow: a --shadow candidate with its own guardrails (guardrails.json
// in its directory) has the test-bed content service judge each call off the live
// path, over stdio and HTTP: the client gets what the live set gives, and the
// record's shadow part says what the candidate's guardrail would have done.
func TestGuardrailsShadow(t *testing.T) {
	svc := &guardtest.Service{}
	srv := httptest.NewServer(svc)
	defer srv.Close()
	_, fake := httpBinaries(t)
	cfg := writeConfig(t, map[string]any{})
	shadow := t.TempDir()
	b, _ := json.Marshal(map[string]any{"candidate": map[string]any{"kind": "generic", "url": srv.URL, "timeout": "5s",
		"breaker": map[string]any{"failures": 1000}}})
	if err := os.WriteFile(filepath.Join(shadow, "guardrails.json"), b, 0o600); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		text, action, reason string
		differs              bool
		entry                map[string]string
	}{
		{text: "hello", action: "pass", entry: map[string]string{"name": "candidate", "phase": "post", "verdict": "none"}},
		{text: "GUARD:block", action: "block", reason: "guardrail_block", differs: true,
			entry: map[string]string{"name": "candidate", "phase": "pre", "verdict": "block"}},
		{text: "GUARD:post-redact secret-abc", action: "redact", differs: true,
			entry: map[string]string{"name": "candidate", "phase": "post", "verdict": "intervene"}},
	}
	check := func(t *testing.T, i int, text string, rec map[string]any) {
		t.Helper()
		tc := cases[i]
		if text != "fakeup: "+tc.text {
			t.Fatalf("%s: the live reply changed: %q", tc.text, text)
		}
		if a, _ := rec["action_taken"].(string); a != "pass" || rec["guardrails"] != nil {
			t.Errorf("%s: the live record: %v", tc.text, rec)
		}
		sh, _ := rec["shadow"].(map[string]any)
		if sh == nil || sh["action_taken"] != tc.action || sh["differs"] != tc.differs || (sh["reason"] != nil) != (tc.reason != "") ||
			(tc.reason != "" && sh["reason"] != tc.reason) || !hasEntry(sh, tc.entry) {
			t.Errorf("%s: shadow %v, want action %s reason %q differs %v entry %v", tc.text, sh, tc.action, tc.reason, tc.differs, tc.entry)
		}
		b, _ := json.Marshal(rec)
		if strings.Contains(string(b), "secret-") || strings.Contains(string(b), "GUARD:") {
			t.Errorf("the record holds a value: %s", b)
		}
	}
	args := []string{"--config", cfg, "--policies", t.TempDir(), "--shadow", shadow}
	t.Run("stdio", func(t *testing.T) {
		c, log := mcpClient(t, nil, binary, gatewayArgs(args, []string{fake})...)
		for i, tc := range cases {
			res := callTool(t, c, "echo", map[string]any{"text": tc.text})
			text := ""
			if len(res.Content) > 0 {
				if c, ok := res.Content[0].(mcp.TextContent); ok {
					text = c.Text
				}
			}
			check(t, i, text, log.waitRecords(t, i+1)[i])
		}
	})
	t.Run("http", func(t *testing.T) {
		g := startHTTPGateway(t, append(args, "--", fake)...)
		c := newHTTPClient(g.url)
		c.initialize(t)
		for i, tc := range cases {
			m := c.call(t, i+1, "echo", map[string]any{"text": tc.text})
			check(t, i, httpResultText(m), g.stderr.waitRecords(t, i+1)[i])
		}
	})
	if n := len(svc.Requests()); n != 10 {
		t.Errorf("the candidate's guardrail took %d requests, want 10 (on each front, each call's arguments, and the result of the two it let through)", n)
	}
}
