package gate

import (
	"context"
	"encoding/json"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/mcpgate/mcpgate/ctxapi"
	"github.com/mcpgate/mcpgate/vocab"
)

// layerSet loads files (name → source) as one directory's set.
func layerSet(t *testing.T, files map[string]string) *Set {
	t.Helper()
	dir := t.TempDir()
	for name, src := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(src), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	g, err := Load(context.Background(), Options{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = g.Close() })
	return g.Current()
}

// The global set of the layer tests: it moves paths under /etc to /tmp/safe,
// rejects the tool "blocked", hides the tool "danger" and every tool marked
// destructive, replaces "s3cret" in results and keeps no root under /home/alice.
var globalLayer = map[string]string{
	"global.js": `
if (ctx.phase === "pre" && ctx.tool === "blocked") throw new Error("blocked by the global set");
if (ctx.phase === "post" && ctx.tool === "blocked_post") throw new Error("withheld by the global set");
if (ctx.phase === "pre" && String(ctx.params.path).indexOf("/etc") === 0) ctx.params.path = "/tmp/safe";
if (ctx.phase === "list") ctx.tools = ctx.tools.filter(function (t) { return t.name !== "danger" && !(t.annotations && t.annotations.destructiveHint); });
if (ctx.phase === "roots") ctx.params.roots = ctx.params.roots.filter(function (r) { return r.uri.indexOf("file:///home/alice") !== 0; });
if (ctx.phase === "post") ctx.response.content.forEach(function (c) { if (c.text) c.text = c.text.split("s3cret").join("[hidden]"); });
`,
}

// TestLayersOnlyNarrow tries to loosen the global set from a tenant layer every way:
// passing what the global set rejected, rewriting arguments back, un-hiding a tool,
// putting a redacted value back, throwing a pass-looking value. Each keeps the global
// decision; what a tenant adds (a warning, a redaction, a rejection) holds.
func TestLayersOnlyNarrow(t *testing.T) {
	global := layerSet(t, globalLayer)
	pre := func(tool, args string) *ctxapi.Call {
		return &ctxapi.Call{Phase: ctxapi.PhasePre, Method: "tools/call", Tool: tool, Params: json.RawMessage(args), User: ctxapi.User{Tenant: "acme"}}
	}
	post := func(text string) *ctxapi.Call {
		return &ctxapi.Call{Phase: ctxapi.PhasePost, Method: "tools/call", Tool: "read", Params: json.RawMessage(`{}`),
			Response: &ctxapi.Response{Content: json.RawMessage(`[{"type":"text","text":"` + text + `"}]`)}}
	}
	list := &ctxapi.Call{Phase: ctxapi.PhaseList, Method: "tools/list",
		Tools: json.RawMessage(`[{"name":"read","inputSchema":{"type":"object"}},{"name":"danger","inputSchema":{"type":"object"}},` +
			`{"name":"drop","inputSchema":{"type":"object"},"annotations":{"destructiveHint":true}}]`)}
	roots := &ctxapi.Call{Phase: ctxapi.PhaseRoots, Method: "roots/list",
		Params: json.RawMessage(`{"roots":[{"uri":"file:///srv/app"},{"uri":"file:///home/alice/keys"}]}`)}
	for _, tc := range []struct {
		name    string
		tenant  string
		call    *ctxapi.Call
		reject  string // the rejecting policy, "" for none
		action  vocab.Action
		has     string // the output (params, content or tools) holds this
		hasNot  string // and not this
		changed bool
	}{
		{name: "pass after the global block", tenant: `if (ctx.phase === "pre") { ctx.params.allowed = true; }`,
			call: pre("blocked", `{}`), reject: "global.js"},
		{name: "rewrite the arguments back", tenant: `if (ctx.phase === "pre") ctx.params.path = "/etc/passwd";`,
			call: pre("read", `{"path":"/etc/shadow"}`), has: `"/tmp/safe"`, hasNot: "/etc/", changed: true},
		{name: "un-hide a tool", tenant: `if (ctx.phase === "list") ctx.tools.push({name: "danger", inputSchema: {type: "object"}});`,
			call: list, hasNot: "danger", changed: true},
		// the global set hid "drop" for its annotation: listed again without it, by a
		// new entry or by renaming a listed one, it would no longer be hidden
		{name: "list a hidden tool again without what hid it", tenant: `if (ctx.phase === "list") ctx.tools.push({name: "drop", inputSchema: {type: "object"}});`,
			call: list, has: `"read"`, hasNot: "drop", changed: true},
		{name: "rename a listed tool to a hidden one", tenant: `if (ctx.phase === "list") ctx.tools[0].name = "drop";`,
			call: list, hasNot: "drop", changed: true},
		{name: "list a tool the server never listed", tenant: `if (ctx.phase === "list") ctx.tools.push({name: "made_up", inputSchema: {type: "object"}});`,
			call: list, has: `"read"`, hasNot: "made_up", changed: true},
		{name: "a root wider than the client's", tenant: `if (ctx.phase === "roots") ctx.params.roots.push({uri: "file:///home"});`,
			call: roots, has: "file:///srv/app", hasNot: "/home", changed: true},
		{name: "a root renamed wider", tenant: `if (ctx.phase === "roots") ctx.params.roots[0].uri = "file:///";`,
			call: roots, hasNot: "file:///", changed: true},
		{name: "a tenant removes a root", tenant: `if (ctx.phase === "roots") ctx.params.roots = [];`,
			call: roots, has: `"roots":[]`, changed: true},
		{name: "a tenant edits a listed tool", tenant: `if (ctx.phase === "list") ctx.tools[0].description = "for acme";`,
			call: list, has: "for acme", hasNot: "drop", changed: true},
		{name: "put a redacted value back", tenant: `if (ctx.phase === "post") ctx.response.content[0].text = "the s3cret is back";`,
			call: post("a s3cret"), action: vocab.Redact, has: "[hidden]", hasNot: "s3cret", changed: true},
		{name: "throw a pass-looking value", tenant: `if (ctx.phase === "pre") throw {action: "pass", allowed: true};`,
			call: pre("read", `{}`), reject: "tenant:acme/tenant.js"},
		{name: "a tenant rejects", tenant: `if (ctx.phase === "pre" && ctx.tool === "read") throw new Error("not for acme");`,
			call: pre("read", `{}`), reject: "tenant:acme/tenant.js"},
		{name: "a tenant warns", tenant: `if (ctx.phase === "post") ctx.warn("acme reviews this");`,
			call: post("clean"), action: vocab.Warn, has: "clean"},
		{name: "a tenant redacts more", tenant: `if (ctx.phase === "post") ctx.response.content[0].text = ctx.response.content[0].text.replace("internal", "[acme]");`,
			call: post("internal s3cret"), action: vocab.Redact, has: "[acme] [hidden]", changed: true},
		{name: "a tenant hides more", tenant: `if (ctx.phase === "list") ctx.tools = [];`,
			call: list, hasNot: "read", changed: true},
		// the global set's second run must not see what the tenant did to the
		// language: a built-in the global policy calls, patched to loosen it
		{name: "patch a built-in the global set's hiding calls", tenant: `if (ctx.phase === "list") { Array.prototype.filter = function () { return this; }; ctx.tools.push({name: "danger", inputSchema: {type: "object"}}); }`,
			call: list, has: `"read"`, hasNot: "danger", changed: true},
		{name: "patch a built-in the global set's redaction calls", tenant: `if (ctx.phase === "post") { String.prototype.split = function () { return [String(this)]; }; ctx.response.content[0].text = "the s3cret is back"; }`,
			call: post("a s3cret"), action: vocab.Redact, has: "[hidden]", hasNot: "s3cret", changed: true},
		{name: "patch a built-in the global set's rewrite calls", tenant: `if (ctx.phase === "pre") { String.prototype.indexOf = function () { return -1; }; ctx.params.path = "/etc/passwd"; }`,
			call: pre("read", `{"path":"/etc/shadow"}`), has: `"/tmp/safe"`, hasNot: "/etc/", changed: true},
		{name: "a global to switch the global set off", tenant: `if (ctx.phase === "pre") { globalThis.ctx = {phase: "none"}; ctx.params.path = "/etc/passwd"; }`,
			call: pre("read", `{"path":"/etc/shadow"}`), has: `"/tmp/safe"`, hasNot: "/etc/", changed: true},
		{name: "pass after the global block in post", tenant: `if (ctx.phase === "post") { ctx.response.content = [{type: "text", text: "all fine"}]; }`,
			call: &ctxapi.Call{Phase: ctxapi.PhasePost, Method: "tools/call", Tool: "blocked_post", Params: json.RawMessage(`{}`),
				Response: &ctxapi.Response{Content: json.RawMessage(`[{"type":"text","text":"x"}]`)}}, reject: "global.js"},
		{name: "a tenant that acts in no phase of the call", tenant: `if (ctx.phase === "resource") ctx.warn("x");`,
			call: pre("read", `{"path":"/etc/x"}`), has: "/tmp/safe", changed: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := Layered(global, layerSet(t, map[string]string{"tenant.js": tc.tenant}), "acme")
			if s.Hash != global.Hash || s.TenantHash == "" || s.TenantHash == global.Hash {
				t.Fatalf("hashes: %q %q %q", s.Hash, s.TenantHash, global.Hash)
			}
			res := s.Run(context.Background(), tc.call)
			if tc.reject != "" {
				if res.Reject == nil || res.Reject.Policy != tc.reject {
					t.Fatalf("reject %+v, want by %s", res.Reject, tc.reject)
				}
				return
			}
			if res.Reject != nil {
				t.Fatalf("rejected: %+v", res.Reject)
			}
			if tc.action != "" && res.Action != tc.action {
				t.Errorf("action %q, want %q", res.Action, tc.action)
			}
			if res.Changed != tc.changed {
				t.Errorf("changed %v, want %v", res.Changed, tc.changed)
			}
			out := string(res.Params)
			switch tc.call.Phase {
			case ctxapi.PhasePost:
				out = string(res.Content)
			case ctxapi.PhaseList:
				out = string(res.Content)
			}
			if tc.has != "" && !strings.Contains(out, tc.has) || tc.hasNot != "" && strings.Contains(out, tc.hasNot) {
				t.Fatalf("output %s: want %q and not %q", out, tc.has, tc.hasNot)
			}
		})
	}
}

// A tenant without policies runs on the global set itself.
func TestLayeredWithoutTenantPolicies(t *testing.T) {
	global := layerSet(t, globalLayer)
	if s := Layered(global, layerSet(t, nil), "acme"); s != global {
		t.Fatal("an empty tenant layer made a new set")
	}
	if s := Layered(global, nil, "acme"); s != global {
		t.Fatal("no tenant layer made a new set")
	}
}

// TestLayersSecondRunWarns: what the global set does to a tenant's output in its
// second run is part of the result: a warning it gives there reaches the caller and
// its policy is named in Acted (the warning was dropped, the action alone kept).
func TestLayersSecondRunWarns(t *testing.T) {
	global := layerSet(t, map[string]string{"warn.js": `if (ctx.phase === "post" && JSON.stringify(ctx.response.content).indexOf("internal") >= 0) ctx.warn("internal data");`})
	tenant := layerSet(t, map[string]string{"add.js": `if (ctx.phase === "post") ctx.response.content.push({type: "text", text: "internal note"});`})
	res := Layered(global, tenant, "acme").Run(context.Background(), &ctxapi.Call{Phase: ctxapi.PhasePost, Method: "tools/call", Tool: "read",
		Params: json.RawMessage(`{}`), Response: &ctxapi.Response{Content: json.RawMessage(`[{"type":"text","text":"clean"}]`)}})
	if res.Reject != nil || !res.Changed {
		t.Fatalf("result %+v", res)
	}
	if len(res.Warnings) != 1 || res.Warnings[0].Policy != "warn.js" || res.Action != vocab.Redact {
		t.Fatalf("warnings %+v, action %s", res.Warnings, res.Action)
	}
	if !slices.Contains(res.Acted, "warn.js") || !slices.Contains(res.Acted, "tenant:acme/add.js") {
		t.Fatalf("acted %v", res.Acted)
	}
}

// TestRemovedNamesWhoDropped: in a list phase Result.Removed names, per dropped tool,
// the policy that last dropped it, not the last that acted; a tool dropped and put
// back by a later policy is named too (the caller reads it only for tools it hides);
// a tenant's drop is named by its layer, and a tool the tenant lists again after the
// global set dropped it stays the global set's. No drop, no map.
func TestRemovedNamesWhoDropped(t *testing.T) {
	const (
		dropA    = `if (ctx.phase === "list") ctx.tools = ctx.tools.filter(t => t.name !== "a");`
		dropB    = `if (ctx.phase === "list") ctx.tools = ctx.tools.filter(t => t.name !== "b");`
		putBackA = `if (ctx.phase === "list" && !ctx.tools.some(t => t.name === "a")) ctx.tools.push({name: "a"});`
		describe = `if (ctx.phase === "list") ctx.tools.forEach(t => { t.description = "d"; });`
	)
	for _, tc := range []struct {
		name           string
		global, tenant map[string]string
		want           map[string]string
	}{
		{"one drops, a later one edits", map[string]string{"1.js": dropA, "2.js": describe}, nil, map[string]string{"a": "1.js"}},
		{"each drops its own", map[string]string{"1.js": dropA, "2.js": dropB, "3.js": describe}, nil, map[string]string{"a": "1.js", "b": "2.js"}},
		{"dropped, put back, dropped again", map[string]string{"1.js": dropA, "2.js": putBackA, "3.js": dropA}, nil, map[string]string{"a": "3.js"}},
		{"edits only", map[string]string{"1.js": describe}, nil, nil},
		{"the tenant drops", map[string]string{"1.js": dropA}, map[string]string{"t.js": dropB}, map[string]string{"a": "1.js", "b": "tenant:acme/t.js"}},
		{"the tenant lists a dropped tool again", map[string]string{"1.js": dropA}, map[string]string{"t.js": putBackA}, map[string]string{"a": "1.js"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			set := layerSet(t, tc.global)
			if tc.tenant != nil {
				set = Layered(set, layerSet(t, tc.tenant), "acme")
			}
			res := set.Run(context.Background(), &ctxapi.Call{Phase: ctxapi.PhaseList, Method: "tools/list",
				Params: json.RawMessage(`{}`), Tools: json.RawMessage(`[{"name":"a"},{"name":"b"},{"name":"c"}]`)})
			if res.Reject != nil {
				t.Fatal(res.Reject)
			}
			if !maps.Equal(res.Removed, tc.want) {
				t.Errorf("removed %v, want %v", res.Removed, tc.want)
			}
		})
	}
}
