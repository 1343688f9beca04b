package gate

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/fstest"
	"time"

	"github.com/mcpgate/mcpgate/internal/testwait"
)

func TestReload(t *testing.T) {
	g := loadGate(t, map[string]string{"a.js": `ctx.params.a = 1`})
	dir := g.opts.Dir
	s1 := g.Current()
	st := g.Status()
	if st.Generation != 1 || len(st.Hash) != 64 || st.LastError != "" || strings.Join(st.Files, ",") != "a.js" {
		t.Fatalf("status %+v", st)
	}
	// unchanged directory: same generation
	if err := g.Reload(); err != nil || g.Current() != s1 {
		t.Fatalf("noop reload: %v", err)
	}
	write(t, dir, "b.js", `ctx.params.b = 2`)
	if err := g.Reload(); err != nil {
		t.Fatal(err)
	}
	if st := g.Status(); st.Generation != 2 || strings.Join(st.Files, ",") != "a.js,b.js" || st.Hash == s1.Hash {
		t.Fatalf("after add %+v", st)
	}
	// in-flight calls keep their set
	if r := s1.Run(context.Background(), preCall(`{}`)); string(r.Params) != `{"a":1}` {
		t.Fatalf("old set: %s", r.Params)
	}
	write(t, dir, "c.js", "if (\n")
	err := g.Reload()
	if err == nil || !strings.Contains(err.Error(), "c.js:") {
		t.Fatalf("broken reload: %v", err)
	}
	if st := g.Status(); st.Generation != 2 || !strings.Contains(st.LastError, "c.js") {
		t.Fatalf("after broken %+v", st)
	}
	if r := run(g, preCall(`{}`)); r.Reject != nil || string(r.Params) != `{"a":1,"b":2}` {
		t.Fatalf("last good set: %+v %s", r.Reject, r.Params)
	}
	os.Remove(filepath.Join(dir, "c.js"))
	os.Remove(filepath.Join(dir, "a.js"))
	if err := g.Reload(); err != nil {
		t.Fatal(err)
	}
	if st := g.Status(); st.Generation != 3 || st.LastError != "" || strings.Join(st.Files, ",") != "b.js" {
		t.Fatalf("after remove %+v", st)
	}
	os.RemoveAll(dir)
	if err := g.Reload(); err == nil || g.Status().Generation != 3 {
		t.Fatalf("removed dir: %v", err)
	}
}

func write(t testing.TB, dir, name, src string) {
	t.Helper()
	if err := os.WriteFile(filepath.Join(dir, name), []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
}

func waitGen(t *testing.T, g *Gate, gen uint64) {
	t.Helper()
	if !testwait.Within(testwait.Timeout, func() bool { return g.Status().Generation >= gen }) {
		t.Fatalf("generation stayed %d, want %d (%+v)", g.Status().Generation, gen, g.Status())
	}
}

func TestWatch(t *testing.T) {
	g := loadGate(t, map[string]string{"a.js": `ctx.params.v = 1`}, func(o *Options) { o.Debounce = 30 * time.Millisecond })
	dir := g.opts.Dir
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- g.Watch(ctx) }()
	time.Sleep(50 * time.Millisecond) // no signal says the watcher is armed

	write(t, dir, "a.js", `ctx.params.v = 2`) // write
	waitGen(t, g, 2)
	// an editor that saves by writing a temp file and renaming it over the policy
	write(t, dir, ".a.js.swp", `ctx.params.v = 3`)
	if err := os.Rename(filepath.Join(dir, ".a.js.swp"), filepath.Join(dir, "a.js")); err != nil {
		t.Fatal(err)
	}
	waitGen(t, g, 3)
	if r := run(g, preCall(`{}`)); string(r.Params) != `{"v":3}` {
		t.Fatalf("after rename save: %s", r.Params)
	}
	write(t, dir, "b.js", `ctx.params.w = 1`) // create
	waitGen(t, g, 4)
	os.Remove(filepath.Join(dir, "b.js")) // remove
	waitGen(t, g, 5)
	write(t, dir, "c.js", `syntax error here (`) // broken: generation stays
	testwait.For(t, "the failed reload", func() bool { return strings.Contains(g.Status().LastError, "c.js") })
	if st := g.Status(); st.Generation != 5 {
		t.Fatalf("broken file %+v", st)
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}

// Reloads (add, break, remove) while many goroutines run calls: no call fails because
// of a reload. Run with -race.
func TestReloadUnderLoad(t *testing.T) {
	g := loadGate(t, map[string]string{
		"a.js": `if (ctx.phase === "pre") ctx.params.n = (ctx.params.n || 0) + 1; else ctx.response.content.push({type: "text", text: "a"})`,
	}, func(o *Options) { o.PoolSize = 4; o.Timeout = 5 * time.Second })
	dir := g.opts.Dir
	stop := make(chan struct{})
	var calls, failures atomic.Int64
	var wg sync.WaitGroup
	for i := 0; i < 8; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case <-stop:
					return
				default:
				}
				set := g.Current()
				r := set.Run(context.Background(), preCall(`{}`))
				r2 := set.Run(context.Background(), postCall(twoBlocks, ""))
				calls.Add(1)
				if r.Reject != nil || r2.Reject != nil {
					failures.Add(1)
					t.Errorf("call rejected: %+v %+v", r.Reject, r2.Reject)
				}
			}
		}()
	}
	for i := 0; i < 20; i++ {
		write(t, dir, "b.js", `ctx.warn("gen `+itoa(i)+`")`)
		_ = g.Reload()
		write(t, dir, "c.js", "if ( broken")
		_ = g.Reload()
		os.Remove(filepath.Join(dir, "c.js"))
		os.Remove(filepath.Join(dir, "b.js"))
		_ = g.Reload()
		_ = g.Status()
		time.Sleep(5 * time.Millisecond)
	}
	close(stop)
	wg.Wait()
	if failures.Load() != 0 || calls.Load() == 0 {
		t.Fatalf("%d of %d calls failed", failures.Load(), calls.Load())
	}
	t.Logf("%d calls across %d generations", calls.Load(), g.Status().Generation)
}

// A file goja's parser panics on (an upstream bug) is a syntax error of that file: Load
// refuses it, a reload keeps the set it had, and the process goes on.
func TestEngineParserPanicIsASyntaxError(t *testing.T) {
	const bad = "var[ ...{000"
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "bad.js"), []byte(bad), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := Load(context.Background(), Options{Dir: dir}); !errors.Is(err, ErrSyntax) {
		t.Fatalf("Load: %v, want ErrSyntax", err)
	}
	good := t.TempDir()
	g, err := Load(context.Background(), Options{Dir: good})
	if err != nil {
		t.Fatal(err)
	}
	defer g.Close()
	if err := os.WriteFile(filepath.Join(good, "bad.js"), []byte(bad), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := g.Reload(); !errors.Is(err, ErrSyntax) {
		t.Fatalf("Reload: %v, want ErrSyntax", err)
	}
}

// TestLoadSkipsTestFiles: a *_test.js beside the policies is never run as a policy,
// even when it would reject every call or does not compile.
func TestLoadSkipsTestFiles(t *testing.T) {
	g := loadGate(t, map[string]string{"p.js": `// nothing`, "p_test.js": `throw "must not run"; (((`})
	if got := g.Current().Files; len(got) != 1 || got[0] != "p.js" {
		t.Errorf("loaded %v, want only p.js", got)
	}
}

// TestSwap: a policy bundle's files replace the directory's with their revision on
// the set and in Status; one that does not compile leaves the running set, its
// revision and its source in place.
func TestSwap(t *testing.T) {
	g := loadGate(t, map[string]string{"a.js": `ctx.params.a = 1`})
	if err := g.Swap(fstest.MapFS{"b.js": {Data: []byte(`ctx.params.b = 2`)}}, "7"); err != nil {
		t.Fatal(err)
	}
	if st := g.Status(); st.Generation != 2 || st.Revision != "7" || strings.Join(st.Files, ",") != "b.js" || g.Current().Revision != "7" {
		t.Fatalf("after swap %+v", st)
	}
	if err := g.Swap(fstest.MapFS{"b.js": {Data: []byte(`ctx.params.b = 2`)}}, "8"); err != nil || g.Status().Revision != "8" || g.Status().Generation != 3 {
		t.Fatalf("same files, new revision: %v %+v", err, g.Status())
	}
	if err := g.Swap(fstest.MapFS{"c.js": {Data: []byte("if (\n")}}, "9"); err == nil || !strings.Contains(err.Error(), "c.js") {
		t.Fatalf("broken bundle: %v", err)
	}
	if st := g.Status(); st.Revision != "8" || !strings.Contains(st.LastError, "c.js") {
		t.Fatalf("after broken %+v", st)
	}
	if err := g.Reload(); err != nil || g.Status().Revision != "8" || strings.Join(g.Status().Files, ",") != "b.js" {
		t.Fatalf("reload after a refused swap reads the running bundle: %v %+v", err, g.Status())
	}
	if r := run(g, preCall(`{}`)); r.Reject != nil || string(r.Params) != `{"b":2}` {
		t.Fatalf("last good set: %+v %s", r.Reject, r.Params)
	}
}
