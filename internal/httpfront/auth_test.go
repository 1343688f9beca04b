package httpfront

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"io"
	"math/big"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

// TestClientCertAuth: a verified client certificate names the caller (common name,
// organisational units as roles); without one, or without a bearer token, the
// request is refused; a bearer token decides when sent.
func TestClientCertAuth(t *testing.T) {
	caKey, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	caTpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "test CA"}, IsCA: true,
		BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign, NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour)}
	caDER, err := x509.CreateCertificate(rand.Reader, caTpl, caTpl, &caKey.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	ca, _ := x509.ParseCertificate(caDER)
	clientKey, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	clTpl := &x509.Certificate{SerialNumber: big.NewInt(2), Subject: pkix.Name{CommonName: "robot", OrganizationalUnit: []string{"ops"}},
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}, NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour)}
	clDER, err := x509.CreateCertificate(rand.Reader, clTpl, ca, &clientKey.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	auth, err := NewAuth(AuthConfig{Certs: true, ClassFor: func(id string) string {
		if id == "robot" {
			return "trusted"
		}
		return "standard"
	}})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		id, err := auth(r)
		if err != nil {
			w.WriteHeader(http.StatusUnauthorized)
			return
		}
		_ = json.NewEncoder(w).Encode(id)
	}))
	pool := x509.NewCertPool()
	pool.AddCert(ca)
	srv.TLS = &tls.Config{ClientCAs: pool, ClientAuth: tls.VerifyClientCertIfGiven}
	srv.StartTLS()
	defer srv.Close()
	get := func(cert *tls.Certificate, bearer string) (int, string) {
		tr := srv.Client().Transport.(*http.Transport).Clone()
		if cert != nil {
			tr.TLSClientConfig.Certificates = []tls.Certificate{*cert}
		}
		req, _ := http.NewRequest("GET", srv.URL, nil)
		if bearer != "" {
			req.Header.Set("Authorization", "Bearer "+bearer)
		}
		resp, err := (&http.Client{Transport: tr}).Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	cert := &tls.Certificate{Certificate: [][]byte{clDER}, PrivateKey: clientKey}
	if st, body := get(cert, ""); st != 200 || !strings.Contains(body, `"userID":"robot"`) || !strings.Contains(body, `"roles":["ops"]`) || !strings.Contains(body, `"callerClass":"trusted"`) {
		t.Fatalf("with a certificate: %d %s", st, body)
	}
	if st, _ := get(nil, ""); st != http.StatusUnauthorized {
		t.Fatalf("without a certificate: %d", st)
	}
	if st, _ := get(cert, "some-token"); st != http.StatusUnauthorized {
		t.Fatalf("an unknown bearer token beside a certificate: %d, want 401 (the token decides)", st)
	}
}
