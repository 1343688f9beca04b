package gate

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/mcpgate/mcpgate/gate/internal/policyast"
)

func loadEmpty(t *testing.T, timeout time.Duration) *Gate {
	t.Helper()
	g, err := Load(context.Background(), Options{Dir: t.TempDir(), Timeout: timeout})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { g.Close() })
	return g
}

// TestRunTestOutcomes: each test runs in a fresh, locked-down runtime under the
// policies' limits, and what it raises decides pass, fail or error.
func TestRunTestOutcomes(t *testing.T) {
	g := loadEmpty(t, 300*time.Millisecond)
	// the memory guard, not the deadline, must stop a doubling: those rows get time to
	// spare on a loaded machine
	roomy := loadEmpty(t, 5*time.Second*raceSlowdown)
	host := TestHost{"echo": func(_ context.Context, spec json.RawMessage) (json.RawMessage, error) {
		if string(spec) == `"boom"` {
			return nil, errors.New("bad spec")
		}
		return spec, nil
	}}
	tests := []struct {
		name, src, outcome, message string
		line                        int
	}{
		{"pass", `mcpgate.assertEqual(mcpgate.echo({a: [1, 2]}), {a: [1, 2]});`, TestPass, "", 0},
		{"assert", `mcpgate.assert(1 === 2, "one is not two");`, TestFail, "one is not two", 0},
		{"assertEqual diff", `mcpgate.assertEqual({a: 1}, {a: 2});`, TestFail,
			"assertEqual: actual differs from expected (- actual, + expected)\n  {\n-   \"a\": 1\n+   \"a\": 2\n  }", 0},
		{"thrown string", `throw "nope";`, TestFail, "nope", 0},
		{"plain Error", `throw new Error("plain");`, TestFail, "plain", 0},
		{"TypeError", "var u;\n  u.x = 1;", TestError, "TypeError: Cannot convert undefined or null to object", 4},
		{"ReferenceError", `nothere();`, TestError, "ReferenceError: nothere is not defined", 3},
		{"host error", `mcpgate.echo("boom");`, TestError, "TypeError: mcpgate.echo: bad spec", 3},
		{"runaway", `for (;;) {}`, TestError, "test ran past its time limit", 0},
		{"host time is not test time", `for (var i = 0; i < 3; i++) mcpgate.echo(i);`, TestPass, "", 0},
		{"no eval, no Function", `mcpgate.assert(typeof eval === "undefined" && typeof require === "undefined", "sandbox")`, TestPass, "", 0},
		{"a caught assertion still ran", `try { mcpgate.assert(false, "x") } catch (e) {}`, TestPass, "", 0},
		{"unhandled rejection", `Promise.reject("later");`, TestFail, "later", 0},
		{"string doubling", `var s = "x"; for (;;) s = s + s;`, TestError, "test exceeded the memory limit", 0},
		{"template doubling", "var s = 'x'; for (;;) s = `${s}${s}`;", TestError, "test exceeded the memory limit", 0},
		{"globals do not leak", `mcpgate.assert(typeof leaked === "undefined", "leaked");`, TestPass, "", 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			src := "// test\nfunction test_it() {\n  " + tc.src + "\n}\n"
			tf, err := CompileTestFile("x_test.js", []byte(src))
			if err != nil {
				t.Fatal(err)
			}
			gate := g
			if tc.message == "test exceeded the memory limit" {
				gate = roomy
			}
			res := gate.RunTest(context.Background(), tf, "test_it", host)
			if res.Outcome != tc.outcome || res.Message != tc.message || (tc.line != 0 && res.Line != tc.line) {
				t.Errorf("got %s %q at %d:%d, want %s %q at line %d", res.Outcome, res.Message, res.Line, res.Column, tc.outcome, tc.message, tc.line)
			}
		})
	}
}

func TestCompileTestFile(t *testing.T) {
	tf, err := CompileTestFile("a_test.js", []byte("function test_b() {}\nfunction helper() {}\nfunction test_a() {}\nvar test_c = function () {};\n"))
	if err != nil {
		t.Fatal(err)
	}
	if strings.Join(tf.Tests, ",") != "test_b,test_a" {
		t.Errorf("tests %v, want the test_ function declarations in file order", tf.Tests)
	}
	for _, tc := range []struct{ src, want string }{
		{"function test_a() {\n  let x = ;\n}\n", "a_test.js:2:"},
		{"function test_a() {\n", "a_test.js:1:"},        // unclosed: the end of the file, not the wrapper
		{"}); evil(); (function () {\n", "a_test.js:1:"}, // cannot close the wrapper
	} {
		_, err := CompileTestFile("a_test.js", []byte(tc.src))
		var ce *CompileError
		if !errors.As(err, &ce) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%q: error %v, want a CompileError at %s", tc.src, err, tc.want)
		}
	}
	tf, err = CompileTestFile("top_test.js", []byte("var u;\nu.x = 1;\nfunction test_a() {}\n"))
	if err != nil {
		t.Fatal(err)
	}
	g := loadEmpty(t, time.Second)
	if res := g.RunTest(context.Background(), tf, "test_a", nil); res.Outcome != TestError || res.Line != 2 {
		t.Errorf("a top-level TypeError: %+v, want an error at line 2", res)
	}
	if !IsTestFile("x_test.js") || IsTestFile("x.js") || IsTestFile("test.js") {
		t.Error("IsTestFile")
	}
}

// TestLoadSkipsTestFiles: a *_test.js beside the policies is never run as a policy,
// even when it would reject every call or does not compile.
func TestLoadSkipsTestFiles(t *testing.T) {
	g := loadGate(t, map[string]string{"p.js": `// nothing`, "p_test.js": `throw "must not run"; (((`})
	if got := g.Current().Files; len(got) != 1 || got[0] != "p.js" {
		t.Errorf("loaded %v, want only p.js", got)
	}
}

func FuzzCompileTestFile(f *testing.F) {
	f.Add("function test_a() { mcpgate.assert(true) }\n")
	f.Add("}); (function () {")
	f.Add("function test_a( {")
	f.Fuzz(func(t *testing.T, src string) {
		tf, err := CompileTestFile("f_test.js", []byte(src))
		if err != nil {
			var ce *CompileError
			if !errors.As(err, &ce) {
				t.Fatalf("error is not a CompileError: %v", err)
			}
			if n := strings.Count(src, "\n") + 1; ce.Line > n {
				t.Fatalf("error at line %d of a %d-line file", ce.Line, n)
			}
			return
		}
		for _, n := range tf.Tests {
			if !strings.HasPrefix(n, "test_") {
				t.Fatalf("test %q", n)
			}
		}
	})
}

// FuzzErrorPosition: any stack text gives a position in the file or none, never a
// panic, and never a line or column below 1 when one is given.
func FuzzErrorPosition(f *testing.F) {
	f.Add("TypeError: x\n\tat p.js:3:5(7)\n\tat runner (lockdown.js:306:13(5))\n", "p.js")
	f.Add("x\n\tat p.js:1:120(2)", "p.js")
	f.Add("\tat p.js:", "p.js")
	f.Fuzz(func(t *testing.T, stack, file string) {
		line, col := errorPosition(stack, file, policyast.PrefixLen)
		if line < 0 || (line > 0 && col < 1) || (line == 0 && col != 0) {
			t.Fatalf("line %d column %d", line, col)
		}
	})
}
