package gate

import (
	"strings"
	"testing"
	"time"

	"github.com/dop251/goja"
	"github.com/mcpgate/mcpgate/vocab"
)

// lockedVM is a pooled runtime with the lockdown applied, outside any policy run.
func lockedVM(t testing.TB) *vm {
	t.Helper()
	g := loadGate(t, map[string]string{"p.js": `var x = 1;`})
	v, err := newVM(g.pool)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// evalCase runs a function body with the given parameters and describes its result:
// "s:" and a string, "j:" and JSON, or "throw:" and the error's name and message.
func evalCase(rt *goja.Runtime, body string, params string, args ...goja.Value) (string, error) {
	src := `(function (` + params + `) { try { var r = (function () { ` + body + ` })();
  return typeof r === "string" ? "s:" + r : "j:" + JSON.stringify(r);
} catch (e) { return "throw:" + (e && e.name) + ": " + (e && e.message) } })`
	fv, err := rt.RunString(src)
	if err != nil {
		return "", err
	}
	f, _ := goja.AssertFunction(fv)
	r, err := f(goja.Undefined(), args...)
	if err != nil {
		return "", err
	}
	return r.String(), nil
}

// The guarded replace, replaceAll and Symbol.replace behave as the built-ins: each row
// has its expected result, and unguarded goja must give the same.
func TestReplaceGuardsMatchBuiltins(t *testing.T) {
	cases := []struct{ name, body, want string }{
		{"string pattern", `return "aXbX".replace("X", "-")`, "s:a-bX"},
		{"replaceAll string", `return "aXbX".replaceAll("X", "-")`, "s:a-b-"},
		{"empty pattern", `return "abc".replace("", "-")`, "s:-abc"},
		{"replaceAll empty pattern", `return "abc".replaceAll("", "-")`, "s:-a-b-c-"},
		{"replaceAll overlapping", `return "aaaa".replaceAll("aa", "b")`, "s:bb"},
		{"no match", `return "abc".replace("z", "-")`, "s:abc"},
		{"$& with g", `return "a.b.c".replace(/\./g, "$&$&")`, "s:a..b..c"},
		{"$1 $2", `return "John Smith".replace(/(\w+)\s(\w+)/, "$2, $1")`, "s:Smith, John"},
		{"$` and $'", "return \"abc\".replace(\"b\", \"[$`|$']\")", "s:a[a|c]c"},
		{"$<name>", `return "2024-01-02".replace(/(?<y>\d+)-(?<m>\d+)-(?<d>\d+)/, "$<d>/$<m>/$<y>")`, "s:02/01/2024"},
		{"$$ and literal $ forms on a string pattern", `return "abc".replace("b", "$1$<x>$$$")`, "s:a$1$<x>$$c"},
		{"$0 $10 $01", `return "abc".replace(/(b)/, "[$10][$0][$01]")`, "s:a[b0][$0][b]c"},
		{"i and g", `return "aBc ABC".replace(/b/gi, "x")`, "s:axc AxC"},
		{"m", `return "a\nb\nc".replace(/^b$/m, "X")`, "s:a\nX\nc"},
		{"gim strip", `return "x\nco-authored-by: a\nCo-Authored-By: b\ny".replace(/^co-authored-by:.*$\n?/gim, "")`, "s:x\ny"},
		{"empty regexp g", `return "abc".replace(/(?:)/g, "-")`, "s:-a-b-c-"},
		{"sticky at lastIndex", `var r = /a/y; r.lastIndex = 1; return ["baa".replace(r, "X"), r.lastIndex]`, `j:["bXa",2]`},
		{"sticky miss resets lastIndex", `var r = /a/y; r.lastIndex = 0; return ["baa".replace(r, "X"), r.lastIndex]`, `j:["baa",0]`},
		{"global resets lastIndex", `var r = /a/g; r.lastIndex = 2; return ["aXa".replace(r, "b"), r.lastIndex]`, `j:["bXb",0]`},
		{"plain regexp keeps lastIndex", `var r = /a/; r.lastIndex = 2; return ["aa".replace(r, "b"), r.lastIndex]`, `j:["ba",2]`},
		{"function gets match, groups, offset, string",
			`return "x-12-y".replace(/(\d)(\d)/, function () { return JSON.stringify([].slice.call(arguments)) })`,
			`s:x-["12","1","2",2,"x-12-y"]-y`},
		{"function gets named groups",
			`return "ab".replace(/(?<first>a)/, function () { var a = [].slice.call(arguments); return typeof a[4] + a[4].first + a.length })`,
			"s:objecta5b"},
		{"function on a string pattern", `return "abc".replace("b", function (m, o, s) { return [m, o, s].join("|") })`, "s:ab|1|abcc"},
		{"function this is undefined", `return "a".replace("a", function () { "use strict"; return String(this) })`, "s:undefined"},
		{"function result is not expanded", `return "a".replace("a", function () { return "$&" })`, "s:$&"},
		{"function result converted", `return "aa".replace(/a/g, function (m, o) { return o })`, "s:01"},
		{"function throws", `return "a".replace("a", function () { throw new RangeError("x") })`, "throw:RangeError: x"},
		{"function with replaceAll", `return "abab".replaceAll("b", function (m, o) { return o })`, "s:a1a3"},
		{"replaceAll non-global regexp", `return "aa".replaceAll(/a/, "b")`, "throw:TypeError: String.prototype.replaceAll called with a non-global RegExp argument"},
		{"replaceAll global regexp", `return "aa".replaceAll(/a/g, "b")`, "s:bb"},
		{"replaceAll regexp-like object without flags", `return "a".replaceAll({[Symbol.match]: true}, "b")`, "throw:TypeError: Value is not object coercible"},
		{"replaceAll Symbol.match false", `return "aa".replaceAll({[Symbol.match]: false, [Symbol.replace]: function (s, r) { return s + r }}, "!")`, "s:aa!"},
		{"Symbol.replace called directly", `return /a/g[Symbol.replace]("banana", "o")`, "s:bonono"},
		{"Symbol.replace with a function", `return /(a)(n)?/g[Symbol.replace]("ban", function (m, p1, p2, o) { return "<" + p2 + o + ">" })`, "s:b<n1>"},
		{"Symbol.replace on a primitive", `return RegExp.prototype[Symbol.replace].call("x", "a", "b")`, "throw:TypeError: Value is not an object: x"},
		{"subclass Symbol.replace is called",
			`class R extends RegExp { [Symbol.replace](s, r) { return "mine:" + s + r } } return "ab".replace(new R("a"), "!")`, "s:mine:ab!"},
		{"null this", `return String.prototype.replace.call(null, "a", "b")`, "throw:TypeError: Value is not object coercible"},
		{"undefined this", `return String.prototype.replaceAll.call(undefined, "a", "b")`, "throw:TypeError: Value is not object coercible"},
		{"Symbol.replace null this", `return RegExp.prototype[Symbol.replace].call(null, "a", "b")`, "throw:TypeError: Value is not an object: null"},
		{"String object this", `return String.prototype.replace.call(new String("aa"), "a", "b")`, "s:ba"},
		{"number this", `return String.prototype.replace.call(1234, 2, 9)`, "s:1934"},
		{"object pattern with Symbol.replace", `return "abc".replace({[Symbol.replace]: function (s, r) { return s + r }}, "!")`, "s:abc!"},
		{"object pattern gets this unconverted", `return String.prototype.replace.call(5, {[Symbol.replace]: function (s) { return typeof s }})`, "s:number"},
		{"object pattern without Symbol.replace", `return "a[object Object]b".replace({}, "-")`, "s:a-b"},
		{"object pattern with toString", `return "abc".replace({toString: function () { return "b" }}, "X")`, "s:aXc"},
		{"Symbol.replace not callable", `return "abc".replace({[Symbol.replace]: 1}, "X")`, "throw:TypeError: 1 is not a method"},
		{"Symbol pattern", `return "a".replace(Symbol("s"), "b")`, "throw:TypeError: Cannot convert a Symbol value to a string"},
		{"Symbol replacement", `return "a".replace("a", Symbol("s"))`, "throw:TypeError: Cannot convert a Symbol value to a string"},
		{"Symbol string to Symbol.replace", `return /a/[Symbol.replace](Symbol("s"), "b")`, "throw:TypeError: Cannot convert a Symbol value to a string"},
		{"conversion order, once each",
			`var log = [];
			 var t = {toString: function () { log.push("this"); return "abc" }};
			 var p = {toString: function () { log.push("p"); return "b" }};
			 var r = {toString: function () { log.push("r"); return "X" }};
			 return [String.prototype.replace.call(t, p, r), log.join()]`, `j:["aXc","this,p,r"]`},
		{"Symbol.replace getter runs once",
			`var n = 0; var p = {get [Symbol.replace]() { n++; return function () { return "r" } }};
			 return ["x".replace(p, ""), "x".replaceAll(p, ""), n]`, `j:["r","r",2]`},
		{"unicode", `return "héllo wörld".replaceAll("ö", "o").replace(/é/, "e")`, "s:hello world"},
		{"replaceAll empty pattern, $ forms", "return \"ax\".replaceAll(\"\", \"<$`|$'|$&|$1|$<n>>\")", "s:<|ax||$1|$<n>>a<a|x||$1|$<n>>x<ax|||$1|$<n>>"},
		{"replaceAll empty pattern, non-ASCII", `var r = "é\ud83d\ude00".replaceAll("", "-"); return [].map.call(r, function (c) { return c.charCodeAt(0) })`, "j:[45,233,45,55357,45,56832,45]"},
		{"replaceAll empty pattern, non-ASCII, function", `return "éx".replaceAll("", function (m, o, s) { return "[" + m + o + s + "]" })`, "s:[0éx]é[1éx]x[2éx]"},
		{"replaceAll empty pattern, non-ASCII, $ forms", "return \"éx\".replaceAll(\"\", \"<$`|$'|$&|$1|$<n>>\")", "s:<|éx||$1|$<n>>é<é|x||$1|$<n>>x<éx|||$1|$<n>>"},
		{"lone surrogate pattern", `var r = "\ud83d\ude00x".replaceAll("\ud83d", "A"); return [r.length, r.charCodeAt(0), r.charCodeAt(1)]`, "j:[3,65,56832]"},
		{"names and lengths",
			`var f = [String.prototype.replace, String.prototype.replaceAll, RegExp.prototype[Symbol.replace]];
			 return f.map(function (x) { return x.name + "/" + x.length + "/" + typeof x.prototype })`,
			`j:["replace/2/undefined","replaceAll/2/undefined","[Symbol.replace]/2/undefined"]`},
		{"not a constructor", `try { new String.prototype.replace("a", "b"); return "constructed" } catch (e) { return e instanceof TypeError }`, "j:true"},
	}
	v := lockedVM(t)
	raw := goja.New()
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, err := evalCase(v.rt, tc.body, "")
			if err != nil {
				t.Fatalf("guarded: %v", err)
			}
			if got != tc.want {
				t.Errorf("guarded got %q, want %q", got, tc.want)
			}
			if strings.HasPrefix(tc.name, "replaceAll empty pattern, non-ASCII") {
				return // goja's own replaceAll never ends on it
			}
			orig, err := evalCase(raw, tc.body, "")
			if err != nil {
				t.Fatalf("built-in: %v", err)
			}
			if orig != tc.want {
				t.Errorf("built-in got %q, want %q", orig, tc.want)
			}
		})
	}
	if v.broken.Load() {
		t.Fatal("a row tripped a guard")
	}
}

// RegExp.prototype[Symbol.replace], [Symbol.match], [Symbol.matchAll] and
// [Symbol.split] refuse a RegExp a policy customised (own properties, another
// prototype, a Proxy) and any other object: goja would run its generic algorithm with
// the policy's exec, flags, species and match objects in one native step (a non-global
// RegExp whose flags say "g" loops there without end).
// Plain RegExps, lastIndex included, work as before.
func TestReplaceGuardsRefuseCustomRegExps(t *testing.T) {
	const refusedReplace = "throw:TypeError: RegExp.prototype[Symbol.replace] in policies takes only a RegExp of the built-in prototype with no own property but lastIndex"
	const refusedMatch = "throw:TypeError: RegExp.prototype[Symbol.match] in policies takes only a RegExp of the built-in prototype with no own property but lastIndex"
	const refusedMatchAll = "throw:TypeError: RegExp.prototype[Symbol.matchAll] in policies takes only a RegExp of the built-in prototype with no own property but lastIndex"
	const refusedSplit = "throw:TypeError: RegExp.prototype[Symbol.split] in policies takes only a RegExp of the built-in prototype with no own property but lastIndex"
	cases := []struct{ name, body, want string }{
		{"flags claiming g on a non-global RegExp", `var r = /a/; Object.defineProperty(r, "flags", {value: "g"}); return "aaaa".replace(r, "b")`, refusedReplace},
		{"match with flags claiming g", `var r = /a/; Object.defineProperty(r, "flags", {value: "g"}); return "aaaa".match(r)`, refusedMatch},
		{"a flags getter", `var n = 0, r = /a/g; Object.defineProperty(r, "flags", {get: function () { return n++ ? "g" : "" }}); return "aaaa".replace(r, "$&$&")`, refusedReplace},
		{"own global", `var r = /a/g; Object.defineProperty(r, "global", {value: false}); return "aa".replace(r, "b")`, refusedReplace},
		{"own exec with long captures", `var big = "x".repeat(1000), r = /a/g; Object.defineProperty(r, "exec", {value: function () { return {0: "", 1: big, index: 0, length: 2} }}); return "a".replace(r, "$1")`, refusedReplace},
		{"own exec with a huge length", `var r = /a/; Object.defineProperty(r, "exec", {value: function () { return {0: "", index: 0, length: 1e9} }}); return "a".replace(r, function () { return "" })`, refusedReplace},
		{"subclass exec", `class R extends RegExp { exec(s) { return super.exec(s) } } return "banana".replace(new R("a", "g"), "o")`, refusedReplace},
		{"subclass flags", `class R extends RegExp { get flags() { return "g" } } return "aaaa".match(new R("a"))`, refusedMatch},
		{"another prototype", `var r = /a/g; Object.setPrototypeOf(r, Object.create(RegExp.prototype)); return r[Symbol.replace]("a", "b")`, refusedReplace},
		{"a Proxy of a RegExp", `return RegExp.prototype[Symbol.replace].call(new Proxy(/a/g, {}), "aa", "b")`, refusedReplace},
		{"a plain object", `var o = {exec: function () { return null }, flags: ""}; return RegExp.prototype[Symbol.replace].call(o, "abc", "x")`, refusedReplace},
		{"match on a plain object", `return RegExp.prototype[Symbol.match].call({exec: function () { return null }, flags: "g"}, "abc")`, refusedMatch},
		{"an own expando", `var r = /a/g; r.note = 1; return "aa".replace(r, "b")`, refusedReplace},
		{"plain RegExp, lastIndex set", `var r = /a/y; r.lastIndex = 1; return ["baa".replace(r, "X"), r.lastIndex]`, `j:["bXa",2]`},
		{"plain match", `return "a1b22".match(/\d+/g)`, `j:["1","22"]`},
		{"match on a string", `return "a.b".match(".")`, `j:["a"]`},
		{"subclass Symbol.replace is the policy's own", `class R extends RegExp { [Symbol.replace](s, r) { return "mine:" + s + r } } return "ab".replace(new R("a"), "!")`, "s:mine:ab!"},
		{"split with a species whose splitter scans from the start", `function S() { var r = /a/; Object.defineProperty(r, "x", {value: 1}); return r }
			 var C = {}; C[Symbol.species] = S; var r = /a/; Object.defineProperty(r, "constructor", {value: C}); return ("x".repeat(100) + "a").split(r)`, refusedSplit},
		{"split with a subclass", `class R extends RegExp {} return "a,b".split(new R(","))`, refusedSplit},
		{"matchAll with flags claiming g", `var r = /a/g; Object.defineProperty(r, "flags", {value: "g"}); return [..."aa".matchAll(r)].length`, refusedMatchAll},
		{"plain split", `return "a1b22c".split(/\d+/)`, `j:["a","b","c"]`},
		{"plain split with a limit and captures", `return "a1b2c".split(/(\d)/, 3)`, `j:["a","1","b"]`},
		{"plain matchAll", `return [..."a1b22".matchAll(/\d+/g)].map(function (m) { return m[0] + "@" + m.index })`, `j:["1@1","22@3"]`},
		{"names and lengths", `return [Symbol.match, Symbol.matchAll, Symbol.split].map(function (k) { var f = RegExp.prototype[k]; return f.name + "/" + f.length })`,
			`j:["[Symbol.match]/1","[Symbol.matchAll]/1","[Symbol.split]/2"]`},
	}
	v := lockedVM(t)
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, err := evalCase(v.rt, tc.body, "")
			if err != nil {
				t.Fatalf("guarded: %v", err)
			}
			if got != tc.want {
				t.Errorf("got %q, want %q", got, tc.want)
			}
		})
	}
	if v.broken.Load() {
		t.Fatal("a row tripped a guard")
	}
}

// The guards are frozen like every intrinsic, and a policy cannot replace them.
func TestReplaceGuardsFrozen(t *testing.T) {
	v := lockedVM(t)
	for _, src := range []string{
		`Object.isFrozen(String.prototype.replace) && Object.isFrozen(String.prototype.replaceAll) && Object.isFrozen(RegExp.prototype[Symbol.replace]) && Object.isFrozen(RegExp.prototype[Symbol.match]) && Object.isFrozen(RegExp.prototype[Symbol.matchAll]) && Object.isFrozen(RegExp.prototype[Symbol.split])`,
		`Object.getPrototypeOf(String.prototype.replace) === Function.prototype`,
		`!Object.getOwnPropertyDescriptor(String.prototype, "replace").writable && !Object.getOwnPropertyDescriptor(RegExp.prototype, Symbol.replace).configurable`,
		`(function () { try { String.prototype.replace.constructor("return 1"); return false } catch (e) { return e instanceof TypeError } })()`,
	} {
		r, err := v.rt.RunString(src)
		if err != nil || !r.ToBoolean() {
			t.Errorf("%s: %v %v", src, r, err)
		}
	}
}

// Near the limit: the quick bound is over, the count decides; every bound holds against
// a toString that changes its answer and against patterns without a Symbol.replace.
func TestReplaceGuardLimits(t *testing.T) {
	slowTable(t)
	const big = `var s = "x".repeat(1 << 24);`         // the quick bound with a 2-unit replacement is over
	const full = `var s = "x".repeat((1 << 25) - 64);` // ... and the count stops at 33
	cases := []struct {
		name, src string
		code      vocab.Reason // "" for no rejection
	}{
		{"non-global regexp counts one", big + `if (s.replace(/x/, "yy").length !== (1 << 24) + 1) throw "bad"`, ""},
		{"global regexp over the count", full + `s.replace(/x/g, "yy")`, vocab.ReasonPolicyMemoryLimit},
		{"global regexp within the count", big + `if ((s + "ab").replace(/ab/g, "yyy").length !== (1 << 24) + 3) throw "bad"`, ""},
		{"sticky regexp counts one", big + `if (s.replace(/x/y, "yy").length !== (1 << 24) + 1) throw "bad"`, ""},
		{"string pattern counts one", big + `if (s.replace("x", "yy").length !== (1 << 24) + 1) throw "bad"`, ""},
		{"replaceAll string over the count", full + `s.replaceAll("x", "yy")`, vocab.ReasonPolicyMemoryLimit},
		{"replaceAll string within the count", big + `if ((s + "ab").replaceAll("ab", "yyy").length !== (1 << 24) + 3) throw "bad"`, ""},
		{"replaceAll non-ASCII over the count", `"é".repeat((1 << 25) - 64).replaceAll("é", "ab")`, vocab.ReasonPolicyMemoryLimit},
		{"replaceAll non-ASCII within the count", `if (("é" + "x".repeat(1 << 24)).replaceAll("é", "ab").length !== (1 << 24) + 2) throw "bad"`, ""},
		{"Symbol.replace over the count", full + `/x/g[Symbol.replace](s, "yy")`, vocab.ReasonPolicyMemoryLimit},
		{"$& is counted as len(s)", `var s = "x".repeat(1 << 12); s.replace(/x/g, "$&".repeat(1 << 12))`, vocab.ReasonPolicyMemoryLimit},
		{"function replacer, matches counted first", `"a ".repeat(1 << 23).replace(/\s+/g, function () { return "" })`, vocab.ReasonPolicyMemoryLimit},
		{"function replacer on replaceAll, matches counted first", `"a ".repeat(1 << 23).replaceAll(" ", function () { return "" })`, vocab.ReasonPolicyMemoryLimit},
		{"function results summed", `var s = "x".repeat(64), t = "y".repeat(1 << 20); s.replace(/x/g, function () { return t })`, vocab.ReasonPolicyMemoryLimit},
		{"function results summed on replaceAll", `var s = "x".repeat(64), t = "y".repeat(1 << 20); s.replaceAll("x", function () { return t })`, vocab.ReasonPolicyMemoryLimit},
		{"native function replacer summed", `var s = ("y".repeat(1 << 20) + ",").repeat(20); s.replace(/y+/g, decodeURIComponent)`, vocab.ReasonPolicyMemoryLimit},
		{"user Symbol.replace result within the limit", `var s = "x".repeat(1 << 24); "a".replace({[Symbol.replace]: function () { return s }}, "")`, ""},
		{"toString runs once", `var s = "x".repeat(1 << 24), n = 0;
			var t = {toString: function () { return n++ === 0 ? "x" : s }};
			if (String.prototype.replaceAll.call(t, "x", s).length !== 1 << 24 || n !== 1) throw "bad"`, ""},
		{"pattern object without Symbol.replace", "var s = \"x\".repeat(1 << 20); s.replace({toString: function () { return \"x\" }}, \"$`\".repeat(1 << 10))", vocab.ReasonPolicyMemoryLimit},
		{"regexp with Symbol.replace undefined", "var s = \"x\".repeat(1 << 20) + \"/x/\", r = /x/; Object.defineProperty(r, Symbol.replace, {value: undefined}); s.replace(r, \"$`\".repeat(1 << 10))", vocab.ReasonPolicyMemoryLimit},
		{"caught refusal stays a refusal", full + `try { s.replace(/x/g, "yy") } catch (e) {}`, vocab.ReasonPolicyMemoryLimit},
		{"a long count ends at the deadline", `var s = "x".repeat(1 << 24); s.replace(/x/g, "y")`, vocab.ReasonPolicyTimeout},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			timeout := 20 * time.Second * raceSlowdown // the guard, not the deadline, must stop it
			if tc.code == vocab.ReasonPolicyTimeout {
				timeout = 300 * time.Millisecond
			}
			g := loadGate(t, map[string]string{"p.js": `if (ctx.params.go) { ` + tc.src + ` }`},
				func(o *Options) { o.Timeout = timeout })
			r := run(g, preCall(`{"go":true}`))
			switch {
			case tc.code == "" && r.Reject != nil:
				t.Fatalf("rejected: %+v", r.Reject)
			case tc.code != "" && (r.Reject == nil || r.Reject.Code != tc.code):
				t.Fatalf("got %+v, want %s", r.Reject, tc.code)
			}
			if r := run(g, preCall(`{"go":false}`)); r.Reject != nil {
				t.Fatalf("later call rejected: %+v", r.Reject)
			}
		})
	}
}

// FuzzReplaceGuards checks the guarded replace, replaceAll and Symbol.replace against
// goja's built-ins on the same strings, patterns, replacements and flags.
func FuzzReplaceGuards(f *testing.F) {
	f.Add("a.b.c", ".", "$&$&", "g")
	f.Add("John Smith", `(\w+)\s(\w+)`, "$2, $1", "")
	f.Add("2024-01-02", `(?<y>\d+)-(?<m>\d+)`, "$<m>/$<y>$<z>", "y")
	f.Add("aBc\nABC", "^a", "[$`|$']", "gim")
	f.Add("xx", "", "$$$0$10", "g")
	v := lockedVM(f)
	raw := goja.New()
	f.Fuzz(func(t *testing.T, s, pattern, rep, flags string) {
		if len(s) > 256 || len(pattern) > 32 || len(rep) > 64 || len(flags) > 4 {
			return
		}
		// goja's own replaceAll never ends on an empty pattern in a non-ASCII string: the
		// built-in side replaces with an empty global RegExp instead
		body := `var re; try { re = new RegExp(fz_p, fz_f) } catch (e) { re = null }
		  var all = fz_raw && fz_p === "" && /[^\x00-\x7f]/.test(fz_s) ? fz_s.replace(/(?:)/g, fz_r) : fz_s.replaceAll(fz_p, fz_r);
		  var out = [fz_s.replace(fz_p, fz_r), all];
		  if (re) {
		    out.push(fz_s.replace(re, fz_r), re.lastIndex);
		    try { out.push(fz_s.replaceAll(re, fz_r)) } catch (e) { out.push(e.name) }
		    out.push(fz_s.replace(re, function () { return JSON.stringify([].slice.call(arguments)) }));
		  }
		  return out`
		const params = "fz_s, fz_p, fz_r, fz_f, fz_raw"
		want, err := evalCase(raw, body, params, raw.ToValue(s), raw.ToValue(pattern), raw.ToValue(rep), raw.ToValue(flags), raw.ToValue(true))
		if err != nil {
			t.Fatal(err)
		}
		got, err := evalCase(v.rt, body, params, v.rt.ToValue(s), v.rt.ToValue(pattern), v.rt.ToValue(rep), v.rt.ToValue(flags), v.rt.ToValue(false))
		if err != nil {
			t.Fatal(err)
		}
		if got != want {
			t.Fatalf("guarded %q, built-in %q", got, want)
		}
	})
}

// BenchmarkReplaceGuards is the trailer strip of the gate workload on its own: two
// guarded replace calls with a RegExp on the 236-byte PR body, in a pooled runtime.
func BenchmarkReplaceGuards(b *testing.B) {
	v := lockedVM(b)
	fv, err := v.rt.RunString(`(function (body) {
  return body.replace(/^co-authored-by:.*$\n?/gim, "").replace(/\n{3,}/g, "\n\n");
})`)
	if err != nil {
		b.Fatal(err)
	}
	strip, _ := goja.AssertFunction(fv)
	body := v.rt.ToValue(workloadBody)
	r, err := strip(goja.Undefined(), body)
	if err != nil || strings.Contains(strings.ToLower(r.String()), "co-authored-by") || !strings.HasPrefix(r.String(), "Fix the retry loop") {
		b.Fatalf("got %v, %v", r, err)
	}
	b.SetBytes(int64(len(workloadBody)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := strip(goja.Undefined(), body); err != nil {
			b.Fatal(err)
		}
	}
}
