package httpfront

import (
	"encoding/json"
	"testing"

	"github.com/mcpgate/mcpgate/internal/jsonrpc"
)

// TestServerRequestRouting: a server request goes to the stream of the request that
// caused it wherever the messages tell: a related request id, a progress token, the
// only tools/call in flight; otherwise the oldest tools/call, then the oldest request.
func TestServerRequestRouting(t *testing.T) {
	type req struct {
		id, method, token string
		json              bool
	}
	sampling := func(params string, related string) *jsonrpc.Message {
		m := jsonrpc.NewRequest(json.RawMessage(`"srv-1"`), "sampling/createMessage", json.RawMessage(params))
		if related != "" {
			m.Related = json.RawMessage(related)
		}
		return m
	}
	for _, tc := range []struct {
		name string
		open []req
		msg  *jsonrpc.Message
		want string // the request id of the chosen stream; "" for the GET stream
	}{
		{"related id", []req{{id: "1", method: "tools/call"}, {id: "2", method: "tools/call"}}, sampling(`{}`, "2"), "2"},
		{"progress token", []req{{id: "1", method: "tools/call", token: `"a"`}, {id: "2", method: "tools/call", token: `"b"`}},
			sampling(`{"_meta":{"progressToken":"b"}}`, ""), "2"},
		{"single call", []req{{id: "1", method: "resources/read"}, {id: "2", method: "tools/call"}}, sampling(`{}`, ""), "2"},
		{"JSON-mode call is no stream", []req{{id: "1", method: "resources/read"}, {id: "2", method: "tools/call", json: true}}, sampling(`{}`, ""), "1"},
		{"no request", nil, sampling(`{}`, ""), ""},
		{"unknown related id falls back", []req{{id: "1", method: "tools/call"}}, sampling(`{}`, "9"), "1"},
		{"two calls: the oldest call", []req{{id: "1", method: "resources/read"}, {id: "2", method: "tools/call"}, {id: "3", method: "tools/call"}}, sampling(`{}`, ""), "2"},
	} {
		s := &session{streams: map[string]*stream{}, waiters: map[string]*stream{}, progress: map[string]*stream{}}
		for _, r := range tc.open {
			params := `{}`
			if r.token != "" {
				params = `{"_meta":{"progressToken":` + r.token + `}}`
			}
			if _, err := s.openRequest(jsonrpc.NewRequest(json.RawMessage(r.id), r.method, json.RawMessage(params)), r.json); err != nil {
				t.Fatal(err)
			}
		}
		st := s.causeLocked(tc.msg)
		got := ""
		if st != nil {
			got = st.reqID
		}
		if got != tc.want {
			t.Errorf("%s: routed to %q, want %q", tc.name, got, tc.want)
		}
	}
}
