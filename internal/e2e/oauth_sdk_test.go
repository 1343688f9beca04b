package e2e

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mcpgate/mcpgate/internal/oauth/oauthtest"
	"github.com/mcpgate/mcpgate/internal/testsvc"
)

// sdkOAuthResult is what testdata/e2e/oauth-client.mjs prints.
type sdkOAuthResult struct {
	Call     map[string]any `json:"call"`
	Call2    map[string]any `json:"call2"`
	GotToken bool           `json:"gotToken"`
	Token    string         `json:"token"`
	Error    string         `json:"error"`
}

// runOAuthClient runs the SDK client of oauth-client.mjs with options o.
func runOAuthClient(t *testing.T, o map[string]any) sdkOAuthResult {
	t.Helper()
	nodeModule(t, "@modelcontextprotocol/client/package.json")
	b, _ := json.Marshal(o)
	cmd := harnessCmd(t, 2*time.Minute, "node", filepath.Join(root, "testdata", "e2e", "oauth-client.mjs"), string(b))
	cmd.Stderr = os.Stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("oauth-client.mjs: %v\n%s", cmd.explain(err), out)
	}
	var r sdkOAuthResult
	if err := json.Unmarshal(out, &r); err != nil {
		t.Fatalf("oauth-client.mjs printed %q", out)
	}
	return r
}

// oauthGateway starts a gateway accepting tokens of issuer in front of fakeup behind
// an upstream recorder; extra goes into mcpgate.oauth.
func oauthGateway(t *testing.T, issuer, extra string) (*httpGateway, *upstreamRecorder) {
	t.Helper()
	_, fake := httpBinaries(t)
	first := startHTTPGateway(t, "--", fake)
	up := newUpstreamRecorder(t, first.url)
	cfg := filepath.Join(t.TempDir(), "config.json")
	httpWriteFile(t, cfg, fmt.Sprintf(`{"mcpServers":{"up":{"url":%q,"headers":{"Authorization":"Bearer upstream-credential"}}},
 "mcpgate":{"oauth":{%s}}}`, up.URL+"/mcp", extra))
	return startHTTPGateway(t, "--config", cfg, "--oauth-issuer", issuer), up
}

// assertNoTokenUpstream checks the upstream was sent its own credential only and
// nothing of tok.
func assertNoTokenUpstream(t *testing.T, up *upstreamRecorder, g *httpGateway, tok string, wantAuth func(string) bool) {
	t.Helper()
	seen, auths := up.all()
	if len(seen) == 0 {
		t.Fatal("the upstream saw nothing")
	}
	for _, a := range auths {
		if !wantAuth(a) {
			t.Fatalf("the upstream got Authorization %q", a)
		}
	}
	for _, part := range tokenParts(tok) {
		for _, s := range seen {
			if strings.Contains(s, part) {
				t.Fatal("the upstream was sent part of the client's token")
			}
		}
		if strings.Contains(g.stderr.String(), part) {
			t.Fatal("the gateway's log holds part of the client's token")
		}
	}
}

// TestOAuthSDKClientCredentials: the v2 and v1 TypeScript SDK clients, given only
// client credentials and the gateway's URL, discover the metadata, get a JWT for the
// gateway's resource URI (RFC 8707) from the test authorization server and call a tool.
func TestOAuthSDKClientCredentials(t *testing.T) {
	is := oauthtest.New(t)
	g, up := oauthGateway(t, is.URL, `"scopes":["mcp"]`)
	for _, sdk := range []string{"v2", "v1"} {
		r := runOAuthClient(t, map[string]any{"url": g.url, "sdk": sdk, "flow": "client_credentials", "clientId": oauthtest.CCClientID,
			"clientSecret": oauthtest.CCClientSecret, "issuer": is.URL, "scope": "mcp", "tool": "echo", "args": map[string]any{"text": "cc " + sdk}})
		if r.Error != "" || sdkResultText(r.Call) != "fakeup: cc "+sdk || !r.GotToken {
			t.Fatalf("%s: %+v", sdk, r)
		}
		assertNoTokenUpstream(t, up, g, r.Token, func(a string) bool { return a == "Bearer upstream-credential" })
	}
	rec := httpWaitRecord(t, g, "echo", "ok")
	if c, _ := rec["caller"].(map[string]any); c["user_id"] != oauthtest.CCClientID || c["caller_id"] != oauthtest.CCClientID || fmt.Sprint(c["scopes"]) != "[mcp]" {
		t.Fatalf("record caller %v", rec["caller"])
	}
}

// TestOAuthRealServer drives zitadel's example OpenID provider (.ci/run starts it):
// the v2 and v1 SDK clients with no token discover the metadata, sign in by the
// authorization code flow with PKCE (headless, at the provider's login form), and
// call a tool; the gateway introspects the provider's opaque token, and ctx.user and
// the record carry its subject, client and scopes. The provider's introspection
// answers name no audience, so the gateway runs with acceptMissingAudience (and warns
// at start; TestOAuthAudienceRealServer shows the refusal without it). A client
// credentials token, which that provider issues for its own service user only, is
// refused as inactive.
func TestOAuthRealServer(t *testing.T) {
	issuer := testsvc.OIDCIssuer(t)
	pol := t.TempDir()
	httpWriteFile(t, filepath.Join(pol, "whoami.js"), `if (ctx.phase === "pre" && ctx.tool === "whoami") {
  throw "user=" + ctx.user.userID + " client=" + ctx.user.callerId + " scopes=" + ctx.user.scopes.join(",");
}
`)
	_, fake := httpBinaries(t)
	first := startHTTPGateway(t, "--", fake)
	up := newUpstreamRecorder(t, first.url)
	cfg := filepath.Join(t.TempDir(), "config.json")
	httpWriteFile(t, cfg, fmt.Sprintf(`{"mcpServers":{"up":{"url":%q,"headers":{"Authorization":"Bearer upstream-credential"},
   "oauth":{"tokenURL":%q,"clientID":"sid1","clientSecret":"verysecret","scopes":["openid"]}}},
 "mcpgate":{"oauth":{"scopes":["openid"],"acceptMissingAudience":true,"introspection":{"clientID":"web","clientSecret":"secret"}}}}`, up.URL+"/mcp", strings.TrimSuffix(issuer, "/")+"/oauth/token"))
	g := startHTTPGateway(t, "--config", cfg, "--policies", pol, "--oauth-issuer", issuer)
	if !strings.Contains(g.stderr.String(), "names no audience is taken as meant for this gateway") {
		t.Fatalf("no start-up warning for acceptMissingAudience:\n%s", g.stderr.String())
	}
	for _, sdk := range []string{"v2", "v1"} {
		t.Run(sdk, func(t *testing.T) {
			r := runOAuthClient(t, map[string]any{"url": g.url, "sdk": sdk, "flow": "code", "clientId": "web", "clientSecret": "secret",
				"redirectUri": "http://localhost:9413/callback", "username": "test-user2", "password": "verysecure",
				"tool": "echo", "args": map[string]any{"text": "code " + sdk}, "tool2": "whoami"})
			if r.Error != "" || sdkResultText(r.Call) != "fakeup: code "+sdk || !r.GotToken {
				t.Fatalf("%+v", r)
			}
			if who := sdkResultText(r.Call2); !strings.Contains(who, "user=id2 client=web scopes=openid") {
				t.Fatalf("ctx.user: %q", who)
			}
			// The upstream has its own token from the provider (client credentials of its service user).
			assertNoTokenUpstream(t, up, g, r.Token, func(a string) bool {
				return strings.HasPrefix(a, "Bearer ") && len(strings.Split(a, ".")) == 5 && !strings.Contains(a, r.Token)
			})
		})
	}
	rec := httpWaitRecord(t, g, "echo", "ok")
	if c, _ := rec["caller"].(map[string]any); c["user_id"] != "id2" || c["caller_id"] != "web" || !strings.Contains(fmt.Sprint(c["scopes"]), "openid") {
		t.Fatalf("record caller %v", rec["caller"])
	}
	r := runOAuthClient(t, map[string]any{"url": g.url, "sdk": "v2", "flow": "client_credentials", "clientId": "sid1", "clientSecret": "verysecret",
		"issuer": issuer, "scope": "openid", "tool": "echo"})
	if !strings.Contains(r.Error, "401") || !strings.Contains(g.stderr.String(), `"reason":"token_inactive"`) {
		t.Fatalf("a client credentials token of the provider's service user: %+v", r)
	}
}

// sdkResultText returns content[0].text of a CallToolResult.
func sdkResultText(res map[string]any) string { return httpResultText(map[string]any{"result": res}) }

// TestOAuthUpstreamToken: a url server with its own OAuth client gets a token from the
// authorization server (client credentials, resource = its URL) in place of its
// configured Authorization, fetched once for every session, and never the caller's.
func TestOAuthUpstreamToken(t *testing.T) {
	is := oauthtest.New(t)
	_, fake := httpBinaries(t)
	first := startHTTPGateway(t, "--", fake)
	up := newUpstreamRecorder(t, first.url)
	cfg := filepath.Join(t.TempDir(), "config.json")
	httpWriteFile(t, cfg, fmt.Sprintf(`{"mcpServers":{"up":{"url":%q,"headers":{"Authorization":"Bearer upstream-credential"},
   "oauth":{"tokenURL":%q,"clientID":%q,"clientSecret":%q,"scopes":["upstream:read"]}}},
 "mcpgate":{"oauth":{"scopes":["mcp"]}}}`, up.URL+"/mcp", is.URL+"/token", oauthtest.CCClientID, oauthtest.CCClientSecret))
	g := startHTTPGateway(t, "--config", cfg, "--oauth-issuer", is.URL)
	var clientTokens []string
	for i := range 2 { // two sessions, two upstream sessions, one upstream token
		c := newHTTPClient(g.url)
		c.token = is.Token(is.Claims(fmt.Sprintf("user-%d", i), g.url, nil))
		clientTokens = append(clientTokens, c.token)
		c.initialize(t)
		c.mustEcho(t, 1)
	}
	_, auths := up.all()
	first0 := auths[0]
	for _, a := range auths {
		if a != first0 || !strings.HasPrefix(a, "Bearer ") {
			t.Fatalf("the upstream got Authorization %q, then %q: want one token throughout", first0, a)
		}
	}
	parts := strings.Split(strings.TrimPrefix(first0, "Bearer "), ".")
	if len(parts) != 3 {
		t.Fatalf("the upstream's token is not a JWT: %q", first0)
	}
	payload, _ := base64.RawURLEncoding.DecodeString(parts[1])
	var claims map[string]any
	_ = json.Unmarshal(payload, &claims)
	if claims["sub"] != oauthtest.CCClientID || claims["aud"] != up.URL+"/mcp" || claims["scope"] != "upstream:read" {
		t.Fatalf("the upstream's token claims %v", claims)
	}
	for _, tok := range clientTokens {
		assertNoTokenUpstreamAuth(t, up, tok)
	}
}

// assertNoTokenUpstreamAuth checks nothing of tok reached the upstream.
func assertNoTokenUpstreamAuth(t *testing.T, up *upstreamRecorder, tok string) {
	t.Helper()
	seen, _ := up.all()
	for _, part := range tokenParts(tok) {
		for _, s := range seen {
			if strings.Contains(s, part) && !strings.HasPrefix(part, "eyJhbGciOiJFUzI1NiIsImtpZCI6InRlc3Qta2V5LTEi") { // the shared JOSE header
				t.Fatal("the upstream was sent part of the client's token")
			}
		}
	}
}
