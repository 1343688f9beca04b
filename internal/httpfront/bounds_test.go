package httpfront

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/mcpgate/mcpgate/ctxapi"
	"github.com/mcpgate/mcpgate/internal/config"
	"github.com/mcpgate/mcpgate/internal/jsonrpc"
	"github.com/mcpgate/mcpgate/internal/testwait"
)

// echoBackend answers every request with an empty result.
type echoBackend struct{}

func (echoBackend) Run(ctx context.Context, conn jsonrpc.Conn) error {
	for {
		m, err := conn.Recv()
		if err != nil {
			return nil
		}
		if m.Kind != jsonrpc.KindRequest {
			continue
		}
		if err := conn.Send(jsonrpc.NewResponse(m.ID, json.RawMessage(`{}`))); err != nil {
			return err
		}
	}
}

func (echoBackend) Close() error { return nil }

const initBody = `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`

func post(f *Front, body string, hdr map[string]string) *httptest.ResponseRecorder {
	r := httptest.NewRequest(http.MethodPost, "http://localhost/mcp", strings.NewReader(body))
	r.Header.Set("Content-Type", "application/json")
	r.Header.Set("Accept", "application/json")
	for k, v := range hdr {
		r.Header.Set(k, v)
	}
	w := httptest.NewRecorder()
	f.ServeHTTP(w, r)
	return w
}

// TestSessionCapUnderConcurrentInitialize proves the cap holds when initialize
// requests race: with a cap of 2, twelve concurrent ones open exactly 2 sessions and
// start exactly 2 backends; the rest get 503.
func TestSessionCapUnderConcurrentInitialize(t *testing.T) {
	var started, refused atomic.Int32
	release := make(chan struct{})
	f := New(Options{
		Auth:        LocalAuth(ctxapi.User{UserID: "u"}),
		MaxSessions: 2,
		Start: func(context.Context, ctxapi.User) (Backend, error) {
			started.Add(1)
			<-release // every racing initialize arrives while these backends start
			return echoBackend{}, nil
		},
	})
	t.Cleanup(func() { _ = f.Close(context.Background()) })
	const n = 12
	codes := make([]int, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			codes[i] = post(f, initBody, nil).Code
			if codes[i] == http.StatusServiceUnavailable {
				refused.Add(1)
			}
		}()
	}
	testwait.For(t, "every initialize to be refused or starting", func() bool { return started.Load()+refused.Load() == n })
	close(release)
	wg.Wait()
	ok := 0
	for _, c := range codes {
		switch c {
		case http.StatusOK:
			ok++
		case http.StatusServiceUnavailable:
		default:
			t.Errorf("unexpected status %d", c)
		}
	}
	if ok != 2 || started.Load() != 2 || f.Sessions() != 2 {
		t.Fatalf("%d sessions answered 200, %d backends started, %d open; want 2, 2, 2", ok, started.Load(), f.Sessions())
	}
}

// countingReader counts the bytes read from it.
type countingReader struct {
	n atomic.Int64
	r io.Reader
}

func (c *countingReader) Read(p []byte) (int, error) {
	k, err := c.r.Read(p)
	c.n.Add(int64(k))
	return k, err
}

// TestOversizedBodyRefusedEarly proves a request whose declared length passes the
// limit is refused with 413 before its body is read, and one without a declared
// length (chunked) is refused once the bytes read pass the limit.
func TestOversizedBodyRefusedEarly(t *testing.T) {
	const limit = 1 << 10
	f := New(Options{Auth: LocalAuth(ctxapi.User{UserID: "u"}), MaxMessageBytes: limit,
		Start: func(context.Context, ctxapi.User) (Backend, error) { return echoBackend{}, nil }})
	t.Cleanup(func() { _ = f.Close(context.Background()) })
	for _, tc := range []struct {
		name     string
		declared int64
		maxRead  int64
	}{
		{"declared", 70 << 20, 0},
		{"chunked", -1, limit + 4096}, // read until past the limit, not to the end
	} {
		t.Run(tc.name, func(t *testing.T) {
			body := &countingReader{r: io.LimitReader(neverEnding('x'), 70<<20)}
			r := httptest.NewRequest(http.MethodPost, "http://localhost/mcp", body)
			r.ContentLength = tc.declared
			r.Header.Set("Accept", "application/json")
			w := httptest.NewRecorder()
			f.ServeHTTP(w, r)
			if w.Code != http.StatusRequestEntityTooLarge {
				t.Fatalf("status %d, want 413", w.Code)
			}
			if got := body.n.Load(); got > tc.maxRead {
				t.Fatalf("read %d body bytes before the 413, want at most %d", got, tc.maxRead)
			}
		})
	}
}

type neverEnding byte

func (b neverEnding) Read(p []byte) (int, error) {
	for i := range p {
		p[i] = byte(b)
	}
	return len(p), nil
}

// TestClientHeadersBounded proves an oversized Mcp-Session-Id names no session and
// an oversized MCP-Protocol-Version is not echoed in full.
func TestClientHeadersBounded(t *testing.T) {
	f := New(Options{Auth: LocalAuth(ctxapi.User{UserID: "u"}),
		Start: func(context.Context, ctxapi.User) (Backend, error) { return echoBackend{}, nil }})
	t.Cleanup(func() { _ = f.Close(context.Background()) })
	w := post(f, initBody, nil)
	sid := w.Header().Get("Mcp-Session-Id")
	if w.Code != 200 || sid == "" {
		t.Fatalf("initialize: %d", w.Code)
	}
	ping := `{"jsonrpc":"2.0","id":2,"method":"ping"}`
	if w := post(f, ping, map[string]string{"Mcp-Session-Id": sid + strings.Repeat("0", 1<<16)}); w.Code != http.StatusNotFound {
		t.Fatalf("long session id: %d, want 404", w.Code)
	}
	w = post(f, ping, map[string]string{"Mcp-Session-Id": sid, "Mcp-Protocol-Version": strings.Repeat("v", 1<<16)})
	if w.Code != http.StatusBadRequest || w.Body.Len() > 1024 {
		t.Fatalf("long protocol version: %d with a %d-byte body", w.Code, w.Body.Len())
	}
}

// TestReplayBoundedInBytes proves a session keeps finished streams for Last-Event-ID
// only within ReplayBytes (oldest dropped first), never keeps a JSON response, and
// bounds an open stream's events in bytes while keeping the newest.
func TestReplayBoundedInBytes(t *testing.T) {
	const budget = 1000
	f := New(Options{Auth: LocalAuth(ctxapi.User{UserID: "u"}), ReplayBytes: budget,
		Start: func(context.Context, ctxapi.User) (Backend, error) { return echoBackend{}, nil }})
	t.Cleanup(func() { _ = f.Close(context.Background()) })
	s := newSession(f, "sid", Identity{Key: "local"})
	respond := func(id int, jsonMode bool, size int) *stream {
		t.Helper()
		req, err := jsonrpc.Parse([]byte(fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{}}`, id)))
		if err != nil {
			t.Fatal(err)
		}
		st, err := s.openRequest(req, jsonMode)
		if err != nil {
			t.Fatal(err)
		}
		resp, err := jsonrpc.Parse([]byte(fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"result":{"t":"%s"}}`, id, strings.Repeat("x", size))))
		if err != nil {
			t.Fatal(err)
		}
		s.deliver(resp)
		return st
	}
	kept := func(st *stream) bool { _, _, ok := s.resume(st.id + "/0"); return ok }

	a := respond(1, false, 400)
	b := respond(2, false, 400)
	if !kept(a) || !kept(b) {
		t.Fatal("two small finished streams within the budget are not both kept")
	}
	c := respond(3, false, 400) // a+b+c > budget: a goes
	if kept(a) || !kept(b) || !kept(c) {
		t.Fatalf("after a third stream: kept a=%v b=%v c=%v, want false true true", kept(a), kept(b), kept(c))
	}
	big := respond(4, false, 5000) // alone over the budget: nothing older stays, nor it
	if kept(b) || kept(c) || kept(big) || s.finBytes != 0 {
		t.Fatalf("after a stream over the budget: kept b=%v c=%v big=%v, %d bytes held", kept(b), kept(c), kept(big), s.finBytes)
	}
	if len(big.events) != 1 {
		t.Fatal("the connection serving a dropped stream lost its response")
	}
	j := respond(5, true, 10)
	if kept(j) {
		t.Fatal("a JSON response is kept for resumption")
	}

	s.mu.Lock()
	for range 10 {
		s.appendLocked(s.standalone, []byte(strings.Repeat("n", 300)))
	}
	n, bytes := len(s.standalone.events), s.standalone.bytes
	s.mu.Unlock()
	if bytes > budget || n != budget/300 {
		t.Fatalf("GET stream holds %d events, %d bytes; want %d events within %d bytes", n, bytes, budget/300, budget)
	}
}

// TestRefusalsAreLogged: a 401 (no valid token) and a 403 (another caller's session)
// each leave a log line, without the token.
func TestRefusalsAreLogged(t *testing.T) {
	sum := func(s string) string { h := sha256.Sum256([]byte(s)); return hex.EncodeToString(h[:]) }
	auth, err := TokenAuth([]config.Token{{SHA256: sum("token-a"), UserID: "a"}, {SHA256: sum("token-b"), UserID: "b"}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	var logs bytes.Buffer
	f := New(Options{Auth: auth, Logger: slog.New(slog.NewTextHandler(&logs, nil)),
		Start: func(context.Context, ctxapi.User) (Backend, error) { return echoBackend{}, nil }})
	defer f.Close(context.Background())

	if w := post(f, initBody, map[string]string{"Authorization": "Bearer wrong-token"}); w.Code != http.StatusUnauthorized {
		t.Fatalf("status %d", w.Code)
	}
	w := post(f, initBody, map[string]string{"Authorization": "Bearer token-a"})
	sid := w.Header().Get("Mcp-Session-Id")
	if w.Code != http.StatusOK || sid == "" {
		t.Fatalf("initialize: %d %s", w.Code, w.Body)
	}
	if w := post(f, `{"jsonrpc":"2.0","id":2,"method":"ping"}`, map[string]string{"Authorization": "Bearer token-b", "Mcp-Session-Id": sid}); w.Code != http.StatusForbidden {
		t.Fatalf("status %d", w.Code)
	}
	out := logs.String()
	for _, want := range []string{"(401)", "(403)", "user_id=b"} {
		if !strings.Contains(out, want) {
			t.Errorf("log lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "wrong-token") || strings.Contains(out, "token-b") {
		t.Errorf("a token reached the log:\n%s", out)
	}
}

// TestSessionCapPerCaller: one caller cannot take every session. With 4 places and 2
// per caller, a caller's third initialize gets 429 while another caller still opens
// its own; past the total every caller gets 503; a caller that ends a session may
// open another.
func TestSessionCapPerCaller(t *testing.T) {
	f := New(Options{
		Auth: func(r *http.Request) (Identity, error) {
			who := r.Header.Get("X-Who")
			return Identity{User: ctxapi.User{UserID: who}, Key: "token:" + who}, nil
		},
		MaxSessions:          4,
		MaxSessionsPerCaller: 2,
		Start:                func(context.Context, ctxapi.User) (Backend, error) { return echoBackend{}, nil },
	})
	t.Cleanup(func() { _ = f.Close(context.Background()) })
	open := func(who string, want int) string {
		t.Helper()
		w := post(f, initBody, map[string]string{"X-Who": who})
		if w.Code != want {
			t.Fatalf("%s: initialize answered %d, want %d: %s", who, w.Code, want, w.Body)
		}
		return w.Header().Get("Mcp-Session-Id")
	}
	a1 := open("a", http.StatusOK)
	open("a", http.StatusOK)
	if w := post(f, initBody, map[string]string{"X-Who": "a"}); w.Code != http.StatusTooManyRequests || !strings.Contains(w.Body.String(), "--max-sessions-per-caller") {
		t.Fatalf("a's third session: %d %s", w.Code, w.Body)
	}
	open("b", http.StatusOK)
	open("b", http.StatusOK)
	open("c", http.StatusServiceUnavailable)
	r := httptest.NewRequest(http.MethodDelete, "http://localhost/mcp", nil)
	r.Header.Set("Mcp-Session-Id", a1)
	r.Header.Set("X-Who", "a")
	w := httptest.NewRecorder()
	f.ServeHTTP(w, r)
	if w.Code != http.StatusNoContent {
		t.Fatalf("DELETE: %d", w.Code)
	}
	testwait.For(t, "a's session to end", func() bool { return f.Sessions() == 3 })
	open("a", http.StatusOK)
}
