package gateway

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"io"
	"log/slog"
	"math/big"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"testing"
	"time"

	"golang.org/x/oauth2"

	"github.com/mcpgate/mcpgate/internal/config"
	"github.com/mcpgate/mcpgate/internal/oauth"
)

// writePair writes a self-signed certificate with the given serial and its key.
func writePair(t *testing.T, certFile, keyFile string, serial int64) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tpl := &x509.Certificate{SerialNumber: big.NewInt(serial), Subject: pkix.Name{CommonName: "localhost"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour), DNSNames: []string{"localhost"}}
	der, err := x509.CreateCertificate(rand.Reader, tpl, tpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	kb, _ := x509.MarshalECPrivateKey(key)
	if err := os.WriteFile(certFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(keyFile, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kb}), 0o600); err != nil {
		t.Fatal(err)
	}
}

// TestCertReload: a changed certificate is served from the next handshake on; a
// broken one keeps the previous.
func TestCertReload(t *testing.T) {
	dir := t.TempDir()
	cf, kf := filepath.Join(dir, "tls.crt"), filepath.Join(dir, "tls.key")
	writePair(t, cf, kf, 1)
	defer func(d time.Duration) { certCheckEvery = d }(certCheckEvery)
	certCheckEvery = 0
	cfg, err := tlsConfig(TLS{Cert: cf, Key: kf}, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	serial := func() int64 {
		t.Helper()
		c, err := cfg.GetCertificate(nil)
		if err != nil {
			t.Fatal(err)
		}
		x, _ := x509.ParseCertificate(c.Certificate[0])
		return x.SerialNumber.Int64()
	}
	if s := serial(); s != 1 {
		t.Fatalf("serial %d, want 1", s)
	}
	writePair(t, cf, kf, 2)
	later := time.Now().Add(time.Minute)
	_ = os.Chtimes(cf, later, later)
	if s := serial(); s != 2 {
		t.Fatalf("after the files changed: serial %d, want 2", s)
	}
	if err := os.WriteFile(cf, []byte("not a certificate"), 0o600); err != nil {
		t.Fatal(err)
	}
	if s := serial(); s != 2 {
		t.Fatalf("after a broken write: serial %d, want 2 kept", s)
	}
	for _, tc := range []TLS{{Cert: cf}, {ClientCA: cf}, {Cert: filepath.Join(dir, "missing"), Key: kf}} {
		if _, err := tlsConfig(tc, slog.New(slog.DiscardHandler)); err == nil {
			t.Errorf("%+v: no error", tc)
		}
	}
}

// An HTTP caller on a loopback listener without tokens is the local user with
// callerId "http", not the stdio client's "stdio"; a callerId the config names is kept.
func TestHTTPLocalUserCallerID(t *testing.T) {
	discard := slog.New(slog.NewTextHandler(io.Discard, nil))
	for _, tc := range []struct{ config, want string }{
		{`{}`, "http"},
		{`{"mcpgate":{"user":{"callerId":"ci-bot"}}}`, "ci-bot"},
	} {
		path := filepath.Join(t.TempDir(), "c.json")
		if err := os.WriteFile(path, []byte(tc.config), 0o600); err != nil {
			t.Fatal(err)
		}
		file, err := config.Load(path)
		if err != nil {
			t.Fatal(err)
		}
		auth, _, err := httpAuth(file, HTTP{Listen: "127.0.0.1:0"}, discard)
		if err != nil {
			t.Fatal(err)
		}
		id, err := auth(httptest.NewRequest("POST", "/mcp", nil))
		if err != nil {
			t.Fatal(err)
		}
		if id.User.CallerID != tc.want || id.User.UserID != "local" || id.User.CallerClass == "" {
			t.Errorf("%s: HTTP local user %+v, want callerId %q", tc.config, id.User, tc.want)
		}
		if tc.want == "http" && file.Gate.User.CallerID != "stdio" {
			t.Errorf("the stdio user became %q", file.Gate.User.CallerID)
		}
	}
}

// TestUpstreamTokenSources: two url server entries that differ only in the scopes or
// resource their token is asked for never share a token source or an exchanger.
func TestUpstreamTokenSources(t *testing.T) {
	entry := func(grant, resource string, scopes ...string) config.Server {
		return config.Server{URL: "https://up.example/mcp", OAuth: &config.UpstreamOAuth{Grant: grant, TokenURL: "https://idp.example/token",
			ClientID: "gw", ClientSecret: "s", Resource: resource, Scopes: scopes}}
	}
	source := func(s config.Server) any {
		switch tr := upstreamClient(s, http.DefaultTransport, caller{}).Transport.(type) {
		case *oauth2.Transport:
			return tr.Source
		case *oauth.ExchangeTransport:
			return tr.Exchanger
		}
		t.Fatal("no OAuth transport")
		return nil
	}
	for _, grant := range []string{"", config.GrantTokenExchange} {
		read, write := source(entry(grant, "", "read")), source(entry(grant, "", "write"))
		other := source(entry(grant, "https://other.example/mcp", "read"))
		if read == write || read == other {
			t.Errorf("grant %q: entries with other scopes or another resource share a token source", grant)
		}
		if again := source(entry(grant, "", "read")); again != read {
			t.Errorf("grant %q: the same entry got a second token source", grant)
		}
	}
}
