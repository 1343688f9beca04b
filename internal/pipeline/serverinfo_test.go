package pipeline

import (
	"bytes"
	"context"
	"log/slog"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/mcpgate/mcpgate/internal/jsonrpc"
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

// TestServerInfoOfEachServer: with several servers, each server's own initialize
// answer (as the multiplexer reads it) is checked against its pin under its
// configured name, as the one server's is: a first answer pins and records nothing;
// another name is one record with vet_server_info_changed and a `vet finding` line
// naming the member, never its value; under --pins-mode block the refusal names the
// approval and the server's pin, and another server's pin is its own.
func TestServerInfoOfEachServer(t *testing.T) {
	init := func(name string) *jsonrpc.Message {
		return response(t, `{"protocolVersion":"2025-06-18","capabilities":{"tools":{}},"serverInfo":{"name":"`+name+`","version":"1.0.0"}}`)
	}
	for _, block := range []bool{false, true} {
		p, rec := newPipeline(t, nil, true, false)
		var log bytes.Buffer
		p.Logger = slog.New(slog.NewJSONHandler(&log, nil))
		store, err := pins.Open(filepath.Join(t.TempDir(), pins.FileName))
		if err != nil {
			t.Fatal(err)
		}
		p.Pins, p.PinBlock = store, block
		fs, web := Channel{Method: "initialize", Server: "fs"}, Channel{Method: "initialize", Server: "web"}
		if why := p.ServerInfo(context.Background(), fs, init("filesystem")); why != "" || len(rec.recs) != 0 {
			t.Fatalf("block=%v: first answer: %q, %d records", block, why, len(rec.recs))
		}
		if why := p.ServerInfo(context.Background(), web, init("fetch")); why != "" || len(rec.recs) != 0 {
			t.Fatalf("block=%v: another server's first answer: %q, %d records", block, why, len(rec.recs))
		}
		why := p.ServerInfo(context.Background(), fs, init("evil"))
		if len(rec.recs) != 1 {
			t.Fatalf("block=%v: %d records", block, len(rec.recs))
		}
		last := rec.last(t)
		if !slices.Contains(last.RuleIDs, vet.RuleServerInfoChanged) || last.Server != "fs" || last.Method != "initialize" {
			t.Errorf("block=%v: record %+v", block, last)
		}
		if strings.Contains(why, "evil") || strings.Contains(log.String(), "evil") {
			t.Errorf("block=%v: a value the server chose leaked: %q\n%s", block, why, log.String())
		}
		if !strings.Contains(log.String(), `"msg":"vet finding"`) || !strings.Contains(log.String(), `"changed":["name"]`) || !strings.Contains(log.String(), `"server":"fs"`) {
			t.Errorf("block=%v: log %s", block, log.String())
		}
		if block {
			if !strings.Contains(why, `mcpgate pins approve "fs#identity" serverInfo`) || !strings.Contains(why, last.EventID) || last.Reason != "server_info_changed" || !last.Blocked {
				t.Errorf("block: %q, record %+v", why, last)
			}
		} else if why != "" || last.Blocked {
			t.Errorf("warn: %q, record %+v", why, last)
		}
		if why := p.ServerInfo(context.Background(), web, init("fetch")); why != "" || len(rec.recs) != 1 {
			t.Errorf("block=%v: the other server: %q", block, why)
		}
	}
}

// TestServerInfoDiscover: a 2026-07-28 server names itself in server/discover's _meta
// (io.modelcontextprotocol/serverInfo), not in an initialize; that serverInfo is pinned
// and checked the same way: another name is vet_server_info_changed, refused -32603
// under --pins-mode block. It is optional there (SHOULD), so a discover answer without
// it compares nothing.
func TestServerInfoDiscover(t *testing.T) {
	discover := func(meta string) string {
		return `{"supportedVersions":["2026-07-28"],"capabilities":{"tools":{}},"resultType":"complete"` + meta + `}`
	}
	named := func(name string) string {
		return `,"_meta":{"io.modelcontextprotocol/serverInfo":{"name":"` + name + `","version":"1.0.0"}}`
	}
	p, rec := newPipeline(t, nil, true, false)
	store, err := pins.Open(filepath.Join(t.TempDir(), pins.FileName))
	if err != nil {
		t.Fatal(err)
	}
	p.Pins, p.PinBlock = store, true
	ch := Channel{Method: "server/discover", Server: "fs"}
	first := response(t, discover(named("secure-filesystem-server")))
	if r := p.Response(context.Background(), ch, first); r.Error != nil {
		t.Fatalf("first discover refused: %s", r.Error)
	}
	r := p.Response(context.Background(), ch, response(t, discover(named("evil-filesystem-server"))))
	if last := rec.last(t); r.Error == nil || !strings.Contains(string(r.Error), "-32603") || !slices.Contains(last.RuleIDs, vet.RuleServerInfoChanged) {
		t.Fatalf("another name: %s, rules %v", r.Error, last.RuleIDs)
	}
	if r := p.Response(context.Background(), ch, response(t, discover(""))); r.Error != nil {
		t.Fatalf("a discover answer without serverInfo was refused: %s", r.Error)
	}
	if r := p.Response(context.Background(), ch, first); r.Error != nil {
		t.Fatalf("the pinned serverInfo again was refused: %s", r.Error)
	}
}
