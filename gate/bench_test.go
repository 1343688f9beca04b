package gate

import (
	"context"
	"encoding/json"
	"io/fs"
	"path"
	"strings"
	"testing"

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
		if strings.HasSuffix(e.Name(), "_test.js") {
			continue // policy tests, not policies
		}
		b, err := fs.ReadFile(policies.FS, path.Join(dir, e.Name()))
		if err != nil {
			tb.Fatal(err)
		}
		files[e.Name()] = string(b)
	}
	return files
}

func benchCalls() (*ctxapi.Call, *ctxapi.Call, int) {
	line := "Build 4711 finished; ping alice@example.com or bob.smith@corp.example.org if it breaks. "
	text := strings.Repeat(line, 4096/len(line)) // whole lines: every address complete
	content, _ := json.Marshal([]map[string]string{{"type": "text", "text": text}})
	u := ctxapi.User{UserID: "u1", CallerID: "cli", CallerClass: "standard", Roles: []string{"dev"}}
	pre := &ctxapi.Call{Phase: ctxapi.PhasePre, Tool: "github_create_pull", ToolAccess: "write", User: u,
		Params: json.RawMessage(`{"owner":"o","repo":"r","title":"t","body":"Fix it\n\nCo-Authored-By: bot <bot@example.com>\n"}`)}
	post := *pre
	post.Phase = ctxapi.PhasePost
	post.Response = &ctxapi.Response{Content: content}
	return pre, &post, len(content)
}

// BenchmarkShippedSet runs the shipped policy set, pre then post, on a 4 KiB result,
// and checks first that the set is not empty and redacts every address.
func BenchmarkShippedSet(b *testing.B) {
	files := shipped(b, false)
	if len(files) == 0 {
		b.Fatal("no shipped policies")
	}
	g := loadGate(b, files, func(o *Options) { o.PoolSize = 1; o.Timeout = DefaultTimeout })
	pre, post, n := benchCalls()
	ctx := context.Background()
	set := g.Current()
	r := set.Run(ctx, post)
	if r.Reject != nil || !r.Changed || strings.Contains(string(r.Content), "@") || !strings.Contains(string(r.Content), "[REDACTED") {
		b.Fatalf("the shipped set did not redact: %+v %.200s", r.Reject, r.Content)
	}
	b.SetBytes(int64(n))
	b.ReportAllocs()
	for b.Loop() {
		set := g.Current()
		if r := set.Run(ctx, pre); r.Reject != nil {
			b.Fatal(r.Reject)
		}
		if r := set.Run(ctx, post); r.Reject != nil || !r.Changed {
			b.Fatal(r.Reject)
		}
	}
}
