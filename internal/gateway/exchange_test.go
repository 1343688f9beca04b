package gateway

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"

	"github.com/mcpgate/mcpgate/ctxapi"
	"github.com/mcpgate/mcpgate/internal/config"
	"github.com/mcpgate/mcpgate/internal/oauth"
)

// TestExchangeKeptPerGrant: a url server's exchanged token is kept per caller grant,
// not per subject alone: a session of alice whose token grants "read" never sends a
// token exchanged from her other token that grants "admin", nor one from another
// client; sessions of one grant share one exchange (docs/http.md#principal-per-token).
func TestExchangeKeptPerGrant(t *testing.T) {
	var mu sync.Mutex
	asked := 0
	idp := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_ = r.ParseForm()
		mu.Lock()
		asked++
		mu.Unlock()
		fmt.Fprintf(w, `{"access_token":"from-%s","token_type":"Bearer","expires_in":300}`, r.PostForm.Get("subject_token"))
	}))
	defer idp.Close()
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = w.Write([]byte(r.Header.Get("Authorization")))
	}))
	defer up.Close()
	server := config.Server{URL: up.URL + "/mcp", OAuth: &config.UpstreamOAuth{Grant: config.GrantTokenExchange, TokenURL: idp.URL,
		ClientID: "gw", ClientSecret: "s", Audience: t.Name()}}
	send := func(u ctxapi.User, token string) string {
		t.Helper()
		h := &oauth.SubjectToken{}
		h.Set(token)
		c := upstreamClient(server, http.DefaultTransport, callerOf(oauth.WithSubjectToken(context.Background(), h), u))
		resp, err := c.Get(up.URL)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var b [256]byte
		n, _ := resp.Body.Read(b[:])
		return string(b[:n])
	}
	read := ctxapi.User{UserID: "alice", CallerID: "app", CallerClass: "standard", Scopes: []string{"read"}}
	admin := ctxapi.User{UserID: "alice", CallerID: "app", CallerClass: "standard", Scopes: []string{"admin"}}
	other := ctxapi.User{UserID: "alice", CallerID: "other-app", CallerClass: "standard", Scopes: []string{"read"}}
	for _, step := range []struct {
		user        ctxapi.User
		token, want string
		asked       int
	}{
		{admin, "alice-admin", "Bearer from-alice-admin", 1},
		{read, "alice-read", "Bearer from-alice-read", 2},
		{other, "alice-other", "Bearer from-alice-other", 3},
		{read, "alice-read-2", "Bearer from-alice-read", 3}, // the same grant, a refreshed token: kept
		{admin, "alice-admin-2", "Bearer from-alice-admin", 3},
	} {
		if got := send(step.user, step.token); got != step.want {
			t.Errorf("%v with %s: the server got %q, want %q", step.user.Scopes, step.token, got, step.want)
		}
		mu.Lock()
		n := asked
		mu.Unlock()
		if n != step.asked {
			t.Errorf("after %s: %d exchanges, want %d", step.token, n, step.asked)
		}
	}
}
