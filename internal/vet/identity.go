package vet

import (
	"context"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"errors"
	"net"
	"net/url"
	"strconv"
	"strings"
)

// IdentityTool is the pin name of a url server's identity in the pin file, under
// the server IdentityServer(name): `mcpgate pins approve 'NAME#identity' tls`
// accepts a changed key (docs/vet.md#identity). The separate server key keeps the
// identity out of the server's tool listings (and their rename detection).
const IdentityTool = "tls"

// IdentityServer is the pin file's server key for the identity of server name.
func IdentityServer(name string) string { return name + "#identity" }

// IdentityDefinition is the pinned definition of an identity: the TLS leaf
// certificate's public key, "sha256:" and the standard base64 of the SHA-256 of its
// DER SubjectPublicKeyInfo (as HPKP's pin-sha256).
func IdentityDefinition(spki string) json.RawMessage {
	b, _ := json.Marshal(map[string]string{"name": IdentityTool, "spki": spki})
	return b
}

// SPKIOf reads the spki of an IdentityDefinition; "" when it holds none.
func SPKIOf(def json.RawMessage) string {
	var d struct {
		SPKI string `json:"spki"`
	}
	_ = json.Unmarshal(def, &d)
	return d.SPKI
}

// FetchSPKI makes a TLS handshake with an https URL's host (port 443 by default),
// verifying its certificate with cfg (nil: the system roots), and returns the leaf's
// public key hash as IdentityDefinition takes it. It sends nothing after the
// handshake.
func FetchSPKI(ctx context.Context, raw string, cfg *tls.Config) (string, error) {
	u, err := url.Parse(raw)
	if err != nil || !strings.EqualFold(u.Scheme, "https") || u.Hostname() == "" {
		return "", errors.New("not an https URL")
	}
	port := u.Port()
	if port == "" {
		port = "443"
	}
	c := &tls.Config{}
	if cfg != nil {
		c = cfg.Clone()
	}
	c.ServerName = u.Hostname()
	d := tls.Dialer{Config: c}
	conn, err := d.DialContext(ctx, "tcp", net.JoinHostPort(u.Hostname(), port))
	if err != nil {
		return "", err
	}
	defer conn.Close()
	certs := conn.(*tls.Conn).ConnectionState().PeerCertificates
	if len(certs) == 0 {
		return "", errors.New("no certificate")
	}
	return SPKI(certs[0]), nil
}

// SPKI is a certificate's public key hash as IdentityDefinition takes it:
// "sha256:" and the base64 of the SHA-256 of its SubjectPublicKeyInfo.
func SPKI(cert *x509.Certificate) string {
	sum := sha256.Sum256(cert.RawSubjectPublicKeyInfo)
	return "sha256:" + base64.StdEncoding.EncodeToString(sum[:])
}

// IdentityCheck is a url server's pinned identity and the one it presents now.
type IdentityCheck struct {
	Pinned, Now string
	Err         error // the handshake failed: nothing to compare
}

func checkIdentity(s Server, c IdentityCheck) []Finding {
	if c.Err != nil || c.Pinned == "" || c.Now == "" || c.Pinned == c.Now {
		return nil
	}
	return []Finding{newFinding(RuleIdentityChanged, s.Name, s.Pointer+"/url",
		"the server's TLS public key differs from the one pinned: it may be another server answering at this address; if the change is expected (a new key), approve it with mcpgate pins approve "+strconv.Quote(IdentityServer(s.Name))+" "+IdentityTool)}
}
