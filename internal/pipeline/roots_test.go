package pipeline

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/mcpgate/mcpgate/vocab"
)

// TestRootWithin: a client root is kept only when it is a pinned root or under one,
// read as a clean file:// path; anything else (other schemes, hosts, "..", a sibling
// sharing a prefix) is outside.
func TestRootWithin(t *testing.T) {
	pins := []string{"file:///srv/data", "file:///home/u/proj/"}
	for _, c := range []struct {
		uri  string
		want bool
	}{
		{"file:///srv/data", true},
		{"file:///srv/data/", true},
		{"file:///srv/data/a/b", true},
		{"file://localhost/srv/data/a", true},
		{"file:///home/u/proj", true},
		{"file:///srv/database", false},
		{"file:///srv", false},
		{"file:///", false},
		{"file:///srv/data/../etc", false},
		{"file:///srv/data/a/../../x", false},
		{"file://host/srv/data", false},
		{"https://example.com/srv/data", false},
		{"file:srv/data", false},
		{"/srv/data", false},
		{"file:///srv/data?x=1", false},
		{"", false},
	} {
		if got := within(c.uri, pins); got != c.want {
			t.Errorf("within(%q) = %v, want %v", c.uri, got, c.want)
		}
	}
	if !within("file:///anything", []string{"file:///"}) {
		t.Error("file:/// pins everything")
	}
	for _, bad := range []string{"file://relative/dir", "https://x/y", "/abs", "file:///a/../b", "file:///a/./b"} {
		if CheckRoot(bad) == nil {
			t.Errorf("CheckRoot(%q) accepted it", bad)
		}
	}
	for _, good := range []string{"file:///a/b", "file:///a/b/", "file:///"} {
		if err := CheckRoot(good); err != nil {
			t.Errorf("CheckRoot(%q): %v", good, err)
		}
	}
}

// TestRootsPhase: the roots phase sees the client's answer (after the pins) in
// ctx.params with the input rules' findings; a throw leaves no roots, a rewrite is held
// to the pins again, and a file that never compares ctx.phase with "roots" does not
// run. Records hold no URI or name.
func TestRootsPhase(t *testing.T) {
	answer := `{"roots":[{"uri":"file:///srv/data/a","name":"AKIAIOSFODNN7EXAMPLE"},{"uri":"file:///etc"}]}`
	for _, c := range []struct {
		name, policy string
		pins         []string
		want         string // the roots' URIs the server gets, space-separated
		reason       vocab.Reason
		changed      bool
	}{
		{"no policy, pinned", ``, []string{"file:///srv/data"}, "file:///srv/data/a", vocab.ReasonRootOutsidePin, true},
		{"no policy, unpinned", ``, nil, "file:///srv/data/a file:///etc", "", false},
		{"pre-only file does not run", `throw "no";`, nil, "file:///srv/data/a file:///etc", "", false},
		{"throw", `if (ctx.phase === "roots") throw "no roots here";`, nil, "", vocab.ReasonPolicyThrow, true},
		{"keep only /srv", `if (ctx.phase === "roots") ctx.params.roots = ctx.params.roots.filter(r => r.uri.startsWith("file:///srv/"));`, nil, "file:///srv/data/a", "", true},
		{"a rewrite cannot widen past the pins", `if (ctx.phase === "roots") ctx.params.roots.push({uri: "file:///"});`, []string{"file:///srv/data"}, "file:///srv/data/a", vocab.ReasonRootOutsidePin, true},
		{"findings reach the phase", `if (ctx.phase === "roots" && ctx.findings.length > 0) throw "secret in a root";`, nil, "", vocab.ReasonPolicyThrow, true},
		{"bad shape", `if (ctx.phase === "roots") ctx.params.roots = "x";`, nil, "", vocab.ReasonBadCtxShape, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			pols := map[string]string{}
			if c.policy != "" {
				pols["roots.js"] = c.policy
			}
			p, recs := newPipeline(t, pols, true, false)
			out, changed := p.Roots(Channel{Server: "fs"}, json.RawMessage(answer), c.pins)
			var v struct {
				Roots []struct {
					URI string `json:"uri"`
				} `json:"roots"`
			}
			if err := json.Unmarshal(out, &v); err != nil {
				t.Fatalf("out %s: %v", out, err)
			}
			uris := []string{}
			for _, r := range v.Roots {
				uris = append(uris, r.URI)
			}
			if got := strings.Join(uris, " "); got != c.want || changed != c.changed {
				t.Fatalf("roots %q changed %v, want %q %v (%s)", got, changed, c.want, c.changed, out)
			}
			for _, rec := range recs.recs {
				b, _ := json.Marshal(rec)
				if rec.Method != "roots/list" || strings.Contains(string(b), "file:") || strings.Contains(string(b), "AKIA") {
					t.Fatalf("record %s", b)
				}
			}
			if c.reason != "" && (len(recs.recs) != 1 || recs.recs[0].Reason != c.reason) {
				t.Fatalf("records %+v, want one with reason %s", recs.recs, c.reason)
			}
		})
	}
}

// FuzzRootWithin: no URI panics the pin check, and one it keeps under the pin
// file:///srv/data parses to a clean path at or below /srv/data.
func FuzzRootWithin(f *testing.F) {
	for _, s := range []string{"file:///srv/data/a", "file:///srv/data/../etc", "file://localhost/srv/data", "file:///srv/data%2f..%2fetc", "file:///srv/data/%2e%2e/x", ""} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, uri string) {
		if !within(uri, []string{"file:///srv/data"}) {
			return
		}
		p, ok := rootPath(uri)
		if !ok || (p != "/srv/data" && !strings.HasPrefix(p, "/srv/data/")) || strings.Contains(p, "/../") {
			t.Fatalf("%q kept as %q", uri, p)
		}
	})
}
