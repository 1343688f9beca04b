package gate

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/mcpgate/mcpgate/ctxapi"
)

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
