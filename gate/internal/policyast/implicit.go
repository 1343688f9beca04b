package policyast

import (
	"sort"
	"strings"

	"github.com/dop251/goja"
	"github.com/dop251/goja/ast"
	"github.com/dop251/goja/token"
)

// builtinGlobals are the names of a plain runtime's globals; an assignment to one of
// them is never turned into a local.
var builtinGlobals = func() map[string]bool {
	m := map[string]bool{"ctx": true, "ctx$gate": true, "arguments": true, "console": true}
	for _, k := range goja.New().GlobalObject().GetOwnPropertyNames() {
		m[k] = true
	}
	return m
}()

// implicitGlobals returns the names a sloppy policy assigns without declaring them
// (`for (i = 0; ...)`, `count++`, `[a, b] = pair`), minus builtins and names the
// policy declares with let, const or class at its top level. The wrapper declares
// them with var at its end (hoisted, so "use strict" stays the first statement), which
// keeps them inside the policy's own scope: globalThis itself is non-extensible, so
// no call and no other policy can ever see them.
func implicitGlobals(prg *ast.Program) []string {
	assigned := map[string]bool{}
	var target func(n any)
	target = func(n any) {
		switch x := n.(type) {
		case *ast.Identifier:
			assigned[string(x.Name)] = true
		case *ast.ArrayPattern:
			for _, e := range x.Elements {
				target(e)
			}
			target(x.Rest)
		case *ast.ObjectPattern:
			for _, p := range x.Properties {
				switch q := p.(type) {
				case *ast.PropertyShort:
					assigned[string(q.Name.Name)] = true
				case *ast.PropertyKeyed:
					target(q.Value)
				}
			}
			target(x.Rest)
		case *ast.AssignExpression:
			target(x.Left)
		}
	}
	lexical := map[string]bool{}
	walkAST(prg, 10000, func(node any) bool {
		switch x := node.(type) {
		case *ast.AssignExpression:
			target(x.Left)
		case *ast.UnaryExpression:
			if x.Operator == token.INCREMENT || x.Operator == token.DECREMENT {
				target(x.Operand)
			}
		case *ast.ForIntoExpression:
			target(x.Expression)
		case *ast.Identifier, *ast.PrivateIdentifier:
			return false
		}
		return true
	})
	// top-level lexical names of the wrapper function would clash with a var
	if fn := wrapperBody(prg); fn != nil {
		for _, st := range fn.List {
			switch d := st.(type) {
			case *ast.LexicalDeclaration:
				for _, b := range d.List {
					collectBinding(b.Target, lexical)
				}
			case *ast.ClassDeclaration:
				if d.Class != nil && d.Class.Name != nil {
					lexical[string(d.Class.Name.Name)] = true
				}
			}
		}
	}
	var names []string
	for n := range assigned {
		if !builtinGlobals[n] && !lexical[n] && isPlainIdent(n) {
			names = append(names, n)
		}
	}
	sort.Strings(names)
	return names
}

func collectBinding(t ast.BindingTarget, into map[string]bool) {
	switch x := t.(type) {
	case *ast.Identifier:
		into[string(x.Name)] = true
	case *ast.ArrayPattern:
		for _, e := range x.Elements {
			if b, ok := e.(ast.BindingTarget); ok {
				collectBinding(b, into)
			}
		}
	case *ast.ObjectPattern:
		for _, p := range x.Properties {
			switch q := p.(type) {
			case *ast.PropertyShort:
				into[string(q.Name.Name)] = true
			case *ast.PropertyKeyed:
				if b, ok := q.Value.(ast.BindingTarget); ok {
					collectBinding(b, into)
				}
			}
		}
	}
}

// wrapperBody finds the policy body of the wrapper
// `(function (ctx$gate, ...) { const ctx = ctx$gate; return function () { ... }; })`, or
// nil when the program does not have exactly that shape.
func wrapperBody(prg *ast.Program) *ast.BlockStatement {
	if len(prg.Body) == 0 {
		return nil
	}
	es, ok := prg.Body[0].(*ast.ExpressionStatement)
	if !ok {
		return nil
	}
	outer, ok := es.Expression.(*ast.FunctionLiteral)
	if !ok || outer.Body == nil || len(outer.Body.List) != 2 {
		return nil
	}
	if _, ok := outer.Body.List[0].(*ast.LexicalDeclaration); !ok {
		return nil
	}
	ret, ok := outer.Body.List[1].(*ast.ReturnStatement)
	if !ok {
		return nil
	}
	inner, ok := ret.Argument.(*ast.FunctionLiteral)
	if !ok {
		return nil
	}
	return inner.Body
}

func isPlainIdent(s string) bool {
	return s != "" && !strings.ContainsAny(s, " \t\n;,()")
}
