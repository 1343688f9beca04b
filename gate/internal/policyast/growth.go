package policyast

import (
	"math/big"
	"reflect"
	"strings"

	"github.com/dop251/goja/ast"
	"github.com/dop251/goja/file"
	"github.com/dop251/goja/token"
	"github.com/dop251/goja/unistring"
)

// Growth guards. Each `+` (and `+=`), each template literal with substitutions and each
// array literal with a spread is one native step no interrupt can stop, and doubling a
// string with it (`s = s + s`) reaches gigabytes in about thirty steps. compilePolicy
// therefore rewrites them into calls of guard functions that the wrapper receives as
// parameters and lockdown.js defines: they refuse (policy_memory_limit) a string
// longer than maxStringLen units or an array longer than maxArrayLen elements BEFORE
// the step for strings, and after it for array spreads (whose one step is bounded by
// the number of spreads written in the source). See docs/policies.md#growth-limits.
const (
	guardAdd   = "add$gate"   // add$gate(a, b) is a + b
	guardAddAt = "addAt$gate" // addAt$gate(o, k, b) is o[k] += b (b evaluated before o[k] is read)
	guardTpl   = "tpl$gate"   // tpl$gate(q0, e1, q1, ..., en, qn) is `q0${e1}q1...${en}qn`
	guardArr   = "arr$gate"   // arr$gate([...]) checks an array literal's length
	guardSpr   = "spr$gate"   // [...spr$gate(x)]: x has at most maxArrayLen elements
	guardArgs  = "args$gate"  // f(...args$gate(x)): x has at most maxSpreadArgs elements
	guardOSpr  = "ospr$gate"  // {...ospr$gate(x)}: x's index keys are bounded
	reserved   = "$gate"      // suffix of the names above; refused in policies
)

// reservedName reports the first identifier of the policy that ends in "$gate" (the
// wrapper's own names; a policy could otherwise shadow a guard).
func reservedName(body *ast.BlockStatement) string {
	found := ""
	walkAST(body, 10000, func(node any) bool {
		if id, ok := node.(*ast.Identifier); ok && strings.HasSuffix(string(id.Name), reserved) && found == "" {
			found = string(id.Name)
		}
		return found == ""
	})
	return found
}

// bigIntLiteral returns the position of the first BigInt literal (BigInt is not
// available in policies: `x = x * x` on a BigInt doubles its size in one native step).
func bigIntLiteral(body *ast.BlockStatement) file.Idx {
	var at file.Idx
	walkAST(body, 10000, func(node any) bool {
		if n, ok := node.(*ast.NumberLiteral); ok && at == 0 {
			if _, big := n.Value.(*big.Int); big {
				at = n.Idx
			}
		}
		return at == 0
	})
	return at
}

// guardGrowth rewrites the policy body in place (see the constants above).
func guardGrowth(body *ast.BlockStatement) {
	rewrite(reflect.ValueOf(body), 0)
}

var exprType = reflect.TypeOf((*ast.Expression)(nil)).Elem()

// rewrite walks the AST bottom-up and replaces, in every field or slice element of
// type ast.Expression, the nodes guardNode rewrites.
func rewrite(v reflect.Value, depth int) {
	if depth > 20000 {
		return
	}
	switch v.Kind() {
	case reflect.Pointer:
		if !v.IsNil() {
			rewrite(v.Elem(), depth+1)
			if b, ok := v.Interface().(*ast.Binding); ok {
				guardBinding(b)
			}
		}
	case reflect.Interface:
		if v.IsNil() {
			return
		}
		rewrite(v.Elem(), depth+1)
		if v.Type() == exprType && v.CanSet() {
			if e, ok := v.Interface().(ast.Expression); ok {
				if r := guardNode(e); r != nil {
					v.Set(reflect.ValueOf(r))
				}
			}
		}
	case reflect.Struct:
		for i := 0; i < v.NumField(); i++ {
			if f := v.Type().Field(i); f.IsExported() && f.Name != "File" {
				rewrite(v.Field(i), depth+1)
			}
		}
	case reflect.Slice:
		for i := 0; i < v.Len(); i++ {
			rewrite(v.Index(i), depth+1)
		}
	}
}

func ident(name string, at file.Idx) *ast.Identifier {
	return &ast.Identifier{Name: unistring.String(name), Idx: at}
}

func call(name string, at file.Idx, args ...ast.Expression) *ast.CallExpression {
	return &ast.CallExpression{Callee: ident(name, at), LeftParenthesis: at, ArgumentList: args, RightParenthesis: at}
}

// simpleRef reports whether evaluating e twice is the same as once (no getter, no
// call): an identifier or this.
func simpleRef(e ast.Expression) bool {
	switch e.(type) {
	case *ast.Identifier, *ast.ThisExpression:
		return true
	}
	return false
}

// guardNode returns the guarded replacement of e, or nil to keep it.
func guardNode(e ast.Expression) ast.Expression {
	switch x := e.(type) {
	case *ast.BinaryExpression:
		if x.Operator == token.PLUS {
			return call(guardAdd, x.Idx0(), x.Left, x.Right)
		}
	case *ast.AssignExpression:
		if p, ok := x.Left.(*ast.ArrayPattern); ok && x.Operator == token.ASSIGN && p.Rest != nil {
			x.Right = call(guardSpr, x.Right.Idx0(), x.Right) // [a, ...rest] = x drains x
			return nil
		}
		if x.Operator != token.PLUS { // the parser stores += as PLUS
			return nil
		}
		switch l := x.Left.(type) {
		case *ast.Identifier:
			return &ast.AssignExpression{Operator: token.ASSIGN, Left: l, Right: call(guardAdd, x.Idx0(), l, x.Right)}
		case *ast.DotExpression:
			if simpleRef(l.Left) {
				return &ast.AssignExpression{Operator: token.ASSIGN, Left: l, Right: call(guardAdd, x.Idx0(), l, x.Right)}
			}
			key := &ast.StringLiteral{Idx: l.Identifier.Idx, Literal: `"` + string(l.Identifier.Name) + `"`, Value: l.Identifier.Name}
			return call(guardAddAt, x.Idx0(), l.Left, key, x.Right)
		case *ast.BracketExpression:
			return call(guardAddAt, x.Idx0(), l.Left, l.Member, x.Right)
		case *ast.PrivateDotExpression:
			if simpleRef(l.Left) {
				return &ast.AssignExpression{Operator: token.ASSIGN, Left: l, Right: call(guardAdd, x.Idx0(), l, x.Right)}
			}
		}
	case *ast.TemplateLiteral:
		if x.Tag != nil || len(x.Expressions) == 0 || len(x.Elements) != len(x.Expressions)+1 {
			return nil
		}
		args := make([]ast.Expression, 0, 2*len(x.Expressions)+1)
		for i, el := range x.Elements {
			args = append(args, &ast.StringLiteral{Idx: el.Idx, Literal: el.Literal, Value: el.Parsed})
			if i < len(x.Expressions) {
				args = append(args, x.Expressions[i])
			}
		}
		return call(guardTpl, x.Idx0(), args...)
	case *ast.ArrayLiteral:
		spread := false
		for _, v := range x.Value {
			if sp, ok := v.(*ast.SpreadElement); ok {
				sp.Expression = call(guardSpr, sp.Idx0(), sp.Expression)
				spread = true
			}
		}
		if spread {
			return call(guardArr, x.Idx0(), x)
		}
	case *ast.ObjectLiteral:
		for _, p := range x.Value {
			if sp, ok := p.(*ast.SpreadElement); ok {
				sp.Expression = call(guardOSpr, sp.Idx0(), sp.Expression)
			}
		}
	case *ast.CallExpression:
		guardArgList(x.ArgumentList)
	case *ast.NewExpression:
		guardArgList(x.ArgumentList)
	}
	return nil
}

// guardBinding bounds the source of a declaration with a rest element
// (`var [a, ...rest] = x` drains x in one native step).
func guardBinding(b *ast.Binding) {
	if p, ok := b.Target.(*ast.ArrayPattern); ok && p.Rest != nil && b.Initializer != nil {
		b.Initializer = call(guardSpr, b.Initializer.Idx0(), b.Initializer)
	}
}

// guardArgList bounds each spread in an argument list before it is spread (spreading
// is one native step).
func guardArgList(args []ast.Expression) {
	for _, a := range args {
		if sp, ok := a.(*ast.SpreadElement); ok {
			sp.Expression = call(guardArgs, sp.Idx0(), sp.Expression)
		}
	}
}
