package e2e

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mcpgate/mcpgate/internal/testsvc"
)

// TestOAuthTokenExchangeRealServer: a url server whose entry asks for token exchange
// (RFC 8693) gets, for its caller, a token that zitadel's example OpenID provider
// (.ci/run starts it) made from the caller's own, for the configured audience. Two
// sessions of one caller share it; the caller's own token never reaches the server;
// a caller the provider refuses to exchange for gets an error that says so, with no
// token in it or in the log.
func TestOAuthTokenExchangeRealServer(t *testing.T) {
	issuer := testsvc.OIDCIssuer(t)
	_, fake := httpBinaries(t)
	first := startHTTPGateway(t, "--", fake)
	up := newUpstreamRecorder(t, first.url)
	// The server is the resource whose client at the provider is "web": only a client
	// named in a token's audience may introspect it there.
	const audience = "web"
	cfg := filepath.Join(t.TempDir(), "config.json")
	httpWriteFile(t, cfg, fmt.Sprintf(`{"mcpServers":{"up":{"url":%q,"headers":{"Authorization":"Bearer configured-credential"},
   "oauth":{"grant":"token_exchange","tokenURL":%q,"clientID":"web","clientSecret":"secret","audience":%q,"scopes":["openid"]}}},
 "mcpgate":{"oauth":{"introspection":{"clientID":"web","clientSecret":"secret"}}}}`,
		up.URL+"/mcp", strings.TrimSuffix(issuer, "/")+"/oauth/token", audience))
	g := startHTTPGateway(t, "--config", cfg, "--oauth-issuer", issuer, "--oauth-accept-missing-audience")

	host := strings.Split(strings.Split(issuer, "://")[1], ":")[0]
	caller := oidcTokens(t, issuer, "test-user@"+host, "verysecure")["access_token"].(string) // the provider's admin user
	for i := range 2 {
		c := newHTTPClient(g.url)
		c.token = caller
		c.initialize(t)
		c.mustEcho(t, i+1)
	}
	_, auths := up.all()
	if len(auths) == 0 {
		t.Fatal("nothing reached the server")
	}
	for _, a := range auths {
		if a != auths[0] || !strings.HasPrefix(a, "Bearer ") {
			t.Fatalf("the server got Authorization %q, then %q: want one exchanged token for one caller", auths[0], a)
		}
	}
	exchanged := strings.TrimPrefix(auths[0], "Bearer ")
	if exchanged == caller || exchanged == "configured-credential" {
		t.Fatalf("the server got the caller's or the configured token, not an exchanged one")
	}
	assertNoTokenUpstreamAuth(t, up, caller)
	// The provider says whose token it is; active for "web" says "web" is its audience.
	claims := introspect(t, issuer, exchanged)
	if claims["active"] != true || claims["sub"] != "id1" {
		t.Fatalf("the exchanged token introspects as %v", claims)
	}

	// The provider refuses test-user2 (no impersonation permission): the call fails,
	// saying so, and nothing reaches the server under that caller: no third initialize,
	// and every request carries the first caller's exchanged token. (Not a count of all
	// requests: each open session opens its GET stream on a goroutine of its own after
	// notifications/initialized, which may reach the server after any snapshot.)
	refused := oidcTokens(t, issuer, "test-user2", "verysecure")["access_token"].(string)
	c := newHTTPClient(g.url)
	c.token = refused
	r, err := c.do(t.Context(), http.MethodPost, initBody, nil)
	if err != nil {
		t.Fatal(err)
	}
	_, msg := httpErrorOf(r.last())
	seen, auths := up.all()
	inits := 0
	for _, s := range seen {
		if strings.Contains(s, `"method":"initialize"`) {
			inits++
		}
	}
	if inits != 2 {
		t.Fatalf("the server got %d initialize requests, want the first caller's 2", inits)
	}
	for _, a := range auths {
		if a != "Bearer "+exchanged {
			t.Fatalf("a request reached the server without the exchanged token")
		}
	}
	assertNoTokenUpstreamAuth(t, up, refused)
	log := g.stderr.String()
	if !strings.Contains(msg+log, "token exchange at") || !strings.Contains(msg+log, "refused: HTTP ") {
		t.Fatalf("the refusal is not named: status %d %q\n%s", r.status, msg, log)
	}
	for _, tok := range []string{caller, refused, exchanged} {
		if strings.Contains(log, tok) || strings.Contains(msg, tok) {
			t.Fatal("a token is in the log or the answer")
		}
	}
}

// introspect asks the provider about token as its "web" client (RFC 7662).
func introspect(t *testing.T, issuer, token string) map[string]any {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, strings.TrimSuffix(issuer, "/")+"/oauth/introspect", strings.NewReader(url.Values{"token": {token}}.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.SetBasicAuth("web", "secret")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var out map[string]any
	if err := json.NewDecoder(resp.Body).Decode(&out); err != nil {
		t.Fatal(err)
	}
	return out
}

// TestTokenExchangeNeedsOAuthCallers: a token exchange entry is refused at start-up
// where no caller presents an OAuth token to exchange: on stdio, and on an HTTP
// front without --oauth-issuer.
func TestTokenExchangeNeedsOAuthCallers(t *testing.T) {
	gw, _ := httpBinaries(t)
	dir := t.TempDir()
	cfg := filepath.Join(dir, "config.json")
	httpWriteFile(t, cfg, `{"mcpServers":{"up":{"url":"http://127.0.0.1:1/mcp",
   "oauth":{"grant":"token_exchange","tokenURL":"http://127.0.0.1:1/token","clientID":"gw","clientSecret":"s"}}}}`)
	for _, args := range [][]string{
		{"gateway", "run", "--config", cfg, "--policies", dir},
		{"gateway", "run", "--config", cfg, "--policies", dir, "--listen", "127.0.0.1:0"},
	} {
		out, err := httpExec(gw, args...)
		if err == nil || !strings.Contains(out, `mcpServers.up.oauth.grant "token_exchange" exchanges the caller's OAuth token`) {
			t.Fatalf("%v: %v\n%s", args, err, out)
		}
	}
}
