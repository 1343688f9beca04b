package admin

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/mcpgate/mcpgate/internal/audit"
	"github.com/mcpgate/mcpgate/vocab"
)

const token = "s3cret-token-0123456789"

func record(i int, action vocab.Action, tool string) *audit.Record {
	ts := time.Date(2026, 11, 29, 10, i, 0, 0, time.UTC)
	return &audit.Record{
		TS: ts.Format(audit.TSLayout), Kind: audit.KindGateway, EventID: "ev-" + string(rune('a'+i)),
		ActionTaken: action, Blocked: action == vocab.Block, Tool: tool, Listed: true, Outcome: vocab.OutcomeOK,
		RuleIDs: []string{}, GuardrailsTriggered: []string{}, InputRuleIDs: []string{"input_secret_aws"},
		StageMS: map[vocab.Stage]float64{"pre_policies": 0.4, "post_policies": 2, "upstream": 12.5},
	}
}

func fixture() (*audit.Ring, *Metrics) {
	ring := audit.NewRing(10)
	m := NewMetrics(
		func() GateStatus {
			return GateStatus{Generation: 7, LastError: "syntax error", LoadedAt: time.Unix(1700000000, 0)}
		},
		func() audit.Stats { return audit.Stats{Written: 5, Dropped: 2, Errors: 3, Queued: 1} })
	for i, a := range []vocab.Action{"pass", "warn", "redact", "mask", "block", "redact"} {
		r := record(i, a, []string{"read_file", "customer_profile_get"}[i%2])
		if a == "block" {
			r.RuleIDs = []string{"output_osc52_clipboard_write"}
		}
		if i >= 4 { // a --shadow run: ev-e differs, ev-f agrees
			r.Shadow = &audit.Shadow{ActionTaken: "pass", PolicySetHash: "h", Differs: i == 4}
		}
		if i%3 == 0 { // ev-a and ev-d: ci-bot's calls
			r.Caller = &audit.Caller{UserID: "ci", CallerID: "ci-bot"}
		}
		ring.Add(r)
		m.Observe(r)
	}
	return ring, m
}

func handler(tok string) http.Handler {
	ring, m := fixture()
	o := Options{Store: ring, Metrics: m, Now: func() time.Time { return time.Date(2026, 11, 29, 10, 6, 0, 0, time.UTC) },
		Status: func() any { return map[string]any{"policies": map[string]any{"generation": 7}} }}
	return Handler(o, tokenGuard([]string{"gw.internal"}, tok))
}

func do(h http.Handler, path, host string, hdr map[string]string) *httptest.ResponseRecorder {
	req := httptest.NewRequest("GET", path, nil)
	req.Host = host
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	w := httptest.NewRecorder()
	h.ServeHTTP(w, req)
	return w
}

// TestTelemetryGuard proves the DNS-rebinding and token checks: only loopback names
// and configured hosts pass, a foreign Origin is refused, and with a token the API and
// metrics need the exact bearer while the data-free console page does not.
func TestTelemetryGuard(t *testing.T) {
	for _, tc := range []struct {
		name, tok, path, host string
		hdr                   map[string]string
		code                  int
	}{
		{"localhost", "", "/api/audit", "localhost:9090", nil, 200},
		{"127.0.0.1", "", "/api/audit", "127.0.0.1:9090", nil, 200},
		{"ipv6 loopback", "", "/api/audit", "[::1]:9090", nil, 200},
		{"configured host", "", "/api/audit", "gw.internal:9090", nil, 200},
		{"rebinding host", "", "/api/audit", "evil.example:9090", nil, 403},
		{"rebinding console", "", "/", "evil.example", nil, 403},
		{"foreign origin", "", "/api/audit", "localhost:9090", map[string]string{"Origin": "http://evil.example"}, 403},
		{"null origin", "", "/api/audit", "localhost:9090", map[string]string{"Origin": "null"}, 403},
		{"same origin", "", "/api/audit", "localhost:9090", map[string]string{"Origin": "http://localhost:9090"}, 200},
		{"no token", token, "/api/audit", "localhost", nil, 401},
		{"wrong token", token, "/api/audit", "localhost", map[string]string{"Authorization": "Bearer " + token + "x"}, 401},
		{"prefix token", token, "/metrics", "localhost", map[string]string{"Authorization": "Bearer " + token[:10]}, 401},
		{"basic scheme", token, "/metrics", "localhost", map[string]string{"Authorization": "Basic " + token}, 401},
		{"right token", token, "/api/audit", "localhost", map[string]string{"Authorization": "Bearer " + token}, 200},
		{"metrics token", token, "/metrics", "localhost", map[string]string{"Authorization": "bearer " + token}, 200},
		{"console without token", token, "/", "localhost", nil, 200},
		{"console asset", token, "/static/console.js", "localhost", nil, 200},
		{"healthz", token, "/healthz", "localhost", nil, 200},
		{"unknown path", "", "/debug/pprof/", "localhost", nil, 404},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := do(handler(tc.tok), tc.path, tc.host, tc.hdr)
			if w.Code != tc.code {
				t.Fatalf("%s %s: %d, want %d: %s", tc.host, tc.path, w.Code, tc.code, w.Body)
			}
		})
	}
}

// TestTelemetryNewRefuses proves the listener refuses to start off loopback without a
// token, with a short token, or without a store, and starts on loopback without one.
func TestTelemetryNewRefuses(t *testing.T) {
	ring := audit.NewRing(1)
	for _, tc := range []struct {
		o    Options
		want error
	}{
		{Options{Addr: "0.0.0.0:0", Store: ring}, ErrNoToken},
		{Options{Addr: ":0", Store: ring}, ErrNoToken},
		{Options{Addr: "0.0.0.0:0", Store: ring, Token: "short"}, ErrShortToken},
		{Options{Addr: "127.0.0.1:0"}, ErrNoStore},
		{Options{Addr: "localhost", Store: ring}, ErrBadAddr},
	} {
		if _, err := New(tc.o); !errors.Is(err, tc.want) {
			t.Errorf("%+v: err = %v, want %v", tc.o, err, tc.want)
		}
	}
	s, err := New(Options{Addr: "127.0.0.1:0", Store: ring})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close(context.Background())
	res, err := http.Get("http://" + s.Addr() + "/healthz")
	if err != nil || res.StatusCode != 200 {
		t.Fatalf("healthz: %v %v", res, err)
	}
	res.Body.Close()
}

// TestTelemetryAPI proves /api/audit applies the same filters as `mcpgate audit`
// (status=redact returns only redactions) and returns the count tiles.
func TestTelemetryAPI(t *testing.T) {
	h := handler("")
	for _, tc := range []struct {
		query  string
		events []string
		counts audit.Counts
	}{
		{"", []string{"ev-f", "ev-e", "ev-d", "ev-c", "ev-b", "ev-a"}, audit.Counts{Total: 6, Pass: 1, Warn: 1, Redact: 2, Mask: 1, Block: 1}},
		{"?status=redact", []string{"ev-f", "ev-c"}, audit.Counts{Total: 6, Pass: 1, Warn: 1, Redact: 2, Mask: 1, Block: 1}},
		{"?status=block&tool=read_file", []string{"ev-e"}, audit.Counts{Total: 3, Pass: 1, Redact: 1, Block: 1}},
		{"?since=3m&limit=2", []string{"ev-f", "ev-e"}, audit.Counts{Total: 3, Mask: 1, Block: 1, Redact: 1}},
		{"?shadow=differs", []string{"ev-e"}, audit.Counts{Total: 6, Pass: 1, Warn: 1, Redact: 2, Mask: 1, Block: 1}},
		{"?caller=ci-bot", []string{"ev-d", "ev-a"}, audit.Counts{Total: 2, Pass: 1, Mask: 1}},
		{"?caller=ci", []string{"ev-d", "ev-a"}, audit.Counts{Total: 2, Pass: 1, Mask: 1}},
		{"?event_id=ev-c", []string{"ev-c"}, audit.Counts{Total: 1, Redact: 1}},
		{"?event_id=ev-z", nil, audit.Counts{}},
	} {
		w := do(h, "/api/audit"+tc.query, "localhost", nil)
		var got AuditResponse
		if err := json.Unmarshal(w.Body.Bytes(), &got); err != nil || w.Code != 200 {
			t.Fatalf("%s: %d %s", tc.query, w.Code, w.Body)
		}
		var ev []string
		for _, r := range got.Records {
			ev = append(ev, r.EventID)
		}
		if strings.Join(ev, ",") != strings.Join(tc.events, ",") || got.Counts != tc.counts {
			t.Errorf("%s: events %v counts %+v; want %v %+v", tc.query, ev, got.Counts, tc.events, tc.counts)
		}
	}
	for _, q := range []string{"?status=allow", "?since=soon", "?limit=0", "?shadow=yes", "?caller=" + strings.Repeat("x", 300), "?event_id=" + strings.Repeat("x", 300)} {
		if w := do(h, "/api/audit"+q, "localhost", nil); w.Code != 400 || !strings.Contains(w.Body.String(), "error") {
			t.Errorf("%s: %d %s, want 400", q, w.Code, w.Body)
		}
	}
}

// TestTelemetryMetrics proves /metrics exposes calls by tool and action, findings by
// rule, the policy and upstream histograms, reload state and the audit sink counters.
func TestTelemetryMetrics(t *testing.T) {
	w := do(handler(""), "/metrics", "localhost", nil)
	body, _ := io.ReadAll(w.Body)
	for _, want := range []string{
		`mcpgate_tool_calls_total{action="redact",tool="customer_profile_get"} 1`,
		`mcpgate_tool_calls_total{action="redact",tool="read_file"} 1`,
		`mcpgate_tool_calls_total{action="block",tool="read_file"} 1`,
		`mcpgate_tool_call_outcomes_total{outcome="ok"} 6`,
		`mcpgate_findings_total{rule="output_osc52_clipboard_write",stage="output"} 1`,
		`mcpgate_findings_total{rule="input_secret_aws",stage="input"} 6`,
		`mcpgate_policy_eval_seconds_count{phase="pre"} 6`,
		`mcpgate_policy_eval_seconds_count{phase="post"} 6`,
		`mcpgate_upstream_latency_seconds_sum 0.075`,
		`mcpgate_policy_generation 7`,
		`mcpgate_policy_reload_success 0`,
		`mcpgate_policy_loaded_timestamp_seconds 1.7e+09`,
		`mcpgate_audit_records_written_total 5`,
		`mcpgate_audit_records_dropped_total 2`,
		`mcpgate_audit_sink_errors_total 3`,
		`mcpgate_audit_buffer_queued 1`,
	} {
		if !strings.Contains(string(body), want) {
			t.Errorf("metrics lack %s", want)
		}
	}
}

// TestTelemetryToolCap proves made-up tool names cannot grow the registry unbounded.
func TestTelemetryToolCap(t *testing.T) {
	m := NewMetrics(nil, nil)
	for i := range MaxToolLabels + 10 {
		m.Observe(&audit.Record{Tool: "t" + string(rune(0x4e00+i)), ActionTaken: "pass", Listed: true})
	}
	if n := len(m.tools); n != MaxToolLabels {
		t.Fatalf("%d tool labels, want %d", n, MaxToolLabels)
	}
}

// TestTelemetryUnlistedTools proves a name the upstream never listed is counted under
// the one other label, however many such names a client makes up.
func TestTelemetryUnlistedTools(t *testing.T) {
	m := NewMetrics(nil, nil)
	m.Observe(&audit.Record{Tool: "echo", ActionTaken: "pass", Listed: true})
	for i := range 50 {
		m.Observe(&audit.Record{Tool: "made_up_" + strings.Repeat("x", i), ActionTaken: "block"})
	}
	if len(m.tools) != 1 || !m.tools["echo"] {
		t.Fatalf("tool labels %v, want only echo", m.tools)
	}
	if n := testutil.ToFloat64(m.calls.WithLabelValues(OtherTool, "block")); n != 50 {
		t.Fatalf("%v calls under %s, want 50", n, OtherTool)
	}
	if n := testutil.CollectAndCount(m.calls); n != 2 {
		t.Fatalf("%d tool call series, want 2 (echo and %s)", n, OtherTool)
	}
}

// TestTelemetryConsoleAssets proves the console is served from the embedded files
// with a same-origin-only CSP, names every chip and tile, and inserts record fields
// as text, never HTML.
func TestTelemetryConsoleAssets(t *testing.T) {
	h := handler("")
	page := do(h, "/", "localhost", nil)
	if page.Code != 200 || !strings.Contains(page.Header().Get("Content-Security-Policy"), "default-src 'self'") {
		t.Fatalf("console: %d %v", page.Code, page.Header())
	}
	js := do(h, "/static/console.js", "localhost", nil).Body.String()
	html := page.Body.String()
	for _, want := range []string{"PASS", "WARN", "REDACTED", "MASKED", "BLOCKED"} {
		if !strings.Contains(js, `"`+want+`"`) {
			t.Errorf("console.js lacks chip %s", want)
		}
	}
	for _, want := range []string{"Total", "Blocked", "Redacted", "Warnings", "f-status", "f-tool", "f-auto"} {
		if !strings.Contains(html, want) {
			t.Errorf("index.html lacks %s", want)
		}
	}
	if strings.Contains(js, "innerHTML") || strings.Contains(html, "http://") || strings.Contains(html, "https://") {
		t.Error("console uses innerHTML or loads from another origin")
	}
}

// TestTelemetryStatus: /api/status shows the reload state, behind the token.
func TestTelemetryStatus(t *testing.T) {
	const tok = "0123456789abcdef0123"
	h := handler(tok)
	if w := do(h, "/api/status", "localhost", nil); w.Code != 401 {
		t.Fatalf("without the token: %d", w.Code)
	}
	w := do(h, "/api/status", "localhost", map[string]string{"Authorization": "Bearer " + tok})
	if w.Code != 200 || !strings.Contains(w.Body.String(), `"generation":7`) {
		t.Fatalf("%d %s", w.Code, w.Body)
	}
}

// tokenGuard is newGuard with the token itself ("" for none).
func tokenGuard(hosts []string, token string) *Guard {
	if token == "" {
		return newGuard(hosts, nil)
	}
	d := sha256.Sum256([]byte(token))
	return newGuard(hosts, d[:])
}

// TestGuardrailMetrics: each callout of a record counts by guardrail, kind and result
// (the error when no verdict came, cached when the verdict cache answered), with its
// time in the latency histogram (a cached verdict made no callout and has none).
func TestGuardrailMetrics(t *testing.T) {
	m := NewMetrics(nil, nil)
	m.Observe(&audit.Record{Method: "tools/call", ActionTaken: "block", Guardrails: []audit.GuardrailCall{
		{Name: "opa", Kind: "opa", Phase: "pre", Verdict: "allow", MS: 2},
		{Name: "opa", Kind: "opa", Phase: "pre_rewritten", Verdict: "deny", MS: 3},
		{Name: "injection", Kind: "generic", Phase: "pre", Error: "guardrail_timeout", Detail: "timeout", MS: 1500},
		{Name: "listing", Kind: "generic", Phase: "post", Verdict: "none", Cached: true},
	}})
	srv := httptest.NewRecorder()
	promhttp.HandlerFor(m.Registry, promhttp.HandlerOpts{}).ServeHTTP(srv, httptest.NewRequest("GET", "/metrics", nil))
	body := srv.Body.String()
	for _, want := range []string{
		`mcpgate_guardrail_calls_total{guardrail="opa",kind="opa",result="allow"} 1`,
		`mcpgate_guardrail_calls_total{guardrail="opa",kind="opa",result="deny"} 1`,
		`mcpgate_guardrail_calls_total{guardrail="injection",kind="generic",result="guardrail_timeout"} 1`,
		`mcpgate_guardrail_latency_seconds_count{guardrail="opa"} 2`,
		`mcpgate_guardrail_latency_seconds_sum{guardrail="injection"} 1.5`,
		`mcpgate_guardrail_calls_total{guardrail="listing",kind="generic",result="cached"} 1`,
	} {
		if !strings.Contains(body, want) {
			t.Errorf("metrics lack %s", want)
		}
	}
	if strings.Contains(body, `mcpgate_guardrail_latency_seconds_count{guardrail="listing"}`) {
		t.Error("a cached verdict was timed as a callout")
	}
}

// TestTelemetryVetRecords: a start-up vet record (method mcpgate/vet) is counted under
// its own method, not as a tools/call nor as other.
func TestTelemetryVetRecords(t *testing.T) {
	m := NewMetrics(nil, nil)
	m.Observe(&audit.Record{Method: vocab.MethodVet, Server: "plain", ActionTaken: "block"})
	if n := testutil.ToFloat64(m.channels.WithLabelValues(vocab.MethodVet, "block")); n != 1 {
		t.Fatalf("%v vet records counted", n)
	}
	if n := testutil.CollectAndCount(m.calls); n != 0 {
		t.Fatalf("%d tool call series", n)
	}
}
