package gate

import (
	"context"
	"encoding/json"
	"io/fs"
	"strings"
	"testing"

	"github.com/dop251/goja"

	"github.com/mcpgate/mcpgate/ctxapi"
	"github.com/mcpgate/mcpgate/policies"
)

// shipped returns the embedded policies; examples/ when ex is true.
func shipped(tb testing.TB, ex bool) map[string]string {
	tb.Helper()
	dir := "."
	if ex {
		dir = "examples"
	}
	files := map[string]string{}
	ents, err := fs.ReadDir(policies.FS, dir)
	if err != nil {
		tb.Fatal(err)
	}
	for _, e := range ents {
		if e.IsDir() || !strings.HasSuffix(e.Name(), ".js") {
			continue
		}
		b, _ := fs.ReadFile(policies.FS, dir+"/"+e.Name())
		files[e.Name()] = string(b)
	}
	return files
}

func benchCalls() (*ctxapi.Call, *ctxapi.Call, int) {
	line := "Build 4711 finished; ping alice@example.com or bob.smith@corp.example.org if it breaks. "
	text := strings.Repeat(line, 4096/len(line)+1)[:4000]
	content, _ := json.Marshal([]map[string]string{{"type": "text", "text": text}})
	u := ctxapi.User{UserID: "u1", CallerID: "cli", CallerClass: "standard", Roles: []string{"dev"}}
	pre := &ctxapi.Call{Phase: ctxapi.PhasePre, Tool: "github_create_pull", ToolAccess: "write", User: u,
		Params: json.RawMessage(`{"owner":"o","repo":"r","title":"t","body":"Fix it\n\nCo-Authored-By: bot <bot@example.com>\n"}`)}
	post := *pre
	post.Phase = ctxapi.PhasePost
	post.Response = &ctxapi.Response{Content: content}
	return pre, &post, len(content)
}

// BenchmarkShippedSet runs the shipped policy set, pre then post, on a 4 KiB result.
func BenchmarkShippedSet(b *testing.B) {
	g := loadGate(b, shipped(b, false), func(o *Options) { o.PoolSize = 1; o.Timeout = DefaultTimeout })
	pre, post, n := benchCalls()
	ctx := context.Background()
	b.SetBytes(int64(n))
	b.ReportAllocs()
	for b.Loop() {
		set := g.Current()
		if r := set.Run(ctx, pre); r.Reject != nil {
			b.Fatal(r.Reject)
		}
		if r := set.Run(ctx, post); r.Reject != nil {
			b.Fatal(r.Reject)
		}
	}
}

// BenchmarkSeedExamples runs the four classic plain-JS examples the same way (the
// e-mail regex runs in JS here).
func BenchmarkSeedExamples(b *testing.B) {
	files := shipped(b, true)
	seed := map[string]string{}
	for _, n := range []string{"block-force-delete.js", "redact-email-regex.js", "strip-co-authored-by.js", "untrusted-readonly.js"} {
		seed[n] = files[n]
	}
	g := loadGate(b, seed, func(o *Options) { o.PoolSize = 1; o.Timeout = DefaultTimeout })
	pre, post, n := benchCalls()
	ctx := context.Background()
	b.SetBytes(int64(n))
	b.ReportAllocs()
	for b.Loop() {
		set := g.Current()
		set.Run(ctx, pre)
		set.Run(ctx, post)
	}
}

// BenchmarkReferenceDesign is ToolMesh's design on the four classic examples: a fresh
// runtime per policy, per phase and per call, RunString each time, ctx handed over as
// Go maps and read back through Export and json.Marshal.
func BenchmarkReferenceDesign(b *testing.B) {
	files := shipped(b, true)
	var srcs []string
	for _, n := range []string{"block-force-delete.js", "redact-email-regex.js", "strip-co-authored-by.js", "untrusted-readonly.js"} {
		srcs = append(srcs, files[n])
	}
	pre, post, n := benchCalls()
	b.SetBytes(int64(n))
	b.ReportAllocs()
	phase := func(c *ctxapi.Call) {
		params := c.Params
		var content json.RawMessage
		if c.Response != nil {
			content = c.Response.Content
		}
		for _, src := range srcs {
			rt := goja.New()
			for _, k := range []string{"eval", "Function"} { // lockdown per runtime
				_ = rt.GlobalObject().Delete(k)
			}
			var p map[string]any
			_ = json.Unmarshal(params, &p)
			ctx := map[string]any{"phase": string(c.Phase), "tool": c.Tool, "toolAccess": c.ToolAccess, "params": p,
				"user": map[string]any{"userID": c.User.UserID, "callerId": c.User.CallerID, "callerClass": c.User.CallerClass, "roles": c.User.Roles}}
			if content != nil {
				var ct []any
				_ = json.Unmarshal(content, &ct)
				ctx["response"] = map[string]any{"content": ct}
			}
			_ = rt.Set("ctx", ctx)
			if _, err := rt.RunString(src); err != nil {
				return
			}
			params, _ = json.Marshal(ctx["params"])
			if content != nil {
				content, _ = json.Marshal(ctx["response"].(map[string]any)["content"])
			}
		}
	}
	for b.Loop() {
		phase(pre)
		phase(post)
	}
}
