// Package policyast turns a policy's source into a compiled program and the facts
// proven about it at load: the phases it acts in, whether it only reads ctx.params,
// the implicit globals it declares, with its growth steps rewritten into guarded calls
// (docs/policies.md#phases, #growth-limits). It is pure: no runtime, no I/O.
package policyast

import (
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"

	"github.com/dop251/goja"
	"github.com/dop251/goja/ast"
	"github.com/dop251/goja/file"
	"github.com/dop251/goja/parser"
	"github.com/mcpgate/mcpgate/ctxapi"
)

// ErrSyntax is what every *Error matches with errors.Is (gate.ErrSyntax).
var ErrSyntax = errors.New("gate: policy does not compile")

// Error is a source that does not compile: file name, 1-based line and column (0 when
// unknown) and the parser's message, which quotes source tokens, never call data. It
// is the one compile-error type: package gate names it CompileError, and
// gate/policytest returns it for a test file.
type Error struct {
	File   string
	Line   int
	Column int
	Msg    string
}

func (e *Error) Error() string {
	if e.Line > 0 {
		return fmt.Sprintf("gate: %s:%d:%d: %s", e.File, e.Line, e.Column, e.Msg)
	}
	return fmt.Sprintf("gate: %s: %s", e.File, e.Msg)
}

// Is makes errors.Is(err, ErrSyntax) true.
func (e *Error) Is(target error) bool { return target == ErrSyntax }

// wrapPrefix opens the per-policy function scope on the policy's first line, so line
// numbers in errors stay those of the file (docs/decisions.md#isolation). The outer
// function binds ctx as a const (assigning ctx throws a TypeError instead of silently
// rebinding a local) and the growth guards; it runs once per runtime and returns the
// inner function, the policy's own function body (top-level return, "use strict"
// directive, private names), which each call invokes with a fresh scope. The outer
// bindings never change: ctx is the runtime's frozen ctx, the rest are names policies
// cannot use (reserved). compilePolicy checks that the inner body spans the whole file,
// so a file cannot close the wrapper and run at top level.
const (
	wrapPrefix = "(function (ctx$gate, add$gate, addAt$gate, tpl$gate, arr$gate, spr$gate, args$gate, ospr$gate) { const ctx = ctx$gate; return function () {"
	wrapSuffix = "\n}; })"
)

// PrefixLen is the length of the wrapper text before a policy's first line: a column
// on line 1 of a stack trace is PrefixLen past the file's.
const PrefixLen = len(wrapPrefix)

// wrap returns the wrapped source with tail appended inside the policy body, and the
// byte offsets of the policy body's opening and closing braces.
func wrap(src []byte, tail string) (text string, open, close int) {
	text = wrapPrefix + string(src) + tail + wrapSuffix
	return text, len(wrapPrefix) - 1, len(wrapPrefix) + len(src) + len(tail) + 1
}

// Policy is one compiled file and what Compile proved about it.
type Policy struct {
	Name     string
	Program  *goja.Program // evaluates to the wrapper function (Wrap)
	Phases   PhaseInfo     // the phases it compares ctx.phase with and acts in
	ParamsRO bool          // provably only reads ctx.params (paramsReadOnly)
}

// ActsIn reports whether the policy runs in phase.
func (p *Policy) ActsIn(phase ctxapi.Phase) bool { return slices.Contains(p.Phases.Acts, phase) }

// Compile wraps src in its function scope, decides the phases it acts in,
// guards its growth (growth.go) and compiles it once; the program is shared by every
// pooled runtime. Source maps are never read (parser option).
func Compile(name string, src []byte) (p Policy, err error) {
	defer recoverEngine(name, &err)
	text, open, close := wrap(src, "")
	prog, err := parse(name, text)
	if err != nil {
		return Policy{}, err
	}
	if err := checkWrapper(name, prog, open, close); err != nil {
		return Policy{}, err
	}
	body := wrapperBody(prog)
	if !walkAST(body, maxPolicyDepth, func(any) bool { return true }) {
		// the checks and proofs below walk 10000 levels from the program: past them a
		// name ending in $gate or a use of ctx would go unseen
		return Policy{}, &Error{File: name, Msg: "the policy nests too deeply to be checked"}
	}
	if n := reservedName(body); n != "" {
		return Policy{}, &Error{File: name, Msg: "names ending in " + reserved + " are reserved (" + n + ")"}
	}
	if at := bigIntLiteral(body); at != 0 {
		return Policy{}, errAt(name, prog, at, "BigInt is not available in policies")
	}
	p = Policy{Name: name, Phases: analyzePhases(body), ParamsRO: paramsReadOnly(body)}
	if names := implicitGlobals(prog); len(names) > 0 {
		// declare sloppy implicit globals as the policy's own locals (see implicitGlobals)
		decl, open, close := wrap(src, "\n;var "+strings.Join(names, ", ")+";")
		if a2, err := parse(name, decl); err == nil && checkWrapper(name, a2, open, close) == nil {
			guardGrowth(wrapperBody(a2))
			if p.Program, err = goja.CompileAST(a2, false); err == nil {
				return p, nil
			}
		}
	}
	guardGrowth(body)
	if p.Program, err = goja.CompileAST(prog, false); err != nil {
		var se *goja.CompilerSyntaxError
		var re *goja.CompilerReferenceError
		switch {
		case errors.As(err, &se) && se.File != nil:
			p := se.File.Position(se.Offset)
			return Policy{}, compileErr(name, p.Line, p.Column, se.Message)
		case errors.As(err, &re) && re.File != nil:
			p := re.File.Position(re.Offset)
			return Policy{}, compileErr(name, p.Line, p.Column, re.Message)
		}
		return Policy{}, &Error{File: name, Msg: err.Error()}
	}
	return p, nil
}

// maxPolicyDepth bounds a policy body's reflected AST depth (walkAST levels): under
// the 10000 the load-time checks walk from the program, with room for the wrapper.
const maxPolicyDepth = 9000

// recoverEngine turns a panic of goja's parser or compiler on some malformed source
// (an index out of range in its parser, seen with `var[ ...{000`: an upstream bug)
// into a refusal of that file, so a broken policy never takes the gateway down.
func recoverEngine(name string, err *error) {
	if r := recover(); r != nil {
		*err = &Error{File: name, Msg: "the JavaScript engine cannot parse this file (it failed on it): " + fmt.Sprint(r)}
	}
}

// parse parses wrapped source, mapping parser errors to *Error.
func parse(name, text string) (*ast.Program, error) {
	prog, err := parser.ParseFile(nil, name, text, 0, parser.WithDisableSourceMaps)
	if err != nil {
		var list parser.ErrorList
		var one *parser.Error
		switch {
		case errors.As(err, &list) && len(list) > 0:
			return nil, compileErr(name, list[0].Position.Line, list[0].Position.Column, list[0].Message)
		case errors.As(err, &one):
			return nil, compileErr(name, one.Position.Line, one.Position.Column, one.Message)
		}
		return nil, &Error{File: name, Msg: err.Error()}
	}
	return prog, nil
}

// errAt is a *Error at a node's position.
func errAt(name string, prog *ast.Program, idx file.Idx, msg string) *Error {
	if prog.File == nil || idx == 0 {
		return &Error{File: name, Msg: msg}
	}
	p := prog.File.Position(int(idx) - prog.File.Base())
	return compileErr(name, p.Line, p.Column, msg)
}

// errWrapper is the message for a file that closes its function wrapper early.
const errWrapper = "unexpected '}': a policy file is a function body and cannot close it (unbalanced braces or parentheses)"

// checkWrapper verifies that the parsed program is exactly the wrapper, with the policy
// body running from the wrapper's opening brace (offset open) to its closing one
// (offset close): a file like `}); evil(); (function () {` parses, but its body ends
// early, so it is refused as a syntax error at the brace that closed it.
func checkWrapper(name string, prg *ast.Program, open, close int) error {
	base := 1
	if prg.File != nil {
		base = prg.File.Base()
	}
	at := func(idx file.Idx) error {
		line, col := 1, 1
		if prg.File != nil && idx > 0 {
			p := prg.File.Position(int(idx) - base)
			line, col = p.Line, p.Column
		}
		return compileErr(name, line, col, errWrapper)
	}
	body := wrapperBody(prg)
	if body != nil && int(body.LeftBrace)-base == open && int(body.RightBrace)-base == close && len(prg.Body) == 1 {
		return nil
	}
	if b := blockAt(prg, file.Idx(open+base)); b != nil {
		return at(b.RightBrace) // where the file closed the policy body
	}
	return at(0)
}

// blockAt finds the block statement opening at idx (the policy body), wherever a
// malformed file left it in the tree.
func blockAt(prg *ast.Program, idx file.Idx) *ast.BlockStatement {
	var found *ast.BlockStatement
	walkAST(prg, 64, func(node any) bool {
		if found != nil {
			return false
		}
		if b, ok := node.(*ast.BlockStatement); ok && b.LeftBrace == idx {
			found = b
			return false
		}
		return true
	})
	return found
}

// walkAST calls visit on every AST node (a non-nil pointer) under root, depth first,
// each once, down to maxDepth levels of the reflected tree; visit returns whether to
// go into the node's fields. Unexported fields and the source File are skipped.
// complete is false when part of the tree lay below maxDepth, unvisited.
func walkAST(root any, maxDepth int, visit func(node any) bool) (complete bool) {
	return walkTree(root, maxDepth, func(node, _ any) bool { return visit(node) })
}

// walkTree is walkAST that also gives each node its parent: the nearest node above it
// (nil for root). It is the package's one walk of the tree (parents uses it too).
func walkTree(root any, maxDepth int, visit func(node, parent any) bool) (complete bool) {
	complete = true
	seen := map[uintptr]bool{}
	var walk func(v reflect.Value, up any, depth int)
	walk = func(v reflect.Value, up any, depth int) {
		if depth > maxDepth {
			switch v.Kind() {
			case reflect.Pointer, reflect.Interface:
				complete = complete && v.IsNil()
			case reflect.Slice:
				complete = complete && v.Len() == 0
			case reflect.Struct:
				complete = false
			}
			return
		}
		switch v.Kind() {
		case reflect.Pointer:
			if v.IsNil() || seen[v.Pointer()] {
				return
			}
			seen[v.Pointer()] = true
			node := v.Interface()
			if visit(node, up) {
				walk(v.Elem(), node, depth+1)
			}
		case reflect.Interface:
			if !v.IsNil() {
				walk(v.Elem(), up, depth+1)
			}
		case reflect.Struct:
			for i := 0; i < v.NumField(); i++ {
				if f := v.Type().Field(i); f.IsExported() && f.Name != "File" {
					walk(v.Field(i), up, depth+1)
				}
			}
		case reflect.Slice:
			for i := 0; i < v.Len(); i++ {
				walk(v.Index(i), up, depth+1)
			}
		}
	}
	walk(reflect.ValueOf(root), nil, 0)
	return complete
}

func compileErr(name string, line, col int, msg string) *Error {
	if line == 1 {
		col -= len(wrapPrefix)
		if col < 1 {
			col = 1
		}
	}
	return &Error{File: name, Line: line, Column: col, Msg: msg}
}
