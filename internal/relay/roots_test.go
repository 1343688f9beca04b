package relay

import (
	"encoding/json"
	"strings"
	"testing"

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
