package gateway

import (
	"bytes"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/mcpgate/mcpgate/internal/vet"
)

// TestTLSKeyEveryConnection: a url server's connections are compared with the TLS key
// it presented at start-up: the same key passes; another one fails the handshake when
// start-up enforces (the strict profile), naming the approval, and is otherwise
// logged once as vet_identity_changed and let through.
func TestTLSKeyEveryConnection(t *testing.T) {
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { _, _ = io.WriteString(w, "ok") }))
	defer srv.Close()
	saved := keyBase
	keyBase = srv.Client().Transport.(*http.Transport)
	defer func() { keyBase = saved }()
	key := vet.SPKI(srv.Certificate())
	for _, tc := range []struct {
		name    string
		key     string
		enforce bool
		ok      bool
		logged  bool
	}{
		{"the key of start-up", key, true, true, false},
		{"another key, enforced", "sha256:AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=", true, false, false},
		{"another key, reported", "sha256:BBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBB=", false, true, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var logs bytes.Buffer
			log := slog.New(slog.NewTextHandler(&logs, nil))
			c := &http.Client{Transport: keyTransport(Server{Name: "payments", TLSKey: tc.key, TLSKeyEnforce: tc.enforce}, log)}
			for range 2 {
				resp, err := c.Get(srv.URL)
				if (err == nil) != tc.ok {
					t.Fatalf("err = %v, want ok %v", err, tc.ok)
				}
				if err != nil {
					if !strings.Contains(err.Error(), "vet_identity_changed") || !strings.Contains(err.Error(), "mcpgate pins approve 'payments#identity' tls") {
						t.Fatalf("the refusal does not say why or how to approve: %v", err)
					}
					continue
				}
				resp.Body.Close()
				c.CloseIdleConnections() // a new handshake each time
			}
			if n := strings.Count(logs.String(), "vet_identity_changed"); n != map[bool]int{true: 1, false: 0}[tc.logged] {
				t.Fatalf("logged %d times:\n%s", n, logs.String())
			}
		})
	}
	if keyTransport(Server{Name: "plain"}, slog.Default()) != http.DefaultTransport {
		t.Fatal("a server with no key seen at start-up is not on the default transport")
	}
}
