package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

func runCLI(t *testing.T, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	var out, errb bytes.Buffer
	code = run(context.Background(), args, strings.NewReader(""), &out, &errb)
	return out.String(), errb.String(), code
}

func TestPolicyTestOutcomesAndExitCodes(t *testing.T) {
	out, _, code := runCLI(t, "test", "testdata/policytest/suite")
	if code != exitTestFailed {
		t.Errorf("exit %d, want %d for a failing test", code, exitTestFailed)
	}
	for _, want := range []string{
		"PASS  block-force-delete_test.js: test_rejects_force_delete\n",
		"FAIL  block-force-delete_test.js:12:22: test_deliberately_failing: assertEqual: actual differs from expected (- actual, + expected)\n      - \"pass\"\n      + \"block\"\n",
		"ERROR block-force-delete_test.js:17:18: test_runtime_error: TypeError: Cannot read property 'field' of undefined\n",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	if !strings.HasSuffix(out, "\n1 passed, 2 failed\n") {
		t.Errorf("summary line missing:\n%s", out)
	}

	out, errOut, code := runCLI(t, "test", "testdata/policytest/syntax")
	if code != exitError || !strings.Contains(errOut, "ok_test.js:5:") {
		t.Errorf("syntax error: exit %d, stderr %q, stdout %q; want exit 1 naming ok_test.js:5", code, errOut, out)
	}

	out, _, code = runCLI(t, "test", "--run", "rejects", "testdata/policytest/suite")
	if code != exitOK || !strings.HasSuffix(out, "1 passed, 0 failed\n") {
		t.Errorf("--run: exit %d:\n%s", code, out)
	}
}

// TestPolicyTestConfig: --config's rule severities reach the built-in rules of
// mcpgate.call, as they do in the gateway.
func TestPolicyTestConfig(t *testing.T) {
	dir := "testdata/policytest/config"
	if out, _, code := runCLI(t, "test", "--config", dir+"/mcpgate.json", dir); code != exitOK {
		t.Errorf("with --config: exit %d\n%s", code, out)
	}
	if out, _, code := runCLI(t, "test", dir); code != exitTestFailed {
		t.Errorf("without --config: exit %d, want %d (pii_email is info by default)\n%s", code, exitTestFailed, out)
	}
}

func TestPolicyTestJSONGolden(t *testing.T) {
	out, _, code := runCLI(t, "test", "--format", "json", "testdata/policytest/suite")
	if code != exitTestFailed {
		t.Fatalf("exit %d, want %d", code, exitTestFailed)
	}
	var rows []testResult
	if err := json.Unmarshal([]byte(out), &rows); err != nil {
		t.Fatalf("not one JSON array: %v\n%s", err, out)
	}
	for _, r := range rows {
		if r.DurationMS <= 0 {
			t.Errorf("%s: duration_ms %v", r.Name, r.DurationMS)
		}
	}
	// timing varies; the golden file holds everything else
	got := regexp.MustCompile(`"duration_ms": [0-9.e+-]+`).ReplaceAll([]byte(strings.TrimSuffix(out, "\n")), []byte(`"duration_ms": 0`))
	golden := filepath.Join("testdata", "test.json.golden")
	if *update {
		if err := os.WriteFile(golden, append(got, '\n'), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatal(err)
	}
	if string(want) != string(got)+"\n" {
		t.Errorf("--format json differs from %s (refresh with -update):\n%s", golden, got)
	}
}

// TestShippedPolicyTests runs the tests of the shipped policies and of every example,
// as make test does; each example carries a test.
func TestShippedPolicyTests(t *testing.T) {
	for _, dir := range []string{"../../policies", "../../policies/examples"} {
		out, errOut, code := runCLI(t, "test", dir)
		if code != exitOK || strings.Contains(out, " 0 passed") {
			t.Errorf("mcpgate test %s: exit %d\n%s%s", dir, code, out, errOut)
		}
	}
	ents, err := os.ReadDir("../../policies/examples")
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range ents {
		n := e.Name()
		if !strings.HasSuffix(n, ".js") || strings.HasSuffix(n, "_test.js") {
			continue
		}
		if _, err := os.Stat(filepath.Join("../../policies/examples", strings.TrimSuffix(n, ".js")+"_test.js")); err != nil {
			t.Errorf("example %s has no test file", n)
		}
	}
}

// TestPolicyTestNamesPolicyErrors: a policy that crashes during a test's
// mcpgate.call is named with its file:line:col and error class under the failing
// test, without -v; a passing test prints none, and the JSON carries the same list.
func TestPolicyTestNamesPolicyErrors(t *testing.T) {
	dir := t.TempDir()
	write := func(name, src string) {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(src), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("a.js", "if (ctx.phase === \"post\") { console.log(ctx.tool); }\n")
	write("a_test.js", `function call() { return mcpgate.call({ tool: "t", params: {}, result: { content: [{ type: "text", text: "ok" }] } }); }
function test_expects_pass() { mcpgate.assertEqual(call().action, "pass"); }
function test_expects_block() { mcpgate.assertEqual(call().action, "block"); }
`)
	out, _, code := runCLI(t, "test", dir)
	if code != exitTestFailed {
		t.Fatalf("exit %d, want %d:\n%s", code, exitTestFailed, out)
	}
	want := "+ \"pass\"\n      policy error during the test: a.js:1:29: ReferenceError (policy_throw)\nPASS  a_test.js: test_expects_block\n"
	if !strings.Contains(out, want) || strings.Count(out, "policy error") != 1 {
		t.Fatalf("output lacks %q once:\n%s", want, out)
	}
	out, _, _ = runCLI(t, "test", "--format", "json", dir)
	var rs []testResult
	if err := json.Unmarshal([]byte(out), &rs); err != nil || len(rs) != 2 {
		t.Fatalf("json: %v\n%s", err, out)
	}
	if got := rs[0].PolicyErrors; len(got) != 1 || got[0] != "a.js:1:29: ReferenceError (policy_throw)" || rs[1].PolicyErrors != nil {
		t.Fatalf("policy_errors: %q, %q", got, rs[1].PolicyErrors)
	}
}
