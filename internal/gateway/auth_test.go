package gateway

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"log/slog"
	"math/big"
	"os"
	"path/filepath"
	"testing"
	"time"
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
