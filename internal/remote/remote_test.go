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

// TestModernHeaders: a 2026-07-28 request goes out with MCP-Protocol-Version from its
// envelope, Mcp-Method, and Mcp-Name (base64 when not ASCII), a tools/call's
// Mcp-Param-* headers as the relay built them, and no session id; a 2025-11-25 one
// gets none of them.
func TestModernHeaders(t *testing.T) {
	got := make(chan http.Header, 4)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got <- r.Header.Clone()
		w.Header().Set("Content-Type", "application/json")
		b, _ := io.ReadAll(r.Body)
		m, _ := jsonrpc.Parse(b)
		_, _ = io.WriteString(w, `{"jsonrpc":"2.0","id":`+string(m.ID)+`,"result":{"content":[],"resultType":"complete"}}`)
	}))
	defer srv.Close()
	c, err := Dial(Options{URL: srv.URL})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close(context.Background(), time.Second)
	meta := `"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}`
	for _, c2 := range []struct{ body, method, name string }{
		{`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"échoir","arguments":{"region":"日本"},` + meta + `}}`, "tools/call", "=?base64?w6ljaG9pcg==?="},
		{`{"jsonrpc":"2.0","id":2,"method":"resources/read","params":{"uri":"file:///a",` + meta + `}}`, "resources/read", "file:///a"},
		{`{"jsonrpc":"2.0","id":3,"method":"tools/list","params":{` + meta + `}}`, "tools/list", ""},
		{`{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"x"}}`, "", ""},
	} {
		m, _ := jsonrpc.Parse([]byte(c2.body))
		if m.Method == "tools/call" {
			m.ParamHeaders = map[string][]string{"Mcp-Param-Region": {"=?base64?5pel5pys?="}}
		}
		if err := c.Send(m); err != nil {
			t.Fatal(err)
		}
		h := <-got
		if want := map[bool]string{true: "=?base64?5pel5pys?="}[c2.method == "tools/call"]; h.Get("Mcp-Param-Region") != want {
			t.Errorf("%s: Mcp-Param-Region %q, want %q", c2.body, h.Get("Mcp-Param-Region"), want)
		}
		if h.Get("Mcp-Method") != c2.method || h.Get("Mcp-Name") != c2.name || (c2.method != "") != (h.Get("Mcp-Protocol-Version") == "2026-07-28") {
			t.Errorf("%s: Mcp-Method %q Mcp-Name %q MCP-Protocol-Version %q", c2.body, h.Get("Mcp-Method"), h.Get("Mcp-Name"), h.Get("Mcp-Protocol-Version"))
		}
		if _, err := c.Recv(); err != nil {
			t.Fatal(err)
		}
	}
}

type tokenErr struct{ error }

func (tokenErr) UpstreamToken() {}

type failingTransport struct{ err error }

func (f failingTransport) RoundTrip(r *http.Request) (*http.Response, error) { return nil, f.err }

// TestNoUpstreamTokenIsNotUnreachable: a request whose upstream token could not be
// had fails saying the server was not called and why, not that it is unreachable;
// any other transport error still says unreachable.
func TestNoUpstreamTokenIsNotUnreachable(t *testing.T) {
	for _, tc := range []struct {
		name, want, not string
		err             error
	}{
		{"no token", "remote MCP server not called: no upstream token for it: token exchange: no caller token", "unreachable",
			tokenErr{errors.New("token exchange: no caller token")}},
		{"network", "remote MCP server unreachable: ", "not called", errors.New("connection refused")},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, err := Dial(Options{URL: "http://127.0.0.1:1/mcp", Client: &http.Client{Transport: failingTransport{tc.err}}})
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close(context.Background(), time.Second)
			m, _ := jsonrpc.Parse([]byte(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{}}`))
			if err := c.Send(m); err != nil {
				t.Fatal(err)
			}
			got, err := c.Recv()
			if err != nil || got.Error == nil {
				t.Fatalf("want an error response, got %v %v", got, err)
			}
			if msg := string(got.Error); !strings.Contains(msg, tc.want) || strings.Contains(msg, tc.not) {
				t.Fatalf("message %q: want %q, not %q", msg, tc.want, tc.not)
			}
		})
	}
}
