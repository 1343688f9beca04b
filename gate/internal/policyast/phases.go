package policyast

import (
	"slices"

	"github.com/dop251/goja/ast"
	"github.com/dop251/goja/token"
	"github.com/mcpgate/mcpgate/ctxapi"
)

// DefaultPhases are the phases a policy runs in unless its source shows it does
// nothing there: the classic policy model runs every file in both
// (docs/decisions.md#policies, docs/policies.md#phases).
var DefaultPhases = []ctxapi.Phase{ctxapi.PhasePre, ctxapi.PhasePost}

// PhaseInfo is what Load learns about a policy's phases from its source.
type PhaseInfo struct {
	// Compared are the phase names the file compares ctx.phase with (===, ==, !==,
	// !=, or a switch case), sorted, each once.
	Compared []ctxapi.Phase
	// Acts are the phases the file runs in: a default phase unless its top-level code
	// provably ends there before doing anything, another phase only when Compared
	// names it (and the same proof does not exclude it). Sorted.
	Acts []ctxapi.Phase
}

// analyzePhases decides at load time which phases a policy body acts in.
//
// The proof is a partial evaluation of the top-level statements with ctx.phase fixed
// to one phase: declarations of literals and functions do nothing; an `if` whose test
// is decided by comparisons of ctx.phase with string literals (combined with !, &&
// and ||) takes its branch; a `return` ends the file. Reaching the end, or a return,
// before any other statement means the file does nothing in that phase. Anything not
// understood counts as acting. A file that binds its own `ctx` or uses `with` gets no
// proof (it runs in every default phase and every phase it compares).
func analyzePhases(body *ast.BlockStatement) PhaseInfo {
	var info PhaseInfo
	if body == nil {
		info.Acts = slices.Clone(DefaultPhases)
		return info
	}
	seen := map[ctxapi.Phase]bool{}
	opaque := bindsOwnCtx(body)
	walkAST(body, 10000, func(node any) bool {
		switch x := node.(type) {
		case *ast.BinaryExpression:
			if name, ok := phaseComparison(x); ok {
				seen[name] = true
			}
		case *ast.SwitchStatement:
			if isCtxPhase(x.Discriminant) {
				for _, c := range x.Body {
					if s, ok := c.Test.(*ast.StringLiteral); ok {
						seen[ctxapi.Phase(s.Value)] = true
					}
				}
			}
		}
		return true
	})
	for p := range seen {
		info.Compared = append(info.Compared, p)
	}
	slices.Sort(info.Compared)
	candidates := slices.Clone(DefaultPhases)
	for _, p := range info.Compared {
		if !slices.Contains(candidates, p) {
			candidates = append(candidates, p)
		}
	}
	for _, p := range candidates {
		if opaque || !quietIn(body.List, p) {
			info.Acts = append(info.Acts, p)
		}
	}
	slices.Sort(info.Acts)
	return info
}

// bindsOwnCtx reports whether a policy body declares its own ctx (a variable,
// function, parameter, catch parameter or class of that name) or uses `with`, so that
// a name ctx in it may not be the wrapper's.
func bindsOwnCtx(body *ast.BlockStatement) bool {
	opaque := false
	walkAST(body, 10000, func(node any) bool {
		switch x := node.(type) {
		case *ast.WithStatement:
			opaque = true
		case *ast.Binding:
			opaque = opaque || bindsCtx(x.Target)
		case *ast.FunctionLiteral:
			if x.Name != nil && x.Name.Name == "ctx" {
				opaque = true
			}
			if x.ParameterList != nil {
				for _, p := range x.ParameterList.List {
					opaque = opaque || bindsCtx(p.Target)
				}
				if x.ParameterList.Rest != nil {
					opaque = opaque || bindsCtx(x.ParameterList.Rest)
				}
			}
		case *ast.ArrowFunctionLiteral:
			if x.ParameterList != nil {
				for _, p := range x.ParameterList.List {
					opaque = opaque || bindsCtx(p.Target)
				}
				if x.ParameterList.Rest != nil {
					opaque = opaque || bindsCtx(x.ParameterList.Rest)
				}
			}
		case *ast.CatchStatement:
			opaque = opaque || bindsCtx(x.Parameter)
		case *ast.ClassLiteral:
			if x.Name != nil && x.Name.Name == "ctx" {
				opaque = true
			}
		}
		return !opaque
	})
	return opaque
}

// bindsCtx reports whether a binding target declares a name ctx.
func bindsCtx(t any) bool {
	found := false
	walkAST(t, 64, func(node any) bool {
		if id, ok := node.(*ast.Identifier); ok && id.Name == "ctx" {
			found = true
		}
		return !found
	})
	return found
}

// isCtxPhase matches ctx.phase and ctx["phase"].
func isCtxPhase(e ast.Expression) bool {
	switch x := e.(type) {
	case *ast.DotExpression:
		id, ok := x.Left.(*ast.Identifier)
		return ok && id.Name == "ctx" && x.Identifier.Name == "phase"
	case *ast.BracketExpression:
		id, ok := x.Left.(*ast.Identifier)
		s, lit := x.Member.(*ast.StringLiteral)
		return ok && lit && id.Name == "ctx" && s.Value == "phase"
	}
	return false
}

// phaseComparison matches ctx.phase OP "name" or "name" OP ctx.phase for the four
// equality operators.
func phaseComparison(x *ast.BinaryExpression) (ctxapi.Phase, bool) {
	switch x.Operator {
	case token.STRICT_EQUAL, token.EQUAL, token.STRICT_NOT_EQUAL, token.NOT_EQUAL:
	default:
		return "", false
	}
	lit, ok := x.Right.(*ast.StringLiteral)
	other := x.Left
	if !ok {
		lit, ok = x.Left.(*ast.StringLiteral)
		other = x.Right
	}
	if !ok || !isCtxPhase(other) {
		return "", false
	}
	return ctxapi.Phase(lit.Value), true
}

// tri is a three-valued truth: unknown, true or false.
type tri int8

const (
	unknown tri = iota
	yes
	no
)

func triOf(b bool) tri {
	if b {
		return yes
	}
	return no
}

// decide evaluates a test with ctx.phase fixed to phase, when comparisons of ctx.phase
// with literals decide it.
func decide(e ast.Expression, phase ctxapi.Phase) tri {
	switch x := e.(type) {
	case *ast.BinaryExpression:
		if name, ok := phaseComparison(x); ok {
			eq := name == phase
			if x.Operator == token.STRICT_NOT_EQUAL || x.Operator == token.NOT_EQUAL {
				eq = !eq
			}
			return triOf(eq)
		}
		l, r := decide(x.Left, phase), decide(x.Right, phase)
		switch x.Operator {
		case token.LOGICAL_AND:
			if l == no || r == no { // `a && b` is falsy if either is; its side effects do not matter in a test that then skips
				if l == no {
					return no
				}
				return unknownIfEffects(x.Left, no)
			}
			if l == yes && r == yes {
				return yes
			}
		case token.LOGICAL_OR:
			if l == yes {
				return yes
			}
			if r == yes {
				return unknownIfEffects(x.Left, yes)
			}
			if l == no && r == no {
				return no
			}
		}
	case *ast.UnaryExpression:
		if x.Operator == token.NOT && !x.Postfix {
			switch decide(x.Operand, phase) {
			case yes:
				return no
			case no:
				return yes
			}
		}
	}
	return unknown
}

// unknownIfEffects returns t when e, evaluated first, cannot act (no call, assignment
// or other effect), else unknown.
func unknownIfEffects(e ast.Expression, t tri) tri {
	if pure(e) {
		return t
	}
	return unknown
}

// pure reports whether evaluating e can neither act nor throw: literals, functions,
// and arrays and objects of them.
func pure(e ast.Expression) bool {
	switch x := e.(type) {
	case nil:
		return true
	case *ast.StringLiteral, *ast.NumberLiteral, *ast.BooleanLiteral, *ast.NullLiteral,
		*ast.RegExpLiteral, *ast.FunctionLiteral, *ast.ArrowFunctionLiteral:
		return true
	case *ast.TemplateLiteral:
		return x.Tag == nil && len(x.Expressions) == 0
	case *ast.ArrayLiteral:
		for _, v := range x.Value {
			if !pure(v) {
				return false
			}
		}
		return true
	case *ast.ObjectLiteral:
		for _, p := range x.Value {
			k, ok := p.(*ast.PropertyKeyed)
			if !ok || k.Computed || k.Kind != ast.PropertyKindValue || !pure(k.Value) {
				return false
			}
		}
		return true
	case *ast.BinaryExpression:
		if _, ok := phaseComparison(x); ok {
			return true
		}
		if x.Operator == token.LOGICAL_AND || x.Operator == token.LOGICAL_OR {
			return pure(x.Left) && pure(x.Right)
		}
	case *ast.UnaryExpression:
		return x.Operator == token.NOT && !x.Postfix && pure(x.Operand)
	}
	return false
}

// quietIn reports whether the statements, run with ctx.phase fixed to phase, provably
// return or end before doing anything.
func quietIn(list []ast.Statement, phase ctxapi.Phase) bool {
	ended, quiet := runQuiet(list, phase)
	return quiet || ended
}

// runQuiet walks statements in order: ended is true when a return is reached with
// nothing done; quiet is true when the list completes with nothing done.
func runQuiet(list []ast.Statement, phase ctxapi.Phase) (ended, quiet bool) {
	for _, st := range list {
		ended, quiet := stmtQuiet(st, phase)
		if ended {
			return true, false
		}
		if !quiet {
			return false, false
		}
	}
	return false, true
}

func stmtQuiet(st ast.Statement, phase ctxapi.Phase) (ended, quiet bool) {
	switch x := st.(type) {
	case nil, *ast.EmptyStatement, *ast.FunctionDeclaration:
		return false, true
	case *ast.ExpressionStatement:
		_, directive := x.Expression.(*ast.StringLiteral)
		return false, directive
	case *ast.VariableStatement:
		return false, pureBindings(x.List)
	case *ast.LexicalDeclaration:
		return false, pureBindings(x.List)
	case *ast.ReturnStatement:
		return pure(x.Argument), false
	case *ast.BlockStatement:
		return runQuiet(x.List, phase)
	case *ast.IfStatement:
		switch decide(x.Test, phase) {
		case yes:
			return stmtQuiet(x.Consequent, phase)
		case no:
			return stmtQuiet(x.Alternate, phase)
		}
	}
	return false, false
}

func pureBindings(list []*ast.Binding) bool {
	for _, b := range list {
		if _, ok := b.Target.(*ast.Identifier); !ok || !pure(b.Initializer) {
			return false
		}
	}
	return true
}
