package gate

import (
	"context"
	"errors"
	"runtime"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/mcpgate/mcpgate/internal/testwait"
	"github.com/mcpgate/mcpgate/vocab"
)

// Security-test regressions: assigning or deleting ctx.response (and ctx itself) must
// never be ignored silently.
func TestResponseReassign(t *testing.T) {
	const sc = `{"k":1}`
	redacted := `[{"type":"text","text":"REDACTED"}]`
	cases := []struct {
		name, src string
		pre       bool         // run in the pre phase instead
		code      vocab.Reason // expected rejection code, or "" for none
		content   string       // expected content ("" = unchanged)
		sc        string       // expected structuredContent ("-" = removed, "" = unchanged)
	}{
		{name: "object replaces content, drops structuredContent", src: `ctx.response = {content: [{type: "text", text: "REDACTED"}]}`, content: redacted, sc: "-"},
		{name: "object with both", src: `ctx.response = {content: [{type: "text", text: "REDACTED"}], structuredContent: {k: 2}}`, content: redacted, sc: `{"k":2}`},
		{name: "strict mode object", src: `"use strict"; ctx.response = {content: [{type: "text", text: "REDACTED"}], structuredContent: null}`, content: redacted, sc: "-"},
		{name: "spread keeps structuredContent", src: `ctx.response = Object.assign({}, ctx.response, {content: [{type: "text", text: "REDACTED"}]})`, content: redacted},
		{name: "edit after reassign", src: `ctx.response = {content: []}; ctx.response.content.push({type: "text", text: "REDACTED"})`, content: redacted, sc: "-"},
		{name: "self assignment", src: `ctx.response = ctx.response`},
		{name: "string", src: `ctx.response = "str"`, code: vocab.ReasonBadCtxShape},
		{name: "null", src: `ctx.response = null`, code: vocab.ReasonBadCtxShape},
		{name: "undefined", src: `ctx.response = undefined`, code: vocab.ReasonBadCtxShape},
		{name: "array", src: `ctx.response = [{type: "text", text: "x"}]`, code: vocab.ReasonBadCtxShape},
		{name: "function", src: `ctx.response = function () {}`, code: vocab.ReasonBadCtxShape},
		{name: "caught is still rejected", src: `try { ctx.response = 5 } catch (e) {} ctx.response.content[0].text = "fine"`, code: vocab.ReasonBadCtxShape},
		{name: "without content", src: `ctx.response = {structuredContent: {k: 2}}`, code: vocab.ReasonBadCtxShape},
		{name: "content number", src: `ctx.response = {content: 5}`, code: vocab.ReasonBadCtxShape},
		{name: "content = 5", src: `ctx.response.content = 5`, code: vocab.ReasonBadCtxShape},
		{name: "delete ctx.response", src: `delete ctx.response`, code: vocab.ReasonBadCtxShape},
		{name: "strict delete caught", src: `"use strict"; try { delete ctx.response } catch (e) {}`, code: vocab.ReasonBadCtxShape},
		{name: "delete content", src: `delete ctx.response.content`, code: vocab.ReasonBadCtxShape},
		{name: "delete content then set", src: `delete ctx.response.content; ctx.response.content = [{type: "text", text: "REDACTED"}]`, content: redacted},
		{name: "delete structuredContent drops it", src: `delete ctx.response.structuredContent; if (ctx.response.structuredContent !== undefined) throw "still there"`, sc: "-"},
		{name: "reassign ctx throws", src: `ctx = {response: {content: []}}`, code: vocab.ReasonPolicyThrow},
		{name: "strict reassign ctx throws", src: `"use strict"; ctx = {}`, code: vocab.ReasonPolicyThrow},
		{name: "pre: assign response", src: `ctx.response = {content: []}`, pre: true, code: vocab.ReasonBadCtxShape},
		{name: "pre: params null", src: `ctx.params = null`, pre: true, code: vocab.ReasonBadCtxShape},
		{name: "pre: delete params", src: `delete ctx.params`, pre: true, code: vocab.ReasonBadCtxShape},
		{name: "pre: delete unknown field", src: `delete ctx.nothing; delete ctx.phase`, pre: true},
		{name: "post: delete params is read-only", src: `delete ctx.params`, code: vocab.ReasonPolicyThrow},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			phase := "post"
			if tc.pre {
				phase = "pre"
			}
			// the phase test is inside the policy body, so "use strict" stays a directive
			src := strings.Replace(tc.src, `"use strict";`, `"use strict"; if (ctx.phase !== "`+phase+`") return;`, 1)
			if src == tc.src {
				src = `if (ctx.phase !== "` + phase + `") return; ` + tc.src
			}
			g := loadGate(t, map[string]string{"p.js": src})
			c := postCall(twoBlocks, sc)
			if tc.pre {
				c = preCall(`{"a":1}`)
			}
			r := run(g, c)
			if tc.code != "" {
				if r.Reject == nil || r.Reject.Code != tc.code || r.Reject.Policy != "p.js" {
					t.Fatalf("got %+v, want %s", r.Reject, tc.code)
				}
				if tc.name == "reassign ctx throws" && !strings.Contains(r.Reject.Message, "constant") {
					t.Errorf("message %q", r.Reject.Message)
				}
				return
			}
			if r.Reject != nil {
				t.Fatalf("rejected: %+v", r.Reject)
			}
			if tc.pre {
				return
			}
			wantContent, wantSC := twoBlocks, sc
			if tc.content != "" {
				wantContent = tc.content
			}
			switch tc.sc {
			case "-":
				wantSC = ""
			case "":
			default:
				wantSC = tc.sc
			}
			if string(r.Content) != wantContent || string(r.StructuredContent) != wantSC {
				t.Fatalf("content %s sc %s, want %s %s", r.Content, r.StructuredContent, wantContent, wantSC)
			}
			changed := wantContent != twoBlocks || wantSC != sc
			if r.Changed != changed || (r.Action == vocab.Redact) != changed {
				t.Fatalf("Changed=%v Action=%q", r.Changed, r.Action)
			}
		})
	}
}

// A file that closes its function wrapper is refused at load (and on reload the last
// good set stays); braces inside strings, comments, regexps and templates are fine.
func TestWrapperBreakout(t *testing.T) {
	cases := []struct {
		name, src string
		line      int
	}{
		{"seed case", `}); throw "escaped the wrapper"; (function(){`, 1},
		{"later line", "var a = 1;\nvar b = 2;\n}); throw 'x'; (function () {", 3},
		{"closes both wrappers", "})(); }); globalThis.leak = 1; (function () { return (function () {", 1},
		{"top-level let", "ctx.params.a = 1;\n  })(); }); let leaked = 1; (function () { (function () {", 2},
		{"member access", "}).call; var x; (function () {", 1},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			dir := writePolicies(t, map[string]string{"a.js": `ctx.params.ok = 1`, "evil.js": tc.src})
			_, err := Load(context.Background(), Options{Dir: dir})
			var ce *CompileError
			if !errors.As(err, &ce) || !errors.Is(err, ErrSyntax) || ce.File != "evil.js" || ce.Line != tc.line {
				t.Fatalf("got %v, want a syntax error at evil.js:%d", err, tc.line)
			}
		})
	}
	// reload keeps the last good set
	g := loadGate(t, map[string]string{"a.js": `ctx.params.ok = 1`})
	write(t, g.opts.Dir, "evil.js", cases[0].src)
	if err := g.Reload(); err == nil || !strings.Contains(err.Error(), "evil.js:1:") {
		t.Fatalf("reload: %v", err)
	}
	if st := g.Status(); st.Generation != 1 || !strings.Contains(st.LastError, "evil.js") {
		t.Fatalf("status %+v", st)
	}
	if r := run(g, preCall(`{}`)); r.Reject != nil || string(r.Params) != `{"ok":1}` {
		t.Fatalf("last good set: %+v %s", r.Reject, r.Params)
	}
	// lookalikes that stay inside the body
	g = loadGate(t, map[string]string{"empty.js": "", "comment.js": "// only a comment", "ok.js": "var s = \"});\"; /* }); */ var r = /\\}\\);/; var t = `})(); ${s}`;\n" +
		"ctx.params.out = s + t + r.source.length; // }); (function () {"})
	if r := run(g, preCall(`{}`)); r.Reject != nil || string(r.Params) != `{"out":"});})(); });5"}` {
		t.Fatalf("%+v %s", r.Reject, r.Params)
	}
}

// A promise rejected without a handler rejects the call like a throw; a handled one
// does not, and nothing leaks into the next call.
func TestUnhandledRejection(t *testing.T) {
	cases := []struct {
		name, src, msg string // msg "" = the call passes
	}{
		{"async throw", `(async () => { throw "x" })()`, "x"},
		{"Promise.reject", `Promise.reject("x")`, "x"},
		{"reject Error", `Promise.reject(new Error("boom"))`, "boom"},
		{"after await", `(async function () { await null; throw new TypeError("late") })()`, "TypeError: late"},
		{"then throws", `Promise.resolve(1).then(function () { throw "in then" })`, "in then"},
		{"new Promise reject", `new Promise(function (_, reject) { reject("r") })`, "r"},
		{"reason with looping toString", `Promise.reject({toString: function () { for (;;) {} }})`, "policy threw a non-error value"},
		{"handled catch", `Promise.reject("x").catch(() => {})`, ""},
		{"handled async", `(async () => { throw "x" })().catch(function () {})`, ""},
		{"handled later", `var p = Promise.reject("x"); var n = 1; p.then(null, function () {})`, ""},
		{"handled with await", `(async function () { try { await Promise.reject("x") } catch (e) { ctx.params.caught = e } })()`, ""},
		{"sync throw wins", `Promise.reject("async"); throw "sync"`, "sync"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			g := loadGate(t, map[string]string{"p.js": `if (ctx.params.go) { ` + tc.src + ` }`})
			for _, c := range []struct {
				name string
				call func() Result
			}{
				{"pre", func() Result { return run(g, preCall(`{"go":true}`)) }},
				{"post", func() Result { c := postCall(twoBlocks, ""); c.Params = []byte(`{"go":true}`); return run(g, c) }},
			} {
				r := c.call()
				if tc.msg == "" {
					if r.Reject != nil {
						t.Fatalf("%s: rejected %+v", c.name, r.Reject)
					}
				} else if r.Reject == nil || r.Reject.Code != vocab.ReasonPolicyThrow || r.Reject.Policy != "p.js" || r.Reject.Message != tc.msg {
					t.Fatalf("%s: got %+v, want policy_throw %q", c.name, r.Reject, tc.msg)
				}
				if r := run(g, preCall(`{"go":false}`)); r.Reject != nil {
					t.Fatalf("%s: next call rejected: %+v", c.name, r.Reject)
				}
			}
		})
	}
}

// String doubling, which no built-in guard sees, ends in policy_memory_limit well
// before the deadline with a per-policy heap budget, and the gate keeps working.
// Timings depend on the machine and are only logged (go test -v -run TestStringDoubling).
func TestStringDoubling(t *testing.T) {
	slowTable(t)
	cases := []struct{ name, src string }{
		{"plus", `var s = "x"; for (;;) s = s + s;`},
		{"concat", `var s = "x"; for (;;) s = s.concat(s);`},
		{"template", "var s = 'x'; for (;;) s = `${s}${s}`;"},
		{"replace", `var s = "xy"; for (;;) s = s.replace("x", s);`},
		{"replace regexp", `var s = "x"; for (;;) s = s.replace(/^/, s);`},
		{"unicode plus", `var s = "é"; for (;;) s = s + s;`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			g := loadGate(t, map[string]string{"p.js": `if (ctx.params.go) { ` + tc.src + ` }`},
				func(o *Options) {
					o.Timeout = 20 * time.Second * raceSlowdown
					o.PolicyHeapBudget = SuggestedPolicyHeapBudget
				})
			start := time.Now()
			r := run(g, preCall(`{"go":true}`))
			if r.Reject == nil || r.Reject.Code != vocab.ReasonPolicyMemoryLimit || r.Reject.Policy != "p.js" {
				t.Fatalf("got %+v, want policy_memory_limit", r.Reject)
			}
			t.Logf("%s: %v", tc.name, time.Since(start))
			for i := 0; i < 3; i++ {
				if r := run(g, preCall(`{"go":false}`)); r.Reject != nil {
					t.Fatalf("later call rejected: %+v", r.Reject)
				}
			}
		})
	}
}

// ctx.warn flags the call in both phases without changing it.
func TestWarnBothPhases(t *testing.T) {
	cases := []struct {
		name, src string
		post      bool
		action    vocab.Action
		acted     string
	}{
		{"pre warn", `ctx.warn("odd " + ctx.phase)`, false, vocab.Warn, "w.js"},
		{"post warn", `ctx.warn("odd " + ctx.phase)`, true, vocab.Warn, "w.js"},
		{"post warn and redact", `ctx.warn("odd " + ctx.phase); if (ctx.phase === "post") ctx.response.content[0].text = "x"`, true, vocab.Redact, "w.js"},
		{"pre warn and rewrite", `ctx.warn("odd " + ctx.phase); ctx.params.b = 2`, false, vocab.Warn, "w.js"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			g := loadGate(t, map[string]string{"w.js": tc.src, "z.js": `var quiet = 1`})
			c, phase := preCall(`{"a":1}`), "pre"
			if tc.post {
				c, phase = postCall(twoBlocks, ""), "post"
			}
			r := run(g, c)
			if r.Reject != nil || r.Action != tc.action || strings.Join(r.Acted, ",") != tc.acted {
				t.Fatalf("Reject %+v Action %q Acted %v", r.Reject, r.Action, r.Acted)
			}
			if len(r.Warnings) != 1 || r.Warnings[0].Policy != "w.js" || r.Warnings[0].Reason != "odd "+phase {
				t.Fatalf("warnings %+v", r.Warnings)
			}
		})
	}
	// warnings made before a rejection are kept
	g := loadGate(t, map[string]string{"a.js": `ctx.warn("first")`, "b.js": `throw "no"`})
	if r := run(g, preCall(`{}`)); r.Reject == nil || len(r.Warnings) != 1 || r.Warnings[0].Policy != "a.js" {
		t.Fatalf("%+v %+v", r.Reject, r.Warnings)
	}
}

// Client-bound messages are capped at 1 KiB of valid UTF-8 plus "…".
func TestRejectionMessageBounded(t *testing.T) {
	slowTable(t)
	cases := []struct{ name, src string }{
		{"30 MB string", `throw "x".repeat(30 << 20)`},
		{"30 MB Error", `throw new Error("y".repeat(30 << 20))`},
		{"multi-byte", `throw "é€😀".repeat(2000)`},
		{"unhandled rejection", `Promise.reject("z".repeat(1 << 20))`},
		{"warn", `ctx.warn("w".repeat(1 << 20))`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			g := loadGate(t, map[string]string{"p.js": tc.src})
			r := run(g, preCall(`{}`))
			msg := ""
			switch {
			case r.Reject != nil:
				msg = r.Reject.Message
			case len(r.Warnings) == 1:
				msg = r.Warnings[0].Reason
			default:
				t.Fatalf("no rejection or warning: %+v", r)
			}
			if len(msg) > 1024+len("…") || !utf8.ValidString(msg) || !strings.HasSuffix(msg, "…") {
				t.Fatalf("message of %d bytes, valid %v: %q…", len(msg), utf8.ValidString(msg), msg[:min(len(msg), 40)])
			}
		})
	}
}

// garbageSink keeps the compiler from dropping the test's allocation.
var garbageSink []byte

// makeGarbage allocates n bytes that are garbage once it returns.
//
//go:noinline
func makeGarbage(n int) {
	b := make([]byte, n)
	b[0] = 1
	garbageSink = b
	garbageSink = nil
}

// A burst of garbage past the soft limit (a large result another call has finished
// with) must not reject a clean policy: only heap a GC finds live counts. (Memory
// still live, even briefly, does count: that is what a soft limit is.)
func TestGarbageDoesNotTripTheHeapLimit(t *testing.T) {
	slowTable(t)
	var ms runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&ms)
	g := loadGate(t, map[string]string{"p.js": `var n = 0; for (var i = 0; i < 200000; i++) { n += i } ctx.params.n = n`},
		func(o *Options) { o.HeapSoftLimit = ms.HeapAlloc + 64<<20 })
	for i := 0; i < 4; i++ {
		makeGarbage(160 << 20)
		// a GC marking during the allocation saw it live
		testwait.For(t, "the collection to end", func() bool { return !g.pool.collecting.Load() })
		if r := run(g, preCall(`{}`)); r.Reject != nil {
			t.Fatalf("clean policy rejected after a garbage burst: %+v", r.Reject)
		}
	}
}
