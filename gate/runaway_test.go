package gate

import (
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/mcpgate/mcpgate/vocab"
)

// reasonMemoryOrTimeout accepts either the memory guard or the deadline.
const reasonMemoryOrTimeout vocab.Reason = "memory_or_timeout"

// Each runaway must end in a clean rejection with its code, within about the deadline,
// and the next call on the same gate must work.
func TestRunaways(t *testing.T) {
	slowTable(t)
	cases := []struct {
		name, src string
		code      vocab.Reason
	}{
		{"infinite loop", `for (;;) {}`, vocab.ReasonPolicyTimeout},
		{"loop swallowing errors", `for (;;) { try { for (;;) {} } catch (e) {} }`, vocab.ReasonPolicyTimeout},
		{"async loop", `(async function () { await null; for (;;) {} })()`, vocab.ReasonPolicyTimeout},
		{"deep recursion", `function f(n) { return f(n + 1) + 1 } f(0)`, vocab.ReasonPolicyStackLimit},
		{"catastrophic regex", `/^(a+)+\1$/.test("a".repeat(34) + "!"); for (;;) {}`, vocab.ReasonPolicyTimeout},
		{"regex lookahead backtracking", `/^(?=(a+)+$)b/.test("a".repeat(40) + "!"); for (;;) {}`, vocab.ReasonPolicyTimeout},
		{"JSON.stringify deep", `var o = {}; for (var i = 0; i < 30000; i++) o = {a: o}; JSON.stringify(o)`, vocab.ReasonPolicyStackLimit},
		{"JSON.stringify toJSON deep", `var o = {}; for (var i = 0; i < 30000; i++) o = {a: o}; JSON.stringify({toJSON: function () { return o }})`, vocab.ReasonPolicyStackLimit},
		{"String of deep array", `var a = []; for (var i = 0; i < 30000; i++) a = [a]; String(a)`, vocab.ReasonPolicyStackLimit},
		{"JSON.parse deep", `JSON.parse("[".repeat(1000000))`, vocab.ReasonPolicyStackLimit},
		{"flat(Infinity) deep", `var a = [1]; for (var i = 0; i < 30000; i++) a = [a]; a.flat(Infinity); for (;;) {}`, vocab.ReasonPolicyTimeout},
		{"repeat 2**40", `'x'.repeat(Math.pow(2, 40))`, vocab.ReasonPolicyMemoryLimit},
		{"repeat via call", `String.prototype.repeat.call('xy', 1e9)`, vocab.ReasonPolicyMemoryLimit},
		{"Array(1e9)", `Array(1e9)`, vocab.ReasonPolicyMemoryLimit},
		{"new Array(1e9)", `new Array(1e9)`, vocab.ReasonPolicyMemoryLimit},
		{"[].constructor(1e9)", `[].constructor(1e9)`, vocab.ReasonPolicyMemoryLimit},
		{"Array.from length", `Array.from({length: 1e9})`, vocab.ReasonPolicyMemoryLimit},
		{"padStart", `'x'.padStart(Math.pow(2, 40))`, vocab.ReasonPolicyMemoryLimit},
		{"padEnd", `'x'.padEnd(Math.pow(2, 40), 'ab')`, vocab.ReasonPolicyMemoryLimit},
		{"fill sparse", `var a = []; a.length = 1e9; a.fill(0)`, vocab.ReasonPolicyMemoryLimit},
		{"indexOf sparse", `var a = []; a.length = 4e9; a.indexOf(1)`, vocab.ReasonPolicyMemoryLimit},
		{"join long separator", `var a = []; a.length = 1e6; a.join('x'.repeat(1e6))`, vocab.ReasonPolicyMemoryLimit},
		{"join big elements", `var s = 'x'.repeat(1 << 24); var a = [s, s, s, s, s]; a.join('')`, vocab.ReasonPolicyMemoryLimit},
		{"split to chars", `'x'.repeat((1 << 22) + 1).split('')`, vocab.ReasonPolicyMemoryLimit},
		{"Uint8Array 2**31", `new Uint8Array(Math.pow(2, 31))`, vocab.ReasonPolicyMemoryLimit},
		{"Float64Array via constructor", `new (new Float64Array(1).constructor)(1e9)`, vocab.ReasonPolicyMemoryLimit},
		{"ArrayBuffer 2**40", `new ArrayBuffer(Math.pow(2, 40))`, vocab.ReasonPolicyMemoryLimit},
		{"apply huge array-like", `Math.max.apply(null, {length: 1e9})`, vocab.ReasonPolicyMemoryLimit},
		{"Reflect.apply huge", `Reflect.apply(Math.max, null, {length: 1e9})`, vocab.ReasonPolicyMemoryLimit},
		{"string doubling with +", `var s = "x"; for (;;) s = s + s;`, vocab.ReasonPolicyMemoryLimit},
		{"string doubling with +=", `var s = "x"; for (;;) s += s;`, vocab.ReasonPolicyMemoryLimit},
		{"string doubling on a property", `var o = {s: "x"}; for (;;) o.s += o.s;`, vocab.ReasonPolicyMemoryLimit},
		{"string doubling on a computed property", `var o = {s: "x"}, k = function () { return "s" }; for (;;) o[k()] += o.s;`, vocab.ReasonPolicyMemoryLimit},
		{"string doubling in a template", "var s = 'x'; for (;;) s = `${s}${s}`;", vocab.ReasonPolicyMemoryLimit},
		{"string doubling with concat", `var s = "x"; for (;;) s = s.concat(s);`, vocab.ReasonPolicyMemoryLimit},
		{"string doubling with join", `var s = "x"; for (;;) s = [s, s].join("");`, vocab.ReasonPolicyMemoryLimit},
		{"string doubling with an object's toString", `var s = "x", o = {toString: function () { return s }}; for (;;) s = o + o;`, vocab.ReasonPolicyMemoryLimit},
		{"string growth with replace", `var s = "x".repeat(1000); for (;;) s = s.replace(/x/g, s);`, vocab.ReasonPolicyMemoryLimit},
		{"string growth with a replace function", `var s = "x".repeat(1000); for (;;) s = s.replace(/x/g, function () { return s });`, vocab.ReasonPolicyMemoryLimit},
		{"string growth with Symbol.replace", `var s = "xx"; for (;;) s = /x/g[Symbol.replace](s, s);`, vocab.ReasonPolicyMemoryLimit},
		{"string growth with replaceAll", `var s = "xx"; for (;;) s = s.replaceAll("x", s);`, vocab.ReasonPolicyMemoryLimit},
		{"string growth with String.raw", `var s = "x"; for (;;) s = String.raw({raw: [s, s, s]}, s, s);`, vocab.ReasonPolicyMemoryLimit},
		{"JSON.stringify of a shared tree", `var a = ["x".repeat(1 << 20)]; for (;;) { a = [a, a]; JSON.stringify(a); }`, vocab.ReasonPolicyMemoryLimit},
		// array growth is interruptible JS work until the guard: the deadline may end it first
		{"array doubling with spread", `var a = [1]; for (;;) a = [...a, ...a];`, reasonMemoryOrTimeout},
		{"array doubling with push", `var a = [1]; for (;;) a.push(...a);`, reasonMemoryOrTimeout},
		{"array doubling with concat", `var a = [1]; for (;;) a = a.concat(a);`, reasonMemoryOrTimeout},
		{"array growth with concat of many", `var a = [1]; for (;;) a = a.concat(a, a, a, a, a, a, a);`, vocab.ReasonPolicyMemoryLimit},
		{"array growth with flat", `var a = [1]; for (;;) a = [a, a].flat();`, reasonMemoryOrTimeout},
		{"array growth with flatMap", `var a = [1]; for (;;) a = a.flatMap(function (x) { return [x, x] });`, reasonMemoryOrTimeout},
		{"array growth with splice", `var a = [1]; for (;;) a.splice(0, 0, ...a);`, vocab.ReasonPolicyMemoryLimit},
		{"unshift into a sparse array", `var a = Array(1 << 18).fill(1); a.unshift(...a);`, vocab.ReasonPolicyMemoryLimit},
		{"BigInt is gone", `var x = typeof BigInt === "undefined" && typeof BigInt64Array === "undefined" ? "x" : 1; for (;;) x = x + x;`, vocab.ReasonPolicyMemoryLimit},
		{"throw loops in toString", `throw {toString: function () { for (;;) {} }}`, vocab.ReasonPolicyThrow},
		{"throw proxy with looping trap", `throw new Proxy({}, {getOwnPropertyDescriptor: function () { for (;;) {} }})`, vocab.ReasonPolicyTimeout},
		{"error with looping message getter", `var e = new Error("x"); Object.defineProperty(e, "message", {get: function () { for (;;) {} }}); throw e`, vocab.ReasonPolicyThrow},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			// A row that wants a guard's code runs with a deadline far past what reaching
			// the guard takes on a busy machine, so the deadline cannot win a race with
			// it: a timeout there means the guard did not fire. A row that accepts either
			// runs with the short deadline.
			timeout := 300 * time.Millisecond
			switch tc.code {
			case vocab.ReasonPolicyTimeout:
			case reasonMemoryOrTimeout:
				timeout = 3 * time.Second * raceSlowdown
			default:
				timeout = 60 * time.Second * raceSlowdown
			}
			g := loadGate(t, map[string]string{"p.js": `if (ctx.phase === "pre" && ctx.params.go) { ` + tc.src + ` }`},
				func(o *Options) { o.Timeout = timeout })
			start, cpu := time.Now(), processCPU()
			r := run(g, preCall(`{"go":true}`))
			want := r.Reject != nil && (r.Reject.Code == tc.code ||
				tc.code == reasonMemoryOrTimeout && (r.Reject.Code == vocab.ReasonPolicyMemoryLimit || r.Reject.Code == vocab.ReasonPolicyTimeout))
			if !want || r.Reject.Policy != "p.js" {
				t.Fatalf("got %+v, want rejection %s", r.Reject, tc.code)
			}
			// bounded: the margin is how long an interrupt takes to land after the native
			// step in flight; the race detector slows that step as much as everything else.
			// A busy machine stretches the wall clock, not the work: the run fails only when
			// the CPU time it used is past the bound too (the wall clock alone where the CPU
			// time cannot be read).
			bound := timeout + 2*time.Second*raceSlowdown
			if d := time.Since(start); d > bound {
				if used := processCPU() - cpu; used == 0 || used > bound {
					t.Errorf("took %v (%v CPU), bound %v", d, used, bound)
				}
			}
			for i := 0; i < 3; i++ { // the gate still works, on every pooled runtime
				if r := run(g, preCall(`{"go":false}`)); r.Reject != nil {
					t.Fatalf("later call rejected: %+v", r.Reject)
				}
			}
		})
	}
}

// The heap watchdog interrupts a policy that allocates in a JS loop.
func TestHeapWatchdog(t *testing.T) {
	slowTable(t)
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	g := loadGate(t, map[string]string{"p.js": `
		if (ctx.params.go) { var a = []; for (var i = 0; ; i++) a.push('x'.repeat(1 << 22) + i) }`},
		func(o *Options) { o.HeapSoftLimit = ms.HeapAlloc + 96<<20; o.Timeout = 20 * time.Second * raceSlowdown })
	r := run(g, preCall(`{"go":true}`))
	if r.Reject == nil || r.Reject.Code != vocab.ReasonPolicyMemoryLimit {
		t.Fatalf("got %+v", r.Reject)
	}
	runtime.GC()
	if r := run(g, preCall(`{"go":false}`)); r.Reject != nil {
		t.Fatalf("later call rejected: %+v", r.Reject)
	}
}

// Thrown values become policy_throw with a safely computed message.
func TestThrowForms(t *testing.T) {
	cases := []struct{ src, msg string }{
		{`throw "force_delete is blocked"`, "force_delete is blocked"},
		{`throw new Error("boom")`, "boom"},
		{`throw new TypeError("bad type")`, "TypeError: bad type"},
		{`throw 42`, "42"},
		{`throw undefined`, "undefined"},
		{`throw null`, "null"},
		{`throw true`, "true"},
		{`throw Symbol("s")`, "Symbol()"},
		{`throw Object.create(null)`, "policy threw a non-error value"},
		{`throw {toString: function () { for (;;) {} }}`, "policy threw a non-error value"},
		{`throw {message: "plain object message"}`, "plain object message"},
		{`class E extends Error { constructor(m) { super(m); this.name = "PolicyError" } }; throw new E("custom")`, "PolicyError: custom"},
		{`throw "x".repeat(5000)`, strings.Repeat("x", 1024) + "…"},
		{`ctx.params.missing.deeper`, "TypeError: Cannot read property 'deeper' of undefined"},
	}
	g := loadGate(t, map[string]string{"t.js": `if (ctx.params.i !== undefined) { [` + joinFuncs(cases) + `][ctx.params.i]() }`})
	for i, tc := range cases {
		r := run(g, preCall(`{"i":`+itoa(i)+`}`))
		if r.Reject == nil || r.Reject.Code != vocab.ReasonPolicyThrow || r.Reject.Policy != "t.js" {
			t.Errorf("%s: got %+v", tc.src, r.Reject)
			continue
		}
		if !strings.HasPrefix(r.Reject.Message, tc.msg) {
			t.Errorf("%s: message %q, want %q", tc.src, r.Reject.Message, tc.msg)
		}
		if r.Acted[0] != "t.js" {
			t.Errorf("Acted = %v", r.Acted)
		}
	}
}

func joinFuncs(cases []struct{ src, msg string }) string {
	var b strings.Builder
	for _, c := range cases {
		b.WriteString("function () { " + c.src + " },\n")
	}
	return b.String()
}

func itoa(i int) string { return strconv.Itoa(i) }
