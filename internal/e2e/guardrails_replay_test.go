package e2e

import (
	"encoding/json"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mcpgate/mcpgate/internal/guardrail/guardtest"
)

// TestGuardrailsCaptureReplay: calls judged by a live content guardrail and an
// authorization service (a block, an intervention, a finding a policy acts on, a
// timeout under fail mode closed, a deny) are captured with --capture; with both
// services gone, mcpgate replay reproduces every decision from the capture alone.
// The capture holds the services' verdicts, so a replay that called out (or ignored
// them) would differ.
func TestGuardrailsCaptureReplay(t *testing.T) {
	svc := &guardtest.Service{}
	srv := httptest.NewServer(svc)
	authz := &authzService{prefix: "c_", opa: true}
	asrv := httptest.NewServer(authz)
	_, fake := httpBinaries(t)
	cfg := writeConfig(t, map[string]any{
		"content": map[string]any{"kind": "generic", "url": srv.URL, "timeout": "2s", "breaker": map[string]any{"failures": 1000}},
		"opa":     map[string]any{"kind": "opa", "url": asrv.URL, "timeout": "5s"},
	})
	pol := t.TempDir()
	writePolicy(t, pol, "flag.js",
		`if (ctx.phase === "pre" && ctx.findings.some(f => f.source === "guardrail:content" && f.rule_id === "test_finding")) { throw "flagged" }`)
	dir := t.TempDir()
	capFile, auditFile := filepath.Join(dir, "calls.jsonl"), filepath.Join(dir, "audit.jsonl")
	calls := []struct {
		args   map[string]any
		action string
	}{
		{map[string]any{"text": "hello"}, "pass"},
		{map[string]any{"text": "GUARD:block"}, "block"},
		{map[string]any{"text": "GUARD:post-redact secret-abc"}, "redact"},
		{map[string]any{"text": "GUARD:finding"}, "block"},
		{map[string]any{"text": "GUARD:hang"}, "block"},
		{map[string]any{"text": "x", "c_deny": true}, "block"},
	}
	c, _ := mcpClient(t, nil, binary, gatewayArgs(
		[]string{"--config", cfg, "--policies", pol, "--capture", capFile, "--audit-file", auditFile}, []string{fake})...)
	for _, call := range calls {
		callTool(t, c, "echo", call.args)
	}
	c.Close() // the gateway exits and flushes the capture file
	var recs []map[string]any
	waitUntil(t, "the records and the capture", 10*time.Second, func() bool {
		recs = readRecords(t, auditFile)
		b, _ := os.ReadFile(capFile)
		return len(recs) >= len(calls) && strings.Count(string(b), "\n") >= len(calls)
	})
	for i, r := range recs {
		if r["action_taken"] != calls[i].action {
			t.Fatalf("live call %d (%v): %v, want %s", i, calls[i].args, r["action_taken"], calls[i].action)
		}
	}
	srv.Close()
	asrv.Close()
	asked := len(svc.Requests()) + len(authz.requests())

	out, err := exec.Command(binary, "replay", "--capture", capFile, "--policies", pol, "--format", "json").Output()
	if err != nil {
		t.Fatalf("replay: %v\n%s", err, out)
	}
	var rows []struct {
		EventID        string `json:"event_id"`
		RecordedAction string `json:"recorded_action"`
		ReplayedAction string `json:"replayed_action"`
		Differs        bool   `json:"differs"`
	}
	if err := json.Unmarshal(out, &rows); err != nil {
		t.Fatalf("replay --format json: %v\n%s", err, out)
	}
	if len(rows) != len(calls) {
		t.Fatalf("replayed %d calls, captured %d", len(rows), len(calls))
	}
	for i, r := range rows {
		if r.EventID != recs[i]["event_id"] || r.RecordedAction != calls[i].action || r.ReplayedAction != calls[i].action || r.Differs {
			t.Errorf("call %d (%v): %+v, want %s both times", i, calls[i].args, r, calls[i].action)
		}
	}
	if n := len(svc.Requests()) + len(authz.requests()); n != asked {
		t.Errorf("replay called out %d times", n-asked)
	}
}
