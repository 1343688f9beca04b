// Package oauthtest is an OAuth 2.1 authorization server for tests, on loopback
// (httptest): RFC 8414 metadata, a JWKS of one ES256 key, and RFC 7662 introspection
// of the opaque tokens a test registers. It mints valid and deliberately bad tokens.
package oauthtest

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/lestrrat-go/jwx/v3/jwa"
	"github.com/lestrrat-go/jwx/v3/jwk"
	"github.com/lestrrat-go/jwx/v3/jws"
)

// Client credentials the Issuer accepts: the gateway's, at the introspection
// endpoint, and an MCP client's, for the client credentials grant at /token.
const (
	ClientID     = "mcpgate"
	ClientSecret = "introspection-secret"

	CCClientID     = "cc-client"
	CCClientSecret = "cc-secret"
)

// Issuer is a running test authorization server.
type Issuer struct {
	URL string
	t   testing.TB
	srv *httptest.Server

	key, other *ecdsa.PrivateKey
	kid        string

	mu      sync.Mutex
	mode    string // JWKS behaviour: "", "hang" or "garbage"
	opaque  map[string]map[string]any
	release chan struct{}
}

// New starts an Issuer, stopped when the test ends.
func New(t testing.TB) *Issuer {
	t.Helper()
	is := &Issuer{t: t, kid: "test-key-1", opaque: map[string]map[string]any{}, release: make(chan struct{})}
	var err error
	if is.key, err = ecdsa.GenerateKey(elliptic.P256(), rand.Reader); err != nil {
		t.Fatal(err)
	}
	if is.other, err = ecdsa.GenerateKey(elliptic.P256(), rand.Reader); err != nil {
		t.Fatal(err)
	}
	mux := http.NewServeMux()
	mux.HandleFunc("/.well-known/oauth-authorization-server", func(w http.ResponseWriter, _ *http.Request) {
		_ = json.NewEncoder(w).Encode(map[string]any{"issuer": is.URL, "jwks_uri": is.URL + "/jwks",
			"introspection_endpoint": is.URL + "/introspect", "token_endpoint": is.URL + "/token",
			"authorization_endpoint": is.URL + "/authorize", "response_types_supported": []string{"code"},
			"code_challenge_methods_supported": []string{"S256"}, "grant_types_supported": []string{"client_credentials"},
			"token_endpoint_auth_methods_supported": []string{"client_secret_basic"}})
	})
	mux.HandleFunc("/token", is.token)
	mux.HandleFunc("/jwks", is.jwks)
	mux.HandleFunc("/introspect", func(w http.ResponseWriter, r *http.Request) {
		id, secret, ok := r.BasicAuth()
		if !ok || id != ClientID || secret != ClientSecret {
			http.Error(w, `{"error":"invalid_client"}`, http.StatusUnauthorized)
			return
		}
		is.mu.Lock()
		c, ok := is.opaque[r.PostFormValue("token")]
		is.mu.Unlock()
		if !ok {
			c = map[string]any{"active": false}
		}
		_ = json.NewEncoder(w).Encode(c)
	})
	is.srv = httptest.NewServer(mux)
	is.URL = is.srv.URL
	t.Cleanup(func() { close(is.release); is.srv.Close() })
	return is
}

func (is *Issuer) jwks(w http.ResponseWriter, r *http.Request) {
	is.mu.Lock()
	mode := is.mode
	is.mu.Unlock()
	switch mode {
	case "hang":
		select {
		case <-is.release:
		case <-r.Context().Done():
		}
		return
	case "garbage":
		_, _ = w.Write([]byte("<html>not a key set</html>"))
		return
	}
	pub, err := jwk.Import(&is.key.PublicKey)
	if err != nil {
		http.Error(w, err.Error(), 500)
		return
	}
	_ = pub.Set(jwk.KeyIDKey, is.kid)
	_ = pub.Set(jwk.KeyUsageKey, "sig")
	set := jwk.NewSet()
	_ = set.AddKey(pub)
	_ = json.NewEncoder(w).Encode(set)
}

// token is the client credentials grant (RFC 6749 §4.4): a JWT for the resource the
// client names (RFC 8707), with the scopes it asks for.
func (is *Issuer) token(w http.ResponseWriter, r *http.Request) {
	id, secret, ok := r.BasicAuth()
	if !ok || id != CCClientID || secret != CCClientSecret || r.PostFormValue("grant_type") != "client_credentials" {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusUnauthorized)
		_, _ = w.Write([]byte(`{"error":"invalid_client"}`))
		return
	}
	scope := r.PostFormValue("scope")
	tok := is.Token(is.Claims(CCClientID, r.PostFormValue("resource"), map[string]any{"client_id": CCClientID, "scope": scope}))
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(map[string]any{"access_token": tok, "token_type": "Bearer", "expires_in": 600, "scope": scope})
}

// SetJWKS makes the key set endpoint hang ("hang"), answer garbage ("garbage"), or
// serve the key ("").
func (is *Issuer) SetJWKS(mode string) {
	is.mu.Lock()
	is.mode = mode
	is.mu.Unlock()
}

// Opaque registers an opaque token and the introspection answer for it.
func (is *Issuer) Opaque(token string, answer map[string]any) {
	is.mu.Lock()
	is.opaque[token] = answer
	is.mu.Unlock()
}

// Claims are a valid token's claims for sub and audience, with mod applied (a nil
// value deletes the claim).
func (is *Issuer) Claims(sub, audience string, mod map[string]any) map[string]any {
	now := time.Now()
	c := map[string]any{"iss": is.URL, "sub": sub, "aud": audience, "client_id": "test-client",
		"scope": "mcp", "iat": now.Unix(), "exp": now.Add(10 * time.Minute).Unix(), "jti": rand.Text()}
	for k, v := range mod {
		if v == nil {
			delete(c, k)
		} else {
			c[k] = v
		}
	}
	return c
}

// Token signs claims with the issuer's key.
func (is *Issuer) Token(claims map[string]any) string { return is.sign(is.key, is.kid, claims) }

// Forged signs claims with another key under the issuer's kid.
func (is *Issuer) Forged(claims map[string]any) string { return is.sign(is.other, is.kid, claims) }

// UnknownKey signs claims with a key and kid the issuer does not publish.
func (is *Issuer) UnknownKey(claims map[string]any) string {
	return is.sign(is.other, "not-published", claims)
}

// None is an unsigned token (alg none) naming the issuer's kid.
func (is *Issuer) None(claims map[string]any) string {
	h, _ := json.Marshal(map[string]string{"alg": "none", "typ": "JWT", "kid": is.kid})
	p, _ := json.Marshal(claims)
	return base64.RawURLEncoding.EncodeToString(h) + "." + base64.RawURLEncoding.EncodeToString(p) + "."
}

func (is *Issuer) sign(key *ecdsa.PrivateKey, kid string, claims map[string]any) string {
	is.t.Helper()
	payload, _ := json.Marshal(claims)
	hdr := jws.NewHeaders()
	_ = hdr.Set("kid", kid)
	_ = hdr.Set("typ", "at+jwt")
	b, err := jws.Sign(payload, jws.WithKey(jwa.ES256(), key, jws.WithProtectedHeaders(hdr)))
	if err != nil {
		is.t.Fatal(err)
	}
	return string(b)
}
