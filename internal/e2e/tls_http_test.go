package e2e

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"encoding/pem"
	"math/big"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mcpgate/mcpgate/internal/oauth/oauthtest"
	"github.com/mcpgate/mcpgate/internal/testwait"
)

// testCA issues certificates for the TLS tests.
type testCA struct {
	cert *x509.Certificate
	key  *ecdsa.PrivateKey
	pool *x509.CertPool
}

func newTestCA(t *testing.T) *testCA {
	t.Helper()
	key, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	tpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "e2e CA"}, IsCA: true, BasicConstraintsValid: true,
		KeyUsage: x509.KeyUsageCertSign, NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour)}
	der, err := x509.CreateCertificate(rand.Reader, tpl, tpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	cert, _ := x509.ParseCertificate(der)
	pool := x509.NewCertPool()
	pool.AddCert(cert)
	return &testCA{cert: cert, key: key, pool: pool}
}

// issue returns a leaf certificate and its key, PEM encoded.
func (ca *testCA) issue(t *testing.T, serial int64, cn string, client bool) (certPEM, keyPEM []byte) {
	t.Helper()
	key, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	tpl := &x509.Certificate{SerialNumber: big.NewInt(serial), Subject: pkix.Name{CommonName: cn, OrganizationalUnit: []string{"ops"}},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour), IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1)},
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}
	if client {
		tpl.ExtKeyUsage = []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}
	}
	der, err := x509.CreateCertificate(rand.Reader, tpl, ca.cert, &key.PublicKey, ca.key)
	if err != nil {
		t.Fatal(err)
	}
	kb, _ := x509.MarshalECPrivateKey(key)
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kb})
}

// TestHTTPTLS: gateway run over HTTPS with OAuth (the default resource URI is the
// https URL), a renewed certificate served without a restart, and a client
// certificate naming the caller.
func TestHTTPTLS(t *testing.T) {
	_, fake := httpBinaries(t)
	ca := newTestCA(t)
	dir := t.TempDir()
	certFile, keyFile, caFile := filepath.Join(dir, "tls.crt"), filepath.Join(dir, "tls.key"), filepath.Join(dir, "ca.pem")
	write := func(serial int64) {
		c, k := ca.issue(t, serial, "127.0.0.1", false)
		httpWriteFile(t, certFile, string(c))
		httpWriteFile(t, keyFile, string(k))
	}
	write(100)
	httpWriteFile(t, caFile, string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: ca.cert.Raw})))
	is := oauthtest.New(t)
	g := startHTTPGateway(t, "--tls-cert", certFile, "--tls-key", keyFile, "--tls-client-ca", caFile, "--oauth-issuer", is.URL, "--", fake)
	if !strings.HasPrefix(g.url, "https://127.0.0.1:") {
		t.Fatalf("url %s", g.url)
	}
	serial := func(cert *tls.Certificate) (int64, *http.Client) {
		t.Helper()
		cfg := &tls.Config{RootCAs: ca.pool}
		if cert != nil {
			cfg.Certificates = []tls.Certificate{*cert}
		}
		conn, err := tls.Dial("tcp", strings.TrimSuffix(strings.TrimPrefix(g.url, "https://"), "/mcp"), cfg)
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		return conn.ConnectionState().PeerCertificates[0].SerialNumber.Int64(),
			&http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{TLSClientConfig: cfg}}
	}
	s, hc := serial(nil)
	if s != 100 {
		t.Fatalf("serial %d", s)
	}
	resp, err := hc.Get(strings.Replace(g.url, "/mcp", "/.well-known/oauth-protected-resource/mcp", 1))
	if err != nil {
		t.Fatal(err)
	}
	var meta map[string]any
	_ = json.NewDecoder(resp.Body).Decode(&meta)
	resp.Body.Close()
	if meta["resource"] != g.url {
		t.Fatalf("resource %v, want %s", meta["resource"], g.url)
	}
	c := newHTTPClient(g.url)
	c.hc = hc
	c.token = is.Token(is.Claims("alice", g.url, nil))
	c.initialize(t)
	c.mustEcho(t, 1)

	write(101)
	later := time.Now().Add(time.Minute)
	_ = os.Chtimes(certFile, later, later)
	testwait.For(t, "the renewed certificate", func() bool { s, _ := serial(nil); return s == 101 })

	cc, ck := ca.issue(t, 200, "robot", true)
	pair, err := tls.X509KeyPair(cc, ck)
	if err != nil {
		t.Fatal(err)
	}
	_, mhc := serial(&pair)
	mc := newHTTPClient(g.url)
	mc.hc = mhc
	mc.initialize(t)
	mc.mustEcho(t, 1)
	testwait.For(t, "the client certificate's record", func() bool {
		for _, r := range g.stderr.records() {
			if c, _ := r["caller"].(map[string]any); c["user_id"] == "robot" {
				return true
			}
		}
		return false
	})
}
