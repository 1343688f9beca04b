package httpfront

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/mcpgate/mcpgate/ctxapi"
	"github.com/mcpgate/mcpgate/internal/testwait"
)

// TestBodyBudget: a caller's body in flight counts against its share and the total
// until its request ends: with 1 MiB per caller and 1.5 MiB in all, a caller holding
// an unfinished 1 MiB body gets 429 for its next POST before a byte is read, another
// caller's 1 MiB POST gets 503, a small one passes, and once the first body ends
// the caller is served again. A body without Content-Length is counted as it arrives.
func TestBodyBudget(t *testing.T) {
	f := New(Options{
		Auth: func(r *http.Request) (Identity, error) {
			who := r.Header.Get("X-Who")
			return Identity{User: ctxapi.User{UserID: who}, Key: "token:" + who}, nil
		},
		MaxMessageBytes: 1 << 20, MaxBodyBytesPerCaller: 1 << 20, MaxBodyBytesInFlight: 3 << 19,
		Start: func(context.Context, ctxapi.User) (Backend, error) { return echoBackend{}, nil },
	})
	t.Cleanup(func() { _ = f.Close(context.Background()) })
	pr, pw := io.Pipe()
	done := make(chan int)
	go func() {
		r := httptest.NewRequest(http.MethodPost, "http://localhost/mcp", pr)
		r.ContentLength = 1 << 20
		r.Header.Set("X-Who", "a")
		r.Header.Set("Content-Type", "application/json")
		w := httptest.NewRecorder()
		f.ServeHTTP(w, r)
		done <- w.Code
	}()
	_, _ = pw.Write([]byte(`{"jsonrpc":"2.0",`)) // the rest never comes until the end
	testwait.For(t, "the first body to be counted", func() bool { return f.bodies.inFlight() == 1<<20 })
	big := func(who string, n int) int {
		r := httptest.NewRequest(http.MethodPost, "http://localhost/mcp", strings.NewReader(strings.Repeat(" ", n)))
		r.Header.Set("X-Who", who)
		r.Header.Set("Content-Type", "application/json")
		w := httptest.NewRecorder()
		f.ServeHTTP(w, r)
		return w.Code
	}
	if c := big("a", 100); c != http.StatusTooManyRequests {
		t.Fatalf("the same caller's next POST: %d, want 429", c)
	}
	if c := big("b", 1<<20); c != http.StatusServiceUnavailable {
		t.Fatalf("another caller's 1 MiB POST past the total: %d, want 503", c)
	}
	if w := post(f, initBody, map[string]string{"X-Who": "b"}); w.Code != http.StatusOK {
		t.Fatalf("another caller's small POST: %d %s", w.Code, w.Body)
	}
	// chunked (no Content-Length): counted as it arrives, refused once past the share
	r := httptest.NewRequest(http.MethodPost, "http://localhost/mcp", io.MultiReader(strings.NewReader(strings.Repeat(" ", 1<<20))))
	r.ContentLength = -1
	r.Header.Set("X-Who", "c")
	w := httptest.NewRecorder()
	f.ServeHTTP(w, r)
	if w.Code != http.StatusServiceUnavailable && w.Code != http.StatusTooManyRequests {
		t.Fatalf("a chunked body past the budget: %d", w.Code)
	}
	pw.CloseWithError(io.ErrUnexpectedEOF)
	if c := <-done; c != http.StatusBadRequest {
		t.Fatalf("the cut body: %d", c)
	}
	if f.bodies.inFlight() != 0 {
		t.Fatalf("%d bytes still counted after every request ended", f.bodies.inFlight())
	}
	if w := post(f, initBody, map[string]string{"X-Who": "a"}); w.Code != http.StatusOK {
		t.Fatalf("the first caller after its body ended: %d %s", w.Code, w.Body)
	}
}
