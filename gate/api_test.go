package gate

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/mcpgate/mcpgate/ctxapi"
	"github.com/mcpgate/mcpgate/engine"
	"github.com/mcpgate/mcpgate/vocab"
)

const twoBlocks = `[{"type":"text","text":"a"},{"type":"text","text":"b"}]`

// Post-phase edits by plain JS: arrays are native JS arrays.
func TestContentMutations(t *testing.T) {
	cases := []struct{ name, src, want string }{
		{"push", `ctx.response.content.push({type: "text", text: "c"})`, `[{"type":"text","text":"a"},{"type":"text","text":"b"},{"type":"text","text":"c"}]`},
		{"splice", `ctx.response.content.splice(0, 1)`, `[{"type":"text","text":"b"}]`},
		{"length=0", `ctx.response.content.length = 0`, `[]`},
		{"delete field", `delete ctx.response.content[1].text`, `[{"type":"text","text":"a"},{"type":"text"}]`},
		{"edit text", `ctx.response.content[0].text = "A"`, `[{"type":"text","text":"A"},{"type":"text","text":"b"}]`},
		{"reassign", `ctx.response.content = [{type: "text", text: "new"}]`, `[{"type":"text","text":"new"}]`},
		{"filter", `ctx.response.content = ctx.response.content.filter(function (b) { return b.text !== "a" })`, `[{"type":"text","text":"b"}]`},
		{"read only", `var n = ctx.response.content.length`, twoBlocks},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			g := loadGate(t, map[string]string{"p.js": `if (ctx.phase === "post") { ` + tc.src + ` }`})
			r := run(g, postCall(twoBlocks, ""))
			if r.Reject != nil {
				t.Fatalf("%+v", r.Reject)
			}
			if string(r.Content) != tc.want {
				t.Fatalf("content %s, want %s", r.Content, tc.want)
			}
			changed := tc.want != twoBlocks
			if r.Changed != changed || (r.Action == vocab.Redact) != changed || (len(r.Acted) == 1) != changed {
				t.Fatalf("Changed=%v Action=%q Acted=%v", r.Changed, r.Action, r.Acted)
			}
		})
	}
}

// Pre-phase rewrites reach the upstream and have no rung on the ladder.
func TestParamsRewrite(t *testing.T) {
	cases := []struct{ name, src, in, want string }{
		{"set field", `ctx.params.body = ctx.params.body.replace(/^Co-Authored-By:.*$/gm, "").trim()`, `{"body":"fix\nCo-Authored-By: bot"}`, `{"body":"fix"}`},
		{"delete field", `delete ctx.params.force`, `{"force":true,"x":1}`, `{"x":1}`},
		{"reassign", `ctx.params = {only: "this"}`, `{"a":1}`, `{"only":"this"}`},
		{"push nested", `ctx.params.list.push(3)`, `{"list":[1,2]}`, `{"list":[1,2,3]}`},
		{"read only keeps bytes", `var x = ctx.params.big`, `{ "big" : 12345678901234567890, "s":"\u00e9" }`, `{ "big" : 12345678901234567890, "s":"\u00e9" }`},
		{"write same value", `ctx.params.a = 1`, `{"a":1}`, `{"a":1}`},
		{"null params", `ctx.params.added = true`, `null`, `{"added":true}`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			g := loadGate(t, map[string]string{"p.js": `if (ctx.phase === "pre") { ` + tc.src + ` }`})
			r := run(g, preCall(tc.in))
			if r.Reject != nil {
				t.Fatalf("%+v", r.Reject)
			}
			if string(r.Params) != tc.want {
				t.Fatalf("params %s, want %s", r.Params, tc.want)
			}
			changed := tc.want != tc.in
			if r.Changed != changed || r.Action != vocab.Pass {
				t.Fatalf("Changed=%v Action=%q", r.Changed, r.Action)
			}
		})
	}
}

func TestShapeValidation(t *testing.T) {
	cases := []struct{ name, src string }{
		{"params array", `if (ctx.phase === "pre") ctx.params = []`},
		{"params null", `if (ctx.phase === "pre") ctx.params = null`},
		{"params string", `if (ctx.phase === "pre") ctx.params = "x"`},
		{"content string", `if (ctx.phase === "post") ctx.response.content = "x"`},
		{"content undefined", `if (ctx.phase === "post") ctx.response.content = undefined`},
		{"block not object", `if (ctx.phase === "post") ctx.response.content[0] = 5`},
		{"block without type", `if (ctx.phase === "post") ctx.response.content.push({text: "x"})`},
		{"type not string", `if (ctx.phase === "post") ctx.response.content[0].type = 1`},
		{"structuredContent array", `if (ctx.phase === "post") ctx.response.structuredContent = []`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			g := loadGate(t, map[string]string{"p.js": tc.src})
			c := preCall(`{}`)
			if strings.Contains(tc.src, "post") {
				c = postCall(twoBlocks, `{"k":1}`)
			}
			r := run(g, c)
			if r.Reject == nil || r.Reject.Code != vocab.ReasonBadCtxShape || r.Reject.Policy != "p.js" {
				t.Fatalf("got %+v", r.Reject)
			}
		})
	}
	// structuredContent = null removes it
	g := loadGate(t, map[string]string{"p.js": `if (ctx.phase === "post") ctx.response.structuredContent = null`})
	r := run(g, postCall(twoBlocks, `{"k":1}`))
	if r.Reject != nil || r.StructuredContent != nil || !r.Changed {
		t.Fatalf("%+v %s", r.Reject, r.StructuredContent)
	}
	// params are read-only in post
	g = loadGate(t, map[string]string{"p.js": `if (ctx.phase === "post") { ctx.params.a = 2; if (ctx.params.a !== 1) throw "changed" }`})
	if r := run(g, postCall(twoBlocks, "")); r.Reject != nil || r.Changed {
		t.Fatalf("%+v", r.Reject)
	}
}

func TestStructuredContent(t *testing.T) {
	g := loadGate(t, map[string]string{"p.js": `if (ctx.phase === "post") { ctx.response.structuredContent.user.email = "x"; }`})
	r := run(g, postCall(twoBlocks, `{"user":{"email":"a@b.example"}}`))
	if r.Reject != nil || string(r.StructuredContent) != `{"user":{"email":"x"}}` || !r.Changed || r.Action != vocab.Redact {
		t.Fatalf("%+v %s %+v", r.Reject, r.StructuredContent, r)
	}
	if string(r.Content) != twoBlocks {
		t.Fatalf("content changed: %s", r.Content)
	}
}

// Policies run in lexical file order, each on what the previous one left; subdirs and
// non-.js files are ignored.
func TestFileOrderAndSubdirs(t *testing.T) {
	g := loadGate(t, map[string]string{
		"20-b.js":           `if (ctx.phase === "post") ctx.response.content[0].text += "b"`,
		"10-a.js":           `if (ctx.phase === "post") ctx.response.content[0].text += "a"`,
		"30-c.js":           `if (ctx.phase === "post") ctx.response.content[0].text += "c"`,
		"examples/x.js":     `throw "must not load"`,
		"README.md":         `throw "not js"`,
		"notes.js.bak":      `throw "not js"`,
		"sub/deeper/y.js":   `throw "must not load"`,
		".hidden-editor.js": `throw "dotfile"`,
	})
	if got := strings.Join(g.Current().Files, ","); got != "10-a.js,20-b.js,30-c.js" {
		t.Fatalf("files %s", got)
	}
	r := run(g, postCall(`[{"type":"text","text":">"}]`, ""))
	if r.Reject != nil || string(r.Content) != `[{"type":"text","text":">abc"}]` {
		t.Fatalf("%+v %s", r.Reject, r.Content)
	}
	if strings.Join(r.Acted, ",") != "10-a.js,20-b.js,30-c.js" {
		t.Fatalf("Acted %v", r.Acted)
	}
}

// The ladder: warn < mask < redact; a later policy never downgrades.
func TestActionsAndWarn(t *testing.T) {
	g := loadGate(t, map[string]string{
		"a.js": `if (ctx.phase === "post") { ctx.response.content[0].text = "x" }`,
		"b.js": `ctx.warn("tool " + ctx.tool + " looked odd")`,
		"c.js": `var nothing = 1`,
	})
	r := run(g, postCall(twoBlocks, ""))
	if r.Action != vocab.Redact || strings.Join(r.Acted, ",") != "a.js,b.js" {
		t.Fatalf("Action %q Acted %v", r.Action, r.Acted)
	}
	if len(r.Warnings) != 1 || r.Warnings[0].Policy != "b.js" || r.Warnings[0].Reason != "tool t looked odd" {
		t.Fatalf("warnings %+v", r.Warnings)
	}
	r = run(g, preCall(`{}`))
	if r.Action != vocab.Warn || r.Changed || strings.Join(r.Acted, ",") != "b.js" {
		t.Fatalf("pre: Action %q Acted %v", r.Action, r.Acted)
	}
}

// engineRedacts returns an analyzer and checks that its Redact finds e-mail addresses,
// which the redaction-helper tests rely on.
func engineRedacts(t *testing.T) *engine.Analyzer {
	an, err := engine.New(engine.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if out, n := an.Redact("mail alice@example.com now", engine.StrategyRedact, nil); n == 0 || strings.Contains(out, "alice@") {
		t.Fatalf("engine.Redact left the address: %q (%d)", out, n)
	}
	return an
}

func TestRedactHelpers(t *testing.T) {
	an := engineRedacts(t)
	mail := `[{"type":"text","text":"write to alice@example.com"},{"type":"image","data":"alice@example.com","mimeType":"image/png"}]`
	sc := `{"content":"write to alice@example.com","n":1}`
	cases := []struct {
		name, src string
		action    vocab.Action
		check     func(r Result) bool
	}{
		{"redactAll post", `ctx.redactAll({kinds: ["pii_email"]})`, vocab.Redact, func(r Result) bool {
			return !strings.Contains(string(r.Content[:40]), "alice@") && strings.Contains(string(r.Content), `"data":"alice@example.com"`) &&
				!strings.Contains(string(r.StructuredContent), "alice@")
		}},
		{"redactAll mask", `ctx.redactAll({strategy: "mask"})`, vocab.Mask, func(r Result) bool { return !strings.Contains(string(r.StructuredContent), "alice@") }},
		{"redactAll hash", `ctx.redactAll({strategy: "hash"})`, vocab.Redact, func(r Result) bool { return !strings.Contains(string(r.StructuredContent), "alice@") }},
		{"redactAll after materialise", `var keep = ctx.response.content; ctx.redactAll(); keep.push({type: "text", text: "more"})`, vocab.Redact, func(r Result) bool {
			return !strings.Contains(string(r.Content[:40]), "alice@") && strings.Contains(string(r.Content), "more")
		}},
		{"redact copy string", `ctx.response.content[0].text = ctx.redact(ctx.response.content[0].text)`, vocab.Redact, func(r Result) bool {
			return !strings.Contains(string(r.Content[:40]), "alice@")
		}},
		{"mask copy object", `ctx.response.structuredContent = ctx.mask(ctx.response.structuredContent)`, vocab.Mask, func(r Result) bool {
			return !strings.Contains(string(r.StructuredContent), "alice@") && strings.Contains(string(r.StructuredContent), `"n":1`)
		}},
		{"copy unused", `var copy = ctx.redact(ctx.response.structuredContent)`, vocab.Pass, func(r Result) bool { return !r.Changed }},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			g := loadGate(t, map[string]string{"p.js": `if (ctx.phase === "post") { ` + tc.src + ` }`},
				func(o *Options) { o.Analyzer = an })
			r := run(g, postCall(mail, sc))
			if r.Reject != nil || r.Action != tc.action || !tc.check(r) {
				t.Fatalf("%+v action %q\n%s\n%s", r.Reject, r.Action, r.Content, r.StructuredContent)
			}
		})
	}
}

// TestRedactHelpersMemberNames: a member name counts in every redaction helper as in
// the engine's scan: an SSN under "ssn" goes, the same number under "id" stays, on the
// raw JSON, on a materialised value and in a copy.
func TestRedactHelpersMemberNames(t *testing.T) {
	an := engineRedacts(t)
	content := `[{"type":"text","text":"{\"ssn\":\"321549876\"}"},{"type":"resource","resource":{"uri":"x","text":"social_security_number: 412345678"}}]`
	sc := `{"customer":{"id":"321549876","SSN":"321549876","ssn":["412345678"]},"orders":[{"id":"321549877"}]}`
	wantSC := `{"customer":{"id":"321549876","SSN":"[REDACTED:SSN]","ssn":["[REDACTED:SSN]"]},"orders":[{"id":"321549877"}]}`
	for _, tc := range []struct{ name, src string }{
		{"raw", `ctx.redactAll({kinds: ["pii_us_ssn"]})`},
		{"materialised", `var keep = [ctx.response.content, ctx.response.structuredContent]; ctx.redactAll({kinds: ["pii_us_ssn"]})`},
		{"copy", `ctx.response.content = ctx.redact(ctx.response.content); ctx.response.structuredContent = ctx.redact(ctx.response.structuredContent)`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := loadGate(t, map[string]string{"p.js": `if (ctx.phase === "post") { ` + tc.src + ` }`},
				func(o *Options) { o.Analyzer = an })
			r := run(g, postCall(content, sc))
			var got any
			if err := json.Unmarshal(r.StructuredContent, &got); err != nil {
				t.Fatalf("%s: %v", r.StructuredContent, err)
			}
			var want any
			_ = json.Unmarshal([]byte(wantSC), &want)
			if r.Reject != nil || r.Action != vocab.Redact || !reflect.DeepEqual(got, want) ||
				strings.Contains(string(r.Content), "321549876") || strings.Contains(string(r.Content), "412345678") {
				t.Fatalf("%+v action %q\n%s\n%s", r.Reject, r.Action, r.Content, r.StructuredContent)
			}
		})
	}
}

// Without the engine, the helpers still validate their options and return copies.
func TestHelperArguments(t *testing.T) {
	g := loadGate(t, map[string]string{"p.js": `
if (ctx.params.bad === 1) ctx.redact("x", {strategy: "shred"});
if (ctx.params.bad === 2) ctx.redact("x", {kinds: "email"});
if (ctx.params.bad === 3) ctx.redact("x", "redact");
if (ctx.params.ok) {
  var o = {a: ["s", 1, null, {b: "t"}]};
  var c = ctx.redact(o, {kinds: ["pii_email"], strategy: "hash"});
  ctx.params.out = [c !== o, c.a !== o.a, JSON.stringify(c), ctx.redact(5), ctx.redactAll()].join("|");
}`})
	for i := 1; i <= 3; i++ {
		r := run(g, preCall(`{"bad":`+itoa(i)+`}`))
		if r.Reject == nil || r.Reject.Code != vocab.ReasonPolicyThrow || !strings.HasPrefix(r.Reject.Message, "TypeError") {
			t.Errorf("bad %d: %+v", i, r.Reject)
		}
	}
	r := run(g, preCall(`{"ok":true}`))
	if r.Reject != nil || string(r.Params) != `{"ok":true,"out":"true|true|{\"a\":[\"s\",1,null,{\"b\":\"t\"}]}|5|0"}` {
		t.Fatalf("%+v %s", r.Reject, r.Params)
	}
}

func TestCtxFields(t *testing.T) {
	g := loadGate(t, map[string]string{"p.js": `
ctx.params.out = [ctx.phase, ctx.tool, ctx.toolAccess, ctx.user.userID, ctx.user.callerId, ctx.user.callerClass,
  ctx.user.roles.join("+"), typeof ctx.response, ctx.findings.length, JSON.stringify(ctx.findings[0]),
  Object.isFrozen(ctx.findings), Object.isFrozen(ctx.user), Object.isExtensible(ctx), ctx === globalThis.ctx].join("|");`})
	c := preCall(`{}`)
	c.Findings = []engine.Finding{{RuleID: "pii_email", Severity: engine.SeverityInfo, Entity: "EMAIL", Pointer: "/to", Start: 0, End: 5}}
	r := run(g, c)
	want := `pre|t|write|u1|cli|standard|dev|undefined|1|{"rule_id":"pii_email","severity":"INFO","entity":"EMAIL","pointer":"/to","start":0,"end":5}|true|true|false|true`
	var out struct{ Out string }
	_ = json.Unmarshal(r.Params, &out)
	if r.Reject != nil || out.Out != want {
		t.Fatalf("%+v\n got %s\nwant %s", r.Reject, out.Out, want)
	}
}

// ctx.rateLimitExceeded(3): the 4th call within the hour is the first one rejected.
func TestRateLimit(t *testing.T) {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	rl := ctxapi.NewRateLimiter(time.Hour, func() time.Time { return now })
	g := loadGate(t, map[string]string{"rl.js": `if (ctx.phase === "pre" && ctx.rateLimitExceeded(3)) throw "rate limit exceeded (3/hour)"`})
	call := func() *Rejection {
		rl.Arrive("u1") // the pipeline counts each tools/call once, at arrival
		c := preCall(`{}`)
		c.RateLimitExceeded = func(n int) bool { return rl.Exceeded("u1", n) }
		post := postCall(twoBlocks, "")
		post.RateLimitExceeded = c.RateLimitExceeded
		if r := run(g, post); r.Reject != nil { // the post phase never counts again
			t.Fatalf("post rejected: %+v", r.Reject)
		}
		return run(g, c).Reject
	}
	for i := 1; i <= 5; i++ {
		rej := call()
		if (rej != nil) != (i >= 4) {
			t.Fatalf("call %d: %+v", i, rej)
		}
		now = now.Add(time.Minute)
	}
	now = now.Add(time.Hour)
	if rej := call(); rej != nil {
		t.Fatalf("after an hour: %+v", rej)
	}
	g2 := loadGate(t, map[string]string{"rl.js": `ctx.rateLimitExceeded("x")`})
	if r := run(g2, preCall(`{}`)); r.Reject == nil || r.Reject.Code != vocab.ReasonPolicyThrow {
		t.Fatalf("bad n: %+v", r.Reject)
	}
}

func TestLoadErrors(t *testing.T) {
	_, err := Load(context.Background(), Options{Dir: filepath.Join(t.TempDir(), "missing")})
	if !errors.Is(err, ErrNoDir) || !strings.Contains(err.Error(), "missing") || strings.Contains(err.Error(), "absolute path") {
		t.Fatalf("missing dir: %v", err)
	}
	// A relative path gets the hint, with the directory it was read from.
	wd, _ := os.Getwd()
	_, err = Load(context.Background(), Options{Dir: "missing-policies"})
	if !errors.Is(err, ErrNoDir) || !strings.Contains(err.Error(), "use an absolute path") || !strings.Contains(err.Error(), wd) {
		t.Fatalf("missing relative dir: %v", err)
	}
	dir := writePolicies(t, map[string]string{"a.js": "var ok = 1;", "b.js": "var x = 1;\nif (x {\n}"})
	_, err = Load(context.Background(), Options{Dir: dir})
	var ce *CompileError
	if !errors.As(err, &ce) || !errors.Is(err, ErrSyntax) || ce.File != "b.js" || ce.Line != 2 {
		t.Fatalf("syntax: %v", err)
	}
	dir = writePolicies(t, map[string]string{"a.js": "let x = 1; let x = 2;"})
	if _, err = Load(context.Background(), Options{Dir: dir}); !errors.As(err, &ce) || ce.Line != 1 {
		t.Fatalf("redeclare: %v", err)
	}
	if _, err = Load(context.Background(), Options{Dir: t.TempDir(), Evaluators: "llm"}); !errors.Is(err, ErrUnknownEval) {
		t.Fatalf("evaluators: %v", err)
	}
	g, err := Load(context.Background(), Options{Dir: t.TempDir(), Evaluators: "goja"})
	if err != nil {
		t.Fatal(err)
	}
	defer g.Close()
	if r := run(g, preCall(`{"a":1}`)); r.Reject != nil || r.Changed || string(r.Params) != `{"a":1}` {
		t.Fatalf("empty set: %+v", r)
	}
	f := filepath.Join(t.TempDir(), "file")
	_ = os.WriteFile(f, nil, 0o644)
	if _, err = Load(context.Background(), Options{Dir: f}); !errors.Is(err, ErrNoDir) {
		t.Fatalf("file as dir: %v", err)
	}
}

func TestCancelledCall(t *testing.T) {
	g := loadGate(t, map[string]string{"p.js": `if (ctx.params.go) for (;;) {}`}, func(o *Options) { o.Timeout = 10 * time.Second })
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	r := g.Current().Run(ctx, preCall(`{"go":true}`))
	if r.Reject == nil || r.Reject.Code != vocab.ReasonPolicyTimeout {
		t.Fatalf("%+v", r.Reject)
	}
	if r := run(g, preCall(`{}`)); r.Reject != nil {
		t.Fatalf("%+v", r.Reject)
	}
}
