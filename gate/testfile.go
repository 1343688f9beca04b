package gate

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"time"

	"github.com/dop251/goja"
	"github.com/mcpgate/mcpgate/gate/internal/policyast"
)

// TestSuffix marks a policy test file: Load never runs one as a policy, `mcpgate test`
// runs its test_* functions (docs/policies.md#tests).
const TestSuffix = "_test.js"

// IsTestFile reports whether a file name in a policies directory is a test file.
func IsTestFile(name string) bool { return strings.HasSuffix(name, TestSuffix) }

// TestFile is one compiled *_test.js file and its tests: the names of its top-level
// `function test_…` declarations, in file order.
type TestFile struct {
	Name  string
	Tests []string
	prg   *goja.Program // evaluates to the wrapper; running it registers the test functions
}

// CompileTestFile compiles a test file. A syntax error is a *CompileError (file, line,
// column, parser message), like a policy's.
func CompileTestFile(name string, src []byte) (*TestFile, error) {
	prg, tests, err := policyast.CompileTest(name, src)
	if err != nil {
		return nil, compileError(err)
	}
	return &TestFile{Name: name, Tests: tests, prg: prg}, nil
}

// TestHost is the Go side of the global `mcpgate` in a test: each entry is one
// function, mcpgate.<name>(spec), taking and returning JSON (`call` runs one
// tools/call; other fixtures are added by name). An error becomes a TypeError in the
// test. Time spent in a host function does not count against the test's time limit.
type TestHost map[string]func(ctx context.Context, spec json.RawMessage) (json.RawMessage, error)

// Test outcomes.
const (
	TestPass  = "pass"
	TestFail  = "fail"  // an assertion failed, or the test threw a string or a plain Error
	TestError = "error" // a runtime error (TypeError, ReferenceError, …), a limit, a timeout
)

// TestResult is one test's outcome. Line and Column (1-based, in the test file) say
// where an error was raised; 0 when unknown.
type TestResult struct {
	Outcome string
	Message string
	Line    int
	Column  int
}

// RunTest runs one test of tf in a fresh runtime with the policies' sandbox and limits
// (lockdown, call-stack limit, allocation guards, heap watchdog, the Gate's per-policy
// timeout for the test's own code). The global `mcpgate` offers assert(cond, message),
// assertEqual(actual, expected) and host's functions.
func (g *Gate) RunTest(ctx context.Context, tf *TestFile, test string, host TestHost) (res TestResult) {
	idx := -1
	for i, n := range tf.Tests {
		if n == test {
			idx = i
		}
	}
	if idx < 0 {
		return TestResult{Outcome: TestError, Message: "no test " + test + " in " + tf.Name}
	}
	v, err := newVM(g.pool)
	if err != nil {
		return TestResult{Outcome: TestError, Message: err.Error()}
	}
	tok := tokens.Add(1)
	g.pool.begin(v, tok, 0, 0, nil) // the test's own timer and AfterFunc below are its clocks (paused during host calls)
	defer g.pool.end(v)
	budget := g.opts.Timeout
	started := time.Now()
	timer := time.AfterFunc(budget, func() { v.interruptIf(tok, errTimeout) })
	defer timer.Stop()
	stopCancel := context.AfterFunc(ctx, func() { v.interruptIf(tok, errCancelled) })
	defer stopCancel()
	// pause stops the clock while a host function runs the pipeline.
	pause := func() func() {
		if timer.Stop() {
			budget -= time.Since(started)
		}
		return func() {
			started = time.Now()
			timer.Reset(max(budget, time.Millisecond))
		}
	}
	t := &testRun{v: v, asserts: map[*goja.Object]string{}}
	defer func() {
		if r := recover(); r != nil {
			res = t.result(r, tf.Name)
		}
	}()
	obj := v.rt.NewObject()
	_ = obj.Set("assert", t.assert)
	_ = obj.Set("assertEqual", t.assertEqual)
	var fns goja.Value
	_ = obj.DefineDataProperty("register$gate", v.rt.ToValue(func(c goja.FunctionCall) goja.Value {
		if fns == nil {
			fns = c.Argument(0)
		}
		return goja.Undefined()
	}), goja.FLAG_FALSE, goja.FLAG_FALSE, goja.FLAG_FALSE)
	for name, f := range host {
		f := f
		_ = obj.Set(name, func(c goja.FunctionCall) goja.Value {
			spec, err := v.stringify(goja.Undefined(), c.Argument(0))
			if err != nil {
				panic(err)
			}
			resume := pause()
			out, err := f(ctx, json.RawMessage(spec.String()))
			resume()
			if err != nil {
				v.throwType("mcpgate." + name + ": " + err.Error())
			}
			val, err := v.parse(goja.Undefined(), v.rt.ToValue(string(out)))
			if err != nil {
				panic(err)
			}
			return val
		})
	}
	if _, err := v.deepFreeze(goja.Undefined(), obj); err != nil {
		return t.result(err, tf.Name)
	}
	wv, err := v.rt.RunProgram(tf.prg)
	if err != nil {
		return t.result(err, tf.Name)
	}
	// The runner hands the wrapper the growth guards, as for a policy; the file's
	// top-level code runs and registers the test functions.
	out, err := v.runner(goja.Undefined(), wv, obj)
	if err != nil {
		return t.result(err, tf.Name)
	}
	if o, ok := out.(*goja.Object); ok { // [message, error class, stack]: the top level threw
		res := TestResult{Outcome: TestFail, Message: o.Get("0").String()}
		if cls := o.Get("1").String(); cls != "" {
			res.Outcome = TestError
			res.Line, res.Column = errorPosition(o.Get("2").String(), tf.Name, policyast.TestPrefixLen)
		}
		return res
	}
	if fns == nil {
		return TestResult{Outcome: TestError, Message: "the test file did not run to its end"}
	}
	fn, ok := goja.AssertFunction(fns.ToObject(v.rt).Get(fmt.Sprint(idx)))
	if !ok {
		return TestResult{Outcome: TestError, Message: test + " is not a function"}
	}
	if _, err := fn(goja.Undefined()); err != nil {
		return t.result(err, tf.Name)
	}
	if rej := v.unhandledRejection(); rej != nil {
		return TestResult{Outcome: TestFail, Message: rej.Message}
	}
	return TestResult{Outcome: TestPass}
}

// testRun is the state of one test: the assertion errors it raised, by identity.
type testRun struct {
	v       *vm
	asserts map[*goja.Object]string
}

func (t *testRun) fail(msg string) {
	o := t.v.rt.NewObject()
	t.asserts[o] = msg
	panic(o)
}

func (t *testRun) assert(c goja.FunctionCall) goja.Value {
	if !c.Argument(0).ToBoolean() {
		msg := "assertion failed"
		if m := c.Argument(1); !goja.IsUndefined(m) {
			if d, err := t.v.describe(goja.Undefined(), m); err == nil {
				msg = d.String()
			}
		}
		t.fail(msg)
	}
	return goja.Undefined()
}

func (t *testRun) assertEqual(c goja.FunctionCall) goja.Value {
	a, err := t.v.stringify(goja.Undefined(), c.Argument(0))
	if err != nil {
		panic(err)
	}
	b, err := t.v.stringify(goja.Undefined(), c.Argument(1))
	if err != nil {
		panic(err)
	}
	var x, y any
	_ = json.Unmarshal([]byte(a.String()), &x) // undefined stringifies to undefined: nil
	_ = json.Unmarshal([]byte(b.String()), &y)
	if !reflect.DeepEqual(x, y) {
		t.fail("assertEqual: actual differs from expected (- actual, + expected)\n" + lineDiff(x, y))
	}
	return goja.Undefined()
}

// result classifies what a test raised: an assertion, a thrown string or a plain
// Error is a failure; a native error class, an interrupt or a host failure is an error
// with the test file's line and column.
func (t *testRun) result(r any, file string) TestResult {
	var ex *goja.Exception
	var ie *goja.InterruptedError
	var so *goja.StackOverflowError
	err, _ := r.(error)
	val, _ := r.(goja.Value)
	switch {
	case err != nil && errors.As(err, &ie):
		msg := errTimeout.msg
		if why, ok := ie.Value().(*interruptReason); ok {
			msg = why.msg
		}
		return TestResult{Outcome: TestError, Message: strings.Replace(msg, "policy", "test", 1)}
	case err != nil && errors.As(err, &so):
		return TestResult{Outcome: TestError, Message: "test exceeded the call stack limit"}
	case err != nil && errors.As(err, &ex):
		val = ex.Value()
	case err != nil:
		return TestResult{Outcome: TestError, Message: err.Error()}
	}
	if o, ok := val.(*goja.Object); ok {
		if msg, ok := t.asserts[o]; ok {
			return TestResult{Outcome: TestFail, Message: msg}
		}
	}
	msg := "test threw a value that could not be described"
	if val != nil {
		if d, err := t.v.describe(goja.Undefined(), val); err == nil {
			msg = d.String()
		}
	}
	class := nativeErrorClass(t.v, val)
	if class == "" {
		return TestResult{Outcome: TestFail, Message: msg}
	}
	res := TestResult{Outcome: TestError, Message: msg}
	if ex != nil {
		for _, f := range ex.Stack() {
			if p := f.Position(); p.Filename == file && p.Line > 0 {
				res.Line, res.Column = p.Line, p.Column
				if p.Line == 1 {
					res.Column = max(p.Column-policyast.TestPrefixLen, 1)
				}
				break
			}
		}
	}
	return res
}

// nativeErrorClasses are the error constructors whose instances are runtime errors,
// not deliberate throws.
var nativeErrorClasses = []string{"TypeError", "ReferenceError", "RangeError", "SyntaxError", "URIError", "EvalError"}

// nativeErrorClass returns the name of the native error class val is an instance of
// (by prototype identity with the runtime's frozen intrinsics, never by its name), or "".
func nativeErrorClass(v *vm, val goja.Value) string {
	o, ok := val.(*goja.Object)
	if !ok || o.ClassName() != "Error" { // never a Proxy, whose traps would run here
		return ""
	}
	for _, name := range nativeErrorClasses {
		ctor, ok := v.global.Get(name).(*goja.Object)
		if !ok {
			continue
		}
		proto, _ := ctor.Get("prototype").(*goja.Object)
		for p, i := o.Prototype(), 0; p != nil && i < 64; p, i = p.Prototype(), i+1 {
			if p == proto {
				return name
			}
		}
	}
	return ""
}

// lineDiff renders two JSON values as indented JSON, line by line: "-" lines are only in
// actual, "+" lines only in expected, two spaces of context otherwise.
func lineDiff(actual, expected any) string {
	a, _ := json.MarshalIndent(actual, "", "  ")
	b, _ := json.MarshalIndent(expected, "", "  ")
	x, y := strings.Split(string(a), "\n"), strings.Split(string(b), "\n")
	// longest common subsequence over lines; inputs are test fixtures, small
	n, m := len(x), len(y)
	if n*m > 1<<22 {
		return "- " + string(a) + "\n+ " + string(b)
	}
	lcs := make([][]int, n+1)
	for i := range lcs {
		lcs[i] = make([]int, m+1)
	}
	for i := n - 1; i >= 0; i-- {
		for j := m - 1; j >= 0; j-- {
			if x[i] == y[j] {
				lcs[i][j] = lcs[i+1][j+1] + 1
			} else {
				lcs[i][j] = max(lcs[i+1][j], lcs[i][j+1])
			}
		}
	}
	var out strings.Builder
	i, j := 0, 0
	for i < n || j < m {
		switch {
		case i < n && j < m && x[i] == y[j]:
			out.WriteString("  " + x[i] + "\n")
			i, j = i+1, j+1
		case i < n && (j == m || lcs[i+1][j] >= lcs[i][j+1]):
			out.WriteString("- " + x[i] + "\n")
			i++
		default:
			out.WriteString("+ " + y[j] + "\n")
			j++
		}
	}
	return strings.TrimRight(out.String(), "\n")
}

// Only returns a set that runs only the named files of s, in s's order (a test that
// exercises one policy of a directory). It errors on a name s does not hold.
func (s *Set) Only(files []string) (*Set, error) {
	keep := map[string]bool{}
	for _, f := range files {
		keep[f] = true
	}
	sub := *s
	sub.policies, sub.Files = nil, nil
	for _, p := range s.policies {
		if keep[p.Name] {
			sub.policies = append(sub.policies, p)
			sub.Files = append(sub.Files, p.Name)
			delete(keep, p.Name)
		}
	}
	for f := range keep {
		return nil, fmt.Errorf("no policy %q in the set", f)
	}
	return &sub, nil
}

// errorPosition finds where a native error was raised in the policy file: the first
// frame of the runtime's stack text (the runner reads it only while it is a data
// property) that names file. Only the two numbers are taken, never any text.
func errorPosition(stack, file string, prefix int) (line, col int) {
	lines := strings.Split(strings.TrimRight(stack, "\n"), "\n")
	// frames are the tail of the text; a message cannot come after them
	start := len(lines)
	for start > 0 && strings.HasPrefix(strings.TrimLeft(lines[start-1], " \t"), "at ") {
		start--
	}
	for _, l := range lines[start:] {
		i := strings.Index(l, file+":")
		if i < 0 {
			continue
		}
		var ln, cl, pc int
		if n, _ := fmt.Sscanf(l[i+len(file)+1:], "%d:%d(%d)", &ln, &cl, &pc); n >= 2 && ln >= 1 && cl >= 1 {
			if ln == 1 {
				cl = max(cl-prefix, 1)
			}
			return ln, cl
		}
	}
	return 0, 0
}
