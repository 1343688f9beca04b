package guardrail_test

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"io"
	"log"
	"math/big"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mcpgate/mcpgate/internal/guardrail"
)

// issued is a certificate and its key, as PEM files and as a tls.Certificate.
type issued struct {
	cert     *x509.Certificate
	key      *ecdsa.PrivateKey
	pair     tls.Certificate
	certFile string
	keyFile  string
}

// issue makes a certificate for tmpl signed by parent (self-signed when nil) and
// writes it and its key as PEM files in dir.
func issue(t *testing.T, dir, name string, tmpl *x509.Certificate, parent *issued) *issued {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	signer, signerKey := tmpl, key
	if parent != nil {
		signer, signerKey = parent.cert, parent.key
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, signer, &key.PublicKey, signerKey)
	if err != nil {
		t.Fatal(err)
	}
	cert, _ := x509.ParseCertificate(der)
	keyDER, _ := x509.MarshalECPrivateKey(key)
	certPEM := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
	keyPEM := pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER})
	out := &issued{cert: cert, key: key, certFile: filepath.Join(dir, name+".pem"), keyFile: filepath.Join(dir, name+"-key.pem")}
	if err := os.WriteFile(out.certFile, certPEM, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(out.keyFile, keyPEM, 0o600); err != nil {
		t.Fatal(err)
	}
	if out.pair, err = tls.X509KeyPair(certPEM, keyPEM); err != nil {
		t.Fatal(err)
	}
	return out
}

// TestTLS: an https:// service that requires a client certificate (mTLS) under a
// private CA is reached with "tls": {"caFile", "certFile", "keyFile"}; without the
// client certificate, or without the CA, the handshake fails, a guardrail_error
// (transport) under the fail mode.
func TestTLS(t *testing.T) {
	dir := t.TempDir()
	notAfter := time.Now().Add(time.Hour)
	ca := issue(t, dir, "ca", &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "test CA"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: notAfter, IsCA: true, BasicConstraintsValid: true,
		KeyUsage: x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature}, nil)
	server := issue(t, dir, "server", &x509.Certificate{SerialNumber: big.NewInt(2), Subject: pkix.Name{CommonName: "guardrail"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: notAfter, IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1)},
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}, ca)
	client := issue(t, dir, "client", &x509.Certificate{SerialNumber: big.NewInt(3), Subject: pkix.Name{CommonName: "mcpgate"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: notAfter,
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}, ca)
	pool := x509.NewCertPool()
	pool.AddCert(ca.cert)
	var peer atomic.Value // the client certificate's subject of the last request
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		peer.Store(r.TLS.PeerCertificates[0].Subject.CommonName)
		_, _ = io.WriteString(w, `{"action":"NONE"}`)
	}))
	srv.TLS = &tls.Config{Certificates: []tls.Certificate{server.pair}, ClientCAs: pool, ClientAuth: tls.RequireAndVerifyClientCert}
	srv.Config.ErrorLog = log.New(io.Discard, "", 0) // the refused handshakes
	srv.StartTLS()
	defer srv.Close()
	if !strings.HasPrefix(srv.URL, "https://127.0.0.1:") {
		t.Fatalf("url %s", srv.URL)
	}
	tests := []struct {
		name   string
		tls    *guardrail.TLS
		detail string
	}{
		{"mTLS", &guardrail.TLS{CAFile: ca.certFile, CertFile: client.certFile, KeyFile: client.keyFile}, ""},
		{"no client certificate", &guardrail.TLS{CAFile: ca.certFile}, "transport"},
		{"no CA", &guardrail.TLS{CertFile: client.certFile, KeyFile: client.keyFile}, "transport"},
		{"no tls", nil, "transport"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			peer.Store("")
			s := newSet(t, map[string]guardrail.Spec{"g": {Kind: "generic", URL: srv.URL, FailMode: "open", TLS: tt.tls,
				Breaker: &guardrail.Breaker{Failures: 1000}}})
			o := s.Run(context.Background(), content("hello"), nil)[0]
			if tt.detail == "" {
				if o.Verdict != guardrail.None || peer.Load() != "mcpgate" {
					t.Fatalf("outcome %+v, client certificate %q", o, peer.Load())
				}
				return
			}
			if o.Failure != guardrail.FailureError || o.Detail != tt.detail || peer.Load() != "" {
				t.Fatalf("outcome %+v, the service answered a request from %q", o, peer.Load())
			}
		})
	}
	for _, bad := range []*guardrail.TLS{{CAFile: filepath.Join(dir, "missing.pem")}, {CAFile: client.keyFile},
		{CertFile: client.certFile, KeyFile: server.keyFile}} {
		if _, err := guardrail.New(map[string]guardrail.Spec{"g": {Kind: "generic", URL: srv.URL, TLS: bad}}); err == nil || !strings.Contains(err.Error(), `"tls"`) {
			t.Errorf("%+v: %v, want a start-up error naming tls", bad, err)
		}
	}
}
