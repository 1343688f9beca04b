package oauth

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/lestrrat-go/jwx/v3/jwa"
	"github.com/lestrrat-go/jwx/v3/jwk"
	"github.com/lestrrat-go/jwx/v3/jws"
)

const testAudience = "https://mcp.example.org/mcp"

// testIssuer is an authorization server on loopback: RFC 8414 metadata, a JWKS whose
// keys and behaviour a test changes, and an introspection endpoint.
type testIssuer struct {
	t   testing.TB
	srv *httptest.Server

	mu       sync.Mutex
	keys     []jwk.Key // public keys served
	jwksMode string    // "", "hang", "garbage"
	active   map[string]map[string]any

	jwksHits, introHits, metaHits atomic.Int64
	release                       chan struct{}
}

func newTestIssuer(t testing.TB) *testIssuer {
	ti := &testIssuer{t: t, active: map[string]map[string]any{}, release: make(chan struct{})}
	mux := http.NewServeMux()
	mux.HandleFunc("/.well-known/oauth-authorization-server", func(w http.ResponseWriter, r *http.Request) {
		ti.metaHits.Add(1)
		_ = json.NewEncoder(w).Encode(map[string]string{"issuer": ti.srv.URL, "jwks_uri": ti.srv.URL + "/jwks", "introspection_endpoint": ti.srv.URL + "/introspect"})
	})
	mux.HandleFunc("/jwks", func(w http.ResponseWriter, r *http.Request) {
		ti.jwksHits.Add(1)
		ti.mu.Lock()
		mode, keys := ti.jwksMode, ti.keys
		ti.mu.Unlock()
		switch mode {
		case "hang":
			select {
			case <-ti.release:
			case <-r.Context().Done():
			}
			return
		case "garbage":
			_, _ = w.Write([]byte(`{"keys": [{"kty": "RSA", "n": 12}]} trailing`))
			return
		}
		set := jwk.NewSet()
		for _, k := range keys {
			_ = set.AddKey(k)
		}
		_ = json.NewEncoder(w).Encode(set)
	})
	mux.HandleFunc("/introspect", func(w http.ResponseWriter, r *http.Request) {
		ti.introHits.Add(1)
		id, secret, ok := r.BasicAuth()
		if !ok || id != "gw" || secret != "s3cret" {
			http.Error(w, "bad client", http.StatusUnauthorized)
			return
		}
		ti.mu.Lock()
		c, ok := ti.active[r.PostFormValue("token")]
		ti.mu.Unlock()
		if !ok {
			c = map[string]any{"active": false}
		}
		_ = json.NewEncoder(w).Encode(c)
	})
	ti.srv = httptest.NewServer(mux)
	t.Cleanup(func() { close(ti.release); ti.srv.Close() })
	return ti
}

func (ti *testIssuer) setKeys(keys ...jwk.Key) {
	ti.mu.Lock()
	ti.keys = keys
	ti.mu.Unlock()
}

// signer is a private key with its kid.
type signer struct {
	alg jwa.SignatureAlgorithm
	key any
	kid string
}

func newEC(t testing.TB, kid string) (signer, jwk.Key) {
	t.Helper()
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	pub, err := jwk.Import(&k.PublicKey)
	if err != nil {
		t.Fatal(err)
	}
	_ = pub.Set(jwk.KeyIDKey, kid)
	return signer{jwa.ES256(), k, kid}, pub
}

func (s signer) sign(t testing.TB, claims map[string]any) string {
	t.Helper()
	payload, _ := json.Marshal(claims)
	hdr := jws.NewHeaders()
	if s.kid != "" {
		_ = hdr.Set("kid", s.kid)
	}
	_ = hdr.Set("typ", "at+jwt")
	b, err := jws.Sign(payload, jws.WithKey(s.alg, s.key, jws.WithProtectedHeaders(hdr)))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) now() time.Time      { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *clock) add(d time.Duration) { c.mu.Lock(); c.t = c.t.Add(d); c.mu.Unlock() }

func newValidator(t testing.TB, ti *testIssuer, clk *clock, mod func(*Config)) *Validator {
	t.Helper()
	cfg := Config{Issuer: ti.srv.URL, Audience: testAudience, Scopes: []string{"mcp"},
		Introspection: &Introspection{ClientID: "gw", ClientSecret: "s3cret"}}
	if mod != nil {
		mod(&cfg)
	}
	v, err := New(Options{Config: cfg, Now: clk.now, FetchTimeout: 300 * time.Millisecond, KeysMinRefresh: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	return v
}

func claims(clk *clock, mod map[string]any) map[string]any {
	c := map[string]any{"iss": "", "aud": testAudience, "sub": "alice", "client_id": "claude",
		"scope": "mcp tools:read", "exp": clk.now().Add(10 * time.Minute).Unix(), "iat": clk.now().Unix()}
	for k, v := range mod {
		if v == nil {
			delete(c, k)
		} else {
			c[k] = v
		}
	}
	return c
}

func b64(v any) string {
	b, _ := json.Marshal(v)
	return base64.RawURLEncoding.EncodeToString(b)
}

// TestValidateJWT: every bad token is refused with invalid_token and its own reason,
// and no error text holds any part of the token.
func TestValidateJWT(t *testing.T) {
	ti := newTestIssuer(t)
	clk := &clock{t: time.Now()}
	good, goodPub := newEC(t, "k1")
	ti.setKeys(goodPub)
	v := newValidator(t, ti, clk, nil)
	iss := ti.srv.URL
	cl := func(mod map[string]any) map[string]any {
		c := claims(clk, mod)
		if _, ok := mod["iss"]; !ok {
			c["iss"] = iss
		}
		return c
	}
	attacker, _ := newEC(t, "k1") // same kid, another key: a forged kid
	stranger, _ := newEC(t, "k9") // a kid the issuer does not publish
	rsaKey, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	rsaPub, _ := jwk.Import(&rsaKey.PublicKey)
	_ = rsaPub.Set(jwk.KeyIDKey, "r1")
	ti.setKeys(goodPub, rsaPub)
	der, _ := x509.MarshalPKIXPublicKey(&rsaKey.PublicKey)
	pubPEM := pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: der})
	hmacWithPub := signer{jwa.HS256(), pubPEM, "r1"} // the classic confusion: HMAC keyed by the public key
	payload := b64(cl(nil))
	cases := []struct {
		name, token, code, reason string
	}{
		{"valid", good.sign(t, cl(nil)), "", ""},
		{"aud in a list", good.sign(t, cl(map[string]any{"aud": []string{"other", testAudience}})), "", ""},
		{"wrong audience", good.sign(t, cl(map[string]any{"aud": "https://other.example.org/mcp"})), CodeInvalidToken, "wrong_audience"},
		{"no audience", good.sign(t, cl(map[string]any{"aud": nil})), CodeInvalidToken, "audience_not_confirmed"},
		{"empty audience list", good.sign(t, cl(map[string]any{"aud": []string{}})), CodeInvalidToken, "audience_not_confirmed"},
		{"audience in canonical form", good.sign(t, cl(map[string]any{"aud": "HTTPS://MCP.example.org:443/mcp"})), "", ""},
		{"audience with another path", good.sign(t, cl(map[string]any{"aud": testAudience + "/"})), CodeInvalidToken, "wrong_audience"},
		{"wrong issuer", good.sign(t, cl(map[string]any{"iss": "https://evil.example.org"})), CodeInvalidToken, "wrong_issuer"},
		{"expired", good.sign(t, cl(map[string]any{"exp": clk.now().Add(-2 * time.Minute).Unix()})), CodeInvalidToken, "token_expired"},
		{"expired within the skew", good.sign(t, cl(map[string]any{"exp": clk.now().Add(-30 * time.Second).Unix()})), "", ""},
		{"not yet valid", good.sign(t, cl(map[string]any{"nbf": clk.now().Add(5 * time.Minute).Unix()})), CodeInvalidToken, "token_not_yet_valid"},
		{"no exp", good.sign(t, cl(map[string]any{"exp": nil})), CodeInvalidToken, "missing_claim"},
		{"no sub", good.sign(t, cl(map[string]any{"sub": nil})), CodeInvalidToken, "missing_claim"},
		{"sub too long", good.sign(t, cl(map[string]any{"sub": strings.Repeat("a", 300)})), CodeInvalidToken, "claim_too_long"},
		{"alg none", b64(map[string]string{"alg": "none", "kid": "k1"}) + "." + payload + ".", CodeInvalidToken, "alg_none"},
		{"alg NONE", b64(map[string]string{"alg": "NONE"}) + "." + payload + ".", CodeInvalidToken, "alg_none"},
		{"no alg", b64(map[string]string{"kid": "k1"}) + "." + payload + ".", CodeInvalidToken, "alg_none"},
		{"HMAC with the public key", hmacWithPub.sign(t, cl(nil)), CodeInvalidToken, "alg_not_allowed"},
		{"unknown key", stranger.sign(t, cl(nil)), CodeInvalidToken, "unknown_key"},
		{"forged kid", attacker.sign(t, cl(nil)), CodeInvalidToken, "bad_signature"},
		{"kid of a key of another type", signer{jwa.ES256(), attacker.key, "r1"}.sign(t, cl(nil)), CodeInvalidToken, "key_mismatch"},
		{"no kid, two keys", signer{jwa.ES256(), good.key, ""}.sign(t, cl(nil)), CodeInvalidToken, "unknown_key"},
		{"tampered payload", strings.Join([]string{strings.Split(good.sign(t, cl(nil)), ".")[0], b64(cl(map[string]any{"sub": "root"})), strings.Split(good.sign(t, cl(nil)), ".")[2]}, "."), CodeInvalidToken, "bad_signature"},
		{"crit header", b64(map[string]any{"alg": "ES256", "kid": "k1", "crit": []string{"x"}}) + "." + payload + ".c2ln", CodeInvalidToken, "malformed"},
		{"1 MB", strings.Repeat("a", 1<<20), CodeInvalidToken, "token_too_long"},
		{"missing scope", good.sign(t, cl(map[string]any{"scope": "tools:read"})), CodeInsufficientScope, "insufficient_scope"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			p, err := v.Validate(context.Background(), tc.token)
			if tc.code == "" {
				if err != nil {
					t.Fatalf("refused: %v", err)
				}
				if p.Subject != "alice" || p.ClientID != "claude" || strings.Join(p.Scopes, " ") != "mcp tools:read" {
					t.Fatalf("principal %+v", p)
				}
				return
			}
			var e *Error
			if !errors.As(err, &e) || e.Code != tc.code || e.Reason != tc.reason {
				t.Fatalf("got %#v, want %s/%s", err, tc.code, tc.reason)
			}
			for _, part := range strings.Split(tc.token, ".") {
				if len(part) > 8 && strings.Contains(err.Error()+e.Scope+v.Challenge(e), part) {
					t.Fatalf("the error holds part of the token: %v", err)
				}
			}
			if tc.code == CodeInsufficientScope && e.Scope != "mcp" {
				t.Fatalf("scope %q, want mcp", e.Scope)
			}
		})
	}
}

// TestKeyRotation: a token signed by a new key fetches the set again; tokens naming
// made-up kids fetch it at most once per KeysMinRefresh.
func TestKeyRotation(t *testing.T) {
	ti := newTestIssuer(t)
	clk := &clock{t: time.Now()}
	k1, pub1 := newEC(t, "k1")
	ti.setKeys(pub1)
	v := newValidator(t, ti, clk, nil)
	c := claims(clk, map[string]any{"iss": ti.srv.URL})
	if _, err := v.Validate(context.Background(), k1.sign(t, c)); err != nil {
		t.Fatal(err)
	}
	k2, pub2 := newEC(t, "k2")
	ti.setKeys(pub1, pub2)
	clk.add(2 * time.Second) // past KeysMinRefresh
	if _, err := v.Validate(context.Background(), k2.sign(t, c)); err != nil {
		t.Fatalf("rotated key: %v", err)
	}
	before := ti.jwksHits.Load()
	for i := range 50 {
		s, _ := newEC(t, fmt.Sprintf("made-up-%d", i))
		if _, err := v.Validate(context.Background(), s.sign(t, c)); err == nil {
			t.Fatal("a made-up kid was accepted")
		}
	}
	if n := ti.jwksHits.Load() - before; n > 0 {
		t.Fatalf("50 made-up kids within KeysMinRefresh fetched the JWKS %d times, want 0", n)
	}
	clk.add(2 * time.Second)
	for i := range 20 {
		s, _ := newEC(t, fmt.Sprintf("made-up-again-%d", i))
		_, _ = v.Validate(context.Background(), s.sign(t, c))
	}
	if n := ti.jwksHits.Load() - before; n != 1 {
		t.Fatalf("after KeysMinRefresh, 20 made-up kids fetched the JWKS %d times, want 1", n)
	}
	// Keys age out: past KeysMaxAge the set is fetched again, and a failure keeps the old keys.
	ti.mu.Lock()
	ti.jwksMode = "garbage"
	ti.mu.Unlock()
	clk.add(2 * time.Hour)
	if _, err := v.Validate(context.Background(), k1.sign(t, claims(clk, map[string]any{"iss": ti.srv.URL}))); err != nil {
		t.Fatalf("a failed refetch dropped the keys it had: %v", err)
	}
}

// TestBadKeySet: a JWKS that hangs or is garbage refuses tokens with invalid_token
// (keys_unavailable), in bounded time.
func TestBadKeySet(t *testing.T) {
	for _, mode := range []string{"hang", "garbage"} {
		t.Run(mode, func(t *testing.T) {
			ti := newTestIssuer(t)
			clk := &clock{t: time.Now()}
			k, pub := newEC(t, "k1")
			ti.setKeys(pub)
			ti.jwksMode = mode
			v := newValidator(t, ti, clk, nil)
			start := time.Now()
			_, err := v.Validate(context.Background(), k.sign(t, claims(clk, map[string]any{"iss": ti.srv.URL})))
			var e *Error
			if !errors.As(err, &e) || e.Code != CodeInvalidToken || e.Reason != "keys_unavailable" {
				t.Fatalf("got %v, want invalid_token keys_unavailable", err)
			}
			if d := time.Since(start); d > 3*time.Second {
				t.Fatalf("took %v", d)
			}
		})
	}
}

// TestIntrospection: opaque tokens are checked with the issuer, the answer cached by
// hash no longer than the token lives.
func TestIntrospection(t *testing.T) {
	ti := newTestIssuer(t)
	clk := &clock{t: time.Now()}
	v := newValidator(t, ti, clk, nil)
	exp := clk.now().Add(2 * time.Minute).Unix()
	ti.active["opaque-good"] = map[string]any{"active": true, "sub": "bob", "client_id": "cli", "scope": "mcp", "exp": exp, "iss": ti.srv.URL, "aud": []any{"cli", testAudience}}
	ti.active["opaque-noaud"] = map[string]any{"active": true, "sub": "bob", "client_id": "cli", "scope": "mcp"}
	ti.active["opaque-aud"] = map[string]any{"active": true, "sub": "bob", "scope": "mcp", "aud": "https://other/mcp"}
	ti.active["opaque-iss"] = map[string]any{"active": true, "sub": "bob", "scope": "mcp", "iss": "https://evil", "aud": testAudience}
	ti.active["opaque-exp"] = map[string]any{"active": true, "sub": "bob", "scope": "mcp", "exp": clk.now().Add(-time.Hour).Unix(), "aud": testAudience}
	ti.active["opaque-nbf"] = map[string]any{"active": true, "sub": "bob", "scope": "mcp", "nbf": clk.now().Add(time.Hour).Unix(), "aud": testAudience}
	ti.active["opaque-noscope"] = map[string]any{"active": true, "sub": "bob", "scope": "other", "aud": testAudience}
	for tok, reason := range map[string]string{"opaque-good": "", "opaque-aud": "wrong_audience", "opaque-iss": "wrong_issuer",
		"opaque-exp": "token_expired", "opaque-nbf": "token_not_yet_valid", "opaque-unknown": "token_inactive", "opaque-noscope": "insufficient_scope",
		"opaque-noaud": "audience_not_confirmed"} {
		p, err := v.Validate(context.Background(), tok)
		if reason == "" {
			if err != nil || p.Subject != "bob" || p.ClientID != "cli" {
				t.Fatalf("%s: %+v %v", tok, p, err)
			}
			continue
		}
		var e *Error
		if !errors.As(err, &e) || e.Reason != reason || strings.Contains(err.Error(), tok) {
			t.Fatalf("%s: got %v, want %s", tok, err, reason)
		}
	}
	hits := ti.introHits.Load()
	if _, err := v.Validate(context.Background(), "opaque-good"); err != nil {
		t.Fatal(err)
	}
	if ti.introHits.Load() != hits {
		t.Fatal("a cached answer was asked again")
	}
	for k := range v.intro.cache.m {
		if strings.Contains(string(k[:]), "opaque") {
			t.Fatal("the cache keys hold the token")
		}
	}
	clk.add(3 * time.Minute) // past the token's exp, within the cache TTL
	delete(ti.active, "opaque-good")
	if _, err := v.Validate(context.Background(), "opaque-good"); err == nil {
		t.Fatal("an answer was reused past the token's exp")
	}
	if ti.introHits.Load() != hits+1 {
		t.Fatal("an expired cache entry was not asked again")
	}
	// No introspection configured: a token that is not a JWT is malformed.
	v2 := newValidator(t, ti, clk, func(c *Config) { c.Introspection = nil })
	if _, err := v2.Validate(context.Background(), "opaque-good"); err == nil || err.(*Error).Reason != "malformed" {
		t.Fatalf("got %v", err)
	}
	// Wrong client credentials: the issuer refuses; the token is refused, not let through.
	v3 := newValidator(t, ti, clk, func(c *Config) { c.Introspection.ClientSecret = "wrong" })
	if _, err := v3.Validate(context.Background(), "opaque-good"); err == nil || err.(*Error).Reason != "introspection_unavailable" {
		t.Fatalf("got %v", err)
	}
}

func TestUserMapping(t *testing.T) {
	ti := newTestIssuer(t)
	clk := &clock{t: time.Now()}
	v := newValidator(t, ti, clk, func(c *Config) {
		c.ScopeClasses = map[string]string{"mcp:admin": "trusted", "mcp:guest": "untrusted"}
		c.ScopeRoles = map[string][]string{"mcp:write": {"writer"}}
	})
	classFor := func(id string) string {
		if id == "ci-bot" {
			return "trusted"
		}
		return "standard"
	}
	for _, tc := range []struct {
		p     Principal
		class string
		roles string
	}{
		{Principal{Subject: "a", ClientID: "c", Scopes: []string{"mcp"}}, "standard", ""},
		{Principal{Subject: "a", ClientID: "c", Scopes: []string{"mcp", "mcp:admin"}, Roles: []string{"dev"}}, "trusted", "dev"},
		{Principal{Subject: "a", ClientID: "c", Scopes: []string{"mcp:admin", "mcp:guest"}}, "untrusted", ""},
		{Principal{Subject: "a", ClientID: "ci-bot", Scopes: []string{"mcp:write"}, Roles: []string{"dev"}}, "trusted", "dev writer"},
	} {
		u := v.User(tc.p, classFor)
		if u.UserID != "a" || u.CallerID != tc.p.ClientID || u.CallerClass != tc.class || strings.Join(u.Roles, " ") != tc.roles || len(u.Scopes) != len(tc.p.Scopes) {
			t.Errorf("%+v → %+v", tc.p, u)
		}
	}
	// Claims by path: Keycloak's realm_access.roles, Entra's scp.
	p, err := v.principal(map[string]any{"sub": "s", "azp": "kc", "scp": "mcp x", "realm_access": map[string]any{"roles": []any{"r1", "r2"}}})
	if err != nil {
		t.Fatal(err)
	}
	v.cfg.Claims.Roles = "realm_access.roles"
	p2, _ := v.principal(map[string]any{"sub": "s", "azp": "kc", "scp": []any{"mcp"}, "realm_access": map[string]any{"roles": []any{"r1", "r2"}}})
	if p.ClientID != "kc" || strings.Join(p.Scopes, " ") != "mcp x" || len(p.Roles) != 0 || strings.Join(p2.Roles, " ") != "r1 r2" || strings.Join(p2.Scopes, " ") != "mcp" {
		t.Fatalf("%+v %+v", p, p2)
	}
	// The tenant claim by path: a string is ctx.user.tenant; anything else names none,
	// and an unconfigured claim is never read.
	org := map[string]any{"sub": "s", "org": map[string]any{"id": "acme"}, "tenant": "other"}
	if p, _ := v.principal(org); p.Tenant != "" {
		t.Fatalf("no tenant claim configured: %q", p.Tenant)
	}
	v.cfg.Claims.Tenant = "org.id"
	p3, _ := v.principal(org)
	p4, _ := v.principal(map[string]any{"sub": "s", "org": map[string]any{"id": 7}})
	if p3.Tenant != "acme" || v.User(p3, nil).Tenant != "acme" || p4.Tenant != "" {
		t.Fatalf("tenants %q %q", p3.Tenant, p4.Tenant)
	}
	if _, err := v.principal(map[string]any{"sub": "s", "org": map[string]any{"id": strings.Repeat("t", MaxIDBytes+1)}}); err == nil {
		t.Fatal("a tenant claim over 256 bytes was taken")
	}
	// a string that is not a tenant name names none (it can select no layer, and
	// must not reach ctx.user.tenant or a record as it is)
	for _, hostile := range []string{"acme\n", "acme\x00", "../acme", "acme/../x", " acme", "acme corp", ".acme", "-acme",
		"\u0430cme", strings.Repeat("t", 65), "acme\u202e"} {
		if p, err := v.principal(map[string]any{"sub": "s", "org": map[string]any{"id": hostile}}); err != nil || p.Tenant != "" {
			t.Errorf("tenant claim %q: %q, %v", hostile, p.Tenant, err)
		}
	}
	if p, _ := v.principal(map[string]any{"sub": "s", "org": map[string]any{"id": "Acme_1.eu-west"}}); p.Tenant != "Acme_1.eu-west" {
		t.Errorf("a tenant name was not taken: %q", p.Tenant)
	}
}

func TestConfigValidate(t *testing.T) {
	for _, tc := range []struct {
		c    Config
		want string
	}{
		{Config{Algorithms: []string{"none"}}, "never accepted"},
		{Config{Algorithms: []string{"HS256"}}, "HMAC"},
		{Config{Algorithms: []string{"XX1"}}, "not one of"},
		{Config{ClockSkew: "1h"}, "clockSkew"},
		{Config{ScopeClasses: map[string]string{"a": "root"}}, "caller class"},
		{Config{Introspection: &Introspection{ClientID: "x"}}, "clientSecret"},
		{Config{JWKSURL: "file:///etc/keys"}, "jwksURL"},
	} {
		if err := tc.c.Validate(); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%+v: %v, want %q", tc.c, err, tc.want)
		}
	}
	if _, err := New(Options{Config: Config{Issuer: "https://i", Audience: "mcp"}}); err == nil {
		t.Error("a relative audience was accepted")
	}
}

func TestChallengeAndMetadata(t *testing.T) {
	ti := newTestIssuer(t)
	v := newValidator(t, ti, &clock{t: time.Now()}, func(c *Config) { c.Scopes = []string{"mcp", "tools"} })
	if got, want := v.Challenge(nil), `Bearer resource_metadata="https://mcp.example.org/.well-known/oauth-protected-resource/mcp", scope="mcp tools"`; got != want {
		t.Errorf("challenge\n got %s\nwant %s", got, want)
	}
	got := v.Challenge(invalid("token_expired", "the token has expired"))
	if !strings.HasPrefix(got, `Bearer error="invalid_token", error_description="the token has expired", resource_metadata=`) {
		t.Errorf("challenge %s", got)
	}
	if p := v.MetadataPaths(); strings.Join(p, " ") != "/.well-known/oauth-protected-resource/mcp /.well-known/oauth-protected-resource" {
		t.Errorf("paths %v", p)
	}
	rec := httptest.NewRecorder()
	v.MetadataHandler().ServeHTTP(rec, httptest.NewRequest("GET", "/.well-known/oauth-protected-resource/mcp", nil))
	var m Metadata
	if err := json.Unmarshal(rec.Body.Bytes(), &m); err != nil || m.Resource != testAudience || m.AuthorizationServers[0] != ti.srv.URL || len(m.ScopesSupported) != 2 {
		t.Errorf("metadata %s %v", rec.Body, err)
	}
}

func TestMetadataURLs(t *testing.T) {
	got := metadataURLs("https://idp.example.org/realms/acme")
	if got[0] != "https://idp.example.org/.well-known/oauth-authorization-server/realms/acme" || got[1] != "https://idp.example.org/realms/acme/.well-known/openid-configuration" {
		t.Errorf("%v", got)
	}
	got = metadataURLs("http://localhost:9998/")
	if got[0] != "http://localhost:9998/.well-known/oauth-authorization-server" || got[1] != "http://localhost:9998/.well-known/openid-configuration" {
		t.Errorf("%v", got)
	}
}

// TestJWTCache: a verified JWT is taken on its hash for at most jwtCacheTTL; after it,
// the token is verified again (here against a key set that no longer has its key).
func TestJWTCache(t *testing.T) {
	ti := newTestIssuer(t)
	clk := &clock{t: time.Now()}
	k1, pub1 := newEC(t, "k1")
	_, pub2 := newEC(t, "k2")
	ti.setKeys(pub1)
	v, err := New(Options{Config: Config{Issuer: ti.srv.URL, Audience: testAudience, Scopes: []string{"mcp"}}, Now: clk.now,
		KeysMaxAge: 30 * time.Second, KeysMinRefresh: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	tok := k1.sign(t, claims(clk, map[string]any{"iss": ti.srv.URL}))
	if _, err := v.Validate(context.Background(), tok); err != nil {
		t.Fatal(err)
	}
	ti.setKeys(pub2)          // k1 withdrawn
	clk.add(40 * time.Second) // the key set is stale: a verification would fetch it again
	hits := ti.jwksHits.Load()
	if _, err := v.Validate(context.Background(), tok); err != nil {
		t.Fatalf("within the cache TTL: %v", err)
	}
	if ti.jwksHits.Load() != hits {
		t.Fatal("a cached token was verified again")
	}
	clk.add(jwtCacheTTL - 30*time.Second)
	if _, err := v.Validate(context.Background(), tok); err == nil || err.(*Error).Reason != "unknown_key" {
		t.Fatalf("past the cache TTL, with its key withdrawn: %v", err)
	}
}

// TestIntrospectionAudience: an introspection answer must name the gateway's resource
// URI in aud, or in resource where the provider answers with the RFC 8707 resource
// indicators; one that names none is refused as audience_not_confirmed unless
// AcceptMissingAudience is set, and one that names only others is refused whatever
// it says.
func TestIntrospectionAudience(t *testing.T) {
	ti := newTestIssuer(t)
	clk := &clock{t: time.Now()}
	strict := newValidator(t, ti, clk, nil)
	lenient := newValidator(t, ti, clk, func(c *Config) { c.AcceptMissingAudience = true })
	answers := []struct {
		name            string
		answer          map[string]any
		strict, lenient string // reason, "" for accepted
	}{
		{"aud names us", map[string]any{"aud": testAudience}, "", ""},
		{"aud list names us", map[string]any{"aud": []any{"web", testAudience}}, "", ""},
		{"resource names us", map[string]any{"resource": testAudience}, "", ""},
		{"resource list names us, aud the client", map[string]any{"aud": "web", "resource": []any{testAudience}}, "", ""},
		{"no audience", map[string]any{}, "audience_not_confirmed", ""},
		{"null aud", map[string]any{"aud": nil}, "audience_not_confirmed", ""},
		{"aud names another", map[string]any{"aud": "https://other.example.org/mcp"}, "wrong_audience", "wrong_audience"},
		{"aud names the client only", map[string]any{"aud": []any{"web"}}, "wrong_audience", "wrong_audience"},
		{"resource names another", map[string]any{"resource": "https://other.example.org/mcp"}, "wrong_audience", "wrong_audience"},
	}
	for i, a := range answers {
		tok := fmt.Sprintf("opaque-aud-%d", i)
		ans := map[string]any{"active": true, "sub": "bob", "scope": "mcp"}
		for k, v := range a.answer {
			ans[k] = v
		}
		ti.active[tok] = ans
		for _, c := range []struct {
			v    *Validator
			want string
		}{{strict, a.strict}, {lenient, a.lenient}} {
			_, err := c.v.Validate(context.Background(), tok)
			var e *Error
			switch {
			case c.want == "" && err != nil:
				t.Errorf("%s (accept missing %v): %v", a.name, c.v == lenient, err)
			case c.want != "" && (!errors.As(err, &e) || e.Reason != c.want || e.Code != CodeInvalidToken):
				t.Errorf("%s (accept missing %v): got %v, want %s", a.name, c.v == lenient, err, c.want)
			case c.want == "audience_not_confirmed" && !strings.Contains(err.Error(), "audience not confirmed"):
				t.Errorf("%s: %v", a.name, err)
			}
		}
	}
}

// TestCanonicalResource: resource URIs compare in RFC 8707 / RFC 3986 canonical form.
func TestCanonicalResource(t *testing.T) {
	for _, c := range []struct {
		a, b string
		same bool
	}{
		{"https://mcp.example.org/mcp", "HTTPS://MCP.Example.org/mcp", true},
		{"https://mcp.example.org/mcp", "https://mcp.example.org:443/mcp", true},
		{"http://127.0.0.1:80/mcp", "http://127.0.0.1/mcp", true},
		{"https://mcp.example.org", "https://mcp.example.org/", true},
		{"https://mcp.example.org/mcp", "https://mcp.example.org/MCP", false},
		{"https://mcp.example.org/mcp", "https://mcp.example.org/mcp/", false},
		{"https://mcp.example.org/mcp", "http://mcp.example.org/mcp", false},
		{"https://mcp.example.org/mcp", "https://mcp.example.org:8443/mcp", false},
		{"https://mcp.example.org/mcp", "https://user@mcp.example.org/mcp", false},
		{"web", "WEB", false},
	} {
		if got := canonicalResource(c.a) == canonicalResource(c.b); got != c.same {
			t.Errorf("%q vs %q: same=%v, want %v", c.a, c.b, got, c.same)
		}
	}
}
