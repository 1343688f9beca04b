package policyast

import (
	"errors"
	"strings"

	"github.com/dop251/goja"
	"github.com/dop251/goja/ast"
	"github.com/dop251/goja/parser"
)

// testWrapPrefix has the shape of wrapPrefix (same checks, same line numbers, the same
// growth guards) but binds the global-looking `mcpgate` instead of ctx.
const testWrapPrefix = "(function (mcpgate$test, add$gate, addAt$gate, tpl$gate, arr$gate, spr$gate, args$gate, ospr$gate) { const mcpgate = mcpgate$test; return function () {"

// TestPrefixLen is PrefixLen for a test file.
const TestPrefixLen = len(testWrapPrefix)

// CompileTest compiles a policy test file (docs/policies.md#tests): the program, which
// evaluates to a wrapper taking the global-looking `mcpgate` and the growth guards and
// returning a function that registers the file's tests, and the names of its top-level
// `function test_…` declarations in file order. A syntax error is an *Error.
func CompileTest(name string, src []byte) (prg *goja.Program, tests []string, err error) {
	defer recoverEngine(name, &err)
	parse := func(tail string) (*ast.Program, error) {
		text := testWrapPrefix + string(src) + tail + wrapSuffix
		open, close := len(testWrapPrefix)-1, len(testWrapPrefix)+len(src)+len(tail)+1
		prg, err := parser.ParseFile(nil, name, text, 0, parser.WithDisableSourceMaps)
		if err != nil {
			var list parser.ErrorList
			if errors.As(err, &list) && len(list) > 0 {
				return nil, testCompileErr(name, src, list[0].Position.Line, list[0].Position.Column, list[0].Message)
			}
			return nil, &Error{File: name, Msg: err.Error()}
		}
		if err := checkWrapper(name, prg, open, close); err != nil {
			var ce *Error
			if errors.As(err, &ce) && ce.Line == 1 { // checkWrapper counted the policy prefix
				ce.Column += len(wrapPrefix) - len(testWrapPrefix)
				ce.Column = max(ce.Column, 1)
			}
			return nil, err
		}
		return prg, nil
	}
	first, err := parse("")
	if err != nil {
		return nil, nil, err
	}
	if at := bigIntLiteral(wrapperBody(first)); at != 0 {
		return nil, nil, errAt(name, first, at, "BigInt is not available in policies or their tests")
	}
	for _, st := range wrapperBody(first).List {
		if fd, ok := st.(*ast.FunctionDeclaration); ok && fd.Function != nil && fd.Function.Name != nil {
			if n := string(fd.Function.Name.Name); strings.HasPrefix(n, "test_") {
				tests = append(tests, n)
			}
		}
	}
	// The tail returns the test functions; sloppy implicit globals become locals as in
	// a policy (never `mcpgate`, which would shadow the binding).
	var tail strings.Builder
	var locals []string
	for _, n := range implicitGlobals(first) {
		if n != "mcpgate" && n != "mcpgate$test" {
			locals = append(locals, n)
		}
	}
	if len(locals) > 0 {
		tail.WriteString("\n;var " + strings.Join(locals, ", ") + ";")
	}
	tail.WriteString("\n;mcpgate$test.register$gate([" + strings.Join(tests, ", ") + "]);")
	full, err := parse(tail.String())
	if err != nil {
		return nil, nil, err
	}
	guardGrowth(wrapperBody(full)) // +, template literals and spreads as in a policy
	if prg, err = goja.CompileAST(full, false); err != nil {
		return nil, nil, &Error{File: name, Msg: err.Error()}
	}
	return prg, tests, nil
}

// testCompileErr places a parser error in the test file: line 1 loses the wrapper's
// prefix, and an error in the wrapper's closing (an unclosed brace) is put at the end
// of the file.
func testCompileErr(name string, src []byte, line, col int, msg string) *Error {
	if line == 1 {
		col = max(col-len(testWrapPrefix), 1)
	}
	text := strings.TrimRight(string(src), "\n")
	if last := strings.Count(text, "\n") + 1; line > last {
		line, col = last, len(text)-strings.LastIndex(text, "\n")
	}
	return &Error{File: name, Line: line, Column: col, Msg: msg}
}
