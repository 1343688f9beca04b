package policytest

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/mcpgate/mcpgate/gate"
)

func loadEmpty(t *testing.T, timeout time.Duration) *gate.Gate {
	t.Helper()
	g, err := gate.Load(context.Background(), gate.Options{Dir: t.TempDir(), Timeout: timeout})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { g.Close() })
	return g
}

// TestRunOutcomes: each test runs in a fresh, locked-down runtime under the
// policies' limits, and what it raises decides pass, fail or error.
func TestRunOutcomes(t *testing.T) {
	g := loadEmpty(t, 300*time.Millisecond)
	// the memory guard, not the deadline, must stop a doubling: those rows get time to
	// spare on a loaded machine
	roomy := loadEmpty(t, 5*time.Second*raceSlowdown)
	host := Host{"echo": func(_ context.Context, spec json.RawMessage) (json.RawMessage, error) {
		if string(spec) == `"boom"` {
			return nil, errors.New("bad spec")
		}
		return spec, nil
	}}
	tests := []struct {
		name, src, outcome, message string
		line                        int
	}{
		{"pass", `mcpgate.assertEqual(mcpgate.echo({a: [1, 2]}), {a: [1, 2]});`, Pass, "", 0},
		{"assert", `mcpgate.assert(1 === 2, "one is not two");`, Fail, "one is not two", 3},
		{"assertEqual diff", `mcpgate.assertEqual({a: 1}, {a: 2});`, Fail,
			"assertEqual: actual differs from expected (- actual, + expected)\n  {\n-   \"a\": 1\n+   \"a\": 2\n  }", 3},
		{"thrown string", `throw "nope";`, Fail, "nope", 3},
		{"plain Error", `throw new Error("plain");`, Fail, "plain", 3},
		{"assert in a helper", "function check(x) {\n  mcpgate.assert(x, \"deep\");\n}\n  check(false);", Fail, "deep", 4},
		{"TypeError", "var u;\n  u.x = 1;", Error, "TypeError: Cannot convert undefined or null to object", 4},
		{"ReferenceError", `nothere();`, Error, "ReferenceError: nothere is not defined", 3},
		{"host error", `mcpgate.echo("boom");`, Error, "TypeError: mcpgate.echo: bad spec", 3},
		{"runaway", `for (;;) {}`, Error, "test ran past its time limit", 0},
		{"host time is not test time", `for (var i = 0; i < 3; i++) mcpgate.echo(i);`, Pass, "", 0},
		{"no eval, no Function", `mcpgate.assert(typeof eval === "undefined" && typeof require === "undefined", "sandbox")`, Pass, "", 0},
		{"a caught assertion still ran", `try { mcpgate.assert(false, "x") } catch (e) {}`, Pass, "", 0},
		{"unhandled rejection", `Promise.reject("later");`, Fail, "later", 0},
		{"string doubling", `var s = "x"; for (;;) s = s + s;`, Error, "test exceeded the memory limit", 0},
		{"template doubling", "var s = 'x'; for (;;) s = `${s}${s}`;", Error, "test exceeded the memory limit", 0},
		{"globals do not leak", `mcpgate.assert(typeof leaked === "undefined", "leaked");`, Pass, "", 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			src := "// test\nfunction test_it() {\n  " + tc.src + "\n}\n"
			tf, err := Compile("x_test.js", []byte(src))
			if err != nil {
				t.Fatal(err)
			}
			gt := g
			if tc.message == "test exceeded the memory limit" {
				gt = roomy
			}
			res := Run(context.Background(), gt, tf, "test_it", host)
			if res.Outcome != tc.outcome || res.Message != tc.message || (tc.line != 0 && res.Line != tc.line) {
				t.Errorf("got %s %q at %d:%d, want %s %q at line %d", res.Outcome, res.Message, res.Line, res.Column, tc.outcome, tc.message, tc.line)
			}
		})
	}
}

func TestCompile(t *testing.T) {
	tf, err := Compile("a_test.js", []byte("function test_b() {}\nfunction helper() {}\nfunction test_a() {}\nvar test_c = function () {};\n"))
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
		{"var[ ...{000", "a_test.js"},                    // goja's parser panics on it
	} {
		_, err := Compile("a_test.js", []byte(tc.src))
		var ce *gate.CompileError
		if !errors.As(err, &ce) || !errors.Is(err, gate.ErrSyntax) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%q: error %v, want a CompileError at %s", tc.src, err, tc.want)
		}
	}
	tf, err = Compile("top_test.js", []byte("var u;\nu.x = 1;\nfunction test_a() {}\n"))
	if err != nil {
		t.Fatal(err)
	}
	g := loadEmpty(t, time.Second)
	if res := Run(context.Background(), g, tf, "test_a", nil); res.Outcome != Error || res.Line != 2 {
		t.Errorf("a top-level TypeError: %+v, want an error at line 2", res)
	}
	if !gate.IsTestFile("x_test.js") || gate.IsTestFile("x.js") || gate.IsTestFile("test.js") {
		t.Error("IsTestFile")
	}
}

func FuzzCompile(f *testing.F) {
	f.Add("function test_a() { mcpgate.assert(true) }\n")
	f.Add("}); (function () {")
	f.Add("function test_a( {")
	f.Fuzz(func(t *testing.T, src string) {
		tf, err := Compile("f_test.js", []byte(src))
		if err != nil {
			var ce *gate.CompileError
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
