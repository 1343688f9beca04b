package e2e

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mcpgate/mcpgate/internal/testsvc"
)

// oidcRedirect is the redirect URI .ci/run registers with zitadel's example provider.
const oidcRedirect = "http://localhost:9413/callback"

// oidcTokens signs user in at zitadel's example OpenID provider as its "web" client
// (authorization code flow, its headless login form) and returns the token
// response: an opaque access_token and an id_token (a JWT whose aud is "web").
func oidcTokens(t *testing.T, issuer, user, password string) map[string]any {
	t.Helper()
	hc := &http.Client{Timeout: 30 * time.Second, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	hop := func(resp *http.Response, err error) *url.URL {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		loc, err := resp.Location()
		if err != nil {
			t.Fatalf("%s: HTTP %d and no redirect", resp.Request.URL.Path, resp.StatusCode)
		}
		return loc
	}
	base := strings.TrimSuffix(issuer, "/")
	loc := hop(hc.Get(base + "/auth?" + url.Values{"client_id": {"web"}, "response_type": {"code"}, "scope": {"openid"},
		"redirect_uri": {oidcRedirect}, "state": {"e2e"}}.Encode()))
	loc = hop(hc.PostForm(base+"/login/username", url.Values{"id": {loc.Query().Get("authRequestID")}, "username": {user}, "password": {password}}))
	for !strings.HasPrefix(loc.String(), oidcRedirect) {
		loc = hop(hc.Get(loc.String()))
	}
	return oidcToken(t, issuer, url.Values{"grant_type": {"authorization_code"}, "code": {loc.Query().Get("code")}, "redirect_uri": {oidcRedirect}})
}

// oidcToken posts form to the provider's token endpoint as the "web" client.
func oidcToken(t *testing.T, issuer string, form url.Values) map[string]any {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, strings.TrimSuffix(issuer, "/")+"/oauth/token", strings.NewReader(form.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.SetBasicAuth("web", "secret")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var out map[string]any
	if err := json.NewDecoder(resp.Body).Decode(&out); err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("token endpoint: HTTP %d %v (%v)", resp.StatusCode, out, err)
	}
	return out
}

// TestOAuthAudienceRealServer drives zitadel's example OpenID provider (.ci/run starts
// it), whose introspection answers name no audience:
//   - its opaque access token is refused (401 invalid_token, "audience not confirmed")
//     by a gateway that introspects as the token's own client, and taken only with
//     --oauth-accept-missing-audience, which warns at start;
//   - a JWT it signed (an id_token) for its client "web" is refused as for another
//     resource, and one it signed for gateway A (token exchange with audience A,
//     RFC 8693) is taken by A and refused by gateway B — a token for one resource is
//     never accepted by another.
func TestOAuthAudienceRealServer(t *testing.T) {
	issuer := testsvc.OIDCIssuer(t)
	_, fake := httpBinaries(t)
	cfg := filepath.Join(t.TempDir(), "config.json")
	httpWriteFile(t, cfg, `{"mcpgate":{"oauth":{"introspection":{"clientID":"web","clientSecret":"secret"}}}}`)
	a := startHTTPGateway(t, "--config", cfg, "--oauth-issuer", issuer, "--", fake)
	b := startHTTPGateway(t, "--config", cfg, "--oauth-issuer", issuer, "--", fake)
	lenient := startHTTPGateway(t, "--config", cfg, "--oauth-issuer", issuer, "--oauth-accept-missing-audience", "--", fake)
	for _, g := range []*httpGateway{a, b} {
		if strings.Contains(g.stderr.String(), "names no audience is taken") {
			t.Fatal("a start-up warning without --oauth-accept-missing-audience")
		}
	}
	if !strings.Contains(lenient.stderr.String(), "names no audience is taken as meant for this gateway") {
		t.Fatalf("no start-up warning with --oauth-accept-missing-audience:\n%s", lenient.stderr.String())
	}
	tok := oidcTokens(t, issuer, "test-user2", "verysecure")
	opaque, idToken := tok["access_token"].(string), tok["id_token"].(string)
	if len(strings.Split(opaque, ".")) == 3 || len(strings.Split(idToken, ".")) != 3 {
		t.Fatalf("want an opaque access token and a JWT id token: %d and %d parts", len(strings.Split(opaque, ".")), len(strings.Split(idToken, ".")))
	}
	// RFC 8693 token exchange: a JWT the provider signs with aud [A's resource URI, web].
	forA := oidcToken(t, issuer, url.Values{"grant_type": {"urn:ietf:params:oauth:grant-type:token-exchange"},
		"subject_token": {opaque}, "subject_token_type": {"urn:ietf:params:oauth:token-type:access_token"},
		"actor_token": {opaque}, "actor_token_type": {"urn:ietf:params:oauth:token-type:access_token"},
		"requested_token_type": {"urn:ietf:params:oauth:token-type:id_token"}, "audience": {a.url}, "scope": {"openid"}})["access_token"].(string)

	refused := func(g *httpGateway, token, reason, text string) {
		t.Helper()
		for _, rev := range []string{"2025-11-25", "2026-07-28"} {
			c := newHTTPClient(g.url)
			c.token = token
			r, err := c.do(t.Context(), http.MethodPost, firstRequest(rev), map[string]string{"MCP-Protocol-Version": rev})
			if err != nil {
				t.Fatal(err)
			}
			_, msg := httpErrorOf(r.last())
			if ch := r.header.Get("WWW-Authenticate"); r.status != http.StatusUnauthorized || !strings.Contains(ch, `error="invalid_token"`) || !strings.Contains(msg, text) {
				t.Fatalf("%s, %s: %d %q %q, want 401 invalid_token %q", reason, rev, r.status, ch, msg, text)
			}
		}
		if !strings.Contains(g.stderr.String(), fmt.Sprintf(`"reason":%q`, reason)) {
			t.Fatalf("no log line with reason %s", reason)
		}
	}
	accepted := func(g *httpGateway, token string) {
		t.Helper()
		c := newHTTPClient(g.url)
		c.token = token
		c.initialize(t)
		c.mustEcho(t, 1)
		m := newHTTPClient(g.url)
		m.token = token
		if r := m.modernCall(t, 1, "echo", map[string]any{"text": "still here"}); r.status != http.StatusOK || httpResultText(r.last()) != "fakeup: still here" {
			t.Fatalf("2026-07-28 call: %d %v", r.status, r.msgs)
		}
	}
	refused(a, opaque, "audience_not_confirmed", "audience not confirmed")
	accepted(lenient, opaque)
	refused(a, idToken, "wrong_audience", "not for this resource")
	accepted(a, forA)
	refused(b, forA, "wrong_audience", "not for this resource")
}
