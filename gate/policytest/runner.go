package policytest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"time"

	"github.com/dop251/goja"

	"github.com/mcpgate/mcpgate/gate"
	"github.com/mcpgate/mcpgate/gate/internal/policyast"
	"github.com/mcpgate/mcpgate/gate/internal/testrt"
)

// File is one compiled *_test.js file and its tests: the names of its top-level
// `function test_…` declarations, in file order.
type File struct {
	Name  string
	Tests []string
	prg   *goja.Program // evaluates to the wrapper; running it registers the test functions
}

// Compile compiles a test file. A syntax error is a *gate.CompileError (file, line,
// column, parser message), like a policy's.
func Compile(name string, src []byte) (*File, error) {
	prg, tests, err := policyast.CompileTest(name, src) // a *policyast.Error is a *gate.CompileError
	if err != nil {
		return nil, err
	}
	return &File{Name: name, Tests: tests, prg: prg}, nil
}

// Host is the Go side of the global `mcpgate` in a test: each entry is one
// function, mcpgate.<name>(spec), taking and returning JSON (`call` runs one
// tools/call; other fixtures are added by name). An error becomes a TypeError in the
// test. Time spent in a host function does not count against the test's time limit.
type Host map[string]func(ctx context.Context, spec json.RawMessage) (json.RawMessage, error)

// Test outcomes.
const (
	Pass  = "pass"
	Fail  = "fail"  // an assertion failed, or the test threw a string or a plain Error
	Error = "error" // a runtime error (TypeError, ReferenceError, …), a limit, a timeout
)

// Result is one test's outcome. Line and Column (1-based, in the test file) say
// where a failed assertion was called, or a throw or an error was raised; 0 when
// unknown (a time or memory limit, an unhandled rejection).
type Result struct {
	Outcome string
	Message string
	Line    int
	Column  int
}

// Run runs one test of tf in a fresh runtime of g with the policies' sandbox and limits
// (lockdown, call-stack limit, allocation guards, heap watchdog, g's per-policy
// timeout for the test's own code). The global `mcpgate` offers assert(cond, message),
// assertEqual(actual, expected) and host's functions.
func Run(ctx context.Context, g *gate.Gate, tf *File, test string, host Host) (res Result) {
	idx := -1
	for i, n := range tf.Tests {
		if n == test {
			idx = i
		}
	}
	if idx < 0 {
		return Result{Outcome: Error, Message: "no test " + test + " in " + tf.Name}
	}
	v, err := g.TestRuntime()
	if err != nil {
		return Result{Outcome: Error, Message: err.Error()}
	}
	defer v.Close() // the timer and AfterFunc below are the test's clocks (paused during host calls)
	rt := v.JS()
	budget := v.Timeout()
	started := time.Now()
	timer := time.AfterFunc(budget, func() { v.Interrupt(false) })
	defer timer.Stop()
	stopCancel := context.AfterFunc(ctx, func() { v.Interrupt(true) })
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
	t := &testRun{v: v, file: tf.Name, asserts: map[*goja.Object]assertion{}}
	defer func() {
		if r := recover(); r != nil {
			res = t.result(r, tf.Name)
		}
	}()
	obj := rt.NewObject()
	_ = obj.Set("assert", t.assert)
	_ = obj.Set("assertEqual", t.assertEqual)
	var fns goja.Value
	_ = obj.DefineDataProperty("register$gate", rt.ToValue(func(c goja.FunctionCall) goja.Value {
		if fns == nil {
			fns = c.Argument(0)
		}
		return goja.Undefined()
	}), goja.FLAG_FALSE, goja.FLAG_FALSE, goja.FLAG_FALSE)
	for name, f := range host {
		f := f
		_ = obj.Set(name, func(c goja.FunctionCall) goja.Value {
			spec, err := v.Stringify(c.Argument(0))
			if err != nil {
				panic(err)
			}
			resume := pause()
			out, err := f(ctx, json.RawMessage(spec.String()))
			resume()
			if err != nil {
				v.ThrowType("mcpgate." + name + ": " + err.Error())
			}
			val, err := v.Parse(string(out))
			if err != nil {
				panic(err)
			}
			return val
		})
	}
	if err := v.Freeze(obj); err != nil {
		return t.result(err, tf.Name)
	}
	wv, err := rt.RunProgram(tf.prg)
	if err != nil {
		return t.result(err, tf.Name)
	}
	// The runner hands the wrapper the growth guards, as for a policy; the file's
	// top-level code runs and registers the test functions.
	out, err := v.Run(wv, obj)
	if err != nil {
		return t.result(err, tf.Name)
	}
	if o, ok := out.(*goja.Object); ok { // [message, error class, stack]: the top level threw
		res := Result{Outcome: Fail, Message: o.Get("0").String()}
		if cls := o.Get("1").String(); cls != "" {
			res.Outcome = Error
			res.Line, res.Column = policyast.ErrorPosition(o.Get("2").String(), tf.Name, policyast.TestPrefixLen)
		}
		return res
	}
	if fns == nil {
		return Result{Outcome: Error, Message: "the test file did not run to its end"}
	}
	fn, ok := goja.AssertFunction(fns.ToObject(rt).Get(fmt.Sprint(idx)))
	if !ok {
		return Result{Outcome: Error, Message: test + " is not a function"}
	}
	if _, err := fn(goja.Undefined()); err != nil {
		return t.result(err, tf.Name)
	}
	if msg, ok := v.UnhandledRejection(); ok {
		return Result{Outcome: Fail, Message: msg}
	}
	return Result{Outcome: Pass}
}

// testRun is the state of one test: the assertion errors it raised, by identity.
type testRun struct {
	v       testrt.Runtime
	file    string
	asserts map[*goja.Object]assertion
}

// assertion is a failed mcpgate.assert or assertEqual: its message and where in the
// test file it was called.
type assertion struct {
	msg       string
	line, col int
}

func (t *testRun) fail(msg string) {
	o := t.v.JS().NewObject()
	a := assertion{msg: msg}
	a.line, a.col = t.position(t.v.JS().CaptureCallStack(0, nil))
	t.asserts[o] = a
	panic(o)
}

// position is the innermost frame of stack in the test file (1-based line and column,
// the wrapper's prefix taken off line 1), or 0, 0.
func (t *testRun) position(stack []goja.StackFrame) (line, col int) {
	for _, f := range stack {
		if p := f.Position(); p.Filename == t.file && p.Line > 0 {
			line, col = p.Line, p.Column
			if p.Line == 1 {
				col = max(p.Column-policyast.TestPrefixLen, 1)
			}
			return line, col
		}
	}
	return 0, 0
}

func (t *testRun) assert(c goja.FunctionCall) goja.Value {
	if !c.Argument(0).ToBoolean() {
		msg := "assertion failed"
		if m := c.Argument(1); !goja.IsUndefined(m) {
			if d, err := t.v.Describe(m); err == nil {
				msg = d.String()
			}
		}
		t.fail(msg)
	}
	return goja.Undefined()
}

func (t *testRun) assertEqual(c goja.FunctionCall) goja.Value {
	a, err := t.v.Stringify(c.Argument(0))
	if err != nil {
		panic(err)
	}
	b, err := t.v.Stringify(c.Argument(1))
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
func (t *testRun) result(r any, file string) Result {
	var ex *goja.Exception
	var ie *goja.InterruptedError
	var so *goja.StackOverflowError
	err, _ := r.(error)
	val, _ := r.(goja.Value)
	switch {
	case err != nil && errors.As(err, &ie):
		msg := t.v.InterruptMessage(ie)
		return Result{Outcome: Error, Message: strings.Replace(msg, "policy", "test", 1)}
	case err != nil && errors.As(err, &so):
		return Result{Outcome: Error, Message: "test exceeded the call stack limit"}
	case err != nil && errors.As(err, &ex):
		val = ex.Value()
	case err != nil:
		return Result{Outcome: Error, Message: err.Error()}
	}
	if o, ok := val.(*goja.Object); ok {
		if a, ok := t.asserts[o]; ok {
			return Result{Outcome: Fail, Message: a.msg, Line: a.line, Column: a.col}
		}
	}
	msg := "test threw a value that could not be described"
	if val != nil {
		if d, err := t.v.Describe(val); err == nil {
			msg = d.String()
		}
	}
	res := Result{Outcome: Error, Message: msg}
	if nativeErrorClass(t.v, val) == "" {
		res.Outcome = Fail
	}
	if ex != nil {
		res.Line, res.Column = t.position(ex.Stack())
	}
	return res
}

// nativeErrorClasses are the error constructors whose instances are runtime errors,
// not deliberate throws.
var nativeErrorClasses = []string{"TypeError", "ReferenceError", "RangeError", "SyntaxError", "URIError", "EvalError"}

// nativeErrorClass returns the name of the native error class val is an instance of
// (by prototype identity with the runtime's frozen intrinsics, never by its name), or "".
func nativeErrorClass(v testrt.Runtime, val goja.Value) string {
	o, ok := val.(*goja.Object)
	if !ok || o.ClassName() != "Error" { // never a Proxy, whose traps would run here
		return ""
	}
	for _, name := range nativeErrorClasses {
		ctor, ok := v.Global().Get(name).(*goja.Object)
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
