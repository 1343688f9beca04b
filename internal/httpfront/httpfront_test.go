package httpfront

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"net/http"
	"strings"
	"testing"

	"github.com/mcpgate/mcpgate/internal/config"
)

func TestHostAllowlist(t *testing.T) {
	a := NewHostAllowlist("10.0.0.5:8080", "mcp.example.org")
	wild := NewHostAllowlist("0.0.0.0:8080")
	tests := []struct {
		a            *HostAllowlist
		host, origin string
		ok           bool
	}{
		{a, "localhost:8080", "", true},
		{a, "127.0.0.1:8080", "http://127.0.0.1:8080", true},
		{a, "[::1]:8080", "http://[::1]:8080", true},
		{a, "10.0.0.5:8080", "", true},
		{a, "MCP.example.org", "https://mcp.example.org", true},
		{a, "evil.example.com", "", false},
		{a, "localhost:8080", "http://evil.example.com", false},
		{a, "localhost:8080", "null", false},
		{a, "localhost:8080", "file://localhost", false},             // the Origin's scheme is checked too,
		{a, "localhost:8080", "chrome-extension://localhost", false}, // as the admin listener does
		{a, "localhost:8080", "ws://127.0.0.1:8080", false},
		{wild, "0.0.0.0:8080", "", false},
		{wild, "127.0.0.2", "", true},
	}
	for _, tt := range tests {
		if err := tt.a.Check(tt.host, tt.origin); (err == nil) != tt.ok {
			t.Errorf("Check(%q, %q) = %v, want ok=%v", tt.host, tt.origin, err, tt.ok)
		}
	}
}

func TestCheckDepth(t *testing.T) {
	tests := []struct {
		in  string
		max int
		ok  bool
	}{
		{`{"a":[1,2,{"b":3}]}`, 3, true},
		{`{"a":[1,2,{"b":3}]}`, 2, false},
		{`{"s":"[[[[[[[[[["}`, 1, true}, // brackets in strings do not count
		{`{"s":"\"[[[[[[[["}`, 1, true}, // nor after an escaped quote
		{strings.Repeat("[", 600) + strings.Repeat("]", 600), DefaultMaxDepth, false},
	}
	for _, tt := range tests {
		if err := checkDepth([]byte(tt.in), tt.max); (err == nil) != tt.ok {
			t.Errorf("checkDepth(%.30q, %d) = %v", tt.in, tt.max, err)
		}
	}
}

func TestAcceptsSSE(t *testing.T) {
	tests := []struct {
		accept  string
		sse, ok bool
	}{
		{"", true, true},
		{"application/json, text/event-stream", true, true},
		{"application/json", false, true},
		{"text/event-stream", true, true},
		{"*/*", true, true},
		{"text/html", false, false},
	}
	for _, tt := range tests {
		if sse, ok := acceptsSSE(tt.accept); sse != tt.sse || ok != tt.ok {
			t.Errorf("acceptsSSE(%q) = %v %v", tt.accept, sse, ok)
		}
	}
}

func TestTokenAuth(t *testing.T) {
	sum := func(s string) string { h := sha256.Sum256([]byte(s)); return hex.EncodeToString(h[:]) }
	auth, err := TokenAuth([]config.Token{
		{SHA256: sum("tok-a"), UserID: "alice", Roles: []string{"admin"}},
		{SHA256: sum("tok-b"), UserID: "bob", CallerID: "ci", CallerClass: "untrusted"},
	}, func(id string) string {
		if id == "alice" {
			return "trusted"
		}
		return "standard"
	})
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		header, user, caller, class string
		err                         error
	}{
		{"Bearer tok-a", "alice", "alice", "trusted", nil},
		{"bearer  tok-b ", "bob", "ci", "untrusted", nil},
		{"Bearer tok-c", "", "", "", ErrUnauthorized},
		{"Basic dG9rLWE=", "", "", "", ErrUnauthorized},
		{"", "", "", "", ErrUnauthorized},
	}
	for _, tt := range tests {
		r, _ := http.NewRequest(http.MethodPost, "http://localhost/mcp", nil)
		if tt.header != "" {
			r.Header.Set("Authorization", tt.header)
		}
		id, err := auth(r)
		if !errors.Is(err, tt.err) || id.User.UserID != tt.user || id.User.CallerID != tt.caller || id.User.CallerClass != tt.class {
			t.Errorf("%q: %+v %v", tt.header, id, err)
		}
		if strings.Contains(id.Key, "tok-") {
			t.Errorf("identity key carries the token: %q", id.Key)
		}
	}
	if _, err := TokenAuth([]config.Token{{SHA256: "zz", UserID: "x"}}, nil); err == nil {
		t.Error("bad hex accepted")
	}
}
