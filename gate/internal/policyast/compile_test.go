package policyast

import (
	"slices"
	"strings"
	"testing"

	"github.com/mcpgate/mcpgate/ctxapi"
)

// TestAnalyzePhases: the phases a policy acts in and the ones it compares ctx.phase
// with, as the loader proves them (docs/policies.md#phases).
func TestAnalyzePhases(t *testing.T) {
	const pre, post = ctxapi.PhasePre, ctxapi.PhasePost
	tests := []struct {
		name, src      string
		acts, compared []ctxapi.Phase
	}{
		{"no declaration runs in both", `ctx.warn("x")`, []ctxapi.Phase{post, pre}, nil},
		{"empty file runs nowhere", `// nothing`, nil, nil},
		{"guard clause", `"use strict"; if (ctx.phase !== "post") return; ctx.redactAll()`, []ctxapi.Phase{post}, []ctxapi.Phase{post}},
		{"whole body in an if", `if (ctx.phase === "pre" && ctx.params.force === true) { throw "no" }`, []ctxapi.Phase{pre}, []ctxapi.Phase{pre}},
		{"reversed operands, loose equality", `if ("post" == ctx.phase) ctx.redactAll()`, []ctxapi.Phase{post}, []ctxapi.Phase{post}},
		{"else branch acts in the other phase", `if (ctx.phase === "post") { ctx.redactAll() } else { ctx.warn("w") }`, []ctxapi.Phase{post, pre}, []ctxapi.Phase{post}},
		{"statement after the if acts everywhere", `if (ctx.phase === "pre") { ctx.warn("a") } ctx.warn("b")`, []ctxapi.Phase{post, pre}, []ctxapi.Phase{pre}},
		{"literal declarations first", `var KINDS = ["pii_email"], n = 3; const re = /x/g; function f() {} if (ctx.phase !== "post") return; ctx.redactAll({kinds: KINDS})`, []ctxapi.Phase{post}, []ctxapi.Phase{post}},
		{"a call before the guard acts", `var n = ctx.rateLimitExceeded(5); if (ctx.phase !== "pre") return;`, []ctxapi.Phase{post, pre}, []ctxapi.Phase{pre}},
		{"an effect in an undecided test acts", `if (f() || ctx.phase === "pre") { ctx.warn("x") } function f() { ctx.warn("y"); return false }`, []ctxapi.Phase{post, pre}, []ctxapi.Phase{pre}},
		{"negation", `if (!(ctx.phase === "pre")) return; throw "x"`, []ctxapi.Phase{pre}, []ctxapi.Phase{pre}},
		{"another phase only when named", `if (ctx.phase === "list") { ctx.warn("l") }`, []ctxapi.Phase{"list"}, []ctxapi.Phase{"list"}},
		{"switch names phases, runs in all", `switch (ctx.phase) { case "pre": break; case "list": break }`, []ctxapi.Phase{"list", post, pre}, []ctxapi.Phase{"list", pre}},
		{"a local ctx defeats the proof", `var ctx = {phase: "post"}; if (ctx.phase !== "post") return; throw "x"`, []ctxapi.Phase{post, pre}, []ctxapi.Phase{post}},
		{"a ctx parameter defeats the proof", `if (ctx.phase !== "post") return; [1].forEach(function (ctx) {})`, []ctxapi.Phase{post, pre}, []ctxapi.Phase{post}},
		{"a return value with effects acts", `if (ctx.phase === "pre") return ctx.warn("x");`, []ctxapi.Phase{pre}, []ctxapi.Phase{pre}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, err := Compile("p.js", []byte(tt.src))
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(p.Phases.Acts, tt.acts) || !slices.Equal(p.Phases.Compared, tt.compared) {
				t.Errorf("acts %v compared %v, want acts %v compared %v", p.Phases.Acts, p.Phases.Compared, tt.acts, tt.compared)
			}
		})
	}
}

// TestParamsReadOnly: a policy is proven to only read ctx.params exactly when no
// path to ctx.params can write it.
func TestParamsReadOnly(t *testing.T) {
	tests := []struct {
		name, src string
		want      bool
	}{
		{"strict comparison", `if (ctx.phase === "pre" && ctx.params.force_delete === true) throw "no"`, true},
		{"bracket with a literal", `if (ctx.params["dry-run"] !== undefined) ctx.warn("dry")`, true},
		{"typeof and negation", `if (typeof ctx.params.body !== "string" || !ctx.params.title) throw "bad"`, true},
		{"a test position", `if (ctx.params.flag) throw "x"; while (ctx.params.never) {}`, true},
		{"conditional test", `var n = ctx.params.big ? 2 : 1; if (n > 1) throw "x"`, true},
		{"arithmetic and concatenation give primitives", `if (ctx.params.n * 2 > 10 || "x" + ctx.params.s === "xy") throw "x"`, true},
		{"switch on a value", `switch (ctx.params.mode) { case "a": throw "a"; }`, true},
		{"a deeper read", `if (ctx.params.obj.list.length > 3 || ctx.params.a["b"][0] === "x") throw "x"`, true},
		{"no params at all", `if (ctx.user.callerClass === "untrusted") throw "x"`, true},
		{"other helpers", `if (ctx.rateLimitExceeded(5)) ctx.warn("slow")`, true},

		{"assignment", `ctx.params.body = "x"`, false},
		{"assignment through a member", `ctx.params.obj.x = 1`, false},
		{"compound assignment", `ctx.params.n += 1`, false},
		{"increment", `ctx.params.n++`, false},
		{"delete", `delete ctx.params.x`, false},
		{"ctx.params replaced", `ctx.params = {}`, false},
		{"ctx.params held in a variable", `var p = ctx.params; p.x = 1`, false},
		{"a value held in a variable", `var o = ctx.params.obj; if (o) o.x = 1`, false},
		{"a value passed to a function", `f(ctx.params.obj); function f(o) { o.x = 1 }`, false},
		{"a method called on a value", `ctx.params.list.push(1)`, false},
		{"a method called deeper", `ctx.params.a.list.sort()`, false},
		{"ctx.params as a key", `var o = {}; if (o[ctx.params.k]) throw "x"`, false},
		{"a value passed on by ||", `var o = ctx.params.a || {}; o.x = 1`, false},
		{"a value passed on by a conditional branch", `var o = true ? ctx.params.a : 0; o.x = 1`, false},
		{"instanceof runs Symbol.hasInstance with the value", `class C { static [Symbol.hasInstance](o) { o.x = 1 } } ctx.params.a instanceof C`, false},
		{"computed member", `var k = "x"; if (ctx.params[k]) throw "x"`, false},
		{"computed ctx member", `ctx["params"].x = 1`, false},
		{"ctx as a value", `var c = ctx; c.params.x = 1`, false},
		{"ctx in shorthand", `var o = {ctx}; o.ctx.params.x = 1`, false},
		{"redactAll rewrites params", `ctx.redactAll()`, false},
		{"a local ctx", `var ctx = {params: {}}; ctx.params.x = 1`, false},
		{"a ctx rest parameter", `[1].forEach((...ctx) => 0); if (ctx.params.a) throw "x"`, false},
		{"with", `with (ctx) { params.x = 1 }`, false},
		{"optional chain", `if (ctx.params?.x) throw "x"`, false},
		{"for-in over a value", `for (var k in ctx.params.obj) {}`, false},
		{"ctx through globalThis", `globalThis.ctx.params.x = 1`, false},
		{"ctx through an escaped globalThis", `globalTh\u0069s.ctx.params.x = 1`, false},
		{"ctx through this", `this.ctx.params.x = 1`, false},
		{"ctx through a sloppy function's this", `(function () { return this })().ctx.params.x = 1`, false},
		{"ctx through valueOf", `ctx.valueOf().params.x = 1`, false},
		{"ctx through an escaped ctx's valueOf", `\u0063tx.valueOf().params.x = 1`, false},
		{"the params getter", `ctx.__lookupGetter__("params")().x = 1`, false},
		{"super in an object method", `var o = {m() { return super.x }}; if (o.m()) throw "x"`, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, err := Compile("p.js", []byte(tt.src))
			if err != nil {
				t.Fatal(err)
			}
			if p.ParamsRO != tt.want {
				t.Errorf("paramsReadOnly = %v, want %v", p.ParamsRO, tt.want)
			}
		})
	}
}

// The wrapper's own names and BigInt literals are refused at load, with the file.
func TestGrowthCompileRefusals(t *testing.T) {
	for _, src := range []string{`var add$gate = function (a, b) { return 1 }; "x" + "y";`, `var x = 10n;`} {
		if _, err := Compile("p.js", []byte(src)); err == nil || !strings.Contains(err.Error(), "p.js") {
			t.Errorf("%s: want a compile error naming p.js, got %v", src, err)
		}
	}
}
