package jsvalue_test

import (
	"testing"

	"github.com/dop251/goja"

	"github.com/mcpgate/mcpgate/gate/internal/jsvalue"
	"github.com/mcpgate/mcpgate/gate/internal/sandbox"
)

// vm is a runtime and its JSON bridge under the sandbox's bounds, as package gate
// builds them.
type vm struct {
	rt   *goja.Runtime
	json *jsvalue.Bridge
}

func bridge(rt *goja.Runtime) *jsvalue.Bridge {
	return &jsvalue.Bridge{RT: rt, MaxNesting: sandbox.MaxNesting, MaxNodes: sandbox.MaxNodes,
		TooDeep: func() { rt.Interrupt("too deep") }, Broken: func() {}}
}

// plainVM is a runtime without the lockdown.
func plainVM() (*goja.Runtime, *vm) {
	rt := goja.New()
	return rt, &vm{rt: rt, json: bridge(rt)}
}

// lockedVM is a locked-down, sealed runtime (package sandbox) whose JSON.parse reads
// through the bridge, with the frozen Object.prototype's names, as a policy's runtime.
func lockedVM(t testing.TB) *vm {
	t.Helper()
	v := &vm{}
	sb, err := sandbox.New(sandbox.Hooks{OOM: func() {}, TooDeep: func() {}, FromJSON: func(src string) (goja.Value, bool) {
		val, _, ok := v.json.FromJSON(src)
		return val, ok
	}})
	if err != nil {
		t.Fatal(err)
	}
	v.rt, v.json = sb.RT, bridge(sb.RT)
	v.json.Poll = sb.Poll
	if err := sb.Seal(); err != nil {
		t.Fatal(err)
	}
	if sb.IsFrozen(v.rt.NewObject().Prototype()) {
		v.json.ProtoNames = jsvalue.ObjectProtoNames(v.rt)
	}
	return v
}

// writeJSON runs a jsvalue.Writer on the value of a JS expression and, beside it, the
// runtime's own JSON.stringify.
func writeJSON(t testing.TB, rt *goja.Runtime, v *vm, expr string) (got, want string, gotOK, wantOK bool) {
	t.Helper()
	val, err := rt.RunString("(" + expr + ")")
	if err != nil {
		t.Fatalf("%s: %v", expr, err)
	}
	w := jsvalue.Writer{V: v.json, Limit: sandbox.MaxStringLen}
	if ex := rt.Try(func() { gotOK = w.Write("", val, 0) }); ex != nil {
		t.Fatalf("%s: %v", expr, ex)
	}
	stringify, _ := goja.AssertFunction(rt.Get("JSON").ToObject(rt).Get("stringify"))
	out, err := stringify(goja.Undefined(), val)
	if err != nil {
		t.Fatalf("%s: %v", expr, err)
	}
	return string(w.Buf), out.String(), gotOK, !goja.IsUndefined(out)
}

// The Go read-back writes what JSON.stringify writes.
func TestJSONWriterMatchesStringify(t *testing.T) {
	rt, v := plainVM()
	for _, expr := range []string{
		`{a: 1, b: "x", c: [1, "2", null, true, false], d: {}}`,
		`{n: NaN, i: Infinity, m: -Infinity, z: -0, f: 1.5, e: 1e21, s: 1e-7, big: 123456789012345678}`,
		`[undefined, function () {}, Symbol("s"), NaN]`,
		`{u: undefined, f: function () {}, s: Symbol("s"), k: 1}`,
		`{q: "quote \" backslash \\ nl \n tab \t ctl \u0001 \u001f del \u007f", line: "\u2028\u2029", uni: "é 😀"}`,
		`{lone: "a\ud800b", lo: "\udc00", pair: "\ud83d\ude00", end: "x\ud83d"}`,
		`{d: new Date(0), n: new Number(3), s: new String("s"), b: new Boolean(false)}`,
		`{t: {toJSON: function (k) { return "key " + k; }}, arr: [{toJSON: function (k) { return k; }}]}`,
		`{get g() { return 7; }, 2: "two", 1: "one", b: 1, a: 2}`,
		`new Proxy({a: 1}, {get: function (t, k) { return k === "a" ? 2 : t[k]; }})`,
		`new Proxy([1, 2], {})`,
		`Object.assign(Object.create({inherited: 1}), {own: 2})`,
		`"top"`, `42`, `null`, `true`, `undefined`,
	} {
		got, want, gotOK, wantOK := writeJSON(t, rt, v, expr)
		if gotOK != wantOK || (gotOK && got != want) {
			t.Errorf("%s:\n got %q (%v)\nwant %q (%v)", expr, got, gotOK, want, wantOK)
		}
	}
}

// FuzzJSONWriter: for any JSON text, the Go read-back of JSON.parse(text) equals
// JSON.stringify of it.
func FuzzJSONWriter(f *testing.F) {
	for _, s := range []string{`{"a":[1,2,{"b":null}],"c":"\u00e9\ud800"}`, `[1e300,-0,0.1]`, `"x"`, `{"":{"":[]}}`} {
		f.Add(s)
	}
	rt, v := plainVM()
	parse, _ := goja.AssertFunction(rt.Get("JSON").ToObject(rt).Get("parse"))
	stringify, _ := goja.AssertFunction(rt.Get("JSON").ToObject(rt).Get("stringify"))
	f.Fuzz(func(t *testing.T, text string) {
		if d, _, _ := sandbox.JSONShape(text); d > 100 {
			return
		}
		val, err := parse(goja.Undefined(), rt.ToValue(text))
		if err != nil {
			return
		}
		want, err := stringify(goja.Undefined(), val)
		if err != nil {
			return
		}
		w := jsvalue.Writer{V: v.json, Limit: sandbox.MaxStringLen}
		var ok bool
		if ex := rt.Try(func() { ok = w.Write("", val, 0) }); ex != nil || !ok || string(w.Buf) != want.String() {
			t.Fatalf("%q: got %q (%v), want %q", text, w.Buf, ex, want.String())
		}
	})
}

// FuzzJSONReader: fromJSON accepts exactly what JSON.parse accepts (or defers to it)
// and builds a value that JSON.stringify writes the same way; in a locked-down runtime,
// with the same own properties and descriptors.
func FuzzJSONReader(f *testing.F) {
	for _, s := range []string{`{"a":[1,2,{"b":null}],"c":"\u00e9"}`, `[1e300,-0,0.1,1e400]`, `"x\"y"`, `{"__proto__":{"x":1},"a":1,"a":2}`, ` [ ] `, `{"2":1,"1":2}`, `01`, `[1,]`, "\"\x01\"", `"a\nb\t\u00e9\/\\ \b\f\r"`, `"\u12"`, `"\q"`, "\"\xff\\n\"", `{"a":{"b":[1.5e-7,1e21,123456789012345678]},"c":"\u2028<>&"}`, `{"4294967295":1,"4294967294":2,"01":3}`} {
		f.Add(s)
	}
	rt, v := plainVM()
	locked := lockedVM(f)
	parse, _ := goja.AssertFunction(rt.Get("JSON").ToObject(rt).Get("parse"))
	stringify, _ := goja.AssertFunction(rt.Get("JSON").ToObject(rt).Get("stringify"))
	f.Fuzz(func(t *testing.T, text string) {
		if d, _, _ := sandbox.JSONShape(text); d > 100 {
			return
		}
		want, perr := parse(goja.Undefined(), rt.ToValue(text))
		got, canon, ok := v.json.FromJSON(text)
		if !ok {
			return // JSON.parse decides
		}
		if perr != nil {
			t.Fatalf("%q: JSON.parse fails (%v), fromJSON accepts", text, perr)
		}
		a, _ := stringify(goja.Undefined(), got)
		b, _ := stringify(goja.Undefined(), want)
		if a.String() != b.String() {
			t.Fatalf("%q: got %s, want %s", text, a, b)
		}
		if canon != "" && canon != b.String() {
			t.Fatalf("%q: canonical text %s, JSON.stringify gives %s", text, canon, b)
		}
		checkOwnShape(t, locked, text)
	})
}

// ownShape describes a value's own properties the way JSON.stringify cannot: every
// descriptor (value, writable, enumerable, configurable) and whether the prototype of
// each object is Object.prototype, nested.
const ownShape = `(function shape(x) {
  if (x === null || typeof x !== "object") return JSON.stringify(x);
  var d = Object.getOwnPropertyDescriptors(x), out = {proto: Object.getPrototypeOf(x) === (Array.isArray(x) ? Array.prototype : Object.prototype), keys: Reflect.ownKeys(x), props: {}};
  Object.keys(d).forEach(function (k) { out.props[k] = [shape(d[k].value), d[k].writable, d[k].enumerable, d[k].configurable, "get" in d[k]]; });
  return JSON.stringify(out);
})`

// checkOwnShape fails unless fromJSON built, in v's runtime, the value JSON.parse
// builds there, down to each property's descriptor.
func checkOwnShape(t *testing.T, v *vm, text string) {
	t.Helper()
	got, _, ok := v.json.FromJSON(text)
	if !ok {
		return // JSON.parse decides
	}
	fv, err := v.rt.RunString(ownShape)
	if err != nil {
		t.Fatal(err)
	}
	shape, _ := goja.AssertFunction(fv)
	parse, _ := goja.AssertFunction(v.rt.Get("JSON").ToObject(v.rt).Get("parse"))
	want, err := parse(goja.Undefined(), v.rt.ToValue(text))
	if err != nil {
		t.Fatalf("%q: JSON.parse fails (%v), fromJSON accepts", text, err)
	}
	a, errA := shape(goja.Undefined(), got)
	b, errB := shape(goja.Undefined(), want)
	if errA != nil || errB != nil || a.String() != b.String() {
		t.Fatalf("%q: fromJSON built %v (%v), JSON.parse %v (%v)", text, a, errA, b, errB)
	}
}

// TestFromJSONOwnProperties: in a locked-down runtime, where fromJSON sets the keys
// Object.prototype lacks and defines the others, each key is an own, writable,
// enumerable, configurable data property as JSON.parse makes it, "__proto__" and the
// frozen prototype's names included, with duplicates keeping their first place.
func TestFromJSONOwnProperties(t *testing.T) {
	v := lockedVM(t)
	if v.json.ProtoNames == nil {
		t.Fatal("a locked-down runtime has no Object.prototype names: the Set path is off")
	}
	for _, text := range []string{
		`{"a": 1, "b": "x", "c": [1, {"d": null}]}`,
		`{"__proto__": {"x": 1}, "y": 2}`,
		`{"toString": "t", "valueOf": 1, "constructor": {"name": "n"}, "hasOwnProperty": true, "isPrototypeOf": 0, "propertyIsEnumerable": [], "toLocaleString": "l"}`,
		`{"__defineGetter__": 1, "__defineSetter__": 2, "__lookupGetter__": 3, "__lookupSetter__": 4}`,
		`{"a": 1, "toString": 2, "a": 3, "toString": 4, "__proto__": 5, "__proto__": 6}`,
		`{"2": "b", "1": "a", "x": 0, "length": 3}`,
		`[{"toString": 1}, {"__proto__": null}]`,
	} {
		checkOwnShape(t, v, text)
	}
}

// TestFromJSONCanon: fromJSON writes JSON.stringify of what it reads in the same pass,
// and gives up ("") exactly where JavaScript would order keys differently from the text
// or a string needs its UTF-16 units.
func TestFromJSONCanon(t *testing.T) {
	_, v := plainVM()
	for _, tc := range []struct{ text, canon string }{
		{`{ "a" : [1, 2.50, -0, 1e21, 1E-7], "b": {"c": null, "d": true, "e": false} }`, `{"a":[1,2.5,0,1e+21,1e-7],"b":{"c":null,"d":true,"e":false}}`},
		{`"a\/b\u00e9\n\u0001"`, `"a/bé\n\u0001"`},
		{`{"__proto__": 1, "x": "y"}`, `{"__proto__":1,"x":"y"}`},
		{`{"1": "a", "b": 2}`, ``},                                // an array index is ordered first
		{`{"a": 1, "b": 2, "a": 3}`, ``},                          // a duplicate keeps its first place
		{`{"01": 1, "4294967295": 2}`, `{"01":1,"4294967295":2}`}, // not array indices
		{"\"\xff\"", ``}, // invalid UTF-8
		{`[{"a": [{"a": 1}]}, {"a": 2}]`, `[{"a":[{"a":1}]},{"a":2}]`}, // the same key at other levels
	} {
		_, canon, ok := v.json.FromJSON(tc.text)
		if !ok || canon != tc.canon {
			t.Errorf("fromJSON(%s): canon %q ok %v, want %q", tc.text, canon, ok, tc.canon)
		}
	}
}
