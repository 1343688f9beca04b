package pipeline

import (
	"context"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/mcpgate/mcpgate/internal/pins"
	"github.com/mcpgate/mcpgate/internal/vet"
)

// TestServerInfoPinning: with tool pins on, the serverInfo an upstream names in its
// initialize result is pinned beside its TLS key (NAME#identity serverInfo); another
// name or version later is vet_server_info_changed in the initialize's record:
// recorded and relayed by default, refused with -32603 naming the approval under
// --pins-mode block (strict), until mcpgate pins approve. The record and the error
// name the changed members, never the values the server chose.
func TestServerInfoPinning(t *testing.T) {
	init := func(name, version string) string {
		return `{"protocolVersion":"2025-06-18","capabilities":{"tools":{}},"serverInfo":{"name":"` + name + `","version":"` + version + `"}}`
	}
	for _, block := range []bool{false, true} {
		p, rec := newPipeline(t, nil, true, false)
		store, err := pins.Open(filepath.Join(t.TempDir(), pins.FileName))
		if err != nil {
			t.Fatal(err)
		}
		p.Pins, p.PinBlock = store, block
		ch := Channel{Method: "initialize", Server: "fs"}
		resp := response(t, init("secure-filesystem-server", "0.2.0"))
		if r := p.Response(context.Background(), ch, resp); string(r.Original) != string(resp.Raw) {
			t.Fatalf("block=%v: first initialize changed: %+v", block, r)
		}
		n := len(rec.recs)
		if r := p.Response(context.Background(), ch, resp); string(r.Original) != string(resp.Raw) || len(rec.recs) != n {
			t.Fatalf("block=%v: the pinned serverInfo again: %+v, %d records", block, r, len(rec.recs)-n)
		}
		impostor := response(t, init("evil-filesystem-server", "0.2.0"))
		r := p.Response(context.Background(), ch, impostor)
		last := rec.last(t)
		if !slices.Contains(last.RuleIDs, vet.RuleServerInfoChanged) {
			t.Fatalf("block=%v: rule ids %v", block, last.RuleIDs)
		}
		if strings.Contains(string(r.Error), "evil") || strings.Contains(string(last.Reason), "evil") {
			t.Errorf("block=%v: a value the server chose leaked: %s", block, r.Error)
		}
		if block {
			if r.Error == nil || !strings.Contains(string(r.Error), "-32603") || !strings.Contains(string(r.Error), `mcpgate pins approve \"fs#identity\" serverInfo`) ||
				!strings.Contains(string(r.Error), "serverInfo name differs") || last.Reason != "server_info_changed" {
				t.Fatalf("block: %s, reason %q", r.Error, last.Reason)
			}
		} else if string(r.Original) != string(impostor.Raw) || r.Error != nil {
			t.Fatalf("report: the initialize was not relayed: %+v", r)
		}
		if err := store.Approve(vet.IdentityServer("fs"), vet.ServerInfoTool); err != nil {
			t.Fatal(err)
		}
		if r := p.Response(context.Background(), ch, impostor); r.Error != nil {
			t.Errorf("block=%v: after approve: %s", block, r.Error)
		}
		// A version change alone is one too: a stdio server's version moves only with
		// its package.
		r = p.Response(context.Background(), ch, response(t, init("evil-filesystem-server", "0.3.0")))
		if !slices.Contains(rec.last(t).RuleIDs, vet.RuleServerInfoChanged) || block != strings.Contains(string(r.Error), "serverInfo version differs") {
			t.Errorf("block=%v: version change: %+v", block, r)
		}
		// The gateway's own answer for several servers (no server name) is not pinned.
		n = len(rec.recs)
		if r := p.Response(context.Background(), Channel{Method: "initialize"}, response(t, init("mcpgate", "9.9.9"))); r.Error != nil || len(rec.recs) != n {
			t.Errorf("block=%v: several servers: %+v", block, r)
		}
	}
}

// TestServerInfoLeftOut: once a serverInfo is pinned, an initialize that names none (or
// an empty one, or one that is not an object) is a change like any other, refused
// under --pins-mode block: an impostor cannot pass the pin by leaving serverInfo out.
// Before a pin exists, a result without one is relayed and pins nothing.
func TestServerInfoLeftOut(t *testing.T) {
	p, rec := newPipeline(t, nil, true, false)
	store, err := pins.Open(filepath.Join(t.TempDir(), pins.FileName))
	if err != nil {
		t.Fatal(err)
	}
	p.Pins, p.PinBlock = store, true
	ch := Channel{Method: "initialize", Server: "fs"}
	bare := response(t, `{"protocolVersion":"2025-06-18","capabilities":{"tools":{}}}`)
	if r := p.Response(context.Background(), ch, bare); r.Error != nil {
		t.Fatalf("no pin yet: %s", r.Error)
	}
	pinned := response(t, `{"protocolVersion":"2025-06-18","capabilities":{"tools":{}},"serverInfo":{"name":"secure-filesystem-server","version":"0.2.0"}}`)
	if r := p.Response(context.Background(), ch, pinned); r.Error != nil {
		t.Fatalf("first serverInfo: %s", r.Error)
	}
	for _, result := range []string{
		`{"protocolVersion":"2025-06-18","capabilities":{"tools":{}}}`,
		`{"protocolVersion":"2025-06-18","capabilities":{"tools":{}},"serverInfo":{"name":"","version":""}}`,
		`{"protocolVersion":"2025-06-18","capabilities":{"tools":{}},"serverInfo":"secure-filesystem-server"}`,
	} {
		r := p.Response(context.Background(), ch, response(t, result))
		if last := rec.last(t); r.Error == nil || last.Reason != "server_info_changed" {
			t.Fatalf("%s: relayed (%+v), reason %q", result, r, last.Reason)
		}
	}
}
