package e2e

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mcpgate/mcpgate/internal/oauth/oauthtest"
)

// upstreamRecorder is a reverse proxy in front of an upstream that keeps every
// request's headers and body, so a test can assert what the upstream was sent.
type upstreamRecorder struct {
	*httptest.Server
	mu   sync.Mutex
	seen []string // each request: its headers and body
	auth []string // the Authorization header of each request
}

func newUpstreamRecorder(t *testing.T, target string) *upstreamRecorder {
	u, err := url.Parse(target)
	if err != nil {
		t.Fatal(err)
	}
	rec := &upstreamRecorder{}
	proxy := httputil.NewSingleHostReverseProxy(&url.URL{Scheme: u.Scheme, Host: u.Host})
	rec.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		var hdr bytes.Buffer
		_ = r.Header.Write(&hdr)
		rec.mu.Lock()
		rec.seen = append(rec.seen, r.URL.String()+"\n"+hdr.String()+"\n"+string(body))
		rec.auth = append(rec.auth, r.Header.Get("Authorization"))
		rec.mu.Unlock()
		r.Body = io.NopCloser(bytes.NewReader(body))
		r.Header.Del("Authorization") // the first gateway serves loopback callers without tokens
		proxy.ServeHTTP(w, r)
	}))
	t.Cleanup(rec.Close)
	return rec
}

func (r *upstreamRecorder) all() ([]string, []string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.seen...), append([]string(nil), r.auth...)
}

// TestOAuthHTTP runs gateway run --listen as an OAuth protected resource in front of
// a remote upstream, against the test authorization server: discovery (RFC 9728
// metadata and the 401 challenge), JWT and introspected tokens into ctx.user and the
// record, static tokens beside them, every bad token refused with its error over both
// protocol revisions, and never a client token upstream, in a log or in a record.
func TestOAuthHTTP(t *testing.T) {
	_, fake := httpBinaries(t)
	first := startHTTPGateway(t, "--", fake)
	up := newUpstreamRecorder(t, first.url)
	is := oauthtest.New(t)
	dir := t.TempDir()
	pol := filepath.Join(dir, "policies")
	if err := os.Mkdir(pol, 0o755); err != nil {
		t.Fatal(err)
	}
	httpWriteFile(t, filepath.Join(pol, "whoami.js"), `if (ctx.phase === "pre" && ctx.tool === "whoami") {
  throw "user=" + ctx.user.userID + " client=" + ctx.user.callerId + " class=" + ctx.user.callerClass + " roles=" + ctx.user.roles.join(",") + " scopes=" + ctx.user.scopes.join(",");
}
`)
	httpWriteFile(t, filepath.Join(pol, "limit.js"), `if (ctx.phase === "pre" && ctx.tool === "echo" && ctx.params.text === "limited" && ctx.rateLimitExceeded(1)) {
  throw "rate limited " + ctx.user.userID;
}
`)
	const static = "static-token-for-a-small-setup"
	cfg := filepath.Join(dir, "config.json")
	httpWriteFile(t, cfg, fmt.Sprintf(`{"mcpServers":{"up":{"url":%q,"headers":{"Authorization":"Bearer upstream-credential"}}},
 "mcpgate":{"tokens":[{"sha256":"%s","userID":"static-user"}],
  "oauth":{"scopes":["mcp"],"scopeClasses":{"admin":"trusted"},"scopeRoles":{"admin":["ops"]},
   "introspection":{"clientID":%q,"clientSecret":%q}}}}`, up.URL+"/mcp", sha256hex(static), oauthtest.ClientID, oauthtest.ClientSecret))
	g := startHTTPGateway(t, "--config", cfg, "--policies", pol, "--oauth-issuer", is.URL)
	resource := g.url
	metaURL := strings.Replace(resource, "/mcp", "/.well-known/oauth-protected-resource/mcp", 1)

	// Discovery: the challenge names the metadata, which names the issuer.
	anon := newHTTPClient(g.url)
	r := anon.post(t, initBody)
	if ch := r.header.Get("WWW-Authenticate"); r.status != http.StatusUnauthorized ||
		ch != `Bearer resource_metadata="`+metaURL+`", scope="mcp"` {
		t.Fatalf("no token: %d %q", r.status, ch)
	}
	for _, u := range []string{metaURL, strings.TrimSuffix(metaURL, "/mcp")} {
		resp, err := http.Get(u)
		if err != nil {
			t.Fatal(err)
		}
		var m map[string]any
		_ = json.NewDecoder(resp.Body).Decode(&m)
		resp.Body.Close()
		if m["resource"] != resource || fmt.Sprint(m["authorization_servers"]) != "["+is.URL+"]" || fmt.Sprint(m["scopes_supported"]) != "[mcp]" {
			t.Fatalf("%s: %v", u, m)
		}
	}

	// A valid JWT: ctx.user and the record carry its subject, client and scopes.
	good := is.Token(is.Claims("alice", resource, map[string]any{"scope": "mcp admin", "roles": []string{"dev"}}))
	c := newHTTPClient(g.url)
	c.token = good
	c.initialize(t)
	c.mustEcho(t, 1)
	rec := httpWaitRecord(t, g, "echo", "ok")
	caller, _ := rec["caller"].(map[string]any)
	if caller["user_id"] != "alice" || caller["caller_id"] != "test-client" || caller["caller_class"] != "trusted" || fmt.Sprint(caller["scopes"]) != "[mcp admin]" {
		t.Fatalf("record caller %v", caller)
	}
	if got := httpResultText(c.call(t, 2, "whoami", nil)); !strings.Contains(got, "user=alice client=test-client class=trusted roles=dev,ops scopes=mcp,admin") {
		t.Fatalf("ctx.user: %q", got)
	}
	// The same subject with a fresh token that grants the same keeps its session (a
	// refreshed token); one that grants less does not (TestOAuthTokenPerRequest).
	c.token = is.Token(is.Claims("alice", resource, map[string]any{"scope": "mcp admin", "roles": []string{"dev"}}))
	c.mustEcho(t, 3)

	// An opaque token, introspected.
	is.Opaque("opaque-token-of-bob", map[string]any{"active": true, "sub": "bob", "client_id": "cli", "scope": "mcp", "exp": time.Now().Add(time.Hour).Unix(), "aud": resource})
	ob := newHTTPClient(g.url)
	ob.token = "opaque-token-of-bob"
	ob.initialize(t)
	if got := httpResultText(ob.call(t, 1, "whoami", nil)); !strings.Contains(got, "user=bob client=cli") {
		t.Fatalf("opaque ctx.user: %q", got)
	}
	// Another caller's session is not bob's.
	ob.sid = c.sid
	if r := ob.post(t, httpCallBody(2, "echo", map[string]any{"text": "x"})); r.status != http.StatusForbidden {
		t.Fatalf("bob in alice's session: %d", r.status)
	}
	// A static token still works beside OAuth.
	st := newHTTPClient(g.url)
	st.token = static
	st.initialize(t)
	if got := httpResultText(st.call(t, 1, "whoami", nil)); !strings.Contains(got, "user=static-user") {
		t.Fatalf("static ctx.user: %q", got)
	}

	// Rate limits count per subject: carol's second call in the hour is over 1, dave's first is not.
	limited := func(sub string) string {
		lc := newHTTPClient(g.url)
		lc.token = is.Token(is.Claims(sub, resource, nil))
		lc.initialize(t)
		httpResultText(lc.call(t, 1, "echo", map[string]any{"text": "limited"}))
		return httpResultText(lc.call(t, 2, "echo", map[string]any{"text": "limited"}))
	}
	if got := limited("carol"); !strings.Contains(got, "rate limited carol") {
		t.Fatalf("carol's second call: %q", got)
	}
	dc := newHTTPClient(g.url)
	dc.token = is.Token(is.Claims("dave", resource, nil))
	dc.initialize(t)
	if got := httpResultText(dc.call(t, 1, "echo", map[string]any{"text": "limited"})); got != "fakeup: limited" {
		t.Fatalf("dave's first call: %q", got)
	}

	// Every bad token, over both protocol revisions.
	bad := []struct{ name, token, status, code string }{
		{"wrong audience", is.Token(is.Claims("alice", "https://other.example.org/mcp", nil)), "401", "invalid_token"},
		{"wrong issuer", is.Token(is.Claims("alice", resource, map[string]any{"iss": "https://evil.example.org"})), "401", "invalid_token"},
		{"expired", is.Token(is.Claims("alice", resource, map[string]any{"exp": time.Now().Add(-time.Hour).Unix()})), "401", "invalid_token"},
		{"not yet valid", is.Token(is.Claims("alice", resource, map[string]any{"nbf": time.Now().Add(time.Hour).Unix()})), "401", "invalid_token"},
		{"alg none", is.None(is.Claims("alice", resource, nil)), "401", "invalid_token"},
		{"unknown key", is.UnknownKey(is.Claims("alice", resource, nil)), "401", "invalid_token"},
		{"forged kid", is.Forged(is.Claims("alice", resource, nil)), "401", "invalid_token"},
		{"inactive opaque", "opaque-token-nobody-issued", "401", "invalid_token"},
		{"60 KB", strings.Repeat("A", 60<<10), "401", "invalid_token"},
		{"no mcp scope", is.Token(is.Claims("alice", resource, map[string]any{"scope": "other"})), "403", "insufficient_scope"},
		{"1 MB", strings.Repeat("A", 1<<20), "431", ""}, // over the 64 KiB header limit: refused before it is read
	}
	secrets := []string{good, "opaque-token-of-bob", static}
	for _, rev := range []string{"2025-11-25", "2026-07-28"} {
		for _, tc := range bad {
			t.Run(rev+"/"+tc.name, func(t *testing.T) {
				secrets = append(secrets, tc.token)
				bc := newHTTPClient(g.url)
				bc.token = tc.token
				r, err := bc.do(context.Background(), http.MethodPost, firstRequest(rev), map[string]string{"MCP-Protocol-Version": rev})
				if err != nil {
					t.Fatal(err)
				}
				if fmt.Sprint(r.status) != tc.status {
					t.Fatalf("status %d, want %s", r.status, tc.status)
				}
				ch := r.header.Get("WWW-Authenticate")
				if tc.code != "" && (!strings.Contains(ch, `error="`+tc.code+`"`) || !strings.Contains(ch, `resource_metadata="`+metaURL+`"`)) {
					t.Fatalf("challenge %q", ch)
				}
				if tc.code == "insufficient_scope" && !strings.Contains(ch, `scope="mcp"`) {
					t.Fatalf("challenge %q names no scope", ch)
				}
			})
		}
	}

	// The upstream saw its own credential only, and never a client's token.
	seen, auths := up.all()
	if len(seen) == 0 {
		t.Fatal("the upstream saw nothing")
	}
	for _, a := range auths {
		if a != "Bearer upstream-credential" {
			t.Fatalf("the upstream got Authorization %q", a)
		}
	}
	logs := g.stderr.String()
	for _, s := range secrets {
		for _, part := range tokenParts(s) {
			for _, req := range seen {
				if strings.Contains(req, part) {
					t.Fatalf("the upstream was sent part of a client token")
				}
			}
			if strings.Contains(logs, part) {
				t.Fatalf("the log holds part of a client token")
			}
		}
	}
}

// TestOAuthBadKeySet: an issuer whose JWKS hangs or is garbage gets every JWT
// refused with 401 invalid_token, in bounded time, over both revisions.
func TestOAuthBadKeySet(t *testing.T) {
	_, fake := httpBinaries(t)
	for _, mode := range []string{"garbage", "hang"} {
		t.Run(mode, func(t *testing.T) {
			t.Parallel()
			is := oauthtest.New(t)
			is.SetJWKS(mode)
			g := startHTTPGateway(t, "--oauth-issuer", is.URL, "--", fake)
			tok := is.Token(is.Claims("alice", g.url, nil))
			var wg sync.WaitGroup
			for _, rev := range []string{"2025-11-25", "2026-07-28"} {
				wg.Add(1)
				go func() {
					defer wg.Done()
					c := newHTTPClient(g.url)
					c.token = tok
					start := time.Now()
					r, err := c.do(context.Background(), http.MethodPost, firstRequest(rev), map[string]string{"MCP-Protocol-Version": rev})
					if err != nil {
						t.Error(err)
						return
					}
					if ch := r.header.Get("WWW-Authenticate"); r.status != http.StatusUnauthorized || !strings.Contains(ch, `error="invalid_token"`) {
						t.Errorf("%s: %d %q", rev, r.status, ch)
					}
					if d := time.Since(start); d > 15*time.Second {
						t.Errorf("%s: took %v", rev, d)
					}
				}()
			}
			wg.Wait()
			for _, part := range tokenParts(tok) {
				if strings.Contains(g.stderr.String(), part) {
					t.Fatal("the log holds part of the token")
				}
			}
		})
	}
}

// TestOAuthResourceHost: with --oauth-audience naming a public host, requests for that
// host pass the DNS rebinding check (and get the OAuth challenge); other hosts do not.
func TestOAuthResourceHost(t *testing.T) {
	_, fake := httpBinaries(t)
	is := oauthtest.New(t)
	g := startHTTPGateway(t, "--oauth-issuer", is.URL, "--oauth-audience", "https://mcp.example.org/mcp", "--", fake)
	for host, want := range map[string]int{"mcp.example.org": http.StatusUnauthorized, "evil.example.org": http.StatusForbidden} {
		req, _ := http.NewRequest(http.MethodPost, g.url, strings.NewReader(initBody))
		req.Host = host
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != want {
			t.Errorf("Host %s: %d, want %d", host, resp.StatusCode, want)
		}
		if want == http.StatusUnauthorized && !strings.Contains(resp.Header.Get("WWW-Authenticate"), `resource_metadata="https://mcp.example.org/.well-known/oauth-protected-resource/mcp"`) {
			t.Errorf("challenge %q", resp.Header.Get("WWW-Authenticate"))
		}
	}
}

const initBody = `{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"e2e","version":"1"}}}`

// firstRequest is a client's first request in a protocol revision: initialize in
// 2025-11-25, the sessionless server/discover in 2026-07-28.
func firstRequest(rev string) string {
	if rev == "2026-07-28" {
		return `{"jsonrpc":"2.0","id":0,"method":"server/discover","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"}}}`
	}
	return initBody
}

// tokenParts are the pieces of a token worth looking for: the whole of a short one,
// each base64url part of a JWT, or a 32-byte window of a long one.
func tokenParts(tok string) []string {
	if len(tok) > 1024 {
		return []string{tok[:32]}
	}
	var out []string
	for _, p := range strings.Split(tok, ".") {
		if len(p) >= 16 {
			out = append(out, p)
		}
	}
	if len(out) == 0 {
		out = append(out, tok)
	}
	return out
}

func sha256hex(s string) string {
	sum := sha256.Sum256([]byte(s))
	return hex.EncodeToString(sum[:])
}
