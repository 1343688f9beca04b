package gate

import (
	"strings"
	"testing"

	"github.com/mcpgate/mcpgate/ctxapi"
)

// walkReachable is a policy that walks everything reachable from globalThis and ctx
// (own properties, accessor functions, prototypes; it never calls a getter except the
// ctx fields it names) and throws unless all of it is frozen and the walk was big.
const walkReachable = `
var seen = new Set(), bad = [], n = 0;
var work = [[globalThis, "globalThis"], [ctx, "ctx"], [ctx.user, "ctx.user"], [ctx.findings, "ctx.findings"],
            [ctx.user.roles, "ctx.user.roles"]];
if (ctx.phase === "post") work.push([ctx.response, "ctx.response"]);
while (work.length > 0) {
  var item = work.pop(), o = item[0], path = item[1];
  if ((typeof o !== "object" && typeof o !== "function") || o === null || seen.has(o)) continue;
  seen.add(o);
  n++;
  if (!Object.isFrozen(o)) bad.push(path);
  work.push([Object.getPrototypeOf(o), path + ".__proto__"]);
  var ks = Reflect.ownKeys(o);
  for (var i = 0; i < ks.length; i++) {
    var d = Object.getOwnPropertyDescriptor(o, ks[i]), name = path + "." + String(ks[i]);
    if ("value" in d) work.push([d.value, name]); else { work.push([d.get, name + "<get>"]); work.push([d.set, name + "<set>"]); }
  }
}
if (bad.length > 0) throw "not frozen: " + bad.slice(0, 20).join(", ");
if (n < 500) throw "walked only " + n + " objects";
`

func TestEverythingReachableIsFrozen(t *testing.T) {
	g := loadGate(t, map[string]string{"walk.js": walkReachable})
	for _, c := range []*ctxapi.Call{preCall(`{"a":1}`), postCall(`[{"type":"text","text":"x"}]`, `{"k":1}`)} {
		if r := run(g, c); r.Reject != nil {
			t.Fatalf("%s: %s", c.Phase, r.Reject.Message)
		}
	}
}

// writeEverywhere tries to leave a value on every function and object reachable from
// ctx (own properties, prototypes, accessors), sloppy and strict; readEverywhere looks
// for any of it. Both run on one pooled runtime, as two callers, and across a reload.
const writeEverywhere = `
function leave(o) {
  if ((typeof o !== "object" && typeof o !== "function") || o === null) return;
  try { o.leak = ctx.user.userID; } catch (e) {}
  try { Object.defineProperty(o, "leak2", {value: ctx.user.userID}); } catch (e) {}
  try { Object.setPrototypeOf(o, {leak: ctx.user.userID}); } catch (e) {}
}
var fs = [ctx, ctx.user, ctx.user.roles, ctx.findings, ctx.warn, ctx.redact, ctx.mask, ctx.hash, ctx.redactAll, ctx.removeLines,
          ctx.rateLimitExceeded, Object.getPrototypeOf(ctx.warn)];
["phase", "tool", "toolAccess", "user", "params", "findings", "response"].forEach(function (k) {
  var d = Object.getOwnPropertyDescriptor(ctx, k);
  if (d) { fs.push(d.get, d.set); }
});
fs.forEach(leave);
ctx.params.mine = ctx.user.userID;
`

const readEverywhere = `
var fs = [ctx, ctx.user, ctx.user.roles, ctx.findings, ctx.warn, ctx.redact, ctx.mask, ctx.hash, ctx.redactAll, ctx.removeLines,
          ctx.rateLimitExceeded, Object.getPrototypeOf(ctx.warn)];
["phase", "tool", "toolAccess", "user", "params", "findings", "response"].forEach(function (k) {
  var d = Object.getOwnPropertyDescriptor(ctx, k);
  if (d) { fs.push(d.get, d.set); }
});
fs.forEach(function (o) {
  if (o === undefined || o === null) return;
  if (o.leak !== undefined || o.leak2 !== undefined) throw "leaked: " + o.leak + o.leak2;
});
if (ctx.params.mine !== undefined) throw "leaked params: " + ctx.params.mine;
`

func TestNoStateBetweenCallers(t *testing.T) {
	dir := writePolicies(t, map[string]string{"a.js": writeEverywhere})
	g := loadGate(t, nil, func(o *Options) { o.Dir = dir; o.PoolSize = 1 })
	alice := preCall(`{}`)
	alice.User = ctxapi.User{UserID: "alice", CallerClass: "trusted"}
	if r := run(g, alice); r.Reject != nil {
		t.Fatal(r.Reject.Message)
	}
	// the same runtime, another caller, after a hot reload that swaps the policy
	writePoliciesInto(t, dir, map[string]string{"a.js": readEverywhere})
	if err := g.Reload(); err != nil {
		t.Fatal(err)
	}
	bob := preCall(`{}`)
	bob.User = ctxapi.User{UserID: "bob", CallerClass: "standard"}
	if r := run(g, bob); r.Reject != nil {
		t.Fatalf("bob saw alice's call: %s", r.Reject.Message)
	}
	// and the reader on its own proves it can see a leak: it fails after a writer in the same call
	writePoliciesInto(t, dir, map[string]string{"a.js": writeEverywhere, "b.js": readEverywhere})
	if err := g.Reload(); err != nil {
		t.Fatal(err)
	}
	if r := run(g, bob); r.Reject == nil || !strings.Contains(r.Reject.Message, "leaked params") {
		t.Fatalf("the reader cannot see what it looks for: %+v", r.Reject)
	}
}

// The policy function is bound once per runtime and outlives the call: what a policy
// reaches of it (arguments.callee, its prototype) cannot carry a value to the next
// caller on the same runtime.
func TestNoStateOnThePolicyFunction(t *testing.T) {
	for _, tc := range []struct{ look, leave string }{
		{`arguments.callee.seen`, `arguments.callee.seen = ctx.user.userID`},
		{`arguments.callee.seen`, `Object.defineProperty(arguments.callee, "seen", {value: ctx.user.userID})`},
		{`arguments.callee.prototype.seen`, `arguments.callee.prototype.seen = ctx.user.userID`},
		{`arguments.callee.seen`, `Object.setPrototypeOf(arguments.callee, {seen: ctx.user.userID})`},
	} {
		t.Run(tc.leave, func(t *testing.T) {
			src := `if (` + tc.look + ` !== undefined) throw "leaked " + ` + tc.look + `; try { ` + tc.leave + ` } catch (e) {}`
			g := loadGate(t, map[string]string{"a.js": src}, func(o *Options) { o.PoolSize = 1 })
			for _, user := range []string{"alice", "bob"} {
				c := preCall(`{}`)
				c.User = ctxapi.User{UserID: user}
				if r := run(g, c); r.Reject != nil {
					t.Fatalf("%s: %s", user, r.Reject.Message)
				}
			}
		})
	}
}
