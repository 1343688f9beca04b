package gate

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/mcpgate/mcpgate/vocab"
)

func TestRemoveLinesHelper(t *testing.T) {
	g := loadGate(t, map[string]string{"p.js": `
var co = ["co-authored-by:"];
switch (ctx.params.bad) {
case 1: ctx.removeLines("x"); break;
case 2: ctx.removeLines("x", "co-authored-by:"); break;
case 3: ctx.removeLines("x", [""]); break;
case 4: ctx.removeLines("x", ["a".repeat(257)]); break;
case 5: ctx.removeLines("x", new Array(65).fill("a")); break;
case 6: ctx.removeLines("x", [1]); break;
case 7: ctx.removeLines("x", new Proxy(["a"], {})); break;
case 8: ctx.removeLines("x", Object.defineProperty(["a"], 0, {get: function () { throw "no"; }})); break;
case 9: ctx.removeLines(undefined, [{}]); break;
case 10: ctx.removeLines("x", ["a\nb"]); break;
case 11: ctx.removeLines("\n".repeat((1 << 20) + 1), new Array(63).fill("a")); break; // over maxLineWork
}
if (ctx.params.ok) {
  var s = "Fix.\n\nCo-Authored-By: Bot <bot@example.com>\n";
  var kept = "no trailer\n";
  ctx.params.body = ctx.removeLines(ctx.params.body, co);
  ctx.params.out = [ctx.removeLines(s, co), ctx.removeLines(kept, co) === kept,
    ctx.removeLines(undefined, co) === undefined, ctx.removeLines(null, co), ctx.removeLines(5, co),
    ctx.removeLines(s, []) === s, ctx.removeLines(s, ["a".repeat(256)]) === s,
    ctx.removeLines("\n".repeat(1 << 20), new Array(63).fill("a")).length,
    typeof ctx.removeLines(new String(s), co)].join("|");
}`})
	for i := 1; i <= 11; i++ {
		r := run(g, preCall(`{"bad":`+itoa(i)+`}`))
		if r.Reject == nil || r.Reject.Code != vocab.ReasonPolicyThrow || !strings.HasPrefix(r.Reject.Message, "TypeError") {
			t.Errorf("bad %d: %+v", i, r.Reject)
		}
	}
	r := run(g, preCall(`{"ok":true,"body":"Body.\nco-authored-by: x\n"}`))
	var got struct{ Body, Out string }
	if err := json.Unmarshal(r.Params, &got); err != nil || r.Reject != nil {
		t.Fatalf("%+v %s %v", r.Reject, r.Params, err)
	}
	if want := "Fix.\n|true|true||5|true|true|1048576|object"; got.Body != "Body.\n" || got.Out != want {
		t.Fatalf("got %+v, want body %q and out %q", got, "Body.\n", want)
	}
	// a body that is not there stays absent, and an unchanged one is no change
	for _, params := range []string{`{"ok":1}`, `{"ok":1,"body":"clean\n"}`} {
		r := run(g, preCall(params))
		var m map[string]any
		if err := json.Unmarshal(r.Params, &m); err != nil || r.Reject != nil {
			t.Fatalf("%s: %+v %v", params, r.Reject, err)
		}
		if _, has := m["body"]; has != strings.Contains(params, "body") {
			t.Errorf("%s: body %v", params, m["body"])
		}
	}
}

// TestWorkloadProofs: the proofs docs/policies.md claims for the benchmark workload's
// idiomatic policies (the force_delete guard and the untrusted guard are read-only), so
// the benchmark times the paths the docs describe.
func TestWorkloadProofs(t *testing.T) {
	g := loadGate(t, idiomaticPolicies)
	want := map[string]bool{
		"10-redact-email.js":         false,
		"20-block-force-delete.js":   true,
		"30-strip-co-authored-by.js": false,
		"40-untrusted-readonly.js":   true,
	}
	for _, p := range g.Current().policies {
		if p.ParamsRO != want[p.Name] {
			t.Errorf("%s: read-only %v, want %v", p.Name, p.ParamsRO, want[p.Name])
		}
	}
}
