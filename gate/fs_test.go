package gate

import (
	"bytes"
	"context"
	"log/slog"
	"slices"
	"strings"
	"testing"
	"testing/fstest"
)

// TestLoadFS: policies load from an fs.FS as from a directory: top-level *.js only,
// in lexical order, and Watch says it needs a directory.
func TestLoadFS(t *testing.T) {
	fsys := fstest.MapFS{
		"20-b.js":          {Data: []byte(`if (ctx.phase === "pre") { throw "b" }`)},
		"10-a.js":          {Data: []byte(`ctx.warn("a")`)},
		".hidden.js":       {Data: []byte(`throw "hidden"`)},
		"examples/skip.js": {Data: []byte(`throw "example"`)},
		"README.md":        {Data: []byte(`not a policy`)},
	}
	g, err := Load(context.Background(), Options{FS: fsys})
	if err != nil {
		t.Fatal(err)
	}
	defer g.Close()
	if got := g.Current().Files; !slices.Equal(got, []string{"10-a.js", "20-b.js"}) {
		t.Fatalf("files %v", got)
	}
	if r := run(g, preCall(`{}`)); r.Reject == nil || r.Reject.Policy != "20-b.js" {
		t.Fatalf("reject %+v", r.Reject)
	}
	if err := g.Watch(context.Background()); err == nil {
		t.Fatal("Watch without a directory did not fail")
	}

	empty, err := Load(context.Background(), Options{FS: fstest.MapFS{}})
	if err != nil {
		t.Fatal(err)
	}
	defer empty.Close()
	if n := len(empty.Current().Files); n != 0 {
		t.Fatalf("%d files in an empty FS", n)
	}
}

// TestLoadBuiltin: Options.Builtin's policies run first, named builtin/<file>, and a
// file of the same name among the operator's replaces the built-in one.
func TestLoadBuiltin(t *testing.T) {
	builtin := fstest.MapFS{
		"redact.js": {Data: []byte(`ctx.warn("builtin redact")`)},
		"other.js":  {Data: []byte(`ctx.warn("builtin other")`)},
	}
	own := fstest.MapFS{
		"10-a.js":   {Data: []byte(`ctx.warn("a")`)},
		"redact.js": {Data: []byte(`ctx.warn("own redact")`)},
	}
	g, err := Load(context.Background(), Options{FS: own, Builtin: builtin})
	if err != nil {
		t.Fatal(err)
	}
	defer g.Close()
	if got, want := g.Current().Files, []string{"builtin/other.js", "10-a.js", "redact.js"}; !slices.Equal(got, want) {
		t.Fatalf("files %v, want %v", got, want)
	}
	want := []Warning{{"builtin/other.js", "builtin other"}, {"10-a.js", "a"}, {"redact.js", "own redact"}}
	if r := run(g, preCall(`{}`)); !slices.Equal(r.Warnings, want) {
		t.Fatalf("warnings %v", r.Warnings)
	}
}

// TestLoadFSLogsRevision: a set loaded from a bundle's files is logged with its
// revision, not with an empty directory.
func TestLoadFSLogsRevision(t *testing.T) {
	var logs bytes.Buffer
	g, err := Load(context.Background(), Options{FS: fstest.MapFS{"a.js": {Data: []byte(`ctx.warn("a")`)}},
		Revision: "7", Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	if err != nil {
		t.Fatal(err)
	}
	defer g.Close()
	if got := logs.String(); !strings.Contains(got, "policy_revision=7") || strings.Contains(got, `dir=""`) {
		t.Fatalf("log %q: want policy_revision=7 and no empty dir", got)
	}
}
