package gate

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/mcpgate/mcpgate/ctxapi"
)

// writePolicies writes name → source files into a fresh directory.
func writePolicies(t testing.TB, files map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	for name, src := range files {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(src), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// loadGate loads files and closes the gate after the test. The timeout is generous so
// that a loaded CI machine never times out a well-behaved policy; runaway tests set
// their own short one.
func loadGate(t testing.TB, files map[string]string, mod ...func(*Options)) *Gate {
	t.Helper()
	opts := Options{Dir: writePolicies(t, files), Timeout: 3 * time.Second * raceSlowdown, PoolSize: 2}
	for _, m := range mod {
		m(&opts)
	}
	g, err := Load(context.Background(), opts)
	if err != nil {
		t.Fatalf("Load: %v", err)
	}
	t.Cleanup(func() { g.Close() })
	return g
}

func preCall(params string) *ctxapi.Call {
	return &ctxapi.Call{Phase: ctxapi.PhasePre, Tool: "t", ToolAccess: "write", Params: json.RawMessage(params),
		User: ctxapi.User{UserID: "u1", CallerID: "cli", CallerClass: "standard", Roles: []string{"dev"}}}
}

func postCall(content, sc string) *ctxapi.Call {
	c := preCall(`{"a":1}`)
	c.Phase = ctxapi.PhasePost
	c.Response = &ctxapi.Response{Content: json.RawMessage(content)}
	if sc != "" {
		c.Response.StructuredContent = json.RawMessage(sc)
	}
	return c
}

func run(g *Gate, c *ctxapi.Call) Result { return g.Current().Run(context.Background(), c) }

// writePoliciesInto replaces the *.js files of dir with files.
func writePoliciesInto(t testing.TB, dir string, files map[string]string) {
	t.Helper()
	old, _ := filepath.Glob(filepath.Join(dir, "*.js"))
	for _, f := range old {
		if err := os.Remove(f); err != nil {
			t.Fatal(err)
		}
	}
	for name, src := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(src), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// slowTable skips, under the race detector, a test whose time goes to JavaScript and
// allocation inside goja, where the detector sees nothing of the gate's own: `make
// test` runs each such test once without it (test-gate-slow, GATE_SLOW in the
// Makefile), so the package stays within minutes under -race on two cores.
func slowTable(t *testing.T) {
	t.Helper()
	if raceSlowdown > 1 {
		t.Skip("runs without the race detector: make test-gate-slow runs it")
	}
}

// Every test slowTable skips under -race runs without it in `make test`: its name
// matches GATE_SLOW in the Makefile.
func TestSlowTablesRunSomewhere(t *testing.T) {
	mk, err := os.ReadFile("../Makefile")
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`(?m)^GATE_SLOW \?= (.*)$`).FindSubmatch(mk)
	if m == nil {
		t.Fatal("no GATE_SLOW in the Makefile")
	}
	slow := regexp.MustCompile(strings.ReplaceAll(string(m[1]), "$$", "$"))
	files, _ := filepath.Glob("*_test.go")
	skipped := regexp.MustCompile(`func (Test\w+)\(t \*testing\.T\) \{\n\tslowTable\(t\)`)
	n := 0
	for _, f := range files {
		src, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, s := range skipped.FindAllSubmatch(src, -1) {
			n++
			if !slow.Match(s[1]) {
				t.Errorf("%s skips under -race but GATE_SLOW does not run it", s[1])
			}
		}
	}
	if n == 0 {
		t.Error("no test calls slowTable")
	}
}
