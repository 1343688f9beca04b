package e2e

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/mcpgate/mcpgate/internal/testwait"
)

// TestRootsPinned: a client that declares roots and answers roots/list with a root
// wider than server-filesystem's configured folder widens the server's allowed
// directories without pins, and cannot when mcpServers.fs.roots pins the folder: the
// answer reaches the server without the wider root, and one record (root_outside_pin)
// says so without the URI.
func TestRootsPinned(t *testing.T) {
	wide := t.TempDir()
	dir := filepath.Join(wide, "project")
	if err := os.Mkdir(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	roots := []map[string]any{{"uri": "file://" + wide, "name": "everything"}}
	for _, c := range []struct {
		name   string
		pinned bool
	}{{"unpinned", false}, {"pinned", true}} {
		t.Run(c.name, func(t *testing.T) {
			fs := nodeServer(t, "@modelcontextprotocol/server-filesystem", dir)
			if c.pinned {
				fs["roots"] = []string{"file://" + dir}
			}
			cfg := filepath.Join(t.TempDir(), "config.json")
			writeJSON(t, cfg, map[string]any{"mcpServers": map[string]any{"fs": fs}})
			d := startDriver(t, map[string]any{"command": binary, "roots": roots,
				"args": []string{"gateway", "run", "--log-format", "json", "--config", cfg, "--policies", emptyPolicies(t)}})
			allowed := func() string {
				r := d.mustRequest("tools/call", map[string]any{"name": "list_allowed_directories", "arguments": map[string]any{}})
				var text []string
				for _, b := range r["content"].([]any) {
					text = append(text, b.(map[string]any)["text"].(string))
				}
				return strings.Join(text, "\n")
			}
			deadline := time.Now().Add(15 * time.Second)
			for {
				got := allowed()
				widened := strings.Contains(got, wide+"\n") || strings.HasSuffix(got, wide)
				if !c.pinned && widened {
					return // the client's root reached the server: what the pin prevents
				}
				if c.pinned && widened {
					t.Fatalf("a pinned server's allowed directories were widened: %q", got)
				}
				if c.pinned && pinRecorded(d.stderr) {
					if !strings.Contains(got, dir) {
						t.Fatalf("allowed directories %q, want %s", got, dir)
					}
					if b, _ := json.Marshal(d.stderr.allRecords()); strings.Contains(string(b), "file:") || strings.Contains(string(b), "everything") {
						t.Fatalf("a record holds a root URI or name: %s", b)
					}
					return
				}
				if time.Now().After(deadline) {
					t.Fatalf("allowed directories %q; stderr:\n%s", got, d.stderr.String())
				}
				time.Sleep(50 * time.Millisecond)
			}
		})
	}
}

// pinRecorded reports whether the gateway recorded removing a client root.
func pinRecorded(log *stderrLog) bool {
	for _, r := range log.allRecords() {
		if r["method"] == "roots/list" && r["reason"] == "root_outside_pin" {
			return true
		}
	}
	return false
}

// TestRootsResourcesPrompts: once the client has answered a server's roots/list, a
// resources/read result for a file outside the declared root and a prompts/get result
// linking to one are output_ssrf_target in their records, without the URI; the same
// inside the root stay clean.
func TestRootsResourcesPrompts(t *testing.T) {
	base := t.TempDir()
	inside, outside := "file://"+filepath.Join(base, "project", "a.md"), "file://"+filepath.Join(base, "other", "b.md")
	cfg := filepath.Join(t.TempDir(), "config.json")
	writeJSON(t, cfg, map[string]any{"mcpServers": map[string]any{"r": map[string]any{
		"command": "node", "args": []string{filepath.Join(root, "testdata", "e2e", "roots-server.mjs")}}}})
	d := startDriver(t, map[string]any{"command": binary, "roots": []map[string]any{{"uri": "file://" + filepath.Join(base, "project")}},
		"args": []string{"gateway", "run", "--log-format", "json", "--config", cfg, "--policies", emptyPolicies(t)}})
	r := d.mustRequest("tools/call", map[string]any{"name": "roots", "arguments": map[string]any{}})
	if got := r["content"].([]any)[0].(map[string]any)["text"]; got != "1" {
		t.Fatalf("the server got %v roots, want 1", got)
	}
	for _, c := range []struct {
		method string
		params func(uri string) map[string]any
	}{
		{"resources/read", func(uri string) map[string]any { return map[string]any{"uri": uri} }},
		{"prompts/get", func(uri string) map[string]any {
			return map[string]any{"name": "link", "arguments": map[string]any{"uri": uri}}
		}},
	} {
		t.Run(c.method, func(t *testing.T) {
			of := func() []map[string]any {
				var out []map[string]any
				for _, rec := range d.stderr.allRecords() {
					if rec["method"] == c.method {
						out = append(out, rec)
					}
				}
				return out
			}
			flagged := func(rec map[string]any) bool {
				ids, _ := rec["rule_ids"].([]any)
				return slices.Contains(ids, any("output_ssrf_target"))
			}
			d.mustRequest(c.method, c.params(inside))
			d.mustRequest(c.method, c.params(outside))
			if !testwait.Within(testwait.Timeout, func() bool { recs := of(); return len(recs) > 0 && flagged(recs[len(recs)-1]) }) {
				t.Fatalf("no %s record with output_ssrf_target; records %v", c.method, of())
			}
			recs := of()
			for _, rec := range recs[:len(recs)-1] {
				if flagged(rec) {
					t.Fatalf("a %s inside the root was flagged: %v", c.method, rec)
				}
			}
			if b, _ := json.Marshal(recs); strings.Contains(string(b), base) {
				t.Fatalf("a record holds the URI: %s", b)
			}
		})
	}
}
