package httpfront

import (
	"bytes"
	"encoding/json"
	"net"
	"testing"

	"github.com/mcpgate/mcpgate/internal/jsonrpc"
)

// FuzzCheckMessage: validating a POST body never panics, and an accepted body is
// one compact JSON-RPC message (never a batch, never deeper than the limit).
func FuzzCheckMessage(f *testing.F) {
	for _, s := range []string{
		`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"x"}}`,
		`[{"jsonrpc":"2.0","id":1,"method":"ping"}]`, `{"jsonrpc":"2.0","method":"n"}`, `{`, ``, `[[[[[[1]]]]]]`,
	} {
		f.Add([]byte(s))
	}
	front := &Front{opts: Options{MaxDepth: 16}}
	f.Fuzz(func(t *testing.T, body []byte) {
		msg, status, _, _, _, _ := front.checkMessage(body)
		if status != 0 {
			return
		}
		line := msg.Raw
		if msg == nil || msg.Kind == jsonrpc.KindBatch || !json.Valid(line) || bytes.ContainsAny(line, "\n\r") {
			t.Fatalf("accepted %q as %q", body, line)
		}
		if checkDepth(line, 16) != nil {
			t.Fatalf("accepted a body deeper than the limit: %q", body)
		}
	})
}

// FuzzHostCheck: the DNS-rebinding check never panics, and a Host it accepts names
// an allowed host.
func FuzzHostCheck(f *testing.F) {
	f.Add("localhost:8080", "http://localhost:8080")
	f.Add("evil.example", "")
	f.Add("127.0.0.1", "null")
	a := NewHostAllowlist("127.0.0.1:8080", "gw.internal")
	f.Fuzz(func(t *testing.T, hostHeader, origin string) {
		if a.Check(hostHeader, origin) != nil {
			return
		}
		host := hostHeader
		if h, _, err := net.SplitHostPort(hostHeader); err == nil {
			host = h
		}
		if !a.Allowed(host) {
			t.Fatalf("accepted Host %q, whose name is not allowed", hostHeader)
		}
	})
}
