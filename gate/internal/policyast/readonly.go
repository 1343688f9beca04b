package policyast

import (
	"github.com/dop251/goja/ast"
	"github.com/dop251/goja/token"
)

// paramsReadOnly reports whether a policy body provably never changes ctx.params nor
// anything reachable from it, and never hands any of it to code that could: every use
// of ctx is a member read ctx.NAME other than ctx.redactAll, and every use of
// ctx.params is a read ctx.params.KEY (or ctx.params["KEY"], or deeper) whose value is only
// compared, tested, negated, measured with typeof or turned into a number or string.
// The value such a policy reads is the one JSON.parse would give, and it is left so,
// so Run hands it to the next policy instead of parsing the arguments again and skips
// its read-back (docs/policies.md#what-a-policy-costs). Anything the proof does not
// understand (a file binding its own ctx, `with`, a computed ctx[...], a call with a
// value from ctx.params, an assignment) makes it false. ctx is also the global object's
// ctx and its own valueOf's result, so `this`, `globalThis` and ctx members other than
// the documented read-only ones (ctxReadMembers) make it false too.
func paramsReadOnly(body *ast.BlockStatement) bool {
	if body == nil || bindsOwnCtx(body) {
		return false
	}
	parent := parents(body)
	return ctxUsesOnly(body, func(params *ast.DotExpression) bool { return paramReadOnly(params, parent) }, parent)
}

// ctxUsesOnly reports whether every use of ctx in body is a member read ctx.NAME, NAME
// one of ctxReadMembers or "params", each ctx.params passing paramsOK, and body
// reaches ctx no other way (this, super, globalThis, shorthand {ctx}).
func ctxUsesOnly(body *ast.BlockStatement, paramsOK func(*ast.DotExpression) bool, parent map[any]any) bool {
	ok := true
	walkAST(body, 10000, func(node any) bool {
		switch x := node.(type) {
		case *ast.PropertyShort: // {ctx}: ctx itself as a value
			ok = ok && x.Name.Name != "ctx"
		case *ast.ThisExpression, *ast.SuperExpression:
			ok = false // the global object in a sloppy function: globalThis.ctx
		case *ast.Identifier:
			if x.Name == "globalThis" {
				ok = false // globalThis.ctx is the same ctx
			}
			if x.Name != "ctx" {
				return ok
			}
			d, member := parent[x].(*ast.DotExpression)
			switch {
			case !member || any(d.Left) != any(x):
				ok = false // ctx used other than as ctx.NAME (a label named ctx included)
			case d.Identifier.Name == "params":
				ok = ok && paramsOK(d)
			case !ctxReadMembers[string(d.Identifier.Name)]:
				ok = false // ctx.redactAll, or ctx.valueOf(), ctx.__lookupGetter__ ... reach ctx.params
			}
		}
		return ok
	})
	return ok
}

// ctxReadMembers are the ctx members a read-only policy may use: none of them gives
// ctx, ctx.params or its getter, nor changes ctx.params (ctx.redactAll does).
var ctxReadMembers = map[string]bool{
	"phase": true, "method": true, "tool": true, "server": true, "toolAccess": true,
	"user": true, "findings": true, "response": true, "tools": true,
	"rateLimitExceeded": true, "warn": true, "redact": true, "mask": true, "hash": true,
	"removeLines": true,
}

// paramReadOnly checks one ctx.params: it must be read as ctx.params.KEY or
// ctx.params["KEY"], possibly further down (ctx.params.a.b, reads of JSON data run no
// code), and that value only consumed.
func paramReadOnly(params *ast.DotExpression, parent map[any]any) bool {
	var cur any = params
	for depth := 0; depth < 1000; depth++ {
		switch m := parent[cur].(type) {
		case *ast.DotExpression:
			if any(m.Left) != cur {
				return false
			}
			cur = m
			continue
		case *ast.BracketExpression:
			if any(m.Left) != cur {
				return false // ctx.params used as a key
			}
			switch m.Member.(type) {
			case *ast.StringLiteral, *ast.NumberLiteral:
			default:
				return false
			}
			cur = m
			continue
		}
		break
	}
	return cur != any(params) && consumed(cur, parent)
}

// consumed reports whether the value of expression e is only compared, tested or
// converted to a primitive where it is used (it cannot be stored, called, passed to a
// function or written through). A && b, a || b, a ?? b and the branches of a ? b : c
// pass their value on, so their own use is checked.
func consumed(e any, parent map[any]any) bool {
	cur := e
	for depth := 0; depth < 1000; depth++ {
		switch p := parent[cur].(type) {
		case *ast.BinaryExpression:
			switch p.Operator {
			case token.LOGICAL_AND, token.LOGICAL_OR, token.COALESCE:
				cur = p
				continue
			case token.STRICT_EQUAL, token.STRICT_NOT_EQUAL, token.EQUAL, token.NOT_EQUAL,
				token.LESS, token.GREATER, token.LESS_OR_EQUAL, token.GREATER_OR_EQUAL,
				token.PLUS, token.MINUS, token.MULTIPLY, token.SLASH, token.REMAINDER:
				return true // a primitive result; only intrinsics convert the operand
			}
			return false // in, instanceof (Symbol.hasInstance gets the value), bitwise, ...
		case *ast.UnaryExpression:
			switch p.Operator {
			case token.NOT, token.TYPEOF, token.VOID, token.MINUS, token.PLUS:
				return !p.Postfix
			}
			return false // delete, ++, --
		case *ast.ConditionalExpression:
			if any(p.Test) == cur {
				return true
			}
			cur = p
			continue
		case *ast.IfStatement:
			return any(p.Test) == cur
		case *ast.WhileStatement:
			return any(p.Test) == cur
		case *ast.DoWhileStatement:
			return any(p.Test) == cur
		case *ast.ForStatement:
			return any(p.Test) == cur
		case *ast.SwitchStatement:
			return any(p.Discriminant) == cur
		case *ast.CaseStatement:
			return any(p.Test) == cur
		case *ast.ExpressionStatement:
			return true // the value is dropped
		}
		return false
	}
	return false
}

// parents maps every AST node (a non-nil pointer) under root to the nearest node
// above it.
func parents(root any) map[any]any {
	out := map[any]any{}
	walkTree(root, 10000, func(node, up any) bool {
		if up != nil {
			out[node] = up
		}
		return true
	})
	return out
}
