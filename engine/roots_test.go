package engine

import (
	"encoding/json"
	"testing"
)

// TestTargetsOutsideRoots: with the client's declared roots, a file: target outside
// every one is output_ssrf_target (file_outside_roots) in a resource_link, a Markdown
// link and an OSC 8 hyperlink; inside one it stays clean; with no roots it is judged
// by its path alone.
func TestTargetsOutsideRoots(t *testing.T) {
	a, _ := New(Options{})
	app := []string{"file:///home/bob/app", "file:///srv/data/"}
	for _, c := range []struct {
		name  string
		uri   string
		roots []string
		want  string // the finding's entity, "" for no output_ssrf_target
	}{
		{"inside a root", "file:///home/bob/app/README.md", app, ""},
		{"the root itself", "file:///home/bob/app", app, ""},
		{"inside the second root", "file:///srv/data/x/y.csv", app, ""},
		{"inside, with a fragment", "file:///home/bob/app/main.go#L10", app, ""},
		{"inside, localhost", "file://localhost/home/bob/app/a.txt", app, ""},
		{"inside after a harmless ..", "file:///home/bob/app/src/../go.mod", app, ""},
		{"outside", "file:///home/bob/notes/todo.md", app, "file_outside_roots"},
		{"a sibling sharing the prefix", "file:///home/bob/application/a.txt", app, "file_outside_roots"},
		{".. escapes", "file:///home/bob/app/../notes/todo.md", app, "file_outside_roots"},
		{"percent-encoded .. escapes", "file:///home/bob/app/%2e%2e/notes/todo.md", app, "file_outside_roots"},
		{"percent-encoded inside", "file:///home/bob/app/my%20file.txt", app, ""},
		{"another host", "file://fileserver/home/bob/app/a.txt", app, "file_outside_roots"},
		{"sensitive path wins", "file:///home/bob/app/.env", app, "file_sensitive"},
		{"no roots declared", "file:///home/bob/notes/todo.md", nil, ""},
		{"no roots declared, sensitive", "file:///etc/passwd", nil, "file_sensitive"},
		{"only unusable roots", "file:///home/bob/notes/todo.md", []string{"https://example.com/", "file:relative"}, ""},
		{"a web link is not a file", "https://example.com/home/bob/notes", app, ""},
	} {
		uri, _ := json.Marshal(c.uri)
		docs := map[string]string{
			"resource_link": `{"content":[{"type":"resource_link","uri":` + string(uri) + `,"name":"n"}]}`,
			"markdown":      `{"content":[{"type":"text","text":` + mustJSON("see [the file]("+c.uri+") now") + `}]}`,
			"osc8":          `{"content":[{"type":"text","text":` + mustJSON("\x1b]8;;"+c.uri+"\x07file\x1b]8;;\x07") + `}]}`,
		}
		for shape, doc := range docs {
			r, err := a.AnalyzeResultWithin([]byte(doc), c.roots)
			if err != nil {
				t.Fatal(err)
			}
			got := ""
			for _, f := range r.Findings {
				if f.RuleID == RuleSSRFTarget {
					got = f.Entity
					if f.Severity != SeverityMedium {
						t.Errorf("%s (%s): severity %v, want Medium as the other SSRF targets", c.name, shape, f.Severity)
					}
				}
			}
			if got != c.want {
				t.Errorf("%s (%s): %s entity %q, want %q (%v)", c.name, shape, RuleSSRFTarget, got, c.want, r.RuleIDs())
			}
		}
	}
}

func mustJSON(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}
