package gate

import (
	"encoding/json"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/mcpgate/mcpgate/vocab"
)

// nativeBoundsChild marks the child process TestNativeBounds runs itself in.
const nativeBoundsChild = "MCPGATE_TEST_NATIVE_BOUNDS_CHILD"

// nativeBounds lists every built-in whose one native step builds output that grows with
// its input, the bound that holds it before the step (docs/policies.md#growth-limits),
// and a policy that would pass the bound by far without it. Each must be refused within
// the deadline, and the gate work after it. code is the refusal; reasonMemoryOrTimeout
// where the bounded work is interruptible JS that a slow machine may not finish before
// the deadline.
var nativeBounds = []struct {
	native, bound, src string
	code               vocab.Reason
}{
	{"String.prototype.match, global", "2^20 matches, counted as they are found, one exec each (the deadline stops the search)",
		`var s = "a ".repeat(1 << 23); s.match(/\S+/g)`, reasonMemoryOrTimeout},
	{"String.prototype.match, global, empty matches", "2^20 matches",
		`"x".repeat(1 << 22).match(/(?:)/g)`, reasonMemoryOrTimeout},
	{"RegExp.prototype[Symbol.match]", "2^20 matches",
		`/a/g[Symbol.match]("a".repeat(1 << 22))`, reasonMemoryOrTimeout},
	{"String.prototype.matchAll into Array.from", "2^20 elements from any iterable, drained one JS step per value",
		`Array.from("a".repeat(1 << 22).matchAll(/a/g))`, reasonMemoryOrTimeout},
	{"String.prototype.matchAll spread", "2^20 elements from any iterable",
		`[..."a".repeat(1 << 22).matchAll(/a/g)]`, reasonMemoryOrTimeout},
	{"JSON.parse, a long array", "2^20 elements in one array, counted in the text before the parse",
		`JSON.parse("[" + "0,".repeat(1 << 22) + "0]")`, vocab.ReasonPolicyMemoryLimit},
	{"JSON.parse, many values", "2^22 values in the text",
		`JSON.parse("[" + "[0,0,0,0,0,0,0],".repeat(1 << 20) + "0]")`, vocab.ReasonPolicyMemoryLimit},
	{"JSON.parse, many values with a reviver", "2^22 values in the text",
		`JSON.parse("[" + "[0,0,0,0,0,0,0],".repeat(1 << 20) + "0]", function (k, v) { return v })`, vocab.ReasonPolicyMemoryLimit},
	{"String.prototype.split", "2^20 + 1 elements (the limit passed to the original)",
		`"a,".repeat(1 << 22).split(",")`, vocab.ReasonPolicyMemoryLimit},
	{"String.prototype.split, RegExp", "2^20 + 1 elements",
		`"a,".repeat(1 << 22).split(/,/)`, reasonMemoryOrTimeout},
	{"Object.keys of a string", "2^20 own keys of a string, array or typed array",
		`Object.keys("x".repeat(1 << 24))`, vocab.ReasonPolicyMemoryLimit},
	{"Object.values of a string", "2^20 own keys",
		`Object.values("x".repeat(1 << 24))`, vocab.ReasonPolicyMemoryLimit},
	{"Object.entries of a string", "2^20 own keys",
		`Object.entries("x".repeat(1 << 24))`, vocab.ReasonPolicyMemoryLimit},
	{"Object.getOwnPropertyNames of a string", "2^20 own keys",
		`Object.getOwnPropertyNames("x".repeat(1 << 24))`, vocab.ReasonPolicyMemoryLimit},
	{"Object.getOwnPropertyDescriptors of a string", "2^20 own keys",
		`Object.getOwnPropertyDescriptors("x".repeat(1 << 22))`, vocab.ReasonPolicyMemoryLimit},
	{"Reflect.ownKeys of a typed array", "2^20 own keys",
		`Reflect.ownKeys(new Uint8Array(1 << 25))`, vocab.ReasonPolicyMemoryLimit},
	{"Object.keys of a typed array", "2^20 own keys",
		`Object.keys(new Uint8Array(1 << 25))`, vocab.ReasonPolicyMemoryLimit},
	{"String.prototype.repeat", "2^25 units, before the step",
		`"x".repeat(Math.pow(2, 40))`, vocab.ReasonPolicyMemoryLimit},
	{"String.prototype.padStart", "2^25 units, before the step",
		`"x".padStart(Math.pow(2, 40))`, vocab.ReasonPolicyMemoryLimit},
	{"String.prototype.padEnd", "2^25 units, before the step",
		`"x".padEnd(Math.pow(2, 40), "ab")`, vocab.ReasonPolicyMemoryLimit},
	{"String.fromCharCode.apply", "65,536 arguments to one apply",
		`String.fromCharCode.apply(null, new Array(1 << 20).fill(65))`, vocab.ReasonPolicyMemoryLimit},
	{"String.fromCharCode spread", "65,536 spread arguments",
		`String.fromCharCode(...new Array(1 << 20).fill(65))`, vocab.ReasonPolicyMemoryLimit},
	{"String.fromCodePoint spread", "65,536 spread arguments",
		`String.fromCodePoint(...new Array(1 << 20).fill(65))`, vocab.ReasonPolicyMemoryLimit},
	{"new Uint8Array", "2^26 bytes, before the step",
		`new Uint8Array(Math.pow(2, 31))`, vocab.ReasonPolicyMemoryLimit},
	{"Uint8Array.from an array-like", "2^26 bytes",
		`Uint8Array.from({length: Math.pow(2, 31)})`, vocab.ReasonPolicyMemoryLimit},
	{"Float64Array.from an iterable", "2^20 elements from any iterable",
		`var a = []; a.length = 4e9; Float64Array.from(a.keys())`, vocab.ReasonPolicyMemoryLimit},
	{"TypedArray.prototype.join", "2^25 units, before the step",
		`new Uint8Array(1 << 25).join()`, vocab.ReasonPolicyMemoryLimit},
	{"TypedArray.prototype.toString", "2^25 units, before the step",
		`String(new Uint8Array(1 << 25))`, vocab.ReasonPolicyMemoryLimit},
	{"TypedArray.prototype.toLocaleString", "2^25 units, before the step",
		`new Uint8Array(1 << 25).toLocaleString()`, vocab.ReasonPolicyMemoryLimit},
	{"TypedArray.prototype.sort", "past 4,096 elements, a comparator of the same order: one JS step per comparison",
		`var a = new Float64Array(1 << 23); for (var i = 0; i < a.length; i++) a[i] = (i * 7919) % 1000003; a.sort()`, vocab.ReasonPolicyTimeout},
	{"Array.prototype.sort", "past 4,096 elements, a comparator of the same order",
		`var a = []; for (var i = 0; i < 1 << 20; i++) a.push((i * 7919) % 1000003); a.sort(); a.sort(); a.sort(); a.sort()`, vocab.ReasonPolicyTimeout},
	{"Array.prototype.sort, a long receiver", "2^20 elements (every Array.prototype method's receiver)",
		`var a = []; a.length = (1 << 20) + 1; a.sort()`, vocab.ReasonPolicyMemoryLimit},
	{"Array.from a sparse array's keys", "2^20 elements from any iterable",
		`var a = []; a.length = 4e9; Array.from(a.keys())`, vocab.ReasonPolicyMemoryLimit},
	{"spread of a sparse array's keys", "2^20 elements from any iterable",
		`var a = []; a.length = 4e9; [...a.keys()]`, vocab.ReasonPolicyMemoryLimit},
	{"spread of an iterator into arguments", "65,536 spread arguments",
		`var a = []; a.length = 4e9; Math.max(...a.keys())`, vocab.ReasonPolicyMemoryLimit},
	{"destructuring rest of an iterator", "2^20 elements from any iterable",
		`var a = []; a.length = 4e9; var [x, ...rest] = a.keys()`, vocab.ReasonPolicyMemoryLimit},
	{"new Set of a sparse array", "2^20 elements from any iterable",
		`var a = []; a.length = 4e9; new Set(a)`, vocab.ReasonPolicyMemoryLimit},
	{"new Map of an iterator", "2^20 elements from any iterable",
		`var a = []; a.length = 4e9; new Map(a.entries())`, vocab.ReasonPolicyMemoryLimit},
	{"new WeakSet of a sparse array", "2^20 elements from any iterable",
		`var a = []; a.length = 4e9; new WeakSet(a)`, vocab.ReasonPolicyMemoryLimit},
	{"Object.fromEntries of an iterator", "2^20 elements from any iterable",
		`var a = []; a.length = 4e9; Object.fromEntries(a.keys())`, vocab.ReasonPolicyMemoryLimit},
	{"Promise.all of an iterator", "2^20 elements from any iterable",
		`var a = []; a.length = 4e9; Promise.all(a.keys())`, vocab.ReasonPolicyMemoryLimit},
	{"Array.prototype.join", "2^25 units, before the step",
		`var a = []; a.length = 1e6; a.join("x".repeat(1e6))`, vocab.ReasonPolicyMemoryLimit},
	{"Array(n)", "2^20 elements, before the step",
		`Array(1e9)`, vocab.ReasonPolicyMemoryLimit},
	{"Array.prototype.concat", "2^20 elements, before the step",
		`var a = new Array(1 << 19).fill(0); a.concat(a, a, a)`, vocab.ReasonPolicyMemoryLimit},
}

// TestNativeBounds runs each row of nativeBounds in a child process limited to 8 GB of
// address space (ulimit -v 8000000), so that a bound that does not hold ends the child,
// not the test run; each row must end in its refusal within the deadline, with the
// process alive and the next call fine.
func TestNativeBounds(t *testing.T) {
	slowTable(t)
	if os.Getenv(nativeBoundsChild) == "" {
		if runtime.GOOS != "linux" {
			t.Skip("needs ulimit -v")
		}
		cmd := exec.Command("sh", "-c", `ulimit -v 8000000 && exec "$0" -test.run '^TestNativeBounds$' -test.v -test.count=1`, os.Args[0])
		cmd.Env = append(os.Environ(), nativeBoundsChild+"=1")
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("child under ulimit -v 8000000: %v\n%s", err, out)
		}
		if !strings.Contains(string(out), "--- PASS: TestNativeBounds") {
			t.Fatalf("child did not run the table:\n%s", out)
		}
		return
	}
	const timeout = 5 * time.Second // the default limit
	for _, row := range nativeBounds {
		t.Run(row.native, func(t *testing.T) {
			g := loadGate(t, map[string]string{"p.js": `if (ctx.phase === "pre" && ctx.params.go) { ` + row.src + ` }`},
				func(o *Options) { o.Timeout = timeout })
			start, cpu := time.Now(), processCPU()
			r := run(g, preCall(`{"go":true}`))
			ok := r.Reject != nil && (r.Reject.Code == row.code ||
				row.code == reasonMemoryOrTimeout && (r.Reject.Code == vocab.ReasonPolicyMemoryLimit || r.Reject.Code == vocab.ReasonPolicyTimeout))
			if !ok {
				t.Fatalf("bound %q: got %+v, want %s", row.bound, r.Reject, row.code)
			}
			bound := timeout + 2*time.Second
			if d := time.Since(start); d > bound {
				if used := processCPU() - cpu; used == 0 || used > bound {
					t.Errorf("took %v (%v CPU), bound %v", d, used, bound)
				}
			}
			if r := run(g, preCall(`{"go":false}`)); r.Reject != nil {
				t.Fatalf("later call rejected: %+v", r.Reject)
			}
			runtime.GC()
		})
	}
}

// The guards of nativeBounds keep what each built-in returns: each row is true in plain
// JavaScript, and must stay true in a policy.
func TestBoundedNativesKeepResults(t *testing.T) {
	rows := []string{
		`JSON.stringify("a1 b22 c333".match(/\d+/g)) === '["1","22","333"]'`,
		`"abc".match(/x/g) === null`,
		`JSON.stringify("ab".match(/(?:)/g)) === '["","",""]'`,
		`"\ud83d\ude00x".match(/(?:)/gu).length === 3 && "\ud83d\ude00x".match(/(?:)/g).length === 4`,
		`(function () { var r = /a(b)/; var m = "xab".match(r); return m[1] === "b" && m.index === 1 })()`,
		`(function () { var r = /a/g; r.lastIndex = 5; "aaa".match(r); return r.lastIndex === 0 })()`,
		`/a/g[Symbol.match]("banana").length === 3`,
		`JSON.stringify("a,b,,c".split(/,/)) === '["a","b","","c"]' && JSON.stringify("a,b,c".split(/,/, 2)) === '["a","b"]'`,
		`JSON.stringify("a1b2c".split(/(\d)/)) === '["a","1","b","2","c"]' && JSON.stringify("a1b".split(/(\d)|(x)/)) === '["a","1",null,"b"]'`,
		`JSON.stringify("abc".split(/(?:)/)) === '["a","b","c"]' && JSON.stringify("".split(/x/)) === '[""]' && JSON.stringify("".split(/(?:)/)) === '[]'`,
		`JSON.stringify(" a  b ".split(/\s+/)) === '["","a","b",""]' && JSON.stringify("ab".split(/$/)) === '["ab"]' && JSON.stringify("ab".split(/^/)) === '["ab"]'`,
		`JSON.stringify("a,b".split(/,/y)) === '["a","b"]' && JSON.stringify("a,b".split(/,/g)) === '["a","b"]' && "a,b,c".split(/,/, -1).length === 3 && "a,b".split(/,/, 0).length === 0`,
		`"\ud83d\ude00".split(/(?:)/u).length === 1 && "\ud83d\ude00".split(/(?:)/).length === 2 && JSON.stringify("aXbxc".split(/x/i)) === '["a","b","c"]'`,
		`(function () { var r = /,/g; r.lastIndex = 3; "a,b".split(r); return r.lastIndex === 3 })()`,
		`JSON.stringify(JSON.parse('{"a":[1,2,{"b":null}],"__proto__":1}')) === '{"a":[1,2,{"b":null}],"__proto__":1}'`,
		`JSON.parse('"\\ud83d\\ude00"') === "\ud83d\ude00"`,
		`JSON.parse('[1,2]', function (k, v) { return typeof v === "number" ? v * 2 : v })[1] === 4`,
		`(function () { try { JSON.parse("{bad"); return false } catch (e) { return e instanceof SyntaxError } })()`,
		`(function () { var a = []; for (var i = 0; i < 5000; i++) a.push((i * 7919) % 5003); var b = a.slice().sort(); for (var j = 1; j < b.length; j++) if (String(b[j - 1]) > String(b[j])) return false; return b.length === 5000 })()`,
		`(function () { var a = []; for (var i = 0; i < 5000; i++) a.push(i % 3 === 0 ? undefined : i); a.sort(); return a[a.length - 1] === undefined && a[0] === 1 })()`,
		`(function () { var a = new Float64Array(5000); for (var i = 0; i < a.length; i++) a[i] = (i * 7919) % 5003 - 2500; a[7] = NaN; a[8] = -0; a[9] = 0; a.sort(); for (var j = 1; j < a.length - 1; j++) if (a[j - 1] > a[j]) return false; return isNaN(a[a.length - 1]) })()`,
		`(function () { var a = new Float64Array(5000); a[0] = 0; a[1] = -0; a.sort(); return Object.is(a[0], -0) || a.indexOf(-0) >= 0 })()`,
		`Array.from(new Map([[1, 2]]).keys())[0] === 1 && Array.from("ab").length === 2 && Array.from({length: 2}).length === 2`,
		`Array.from([1, 2, 3], function (x) { return x * 2 })[2] === 6`,
		`new Set([1, 1, 2]).size === 2 && new Set("aab").size === 2 && new Map(new Map([[1, 2]]).entries()).get(1) === 2`,
		`(function () { var [a, ...r] = new Set([1, 2, 3]).values(); return a === 1 && r.length === 2 })()`,
		`(function () { var a, r; [a, ...r] = [1, 2, 3]; return r[1] === 3 })()`,
		`JSON.stringify({..."ab"}) === '{"0":"a","1":"b"}' && JSON.stringify({...{x: 1}}) === '{"x":1}'`,
		`Object.keys("abc").length === 3 && Object.entries({a: 1})[0][1] === 1 && Object.assign({}, "ab")[1] === "b"`,
		`new Uint8Array([1, 2, 3]).join("-") === "1-2-3" && String(new Uint8Array([1, 2])) === "1,2"`,
		`Uint8Array.from(new Set([1, 2]).values()).length === 2 && new Uint8Array(new Set([5]).values())[0] === 5`,
		`Object.fromEntries(new Map([["k", 1]]).entries()).k === 1`,
		`Math.max(...new Set([1, 5, 2]).values()) === 5 && [...new Map([[1, 2]]).keys()][0] === 1`,
	}
	var src strings.Builder
	src.WriteString("if (ctx.phase === \"pre\") {\n")
	for i, r := range rows {
		src.WriteString("  if (ctx.params.i === " + itoa(i) + " && !(" + r + ")) throw \"wrong\";\n")
	}
	src.WriteString("}\n")
	g := loadGate(t, map[string]string{"p.js": src.String()})
	for i, r := range rows {
		if res := run(g, preCall(`{"i":`+itoa(i)+`}`)); res.Reject != nil {
			t.Errorf("%s: %+v (%s)", r, res.Reject, res.Reject.Message)
		}
	}
}

// TestWordCountArgument: a word-count policy (`.match(/\S+/g)`, `.split(/\s+/)`, or a
// counting `.replace(/\S+/g, fn)`) over a 16 MiB string
// argument, under the default 5 s limit, is answered within the limit plus a second
// (wall, or the process's CPU on a loaded machine): words past the bound are refused
// (policy_memory_limit, or policy_timeout first on a slow machine), one long word or a
// run of blanks is one search the guard checks the deadline before. The next call is
// fine.
func TestWordCountArgument(t *testing.T) {
	slowTable(t)
	const timeout = 5 * time.Second // the default limit
	g := loadGate(t, map[string]string{"p.js": `if (ctx.phase === "pre" && typeof ctx.params.text === "string") {
  var words = 0;
  if (ctx.params.how === "split") words = ctx.params.text.split(/\s+/).length;
  else if (ctx.params.how === "replace") ctx.params.text.replace(/\S+/g, function (w) { words++; return w });
  else words = (ctx.params.text.match(/\S+/g) || []).length;
  if (words > 100000) throw new Error("too many words: " + words);
}`}, func(o *Options) { o.Timeout = timeout })
	const size = 16 << 20
	for _, tc := range []struct {
		name, how, unit string
		reject          bool
	}{
		{"one-letter words", "match", "a ", true},
		{"words", "match", "word ", true},
		{"non-ASCII words", "match", "w\u00f6rd ", true},
		{"one word", "match", "w", false},
		{"blanks", "match", " ", false},
		{"split, one-letter words", "split", "a ", true},
		{"split, words", "split", "word ", true},
		{"replace with a function, one-letter words", "replace", "a ", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			params, _ := json.Marshal(map[string]string{"how": tc.how, "text": strings.Repeat(tc.unit, size/len(tc.unit))})
			start, cpu := time.Now(), processCPU()
			r := run(g, preCall(string(params)))
			d, used := time.Since(start), processCPU()-cpu
			bound := timeout + time.Second
			if d > bound && (used == 0 || used > bound) {
				t.Errorf("answered after %v (%v CPU), bound %v", d, used, bound)
			}
			switch {
			case !tc.reject && r.Reject != nil:
				t.Errorf("rejected: %+v", r.Reject)
			case tc.reject && (r.Reject == nil || r.Reject.Code != vocab.ReasonPolicyMemoryLimit && r.Reject.Code != vocab.ReasonPolicyTimeout):
				t.Errorf("got %+v, want policy_memory_limit or policy_timeout", r.Reject)
			}
			if r := run(g, preCall(`{"text":"a b"}`)); r.Reject != nil {
				t.Fatalf("later call rejected: %+v", r.Reject)
			}
			runtime.GC()
		})
	}
}
