package httpfront

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mcpgate/mcpgate/ctxapi"
	"github.com/mcpgate/mcpgate/internal/jsonrpc"
)

// userBackend answers every request with the user it was started for.
type userBackend struct{ user ctxapi.User }

func (b userBackend) Run(ctx context.Context, conn jsonrpc.Conn) error {
	res, _ := json.Marshal(b.user)
	for {
		m, err := conn.Recv()
		if err != nil {
			return nil
		}
		if m.Kind == jsonrpc.KindRequest {
			if err := conn.Send(jsonrpc.NewResponse(m.ID, res)); err != nil {
				return err
			}
		}
	}
}

func (userBackend) Close() error { return nil }

// principalFront serves callers named by X-Token: one subject, alice, whose tokens
// grant different things (as two OAuth access tokens of one subject do).
func principalFront(t *testing.T, started *[]ctxapi.User) *Front {
	users := map[string]ctxapi.User{
		"admin":  {UserID: "alice", CallerID: "console", CallerClass: "standard", Roles: []string{"admin"}, Scopes: []string{"mcp", "admin"}},
		"narrow": {UserID: "alice", CallerID: "console", CallerClass: "standard", Roles: []string{}, Scopes: []string{"mcp"}},
		"agent":  {UserID: "alice", CallerID: "agent", CallerClass: "standard", Roles: []string{"admin"}, Scopes: []string{"mcp", "admin"}},
	}
	var mu sync.Mutex
	f := New(Options{
		Auth: func(r *http.Request) (Identity, error) {
			u, ok := users[r.Header.Get("X-Token")]
			if !ok {
				return Identity{}, ErrUnauthorized
			}
			return Identity{User: u, Key: "oauth:alice"}, nil // keyed by the subject, as NewAuth does
		},
		MaxSessionsPerCaller: 4,
		Start: func(_ context.Context, u ctxapi.User) (Backend, error) {
			mu.Lock()
			*started = append(*started, u)
			mu.Unlock()
			return userBackend{u}, nil
		},
	})
	t.Cleanup(func() { _ = f.Close(context.Background()) })
	return f
}

// TestSessionBoundToGrant: a 2025-11-25 session opened with one token of a subject
// refuses (403) a request carrying another token of that subject that grants fewer
// scopes, other roles or another client, instead of running it as the first token's
// user; the same token goes on, and the other token opens a session of its own
// whose backend runs as that token's user.
func TestSessionBoundToGrant(t *testing.T) {
	var started []ctxapi.User
	f := principalFront(t, &started)
	w := post(f, initBody, map[string]string{"X-Token": "admin"})
	sid := w.Header().Get("Mcp-Session-Id")
	if w.Code != http.StatusOK || sid == "" {
		t.Fatalf("initialize: %d %s", w.Code, w.Body)
	}
	call := `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"delete_repo","arguments":{}}}`
	for _, tok := range []string{"narrow", "agent"} {
		w = post(f, call, map[string]string{"X-Token": tok, "Mcp-Session-Id": sid})
		if w.Code != http.StatusForbidden || !strings.Contains(w.Body.String(), "start a new session") {
			t.Fatalf("%s token in the admin token's session: %d %s", tok, w.Code, w.Body)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second) // ends the stream should it be served
		r := httptest.NewRequestWithContext(ctx, http.MethodGet, "http://localhost/mcp", nil)
		r.Header.Set("X-Token", tok)
		r.Header.Set("Mcp-Session-Id", sid)
		r.Header.Set("Accept", "text/event-stream")
		gw := httptest.NewRecorder()
		f.ServeHTTP(gw, r)
		cancel()
		if gw.Code != http.StatusForbidden {
			t.Fatalf("%s token's GET of the admin token's session: %d", tok, gw.Code)
		}
	}
	if w = post(f, call, map[string]string{"X-Token": "admin", "Mcp-Session-Id": sid}); w.Code != http.StatusOK || !strings.Contains(w.Body.String(), `"admin"`) {
		t.Fatalf("the admin token in its own session: %d %s", w.Code, w.Body)
	}
	w = post(f, initBody, map[string]string{"X-Token": "narrow"})
	sid2 := w.Header().Get("Mcp-Session-Id")
	w = post(f, call, map[string]string{"X-Token": "narrow", "Mcp-Session-Id": sid2})
	var got ctxapi.User
	if err := json.Unmarshal(resultOf(t, w.Body.Bytes()), &got); err != nil || strings.Join(got.Scopes, " ") != "mcp" || len(got.Roles) != 0 {
		t.Fatalf("the narrow token's session runs as %+v (%v)", got, err)
	}
}

// TestModernBackendPerGrant: 2026-07-28 requests of one subject with two tokens that
// grant different scopes, roles or clients run on two backends, each as its own
// token's user; the same token again reuses its backend; past MaxSessionsPerCaller
// grants the caller gets 429.
func TestModernBackendPerGrant(t *testing.T) {
	var started []ctxapi.User
	f := principalFront(t, &started)
	call := `{"jsonrpc":"2.0","id":7,"method":"tools/list","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}}}`
	ask := func(tok string) ctxapi.User {
		t.Helper()
		w := post(f, call, map[string]string{"X-Token": tok, "Mcp-Protocol-Version": "2026-07-28", "Mcp-Method": "tools/list"})
		if w.Code != http.StatusOK {
			t.Fatalf("%s: %d %s", tok, w.Code, w.Body)
		}
		var u ctxapi.User
		if err := json.Unmarshal(resultOf(t, w.Body.Bytes()), &u); err != nil {
			t.Fatal(err)
		}
		return u
	}
	if u := ask("admin"); strings.Join(u.Scopes, " ") != "mcp admin" {
		t.Fatalf("admin token ran as %+v", u)
	}
	if u := ask("narrow"); strings.Join(u.Scopes, " ") != "mcp" || len(u.Roles) != 0 {
		t.Fatalf("the narrow token ran as %+v: the first token's principal was kept", u)
	}
	if u := ask("agent"); u.CallerID != "agent" {
		t.Fatalf("the agent token ran as client %q", u.CallerID)
	}
	ask("admin")
	if len(started) != 3 {
		t.Fatalf("%d backends started, want 3 (one per grant)", len(started))
	}
	// a fifth grant of the caller (cap 4): 429
	f.opts.Auth = func(r *http.Request) (Identity, error) {
		return Identity{User: ctxapi.User{UserID: "alice", CallerID: r.Header.Get("X-Token"), Roles: []string{}, Scopes: []string{}}, Key: "oauth:alice"}, nil
	}
	ask("c4")
	w := post(f, call, map[string]string{"X-Token": "c5", "Mcp-Protocol-Version": "2026-07-28", "Mcp-Method": "tools/list"})
	if w.Code != http.StatusTooManyRequests {
		t.Fatalf("a fifth grant of one caller: %d %s", w.Code, w.Body)
	}
}

// resultOf returns the result of a JSON-RPC response body.
func resultOf(t *testing.T, body []byte) json.RawMessage {
	t.Helper()
	var m struct {
		Result json.RawMessage `json:"result"`
	}
	if err := json.Unmarshal(body, &m); err != nil || m.Result == nil {
		t.Fatalf("not a result: %s", body)
	}
	return m.Result
}
