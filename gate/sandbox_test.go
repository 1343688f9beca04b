package gate

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
)

// probe runs expr in a pre policy and returns String(expr) or "threw:<name>".
func probe(t *testing.T, g *Gate, expr string) string {
	t.Helper()
	r := run(g, preCall(`{"e":`+mustJSON(expr)+`}`))
	if r.Reject != nil {
		t.Fatalf("%s: rejected %+v", expr, r.Reject)
	}
	var out struct{ Out string }
	_ = json.Unmarshal(r.Params, &out)
	return out.Out
}

func mustJSON(v any) string { b, _ := json.Marshal(v); return string(b) }

const probePolicy = `var probes = {
  require: function () { return typeof require },
  process: function () { return typeof process },
  env: function () { return typeof process === "undefined" ? "none" : typeof process.env },
  fetch: function () { return typeof fetch + typeof XMLHttpRequest + typeof WebSocket },
  console: function () { return typeof console },
  eval: function () { return typeof eval },
  evalCall: function () { return eval("1") },
  Function: function () { return Function("return 1")() },
  newFunction: function () { return new Function("return 1")() },
  fnCtor: function () { return (function () {}).constructor("return 1")() },
  protoCtor: function () { return Object.getPrototypeOf(function () {}).constructor("return 1")() },
  asyncCtor: function () { return (async function () {}).constructor("return 1") },
  genCtor: function () { return (function* () {}).constructor("yield 1") },
  arrowCtor: function () { return (() => 1).constructor("return 1")() },
  reflectCtor: function () { return Reflect.construct(Function, ["return 1"])() },
  import: function () { return typeof import_ },
  GoError: function () { return typeof GoError },
  setTimeout: function () { return typeof setTimeout },
  defineGlobal: function () { Object.defineProperty(globalThis, "hidden", {value: 1}); return "defined" },
  setGlobalProto: function () { Object.setPrototypeOf(globalThis, {evil: 1}); return "set" },
  dunderProto: function () { globalThis.__proto__ = {evil: 1}; return typeof evil },
};
if (ctx.params.e) {
  ctx.params.out = (function () {
    try { return String(probes[ctx.params.e]()) } catch (e) { return "threw:" + e.name }
  })();
}`

func TestSandbox(t *testing.T) {
	g := loadGate(t, map[string]string{"probe.js": probePolicy})
	cases := map[string]string{
		"require": "undefined", "process": "undefined", "env": "none", "fetch": "undefinedundefinedundefined",
		"console": "undefined", "eval": "undefined", "evalCall": "threw:ReferenceError",
		"Function": "threw:TypeError", "newFunction": "threw:TypeError", "fnCtor": "threw:TypeError",
		"protoCtor": "threw:TypeError", "asyncCtor": "threw:TypeError", "genCtor": "threw:TypeError",
		"arrowCtor": "threw:TypeError", "reflectCtor": "threw:TypeError", "import": "undefined",
		"GoError": "undefined", "setTimeout": "undefined",
		"defineGlobal": "threw:TypeError", "setGlobalProto": "threw:TypeError", "dunderProto": "threw:TypeError",
	}
	for name, want := range cases {
		t.Run(name, func(t *testing.T) {
			if got := probe(t, g, name); got != want {
				t.Errorf("%s = %q, want %q", name, got, want)
			}
		})
	}
}

func TestConsoleOption(t *testing.T) {
	g := loadGate(t, map[string]string{"probe.js": probePolicy}, func(o *Options) { o.Console = true })
	if got := probe(t, g, "console"); got != "object" {
		t.Fatalf("console = %q with Options.Console", got)
	}
}

// import() is a syntax error at load, never a request error.
func TestDynamicImportRejectedAtLoad(t *testing.T) {
	dir := writePolicies(t, map[string]string{"i.js": `import("fs")`})
	if _, err := Load(context.Background(), Options{Dir: dir}); err == nil {
		t.Fatal("import() compiled")
	}
}

// A trailing sourceMappingURL never makes the parser read a file.
func TestSourceMapNotRead(t *testing.T) {
	dir := t.TempDir()
	bad := filepath.Join(dir, "map.json")
	if err := os.WriteFile(bad, []byte("not a source map"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, src := range []string{
		"var x = 1;\n//# sourceMappingURL=" + bad,
		"var x = 1;\n//# sourceMappingURL=/nonexistent/dir/x.map\n",
	} {
		if _, err := compilePolicy("s.js", []byte(src)); err != nil {
			t.Fatalf("compile with source map comment: %v", err)
		}
	}
	g := loadGate(t, map[string]string{"s.js": "ctx.params.ok = 1;\n//# sourceMappingURL=/etc/passwd"})
	if r := run(g, preCall(`{}`)); r.Reject != nil || string(r.Params) != `{"ok":1}` {
		t.Fatalf("%+v %s", r.Reject, r.Params)
	}
}

// Nothing one call does is seen by the next, on the same runtime (PoolSize 1).
func TestIsolationAcrossCalls(t *testing.T) {
	g := loadGate(t, map[string]string{"a.js": `
if (ctx.params.write) {
  leaked = "implicit global";
  globalThis.explicit = 1;
  globalThis[Symbol.for("s")] = 1;
  Object.prototype.polluted = "yes";
  Array.prototype.push = function () { return "hijacked" };
  String.prototype.trim = null;
  JSON.parse = null;
  Math.PI = 3;
  try { Object = null } catch (e) {}
  try { ctx.warn = null } catch (e) {}
  try { ctx.user.callerClass = "trusted" } catch (e) {}
  try { ctx.extra = 1 } catch (e) {}
}
if (ctx.params.read) {
  var leftovers = [typeof leaked, typeof explicit, typeof globalThis[Symbol.for("s")], String(({}).polluted),
    String([].push(1)), typeof "".trim, typeof JSON.parse, String(Math.PI === 3), typeof Object,
    typeof ctx.warn, ctx.user.callerClass, typeof ctx.extra];
  ctx.params.out = leftovers.join(",");
}`}, func(o *Options) { o.PoolSize = 1 })
	if r := run(g, preCall(`{"write":true}`)); r.Reject != nil {
		t.Fatalf("write: %+v", r.Reject)
	}
	r := run(g, preCall(`{"read":true}`))
	if r.Reject != nil {
		t.Fatalf("read: %+v", r.Reject)
	}
	want := "undefined,undefined,undefined,undefined,1,function,function,false,function,function,standard,undefined"
	var out struct{ Out string }
	_ = json.Unmarshal(r.Params, &out)
	if out.Out != want {
		t.Fatalf("leftovers\n got %s\nwant %s", out.Out, want)
	}
}

// Two policies declaring the same top-level names don't collide, and implicit globals
// do not cross from one policy to the next within a call.
func TestPolicyScopes(t *testing.T) {
	g := loadGate(t, map[string]string{
		"a.js": `var x = "a"; function helper() { return "a" } let y = 1; const z = 1; implicitA = 1; ctx.params.a = helper() + x;`,
		"b.js": `var x = "b"; function helper() { return "b" } let y = 2; const z = 2; ctx.params.b = helper() + x + typeof implicitA;`,
	})
	r := run(g, preCall(`{}`))
	if r.Reject != nil || string(r.Params) != `{"a":"aa","b":"bbundefined"}` {
		t.Fatalf("%+v %s", r.Reject, r.Params)
	}
}

// Object.prototype writes are refused; override assignments on own objects still work.
func TestFrozenIntrinsicsStillUsable(t *testing.T) {
	g := loadGate(t, map[string]string{"a.js": `
var o = {}; o.toString = function () { return "mine" };
class MyErr extends Error { constructor(m) { super(m); this.name = "MyErr" } }
var e = new MyErr("m");
ctx.params.out = String(o) + "," + e.name + "," + [1, 2, 3].map(function (n) { return n * 2 }).join("-") +
  "," + (Array.isArray([]) && [] instanceof Array && new Array(3).length === 3 && Array.of(1).length === 1) +
  "," + new Uint8Array([1, 2]).subarray(1)[0] + "," + JSON.stringify({a: [1, {b: 2}]}, null, 0) +
  "," + JSON.stringify({a: 1, b: 2}, ["b"]) + "," + "a,b".split(",").length + "," + "ab".repeat(2) + "," + (function () { "use strict"; return typeof this })();
`})
	r := run(g, preCall(`{}`))
	if r.Reject != nil {
		t.Fatalf("%+v", r.Reject)
	}
	want := `{"out":"mine,MyErr,2-4-6,true,2,{\"a\":[1,{\"b\":2}]},{\"b\":2},2,abab,undefined"}`
	if string(r.Params) != want {
		t.Fatalf("got  %s\nwant %s", r.Params, want)
	}
}
