package gate

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/mcpgate/mcpgate/ctxapi"
)

// TestParamsMembers: the proof that a policy uses ctx.params only as ctx.params.KEY,
// and the keys it names.
func TestParamsMembers(t *testing.T) {
	tests := []struct {
		name, src string
		keys      []string // nil: not keyed
	}{
		{"a read", `if (ctx.params.force_delete === true) throw "no"`, []string{"force_delete"}},
		{"a write", `ctx.params.body = "x"`, []string{"body"}},
		{"read, test and write", `var b = ctx.params.body; if (/x/.test(b)) ctx.params.body = b.replace(/x/g, "")`, []string{"body"}},
		{"a bracket with a literal", `ctx.params["dry-run"] = true; if (ctx.params["a b"]) throw "x"`, []string{"a b", "dry-run"}},
		{"through a value", `ctx.params.obj.n += 1; ctx.params.list.push(2); f(ctx.params.o); function f(o) { o.x = 1 }`, []string{"list", "o", "obj"}},
		{"compound, increment, destructuring targets", `ctx.params.n++; ctx.params.m *= 2; [ctx.params.a] = [1]; ({x: ctx.params.b} = {x: 2})`, []string{"a", "b", "m", "n"}},
		{"a value held in a variable", `var o = ctx.params.obj; o.x = 1`, []string{"obj"}},
		{"keys named like Object.prototype's", `ctx.params.constructor = 1; ctx.params.toString = "s"`, []string{"constructor", "toString"}},
		{"no params at all", `if (ctx.user.callerClass === "untrusted") throw "x"`, []string{}},
		{"keys beyond ASCII", `ctx.params["é"] = ctx.params.café + ctx.params["😀"]`, []string{"café", "é", "😀"}},
		{"a key holding a lone surrogate", `ctx.params["\ud800"] = 1`, nil},
		{"other ctx members", `if (ctx.rateLimitExceeded(5)) ctx.warn("slow " + ctx.redact(ctx.params.s))`, []string{"s"}},

		{"ctx.params as a value", `var p = ctx.params; p.x = 1`, nil},
		{"ctx.params passed on", `f(ctx.params); function f(p) {}`, nil},
		{"ctx.params spread", `var o = {...ctx.params}`, nil},
		{"ctx.params destructured", `var {body} = ctx.params`, nil},
		{"Object.keys", `if (Object.keys(ctx.params).length > 3) throw "x"`, nil},
		{"JSON.stringify", `ctx.warn(JSON.stringify(ctx.params))`, nil},
		{"for-in", `for (var k in ctx.params) {}`, nil},
		{"in", `if ("x" in ctx.params) throw "x"`, nil},
		{"a computed key", `var k = "x"; ctx.params[k] = 1`, nil},
		{"a number key", `ctx.params[0] = 1`, nil},
		{"delete", `delete ctx.params.x`, nil},
		{"a method call on ctx.params", `ctx.params.hasOwnProperty("x")`, nil},
		{"a call of a member with this ctx.params", `ctx.params.f()`, nil},
		{"an optional call", `ctx.params.f?.()`, nil},
		{"an optional member", `if (ctx.params?.x) throw "x"`, nil},
		{"a tagged template", "ctx.params.tag`x`", nil},
		{"new", `new ctx.params.C()`, nil},
		{"__proto__", `ctx.params.__proto__ = null`, nil},
		{"__proto__ in brackets", `ctx.params["__proto__"] = {}`, nil},
		{"toJSON", `ctx.params.toJSON = function () { return [] }`, nil},
		{"ctx.params replaced", `ctx.params = {}`, nil},
		{"redactAll rewrites params", `ctx.redactAll(); ctx.params.x = 1`, nil},
		{"ctx as a value", `var c = ctx; c.params.x = 1`, nil},
		{"a local ctx", `var ctx = {params: {}}; ctx.params.x = 1`, nil},
		{"with", `with (ctx.params) { x = 1 }`, nil},
		{"globalThis", `globalThis.ctx.params.x = 1`, nil},
		{"this", `this.ctx.params.x = 1`, nil},
		{"valueOf", `ctx.valueOf().params.x = 1`, nil},
		{"the params getter", `ctx.__lookupGetter__("params")().x = 1`, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, err := compilePolicy("p.js", []byte(tt.src))
			if err != nil {
				t.Fatal(err)
			}
			if p.Keyed != (tt.keys != nil) || (tt.keys != nil && !slices.Equal(p.Keys, tt.keys)) {
				t.Errorf("keyed %v keys %q, want keyed %v keys %q", p.Keyed, p.Keys, tt.keys != nil, tt.keys)
			}
		})
	}
}

// TestDeepPolicyRefused: a policy nested deeper than the load-time proofs walk is
// refused, not proven: past the walk's depth a use of ctx.params (or a name ending in
// $gate) would go unseen.
func TestDeepPolicyRefused(t *testing.T) {
	for _, tt := range []struct {
		name, src string
		ok        bool
	}{
		{"nested arrays", `ctx.params.a = 1; var q = ` + strings.Repeat("[", 3000) + `ctx.params.zz = Object.keys(ctx.params).join()` + strings.Repeat("]", 3000), false},
		{"nested blocks", strings.Repeat("{", 3000) + `var p = ctx.params;` + strings.Repeat("}", 3000), false},
		{"moderately nested", `var q = ` + strings.Repeat("[", 200) + `ctx.params.a` + strings.Repeat("]", 200), true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			p, err := compilePolicy("p.js", []byte(tt.src))
			if (err == nil) != tt.ok {
				t.Fatalf("compile error %v (keyed %v), want ok %v", err, p.Keyed, tt.ok)
			}
		})
	}
}

// keyedPolicies are policies proven keyed, each with the effect on the arguments that
// keyedParams and spliceParams must reproduce exactly as the whole value would.
var keyedPolicies = []string{
	`if (ctx.params.force_delete === true) throw "force_delete is blocked";`,
	`var b = ctx.params.body; if (typeof b === "string" && /co-authored-by:/i.test(b)) ctx.params.body = b.replace(/^co-authored-by:.*$\n?/gim, "").replace(/\n{3,}/g, "\n\n");`,
	`ctx.params.body = ctx.params.body;`,                                                // restores: no change
	`var o = ctx.params.obj; if (o && typeof o === "object") { o.n = (o.n || 0) + 1; }`, // through a value
	`ctx.params.added = [1, {"k": "v"}]; ctx.params.also = "é\u2028";`,                  // new keys, in order
	`ctx.params.body = undefined;`,                                                      // dropped as JSON.stringify drops it
	`ctx.params.n = 1e21; ctx.params.m = -0; ctx.params.x = NaN;`,
	`ctx.params.obj = {toJSON: function (k) { return "key " + k; }};`,
	`ctx.params.obj = {get g() { return 7; }};`,
	`if (ctx.params.list) ctx.params.list.push(ctx.params.list.length);`,
	`ctx.params.constructor = ctx.params.constructor === Object ? "inherited" : "own"; ctx.params.toString = 1;`,
	`ctx.params["a\"b"] = ctx.params["a\"b"] + "!";`,
	`ctx.params.body = "x".repeat(3);`,
	`if (ctx.params.obj) ctx.params.obj = ctx.params.obj;`,
	`ctx.params.fn = function () {}; ctx.params.sym = Symbol("s");`,                                             // dropped: not JSON
	`ctx.params.body = {self: null}; ctx.params.body.self = ctx.params.body;`,                                   // a cycle: bad shape
	`var o = ctx.params.obj; if (o && typeof o === "object" && "n" in o) { var n = o.n; delete o.n; o.n = n; }`, // keys reordered: no change
	`ctx.params["é"] = ctx.params["é"] + "!"; ctx.params.café = String(ctx.params.café);`,                       // keys beyond ASCII
	`if (typeof ctx.params.body === "string") ctx.params.body = "😀".slice(1) + ctx.params.body;`,                // a lone surrogate, escaped by the read-back
	`ctx.params.lone = "\udc00"; ctx.params["\ufffd"] = ctx.params["\ufffd"]; ctx.params["\\ud800"] = ctx.params["\\ud800"];`,
}

// keyedParamsInputs are arguments the differential tests run each keyed policy on.
var keyedParamsInputs = []string{
	`{"owner":"acme","body":"Fix it.\n\nCo-Authored-By: A <a@example.com>\n","force_delete":false}`,
	`{"force_delete": true}`,
	`{}`,
	`{ "body" : "x" , "obj" : { "n" : 1 } , "list" : [ 1 , 2 ] }`,
	`{"b\u006fdy": "escaped key", "obj": null}`,
	`{"2": "b", "1": "a", "body": "y", "constructor": 5}`,
	`{"obj": {"n": 1, "deep": [[[{"a": [true, false, null]}]]]}, "n": 1.50, "big": 1e400}`,
	`{"body": "é 😀 \u00e9 \/ \b\f\r\t", "a\"b": "q"}`,
	`{"body": "a", "body": "b"}`, // a duplicate: the whole value
	`{"body": "\ud83d\ude00"}`,   // a surrogate escape: the whole value
	`{"body": "x", "bad": [1,]}`, // invalid
	`[1, 2]`,                     // not an object
	`{"body": "x"} trailing`,     // invalid
	`{"body":"x","list":[],"obj":{},"s":"\u0000"}`,
	`{"obj":{"n":1,"m":2},"z":1}`,
	`{"é":"x","caf\u00e9":"y","body":"b"}`,
	`{"\ufffd":"replacement","\\ud800":"backslash","body":"x"}`,
}

// runBoth runs one call through a set and through a copy of it whose policies are all
// treated as not keyed (each builds the whole value), and fails unless both reject
// alike or send arguments equal as JSON.
func runBoth(t *testing.T, set *Set, call func() *ctxapi.Call) {
	t.Helper()
	whole := *set
	whole.policies = slices.Clone(set.policies)
	for i := range whole.policies {
		whole.policies[i].Keyed, whole.policies[i].Keys = false, nil
	}
	a := set.Run(context.Background(), call())
	b := whole.Run(context.Background(), call())
	if (a.Reject == nil) != (b.Reject == nil) {
		t.Fatalf("keyed reject %+v, whole %+v", a.Reject, b.Reject)
	}
	if a.Reject != nil {
		if a.Reject.Code != b.Reject.Code || a.Reject.Policy != b.Reject.Policy {
			t.Fatalf("keyed reject %+v, whole %+v", a.Reject, b.Reject)
		}
		return
	}
	if a.Changed != b.Changed || !jsonEqual(a.Params, b.Params) || len(a.Warnings) != len(b.Warnings) {
		t.Fatalf("keyed: changed %v params %s; whole: changed %v params %s", a.Changed, a.Params, b.Changed, b.Params)
	}
	if a.Changed && !json.Valid(a.Params) {
		t.Fatalf("keyed params are not JSON: %s", a.Params)
	}
	if !a.Changed && !bytes.Equal(a.Params, call().Params) {
		t.Fatalf("unchanged, yet the params differ from the input: %s", a.Params)
	}
}

// TestKeyedParamsMatchWhole: every keyed policy, alone and chained with policies that
// build the whole value, on every input, sends what building the whole value sends.
func TestKeyedParamsMatchWhole(t *testing.T) {
	for i, src := range keyedPolicies {
		p, err := compilePolicy("p.js", []byte(src))
		if err != nil || !p.Keyed {
			t.Fatalf("policy %d is not keyed (%v): %s", i, err, src)
		}
	}
	whole := `ctx.params.seen = Object.keys(ctx.params).length;` // builds the whole value
	for i, src := range keyedPolicies {
		for _, files := range []map[string]string{
			{"10.js": src},
			{"10.js": src, "20.js": src},
			{"10.js": whole, "20.js": src, "30.js": whole},
			{"10.js": src, "20.js": keyedPolicies[(i+1)%len(keyedPolicies)]},
		} {
			g := loadGate(t, files)
			for _, in := range keyedParamsInputs {
				t.Run(fmt.Sprintf("%d/%d/%s", i, len(files), in), func(t *testing.T) {
					runBoth(t, g.Current(), func() *ctxapi.Call { return preCall(in) })
				})
			}
		}
	}
}

// TestKeyedParamsReadOnlyInPost: in post, a keyed object is frozen like the whole value.
func TestKeyedParamsReadOnlyInPost(t *testing.T) {
	g := loadGate(t, map[string]string{"p.js": `"use strict"; if (ctx.phase === "post") ctx.params.body = "x";`})
	res := g.Current().Run(context.Background(), &ctxapi.Call{Phase: ctxapi.PhasePost, Tool: "t", Params: json.RawMessage(`{"body":"a"}`),
		Response: &ctxapi.Response{Content: json.RawMessage(`[]`)}})
	if res.Reject == nil || !strings.Contains(res.Reject.Message, "read only") && !strings.Contains(res.Reject.Message, "read-only") {
		t.Fatalf("a write in post: %+v", res.Reject)
	}
}

// TestKeyedParamsReadDuringReadBack: ctx.params first read by a getter that runs
// while another value is read back is not handed on to the next policy as the keyed
// object (it would see only the first policy's keys).
func TestKeyedParamsReadDuringReadBack(t *testing.T) {
	g := loadGate(t, map[string]string{
		"10.js": `if (ctx.phase === "post") ctx.response.content.push({type: "text", get text() { return "a=" + ctx.params.a; }});`,
		"20.js": `if (ctx.phase === "post") ctx.warn("keys " + Object.keys(ctx.params).join() + " b=" + ctx.params.b);`,
	})
	call := func() *ctxapi.Call {
		return &ctxapi.Call{Phase: ctxapi.PhasePost, Tool: "t", Params: json.RawMessage(`{"a":1,"b":2}`),
			Response: &ctxapi.Response{Content: json.RawMessage(`[]`)}}
	}
	res := g.Current().Run(context.Background(), call())
	if res.Reject != nil || len(res.Warnings) != 1 || res.Warnings[0].Reason != "keys a,b b=2" {
		t.Fatalf("reject %+v warnings %+v, want the warning \"keys a,b b=2\"", res.Reject, res.Warnings)
	}
	runBoth(t, g.Current(), call)
}

// TestKeyedParamsGrowthLimit: the read-back's size guard counts the members a keyed
// policy was not given, as reading back the whole value does: a member written after
// them that takes the text past the limit rejects both ways.
func TestKeyedParamsGrowthLimit(t *testing.T) {
	pad := strings.Repeat("x", 4<<20) // the limit: maxStringLen + 2 * len(arguments)
	for _, tt := range []struct {
		name, src, in string
	}{
		{"a written member, then the others", `ctx.params.a = "\u0001".repeat(7300000)`, `{"a":"","pad":"` + pad + `"}`},
		{"within the limit", `ctx.params.a = "\u0001".repeat(6000000)`, `{"a":"","pad":"` + pad + `"}`},
		{"the others, then a written member", `ctx.params.a = "\u0001".repeat(7300000)`, `{"pad":"` + pad + `","a":""}`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			g := loadGate(t, map[string]string{"p.js": tt.src})
			runBoth(t, g.Current(), func() *ctxapi.Call { return preCall(tt.in) })
		})
	}
}

// TestKeyedParamsLeaveNothing: once a call ends, the runtime holds none of its
// arguments' members (an idle runtime holds no call data).
func TestKeyedParamsLeaveNothing(t *testing.T) {
	g := loadGate(t, map[string]string{"p.js": `ctx.params.body = ctx.params.body + "!"; if (ctx.params.stop) throw "stop";`}, func(o *Options) { o.PoolSize = 1 })
	for _, in := range []string{`{"body":"secret-1","x":1}`, `{"body":"secret-2","stop":true}`,
		`{"secret-3":1,"body":"b","x":1e400}`} { // split in part, then built whole
		g.Current().Run(context.Background(), preCall(in))
		v := <-g.pool.idle
		if len(v.members) != 0 || len(v.parts) != 0 || len(v.got) != 0 ||
			slices.ContainsFunc(v.members[:cap(v.members)], func(m member) bool { return m.key != "" }) ||
			slices.ContainsFunc(v.parts[:cap(v.parts)], func(p keyedPart) bool { return p.text != "" || p.key != "" }) ||
			slices.ContainsFunc(v.got[:cap(v.got)], func(m member) bool { return m.key != "" }) {
			t.Errorf("%s: the idle runtime keeps members %v parts %v", in, v.members[:cap(v.members)], v.parts[:cap(v.parts)])
		}
		g.pool.idle <- v
	}
}

// FuzzKeyedParams: on any arguments, each keyed policy sends what building the whole
// value sends, and objectMembers accepts only valid JSON objects, splitting them as
// encoding/json reads them.
func FuzzKeyedParams(f *testing.F) {
	for _, in := range keyedParamsInputs {
		f.Add(in, uint8(1))
	}
	var sets []*Set
	for _, src := range keyedPolicies {
		sets = append(sets, loadGate(f, map[string]string{"p.js": src}).Current())
	}
	f.Fuzz(func(t *testing.T, in string, which uint8) {
		if ms, ok := objectMembers(in, nil); ok {
			var m map[string]json.RawMessage
			if err := json.Unmarshal([]byte(in), &m); err != nil || len(m) != len(ms) {
				t.Fatalf("%q: objectMembers split %d members, encoding/json %d (%v)", in, len(ms), len(m), err)
			}
			for _, mb := range ms {
				if v, ok := m[mb.key]; !ok || !jsonEqual(v, []byte(in[mb.valStart:mb.end])) {
					t.Fatalf("%q: member %q is %s, encoding/json reads %s", in, mb.key, in[mb.valStart:mb.end], v)
				}
			}
		}
		runBoth(t, sets[int(which)%len(sets)], func() *ctxapi.Call { return preCall(in) })
	})
}
