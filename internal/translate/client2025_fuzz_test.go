package translate

import (
	"context"
	"encoding/json"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/mcpgate/mcpgate/internal/jsonrpc"
	"github.com/mcpgate/mcpgate/internal/methods"
)

// FuzzLegacyServerResults feeds a translating connection a server/discover result
// and a tools/call result of any shape: the client's initialize is answered with a
// valid 2025-11-25 InitializeResult or the server's -32022; an input_required result
// never reaches the client, and what it becomes is a valid request of an input method
// under the translation's own id, or an error for the call; nothing panics.
func FuzzLegacyServerResults(f *testing.F) {
	f.Add([]byte(`{"supportedVersions":["2026-07-28"],"capabilities":{"tools":{"listChanged":true}},"_meta":{"io.modelcontextprotocol/serverInfo":{"name":"m","version":"1"}}}`),
		[]byte(`{"resultType":"input_required","inputRequests":{"a":{"method":"elicitation/create","params":{"message":"m"}}},"requestState":"s"}`))
	f.Add([]byte(`{"supportedVersions":["2026-07-28"],"capabilities":[],"instructions":7,"_meta":{"io.modelcontextprotocol/serverInfo":{"name":1}}}`),
		[]byte(`{"resultType":"input_required","inputRequests":{"a":{"method":"tools/call"}},"requestState":{}}`))
	f.Add([]byte(`{"supportedVersions":"2026-07-28"}`), []byte(`{"resultType":"input_required","inputRequests":[]}`))
	f.Add([]byte(`null`), []byte(`{"resultType":"complete","content":[]}`))
	f.Fuzz(func(t *testing.T, discover, call []byte) {
		if !json.Valid(discover) || !json.Valid(call) {
			return
		}
		fs := newFake()
		c := Wrap(fs, Options{})
		defer c.Close(context.Background(), time.Second)
		client := func(line string) {
			m, err := jsonrpc.Parse([]byte(line))
			if err != nil {
				t.Fatal(err)
			}
			if err := c.Send(m); err != nil {
				t.Fatal(err)
			}
		}
		server := func(line []byte) []*jsonrpc.Message {
			m, err := jsonrpc.Parse(line)
			if err != nil {
				t.Skip("the reader refuses it before the translation") // duplicate members and the like
			}
			var out []*jsonrpc.Message
			if r := c.recvLegacy(m); r != nil {
				out = append(out, r)
			}
			for q := c.dequeue(); q != nil; q = c.dequeue() {
				out = append(out, q)
			}
			for _, o := range out {
				if _, err := jsonrpc.Parse(o.Raw); err != nil {
					t.Fatalf("the client gets %q: %v", o.Raw, err)
				}
			}
			return out
		}
		client(initReq)
		server([]byte(refused))
		got := server([]byte(`{"jsonrpc":"2.0","id":"mcpgate-t-1","result":` + string(discover) + `}`))
		if len(got) != 1 || string(got[0].ID) != "1" {
			t.Fatalf("initialize answered with %d messages", len(got))
		}
		if got[0].Error != nil {
			if !strings.Contains(string(got[0].Error), "-32022") {
				t.Fatalf("initialize error %s", got[0].Error)
			}
			return
		}
		var init struct {
			ProtocolVersion string                     `json:"protocolVersion"`
			Capabilities    map[string]json.RawMessage `json:"capabilities"`
			ServerInfo      struct {
				Name    *string `json:"name"`
				Version *string `json:"version"`
			} `json:"serverInfo"`
			Instructions *string `json:"instructions"`
		}
		if err := json.Unmarshal(got[0].Result, &init); err != nil || methods.RevisionOf(init.ProtocolVersion) != methods.Rev20251125 ||
			init.Capabilities == nil || init.ServerInfo.Name == nil || init.ServerInfo.Version == nil {
			t.Fatalf("not a 2025-11-25 InitializeResult: %s (%v)", got[0].Result, err)
		}
		client(callReq)
		for _, o := range server([]byte(`{"jsonrpc":"2.0","id":7,"result":` + string(call) + `}`)) {
			switch o.Kind {
			case jsonrpc.KindResponse:
				if string(o.ID) != "7" {
					t.Fatalf("a response under %s", o.ID)
				}
				var r struct {
					ResultType string `json:"resultType"`
				}
				if o.Result != nil && json.Unmarshal(o.Result, &r) == nil && r.ResultType == "input_required" {
					t.Fatalf("input_required reached the client: %s", o.Raw)
				}
			case jsonrpc.KindRequest:
				if !inputRequestMethod(o.Method) || !strings.HasPrefix(o.IDKey(), `"`+ownPrefix) || string(o.Related) != "7" ||
					o.Params != nil && o.Params[0] != '{' {
					t.Fatalf("the client is asked %s", o.Raw)
				}
			case jsonrpc.KindNotification:
				if o.Method != "notifications/cancelled" {
					t.Fatalf("the client gets %s", o.Raw)
				}
			}
		}
	})
}

// FuzzWithMeta: for any params object, withMeta writes one unambiguous object with
// every member of params as it was, and a _meta holding the client's own members and
// the envelope's (the envelope's win).
func FuzzWithMeta(f *testing.F) {
	for _, s := range []string{`{}`, ` { } `, `{"a":1}`, `{"_meta":{"progressToken":1},"a":[1]}`, `{"\u005fmeta":{"x":1}}`,
		`{"a":"\\u005f"}`, `{"_meta":null}`, `{"_meta":{"io.modelcontextprotocol/protocolVersion":"x"}}`} {
		f.Add([]byte(s))
	}
	meta := map[string]json.RawMessage{methods.MetaProtocolVersion: json.RawMessage(`"2026-07-28"`), methods.MetaClientCapabilities: json.RawMessage(`{}`)}
	metaRaw := mustMarshal(meta)
	f.Fuzz(func(t *testing.T, params []byte) {
		var in map[string]json.RawMessage
		if json.Unmarshal(params, &in) != nil || in == nil {
			return
		}
		if _, err := jsonrpc.Parse([]byte(`{"jsonrpc":"2.0","id":1,"method":"m","params":` + string(params) + `}`)); err != nil {
			return // the reader refuses it (duplicate members …) before the translation
		}
		out := withMeta(params, meta, metaRaw, nil)
		if _, err := jsonrpc.Parse([]byte(`{"jsonrpc":"2.0","id":1,"method":"m","params":` + string(out) + `}`)); err != nil {
			t.Fatalf("withMeta(%s) = %s: %v", params, out, err)
		}
		var got map[string]json.RawMessage
		if err := json.Unmarshal(out, &got); err != nil {
			t.Fatal(err)
		}
		for k, v := range in {
			if k == "_meta" {
				continue
			}
			if !jsonEqual(got[k], v) {
				t.Fatalf("member %q: %s, want %s", k, got[k], v)
			}
		}
		var m, old map[string]json.RawMessage
		if json.Unmarshal(got["_meta"], &m) != nil {
			t.Fatalf("_meta %s", got["_meta"])
		}
		_ = json.Unmarshal(in["_meta"], &old)
		for k, v := range old {
			if meta[k] == nil && !jsonEqual(m[k], v) {
				t.Fatalf("_meta member %q: %s, want %s", k, m[k], v)
			}
		}
		for k, v := range meta {
			if !jsonEqual(m[k], v) {
				t.Fatalf("_meta member %q: %s, want %s", k, m[k], v)
			}
		}
	})
}

func jsonEqual(a, b json.RawMessage) bool {
	var x, y any
	return json.Unmarshal(a, &x) == nil && json.Unmarshal(b, &y) == nil && reflect.DeepEqual(x, y)
}
