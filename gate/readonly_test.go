package gate

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/mcpgate/mcpgate/ctxapi"
)

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
			p, err := compilePolicy("p.js", []byte(tt.src))
			if err != nil {
				t.Fatal(err)
			}
			if p.ParamsRO != tt.want {
				t.Errorf("paramsReadOnly = %v, want %v", p.ParamsRO, tt.want)
			}
		})
	}
}

// TestReadOnlyPolicyHandsOnParams: a policy proven to only read ctx.params hands the
// parsed value to the next one; what the next one sees and sends is as if each had
// parsed the arguments itself, and a write by a policy that is not proven read-only is
// still read back.
func TestReadOnlyPolicyHandsOnParams(t *testing.T) {
	g := loadGate(t, map[string]string{
		"10-read.js":  `if (ctx.params.force === true) throw "no"; if (typeof ctx.params.obj !== "object") throw "shape";`,
		"20-write.js": `ctx.params.obj.n += 1; ctx.params.seen = Object.keys(ctx.params).join(",");`,
		"30-read.js":  `if (ctx.params.obj.n !== 2) throw "lost " + ctx.params.obj.n;`,
		"40-alias.js": `var o = ctx.params.obj; o.n = 7;`,
		"50-read.js":  `if (ctx.params.obj.n !== 7) throw "alias lost";`,
	})
	for i := 0; i < 3; i++ { // the same runtime, again and again
		res := g.Current().Run(context.Background(), preCall(`{"force": false, "obj": {"n": 1}}`))
		if res.Reject != nil {
			t.Fatalf("rejected: %+v", res.Reject)
		}
		var got map[string]any
		if err := json.Unmarshal(res.Params, &got); err != nil {
			t.Fatal(err)
		}
		if got["seen"] != "force,obj" || got["obj"].(map[string]any)["n"] != 7.0 || !res.Changed {
			t.Errorf("params %s changed %v", res.Params, res.Changed)
		}
	}
	set := g.Current()
	for _, p := range set.policies {
		want := p.Name == "10-read.js" || p.Name == "30-read.js" || p.Name == "50-read.js"
		if p.ParamsRO != want {
			t.Errorf("%s: paramsRO %v, want %v", p.Name, p.ParamsRO, want)
		}
	}
	// a read-only policy alone changes nothing
	g2 := loadGate(t, map[string]string{"a.js": `if (ctx.params.x === 1) ctx.warn("one")`})
	res := g2.Current().Run(context.Background(), &ctxapi.Call{Phase: ctxapi.PhasePre, Tool: "t", Params: json.RawMessage(`{"x": 1, "y" : [1,2]}`)})
	if res.Changed || string(res.Params) != `{"x": 1, "y" : [1,2]}` || len(res.Warnings) != 1 {
		t.Errorf("read-only policy: changed %v params %s warnings %v", res.Changed, res.Params, res.Warnings)
	}
}

// TestReadOnlyProofHoles: a write to ctx.params that does not name ctx.params is read
// back, reaches the upstream, and later policies see what is sent.
func TestReadOnlyProofHoles(t *testing.T) {
	for _, src := range []string{
		`globalThis.ctx.params.x = 2`,
		`this.ctx.params.x = 2`,
		`ctx.valueOf().params.x = 2`,
		`(function () { return this })().ctx.params.x = 2`,
	} {
		t.Run(src, func(t *testing.T) {
			for _, files := range []map[string]string{
				{"10.js": src},
				{"10.js": src, "20.js": `if (ctx.params.x !== 2) throw "later saw " + ctx.params.x`},
			} {
				g := loadGate(t, files)
				res := g.Current().Run(context.Background(), preCall(`{"x":1}`))
				if res.Reject != nil || !res.Changed || string(res.Params) != `{"x":2}` {
					t.Errorf("%d files: reject %v changed %v params %s", len(files), res.Reject, res.Changed, res.Params)
				}
			}
		})
	}
}
