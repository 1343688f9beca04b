package vet

import (
	"context"
	_ "embed"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"

	"github.com/sigstore/sigstore-go/pkg/bundle"
	"github.com/sigstore/sigstore-go/pkg/root"
	"github.com/sigstore/sigstore-go/pkg/verify"
)

// publicGoodRoot is the Sigstore public-good instance's trusted root (Fulcio CAs,
// Rekor and CT log keys), as sigstore-go v1.3.0 ships it in its examples; it is
// updated with the release, and --sigstore-root replaces it (docs/vet.md#provenance).
//
//go:embed sigstore-trusted-root.json
var publicGoodRoot []byte

// PublicGoodRoot returns the embedded Sigstore public-good trusted root.
func PublicGoodRoot() (root.TrustedMaterial, error) {
	return root.NewTrustedRootFromJSON(publicGoodRoot)
}

// ReadTrustedRoot reads a Sigstore trusted_root.json (the format of `cosign
// trusted-root create` and the TUF target trusted_root.json).
func ReadTrustedRoot(b []byte) (root.TrustedMaterial, error) {
	return root.NewTrustedRootFromJSON(b)
}

// npmProvenanceIssuers are the OIDC issuers of the CI systems npm accepts
// provenance from, and the form each signer identity (the certificate's SAN) takes.
var npmProvenanceIssuers = []struct{ issuer, san string }{
	{"https://token.actions.githubusercontent.com", `^https://github\.com/`},
	{"https://gitlab.com", `^https://gitlab\.com/`},
}

// NPMPurl is a package's package URL as npm's provenance statement names its
// subject: "pkg:npm/%40scope/name@1.2.3".
func NPMPurl(name, version string) string {
	return "pkg:npm/" + strings.Replace(name, "@", "%40", 1) + "@" + version
}

// VerifyNPMProvenance verifies an npm provenance attestation: bundle is a Sigstore
// bundle (JSON) whose DSSE statement must be SLSA provenance for name@version with
// the sha512 of integrity (npm's dist.integrity, "sha512-" and base64), signed by a
// Fulcio certificate issued to a GitHub Actions or GitLab CI workflow, logged in a
// transparency log, with a signed certificate timestamp, all against trusted. It
// returns the source repository the certificate names (Fulcio OID
// 1.3.6.1.4.1.57264.1.12, "https://github.com/org/repo").
func VerifyNPMProvenance(trusted root.TrustedMaterial, bundleJSON []byte, name, version, integrity string) (string, error) {
	alg, b64, ok := strings.Cut(integrity, "-")
	digest, err := base64.StdEncoding.DecodeString(b64)
	if !ok || alg != "sha512" || err != nil || len(digest) != 64 {
		return "", errors.New("the package's integrity is not a sha512 SRI value")
	}
	var b bundle.Bundle
	if err := b.UnmarshalJSON(bundleJSON); err != nil {
		return "", fmt.Errorf("not a Sigstore bundle: %w", err)
	}
	v, err := verify.NewVerifier(trusted, verify.WithSignedCertificateTimestamps(1), verify.WithTransparencyLog(1), verify.WithObserverTimestamps(1))
	if err != nil {
		return "", err
	}
	opts := []verify.PolicyOption{}
	for _, i := range npmProvenanceIssuers {
		id, err := verify.NewShortCertificateIdentity(i.issuer, "", "", i.san)
		if err != nil {
			return "", err
		}
		opts = append(opts, verify.WithCertificateIdentity(id))
	}
	res, err := v.Verify(&b, verify.NewPolicy(verify.WithArtifactDigest("sha512", digest), opts...))
	if err != nil {
		return "", err
	}
	if res.Statement == nil || !strings.HasPrefix(res.Statement.PredicateType, "https://slsa.dev/provenance/") {
		return "", errors.New("the attestation is not SLSA provenance")
	}
	purl := NPMPurl(name, version)
	named := false
	for _, s := range res.Statement.Subject {
		if s.Name == purl {
			named = true
		}
	}
	if !named {
		return "", fmt.Errorf("the attestation's subject is not %s", purl)
	}
	if res.Signature == nil || res.Signature.Certificate == nil || res.Signature.Certificate.SourceRepositoryURI == "" {
		return "", errors.New("the signing certificate names no source repository")
	}
	return res.Signature.Certificate.SourceRepositoryURI, nil
}

// errProvenanceFetch marks an attestation that could not be fetched (the registry
// is unreachable or answered no bundle), as against one that does not verify.
var errProvenanceFetch = errors.New("provenance could not be fetched")

// npmAttestations fetches the provenance bundle at npm's dist.attestations.url
// ({"attestations": [{"predicateType", "bundle"}]}), the one whose predicateType
// is want.
func (r Resolver) npmAttestations(ctx context.Context, c *http.Client, u, want string) ([]byte, error) {
	if pu, err := url.Parse(u); err != nil || (pu.Scheme != "https" && pu.Scheme != "http") {
		return nil, fmt.Errorf("%w: bad attestations url", errProvenanceFetch)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", errProvenanceFetch, err)
	}
	req.Header.Set("Accept", "application/json")
	resp, err := c.Do(req)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", errProvenanceFetch, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("%w: %s", errProvenanceFetch, resp.Status)
	}
	var doc struct {
		Attestations []struct {
			PredicateType string          `json:"predicateType"`
			Bundle        json.RawMessage `json:"bundle"`
		} `json:"attestations"`
	}
	if err := json.NewDecoder(io.LimitReader(resp.Body, 8<<20)).Decode(&doc); err != nil {
		return nil, fmt.Errorf("%w: %v", errProvenanceFetch, err)
	}
	for _, a := range doc.Attestations {
		if a.PredicateType == want && len(a.Bundle) > 0 {
			return a.Bundle, nil
		}
	}
	return nil, fmt.Errorf("%w: no %s attestation", errProvenanceFetch, want)
}
