package e2e

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/mcpgate/mcpgate/internal/testwait"
)

// lifecycleCalls are the sample server's calls the life-cycle tests make.
var lifecycleCalls = []consoleCall{
	{"get_forecast", map[string]any{"city": "Porto"}, ""},
	{"lookup_customer", map[string]any{"id": "C1002"}, ""},
	{"fetch_page", map[string]any{"url": "https://example.com/"}, ""},
	{"read_build_log", map[string]any{}, ""},
	{"get_forecast", map[string]any{"city": "Lisbon"}, ""},
}

// waitUntil waits until cond holds or d is up (testwait.Within).
func waitUntil(t *testing.T, what string, d time.Duration, cond func() bool) {
	t.Helper()
	if !testwait.Within(d, cond) {
		t.Fatalf("timed out waiting for %s", what)
	}
}

func writePolicy(t *testing.T, dir, name, src string) {
	t.Helper()
	if err := os.WriteFile(filepath.Join(dir, name), []byte(src), 0o600); err != nil {
		t.Fatal(err)
	}
}

// TestShadowE2E runs the gateway with an empty live set and a deny-everything
// --shadow set: every call passes as if there were no shadow, and every record says
// shadow.differs: true; mcpgate audit --shadow-differs lists them all, and the
// console (headless Chromium) tags each row and keeps them under "shadow differs only".
func TestShadowE2E(t *testing.T) {
	chrome := chromiumPath(t)
	shadow := t.TempDir()
	writePolicy(t, shadow, "deny-all.js", `throw "denied by the candidate set";`+"\n")
	auditFile := filepath.Join(t.TempDir(), "audit.jsonl")
	c, log := mcpClient(t, nil, binary, gatewayArgs(
		[]string{"--policies", emptyPolicies(t), "--shadow", shadow, "--audit-file", auditFile, "--admin", "127.0.0.1:0"},
		[]string{binary, "demo-server"})...)
	addr := adminAddr(t, log)
	for _, call := range lifecycleCalls {
		res := callTool(t, c, call.tool, call.args)
		b, _ := json.Marshal(res)
		if res.IsError || strings.Contains(string(b), "mcpgate:") {
			t.Errorf("%s: the shadow reached the client: %s", call.tool, b)
		}
	}
	var recs []map[string]any
	waitUntil(t, "the audit records", 10*time.Second, func() bool {
		recs = readRecords(t, auditFile)
		return len(recs) >= len(lifecycleCalls)
	})
	for _, r := range recs {
		sh, _ := r["shadow"].(map[string]any)
		if r["action_taken"] != "pass" || sh == nil || sh["differs"] != true || sh["action_taken"] != "block" ||
			sh["reason"] != "policy_throw" || sh["policy"] != "deny-all.js" || sh["policy_set_hash"] == "" {
			t.Errorf("record %v: action %v shadow %v", r["tool"], r["action_taken"], r["shadow"])
		}
		if st, _ := r["stage_ms"].(map[string]any); st["shadow_pre"] == nil {
			t.Errorf("stage_ms lacks shadow_pre: %v", r["stage_ms"])
		}
	}
	out, err := exec.Command(binary, "audit", "--file", auditFile, "--shadow-differs", "--format", "json").CombinedOutput()
	if err != nil {
		t.Fatalf("mcpgate audit --shadow-differs: %v\n%s", err, out)
	}
	var listed struct {
		Records []map[string]any `json:"records"`
	}
	if json.Unmarshal(out, &listed) != nil || len(listed.Records) != len(lifecycleCalls) {
		t.Errorf("audit --shadow-differs lists %d records, want %d:\n%s", len(listed.Records), len(lifecycleCalls), out)
	}
	if strings.Contains(log.String(), "denied by the candidate set") {
		t.Errorf("the shadow's message reached the log:\n%s", log.String())
	}

	ctx, cancel := headless(t, chrome)
	defer cancel()
	const rows = `[...document.querySelectorAll('#records tbody tr')].map(tr =>
		tr.querySelector('.chip').textContent + ' ' + (tr.querySelector('[data-shadow]') || {textContent: '-'}).textContent)`
	if err := chromedp.Do(ctx,
		chromedp.Navigate("http://"+addr+"/"),
		chromedp.WaitVisible(chromedp.CSS(`body[data-loaded] #records tbody tr`)),
	); err != nil {
		t.Fatalf("console: %v", err)
	}
	if _, err := chromedp.Run(ctx, chromedp.Evaluate[bool](`document.body.removeAttribute('data-loaded');
		document.getElementById('f-shadow').checked = true;
		document.getElementById('f-shadow').dispatchEvent(new Event('change')); true`)); err != nil {
		t.Fatal(err)
	}
	if err := chromedp.Do(ctx, chromedp.WaitVisible(chromedp.CSS(`body[data-loaded]`))); err != nil {
		t.Fatal(err)
	}
	got, err := chromedp.Run(ctx, chromedp.Evaluate[[]string](rows))
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != len(lifecycleCalls) {
		t.Errorf("shadow differs only: %d rows, want %d: %v", len(got), len(lifecycleCalls), got)
	}
	for _, r := range got {
		if r != "PASS shadow BLOCKED ≠" {
			t.Errorf("row %q, want PASS with a differing BLOCKED shadow tag", r)
		}
	}
}

// headless starts headless Chromium for a console test.
func headless(t *testing.T, chrome string) (context.Context, func()) {
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(chrome), chromedp.Flag("headless", true), chromedp.NoSandbox, chromedp.DisableGPU,
		chromedp.Flag("disable-background-networking", true), chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true), chromedp.NoFirstRun, chromedp.WindowSize(1440, 900))
	actx, cancelA := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancel := chromedp.NewContext(actx)
	ctx, cancelT := context.WithTimeout(ctx, 60*time.Second)
	return ctx, func() { cancelT(); cancel(); cancelA() }
}

func readRecords(t *testing.T, file string) []map[string]any {
	b, _ := os.ReadFile(file)
	var out []map[string]any
	for _, line := range strings.Split(string(b), "\n") {
		var m map[string]any
		if json.Unmarshal([]byte(line), &m) == nil && m["event_id"] != nil {
			out = append(out, m)
		}
	}
	return out
}

// TestCaptureReplayE2E captures real calls (--capture), replays them with a set
// that redacts e-mail addresses, and checks that exactly the call whose decision
// changes (lookup_customer: pass → redact) is reported, with exit 3; replaying with
// the live (empty) set reports nothing, with exit 0.
func TestCaptureReplayE2E(t *testing.T) {
	dir := t.TempDir()
	capFile := filepath.Join(dir, "calls.jsonl")
	auditFile := filepath.Join(dir, "audit.jsonl")
	live := emptyPolicies(t)
	c, _ := mcpClient(t, nil, binary, gatewayArgs(
		[]string{"--filter-output", "--policies", live, "--capture", capFile, "--audit-file", auditFile},
		[]string{binary, "demo-server"})...)
	for _, call := range lifecycleCalls {
		callTool(t, c, call.tool, call.args)
	}
	c.Close() // the gateway exits and flushes the capture file
	var recs []map[string]any
	waitUntil(t, "the records and the capture", 10*time.Second, func() bool {
		recs = readRecords(t, auditFile)
		b, _ := os.ReadFile(capFile)
		return len(recs) >= len(lifecycleCalls) && strings.Count(string(b), "\n") >= len(lifecycleCalls)
	})
	st, err := os.Stat(capFile)
	if err != nil || st.Mode().Perm() != 0o600 {
		t.Fatalf("capture file mode %v (%v), want 0600", st.Mode().Perm(), err)
	}
	capText, _ := os.ReadFile(capFile)
	auditText, _ := os.ReadFile(auditFile)
	if !strings.Contains(string(capText), "ada.lovelace@example.com") || !strings.Contains(string(capText), "Porto") {
		t.Errorf("the capture lacks the arguments and results it is for:\n%s", capText)
	}
	if strings.Contains(string(auditText), "ada.lovelace@example.com") || strings.Contains(string(auditText), "Porto") {
		t.Errorf("the audit trail holds values:\n%s", auditText)
	}

	redacting := policiesWith(t, "policies/redact-email.js")
	out, err := exec.Command(binary, "replay", "--capture", capFile, "--policies", redacting, "--format", "json").Output()
	if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 3 {
		t.Fatalf("replay with a redacting set: %v, want exit 3\n%s", err, out)
	}
	var rows []struct {
		EventID        string `json:"event_id"`
		Tool           string `json:"tool"`
		RecordedAction string `json:"recorded_action"`
		ReplayedAction string `json:"replayed_action"`
		Differs        bool   `json:"differs"`
	}
	if err := json.Unmarshal(out, &rows); err != nil {
		t.Fatalf("replay --format json: %v\n%s", err, out)
	}
	if len(rows) != len(lifecycleCalls) {
		t.Fatalf("replayed %d calls, captured %d", len(rows), len(lifecycleCalls))
	}
	recorded := map[string]string{}
	for _, r := range recs {
		recorded[r["event_id"].(string)] = r["action_taken"].(string)
	}
	var differing []string
	for _, r := range rows {
		if recorded[r.EventID] != r.RecordedAction {
			t.Errorf("%s: capture says %s, the audit record %s", r.EventID, r.RecordedAction, recorded[r.EventID])
		}
		if r.Differs {
			differing = append(differing, r.Tool+":"+r.RecordedAction+"->"+r.ReplayedAction)
		}
	}
	slices.Sort(differing)
	if strings.Join(differing, ",") != "lookup_customer:pass->redact" {
		t.Errorf("differing calls %v, want exactly lookup_customer pass->redact\n%s", differing, out)
	}

	out, err = exec.Command(binary, "replay", "--capture", capFile, "--policies", live).Output()
	if err != nil || !strings.Contains(string(out), "0 of 5 calls differ") {
		t.Errorf("replay with the live set: %v\n%s", err, out)
	}
}

// brokenPolicy fails with a TypeError in post for get_forecast; the argument value
// it touches must never reach a log line.
const brokenPolicy = `// broken.js
if (ctx.phase === "post" && ctx.tool === "get_forecast") {
  var missing;
  missing.city = ctx.params.city;
}
`

// withholdPolicy throws in post for lookup_customer: the server ran the call.
const withholdPolicy = `// withhold.js
if (ctx.phase === "post" && ctx.tool === "lookup_customer") {
  throw "customer records are withheld";
}
`

// TestPolicyHealthE2E: a policy's runtime error rejects the call and writes one
// warn line naming file, line, column and error class and no value; a post-phase
// throw reaches the client as "result withheld"; /api/status counts errors per file;
// the console (headless Chromium) shows the loaded set, the last reload and the
// errors; a broken reload shows as failed, and the next good one logs recovery.
func TestPolicyHealthE2E(t *testing.T) {
	chrome := chromiumPath(t)
	pol := emptyPolicies(t)
	writePolicy(t, pol, "broken.js", brokenPolicy)
	writePolicy(t, pol, "withhold.js", withholdPolicy)
	c, log := mcpClient(t, nil, binary, gatewayArgs(
		[]string{"--filter-output", "--admin", "127.0.0.1:0", "--policies", pol},
		[]string{binary, "demo-server"})...)
	addr := adminAddr(t, log)
	const city = "CANARY-CITY-4e1a"
	for range 2 {
		res := callTool(t, c, "get_forecast", map[string]any{"city": city})
		if !res.IsError {
			t.Errorf("a policy error did not fail the call closed: %+v", res)
		}
	}
	res := callTool(t, c, "lookup_customer", map[string]any{"id": "C1002"})
	text := ""
	if len(res.Content) > 0 {
		if tc, ok := res.Content[0].(mcp.TextContent); ok {
			text = tc.Text
		}
	}
	if !res.IsError || !strings.HasPrefix(text, "[mcpgate: result withheld by policy withhold.js: customer records are withheld — see audit log entry ") {
		t.Errorf("post-phase throw: %q", text)
	}
	recs := log.waitRecords(t, 3)
	if recs[2]["phase"] != "post" || recs[2]["outcome"] != "ok" || recs[2]["reason"] != "policy_throw" {
		t.Errorf("withheld record: %v", recs[2])
	}

	// The operator's log line.
	var lines []map[string]any
	for _, l := range strings.Split(log.String(), "\n") {
		var m map[string]any
		if json.Unmarshal([]byte(l), &m) == nil && m["msg"] == "policy error; call rejected" {
			lines = append(lines, m)
		}
	}
	if len(lines) != 2 {
		t.Fatalf("want 2 policy error lines, got %d:\n%s", len(lines), log.String())
	}
	for _, m := range lines {
		if m["level"] != "WARN" || m["policy"] != "broken.js" || m["line"] != 4.0 || m["column"] == 0.0 ||
			m["error_class"] != "TypeError" || m["phase"] != "post" || m["kind"] != nil {
			t.Errorf("policy error line: %v", m)
		}
	}
	if strings.Contains(log.String(), city) || strings.Contains(log.String(), "Cannot set property") {
		t.Errorf("a value or the error message reached stderr:\n%s", log.String())
	}

	// /api/status counts errors per file.
	var status struct {
		Policies struct {
			Files      []string          `json:"files"`
			LastReload string            `json:"last_reload"`
			Errors     map[string]uint64 `json:"errors"`
		} `json:"policies"`
	}
	if err := json.Unmarshal([]byte(httpGet(t, "http://"+addr+"/api/status")), &status); err != nil {
		t.Fatal(err)
	}
	if status.Policies.Errors["broken.js"] != 2 || status.Policies.Errors["withhold.js"] != 0 || status.Policies.LastReload != "ok" ||
		strings.Join(status.Policies.Files, ",") != "broken.js,withhold.js" {
		t.Errorf("/api/status policies: %+v", status.Policies)
	}

	// The console's policy panel.
	ctx, cancel := headless(t, chrome)
	defer cancel()
	if err := chromedp.Do(ctx,
		chromedp.Navigate("http://"+addr+"/"),
		chromedp.WaitVisible(chromedp.CSS(`#health:not([hidden])`)),
	); err != nil {
		t.Fatalf("console: %v", err)
	}
	type health struct{ Set, Reload, Errors string }
	const readHealth = `({set: document.getElementById('h-set').textContent,
		reload: document.getElementById('h-reload').textContent,
		errors: document.getElementById('h-errors').textContent})`
	h, err := chromedp.Run(ctx, chromedp.Evaluate[health](readHealth))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(h.Set, "2 files: broken.js, withhold.js") || !strings.HasPrefix(h.Reload, "ok") || h.Errors != "broken.js: 2" {
		t.Errorf("console policy health: %+v", h)
	}

	// A reload that breaks the set shows as failed; the next good one recovers.
	writePolicy(t, pol, "broken.js", "if (ctx.phase === \"post\" {\n")
	waitUntil(t, "the failed reload in the console", 20*time.Second, func() bool {
		h, err = chromedp.Run(ctx, chromedp.Evaluate[health](readHealth))
		return err == nil && strings.HasPrefix(h.Reload, "failed")
	})
	if !strings.Contains(h.Reload, "broken.js:1") {
		t.Errorf("the failed reload does not name the file and line: %q", h.Reload)
	}
	shot, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
	if err == nil {
		art := filepath.Join(root, "testdata", "e2e-artifacts")
		if os.MkdirAll(art, 0o755) == nil {
			os.WriteFile(filepath.Join(art, "console-health.png"), shot, 0o644)
		}
	}
	writePolicy(t, pol, "broken.js", "// fixed\n")
	waitUntil(t, "the recovery log line", 20*time.Second, func() bool {
		return strings.Contains(log.String(), "policy reload recovered")
	})
	waitUntil(t, "the recovered reload in the console", 20*time.Second, func() bool {
		h, err = chromedp.Run(ctx, chromedp.Evaluate[health](readHealth))
		return err == nil && strings.HasPrefix(h.Reload, "ok")
	})
}
