package gate

import (
	"slices"
	"strings"
	"testing"

	"github.com/mcpgate/mcpgate/ctxapi"
)

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
			p, err := compilePolicy("p.js", []byte(tt.src))
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(p.Phases.Acts, tt.acts) || !slices.Equal(p.Phases.Compared, tt.compared) {
				t.Errorf("acts %v compared %v, want acts %v compared %v", p.Phases.Acts, p.Phases.Compared, tt.acts, tt.compared)
			}
		})
	}
}

// A policy that does nothing in a phase is not run there, and one that acts is.
func TestRunOnlyActingPhases(t *testing.T) {
	g := loadGate(t, map[string]string{
		"a.js": `if (ctx.phase !== "pre") return; ctx.warn("pre")`,
		"b.js": `if (ctx.phase === "post") { ctx.warn("post") }`,
	})
	set := g.Current()
	if acts, _, _ := set.Phases("a.js"); !slices.Equal(acts, []ctxapi.Phase{ctxapi.PhasePre}) {
		t.Fatalf("a.js acts in %v", acts)
	}
	r := run(g, preCall(`{}`))
	if len(r.Warnings) != 1 || r.Warnings[0].Policy != "a.js" {
		t.Fatalf("pre warnings %+v", r.Warnings)
	}
	r = run(g, postCall(`[{"type":"text","text":"x"}]`, ""))
	if len(r.Warnings) != 1 || r.Warnings[0].Policy != "b.js" {
		t.Fatalf("post warnings %+v", r.Warnings)
	}
	none := loadGate(t, map[string]string{"c.js": `if (ctx.phase === "post") ctx.redactAll()`})
	if none.Current().Acts(ctxapi.PhasePre) || !none.Current().Acts(ctxapi.PhasePost) {
		t.Fatal("c.js should act in post only")
	}
}

// The growth rewrite keeps JavaScript's meaning: `+` on numbers and strings, `+=` on
// names, properties and computed properties (each receiver read once), templates.
func TestGrowthRewriteKeepsMeaning(t *testing.T) {
	g := loadGate(t, map[string]string{"p.js": `
var n = 1 + 2, s = "a" + 1 + [2] + {toString: function () { return "o" }}, t = ` + "`x${n}y${s}z`" + `;
var reads = 0, o = {get p() { reads++; return this._p || "" }, set p(v) { this._p = v }};
o.p += "q";
var deep = {a: {b: "c"}}; deep.a.b += "d";
var k = 0, arr = ["x", "y"]; arr[k++] += "!";
var sp = [...arr, ...[1, 2]];
if (n !== 3 || s !== "a12o" || t !== "x3ya12oz" || o.p !== "q" || reads !== 2 || deep.a.b !== "cd" || arr[0] !== "x!" || k !== 1 || sp.length !== 4)
  throw [n, s, t, o.p, reads, deep.a.b, arr[0], k, sp.length].join("|");
`})
	if r := run(g, preCall(`{}`)); r.Reject != nil {
		t.Fatal(r.Reject.Message)
	}
}

// The wrapper's own names and BigInt literals are refused at load, with the file.
func TestGrowthCompileRefusals(t *testing.T) {
	for _, src := range []string{`var add$gate = function (a, b) { return 1 }; "x" + "y";`, `var x = 10n;`} {
		if _, err := compilePolicy("p.js", []byte(src)); err == nil || !strings.Contains(err.Error(), "p.js") {
			t.Errorf("%s: want a compile error naming p.js, got %v", src, err)
		}
	}
}
