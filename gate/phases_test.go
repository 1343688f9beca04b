package gate

import (
	"slices"
	"testing"

	"github.com/mcpgate/mcpgate/ctxapi"
)

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
