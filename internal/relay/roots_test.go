package relay

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/mcpgate/mcpgate/engine"
	"github.com/mcpgate/mcpgate/vocab"
)

// TestRelayPinnedRoots: the client's roots/list answer reaches a server with pinned
// roots holding only the roots inside them; the change leaves one record that holds
// no root URI or name. A server without pins gets the answer unchanged.
func TestRelayPinnedRoots(t *testing.T) {
	answer := `{"jsonrpc":"2.0","id":"r1","result":{"roots":[{"uri":"file:///","name":"disk-secret-name"},{"uri":"file:///srv/data/sub","name":"sub"},{"uri":"file:///srv/data/../etc"},{"uri":"file:///srv/database"}]}}`
	for _, c := range []struct {
		name string
		pins map[string][]string
		want []string // root URIs the server gets
	}{
		{"no pins", nil, []string{"file:///", "file:///srv/data/sub", "file:///srv/data/../etc", "file:///srv/database"}},
		{"another server pinned", map[string][]string{"other": {"file:///srv/data"}}, []string{"file:///", "file:///srv/data/sub", "file:///srv/data/../etc", "file:///srv/database"}},
		{"pinned", map[string][]string{"": {"file:///srv/data"}}, []string{"file:///srv/data/sub"}},
		{"pinned to none", map[string][]string{"": {}}, []string{}},
	} {
		t.Run(c.name, func(t *testing.T) {
			h := newHarness(t, 0, func(o *Options) { o.Roots = c.pins })
			h.up.lines <- `{"jsonrpc":"2.0","id":"r1","method":"roots/list"}`
			if got := h.clientGets(); !strings.Contains(got, `"roots/list"`) {
				t.Fatalf("the client got %s", got)
			}
			h.client(answer)
			got := h.upstreamGets()
			var resp struct {
				ID     string `json:"id"`
				Result struct {
					Roots []struct {
						URI string `json:"uri"`
					} `json:"roots"`
				} `json:"result"`
			}
			if err := json.Unmarshal([]byte(got), &resp); err != nil || resp.ID != "r1" {
				t.Fatalf("the server got %s (%v)", got, err)
			}
			uris := []string{}
			for _, r := range resp.Result.Roots {
				uris = append(uris, r.URI)
			}
			if strings.Join(uris, " ") != strings.Join(c.want, " ") {
				t.Fatalf("the server got roots %v, want %v", uris, c.want)
			}
			changed := len(c.want) < 4
			select {
			case rec := <-h.recs.ch:
				if !changed {
					t.Fatalf("a record for an unchanged answer: %+v", rec)
				}
				b, _ := json.Marshal(rec)
				if rec.Method != "roots/list" || rec.Reason != vocab.ReasonRootOutsidePin || rec.ActionTaken != vocab.Redact ||
					strings.Contains(string(b), "file:") || strings.Contains(string(b), "secret-name") {
					t.Fatalf("record %s", b)
				}
			default: // the record is emitted before the answer is sent on
				if changed {
					t.Fatal("no record of the removed roots")
				}
			}
		})
	}
}

// TestRelayPinnedInputRoots: a 2026-07-28 retry's inputResponses answering roots/list
// reach the server held to its pinned roots; other answers are untouched.
func TestRelayPinnedInputRoots(t *testing.T) {
	h := newHarness(t, 0, func(o *Options) { o.Roots = map[string][]string{"": {"file:///srv/data"}} })
	h.client(`{"jsonrpc":"2.0","id":7,"method":"prompts/get","params":{"name":"p","inputResponses":{"r":{"roots":[{"uri":"file:///"},{"uri":"file:///srv/data/a"}]},"e":{"action":"accept","content":{"x":"file:///"}}}}}`)
	got := h.upstreamGets()
	if strings.Contains(got, `"uri":"file:///"`) || !strings.Contains(got, `file:///srv/data/a`) || !strings.Contains(got, `"x":"file:///"`) {
		t.Fatalf("the server got %s", got)
	}
	rec := <-h.recs.ch
	if rec.Method != "roots/list" || rec.Via != "prompts/get" || rec.Reason != vocab.ReasonRootOutsidePin {
		t.Fatalf("record %+v", rec)
	}
}

// TestRelayPinnedInputRootsDecoded: the names are read decoded, as the server reads
// them: however inputResponses and roots are spelled, the answer reaches the server
// held to its pinned roots, with the roots phase's record.
func TestRelayPinnedInputRootsDecoded(t *testing.T) {
	for _, c := range []struct{ responses, roots string }{
		{`"input\u0052esponses"`, `"roots"`},
		{`"inputResponse\u0073"`, `"r\u006fots"`},
		{`"\u0069nputResponses"`, `"roots"`},
	} {
		h := newHarness(t, 0, func(o *Options) { o.Roots = map[string][]string{"": {"file:///srv/data"}} })
		h.client(`{"jsonrpc":"2.0","id":7,"method":"prompts/get","params":{"name":"p",` + c.responses + `:{"r":{` + c.roots + `:[{"uri":"file:///etc"},{"uri":"file:///srv/data/a"}]}}}}`)
		if got := h.upstreamGets(); strings.Contains(got, `file:///etc`) || !strings.Contains(got, `file:///srv/data/a`) {
			t.Errorf("%s %s: the server got %s", c.responses, c.roots, got)
			continue
		}
		if rec := <-h.recs.ch; rec.Method != "roots/list" || rec.Via != "prompts/get" || rec.Reason != vocab.ReasonRootOutsidePin {
			t.Errorf("%s %s: record %+v", c.responses, c.roots, rec)
		}
	}
}

// TestRelayResultOutsideRoots: a tools/call result's resource_link to a file outside
// the roots the client last declared to the server (after its pins) is
// output_ssrf_target; a link inside one stays clean, and with no roots declared only
// system and credential paths are flagged.
func TestRelayResultOutsideRoots(t *testing.T) {
	for _, c := range []struct {
		name    string
		pins    map[string][]string
		roots   string // the client's roots/list answer's roots; "" for none asked
		link    string
		changed bool // the client sends notifications/roots/list_changed before the call
		flagged bool
	}{
		{"inside a declared root", nil, `[{"uri":"file:///home/bob/app"}]`, "file:///home/bob/app/README.md", false, false},
		{"outside every declared root", nil, `[{"uri":"file:///home/bob/app"}]`, "file:///home/bob/notes/todo.md", false, true},
		{"escapes with ..", nil, `[{"uri":"file:///home/bob/app"}]`, "file:///home/bob/app/../notes/todo.md", false, true},
		{"no roots declared", nil, "", "file:///home/bob/notes/todo.md", false, false},
		{"the pins leave no roots: as none declared", map[string][]string{"": {"file:///srv/data"}}, `[{"uri":"file:///"}]`, "file:///home/bob/notes/todo.md", false, false},
		{"outside what is left after the pins", map[string][]string{"": {"file:///srv/data"}}, `[{"uri":"file:///"},{"uri":"file:///srv/data/a"}]`, "file:///srv/data/b/x.csv", false, true},
		{"roots changed since: as none declared", nil, `[{"uri":"file:///home/bob/app"}]`, "file:///home/bob/notes/todo.md", true, false},
		{"inside what is left after the pins", map[string][]string{"": {"file:///srv/data"}}, `[{"uri":"file:///"},{"uri":"file:///srv/data/a"}]`, "file:///srv/data/a/x.csv", false, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			h := newHarness(t, 0, func(o *Options) { o.Roots = c.pins })
			if c.roots != "" {
				h.up.lines <- `{"jsonrpc":"2.0","id":"r1","method":"roots/list"}`
				if got := h.clientGets(); !strings.Contains(got, `"roots/list"`) {
					t.Fatalf("the client got %s", got)
				}
				h.client(`{"jsonrpc":"2.0","id":"r1","result":{"roots":` + c.roots + `}}`)
				if got := h.upstreamGets(); !strings.Contains(got, `"r1"`) {
					t.Fatalf("the server got %s", got)
				}
				for len(h.recs.ch) > 0 { // the pins' record, when they removed a root
					<-h.recs.ch
				}
			}
			if c.changed {
				h.client(`{"jsonrpc":"2.0","method":"notifications/roots/list_changed"}`)
				if got := h.upstreamGets(); !strings.Contains(got, "list_changed") {
					t.Fatalf("the server got %s", got)
				}
			}
			h.client(`{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"t","arguments":{}}}`)
			h.upstreamGets() // the gateway's own tools/list
			h.up.lines <- `{"jsonrpc":"2.0","id":` + ownID1 + `,"result":{"tools":[{"name":"t"}]}}`
			if got := h.upstreamGets(); !strings.Contains(got, `"tools/call"`) {
				t.Fatalf("upstream got %q", got)
			}
			h.up.lines <- `{"jsonrpc":"2.0","id":5,"result":{"content":[{"type":"resource_link","uri":"` + c.link + `","name":"n"}]}}`
			h.clientGets()
			rec := h.recs.call()
			if got := slices.Contains(rec.RuleIDs, engine.RuleSSRFTarget); got != c.flagged {
				t.Fatalf("%s in the record: %v, want %v (%v)", engine.RuleSSRFTarget, got, c.flagged, rec.RuleIDs)
			}
		})
	}
}
