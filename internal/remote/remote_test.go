package remote

import (
	"bytes"
	"context"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/mcpgate/mcpgate/internal/jsonrpc"
)

// TestSessionLoss: after initialize, an HTTP answer that says the server no longer
// knows the session ends Recv with ErrSessionExpired (the supervisor then starts a
// new session); any other HTTP error only fails the request.
func TestSessionLoss(t *testing.T) {
	for _, tc := range []struct {
		name    string
		status  int
		body    string
		expired bool
	}{
		{"404", http.StatusNotFound, `{"jsonrpc":"2.0","error":{"code":-32001,"message":"Session not found"},"id":null}`, true},
		{"TypeScript SDK after a restart", http.StatusBadRequest, `{"jsonrpc":"2.0","error":{"code":-32000,"message":"Bad Request: Server not initialized"},"id":null}`, true},
		{"400 naming the session", http.StatusBadRequest, `{"jsonrpc":"2.0","error":{"code":-32000,"message":"Bad Request: No valid session ID provided"},"id":null}`, true},
		{"another 400", http.StatusBadRequest, `bad arguments`, false},
		{"500", http.StatusInternalServerError, `oops`, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				b, _ := io.ReadAll(r.Body)
				if strings.Contains(string(b), `"initialize"`) {
					w.Header().Set("Mcp-Session-Id", "s1")
					w.Header().Set("Content-Type", "application/json")
					_, _ = io.WriteString(w, `{"jsonrpc":"2.0","id":1,"result":{"protocolVersion":"2025-06-18","capabilities":{}}}`)
					return
				}
				if r.Method != http.MethodPost {
					w.WriteHeader(http.StatusMethodNotAllowed)
					return
				}
				w.WriteHeader(tc.status)
				_, _ = io.WriteString(w, tc.body)
			}))
			defer srv.Close()
			c, err := Dial(Options{URL: srv.URL})
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close(context.Background(), time.Second)
			parse := func(s string) *jsonrpc.Message {
				m, err := jsonrpc.Parse([]byte(s))
				if err != nil {
					t.Fatal(err)
				}
				return m
			}
			if err := c.Send(parse(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{}}`)); err != nil {
				t.Fatal(err)
			}
			if m, err := c.Recv(); err != nil || m.IDKey() != "1" {
				t.Fatalf("initialize: %v %v", m, err)
			}
			if err := c.Send(parse(`{"jsonrpc":"2.0","id":2,"method":"tools/list"}`)); err != nil {
				t.Fatal(err)
			}
			m, err := c.Recv()
			if tc.expired {
				if !errors.Is(err, ErrSessionExpired) {
					t.Fatalf("want ErrSessionExpired, got %v %v", m, err)
				}
				return
			}
			if err != nil || m.IDKey() != "2" || m.Error == nil {
				t.Fatalf("want an error response for id 2, got %v %v", m, err)
			}
		})
	}
}

// TestReadSSERelated: the server requests and notifications a remote server sends on
// a request's response stream are related to that request (the HTTP front routes
// them to the same client request's stream); the response itself and the messages of
// the GET stream are not.
func TestReadSSERelated(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	c := &Client{opts: Options{MaxMessageBytes: 1 << 12}, log: slog.New(slog.DiscardHandler), out: make(chan item, 16), gone: make(chan struct{}), ctx: ctx, cancel: cancel}
	stream := "data: {\"jsonrpc\":\"2.0\",\"id\":\"s1\",\"method\":\"sampling/createMessage\",\"params\":{}}\n\n" +
		"data: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/message\",\"params\":{\"data\":\"x\"}}\n\n" +
		"data: {\"jsonrpc\":\"2.0\",\"id\":7,\"result\":{}}\n\n"
	if !c.readSSE(bytes.NewReader([]byte(stream)), []byte("7"), nil) {
		t.Fatal("the response was not seen")
	}
	last := ""
	c.readSSE(bytes.NewReader([]byte("data: {\"jsonrpc\":\"2.0\",\"id\":\"s2\",\"method\":\"elicitation/create\",\"params\":{}}\n\n")), nil, &last)
	close(c.out)
	var related []string
	for it := range c.out {
		related = append(related, it.msg.Method+"="+string(it.msg.Related))
	}
	want := []string{"sampling/createMessage=7", "notifications/message=7", "=", "elicitation/create="}
	if strings.Join(related, " ") != strings.Join(want, " ") {
		t.Fatalf("related: %v, want %v", related, want)
	}
}
