// Package bundle builds and reads signed policy bundles
// (docs/decisions.md#policy-bundles): a tar.gz of a policies directory's top-level
// *.js (policies and their *_test.js), a .manifest (revision, previous bundle,
// min_mcpgate, roots) and a .signatures.json whose one JWS signs the SHA-256 of
// every other file, as OPA's bundles do.
//
// Read is a parser over hostile input: it bounds the archive, each file and the
// file count, and refuses any entry but a regular top-level file, a duplicate, a
// file the signature does not cover and a signature entry without a file.
package bundle

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"crypto"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rsa"
	"crypto/sha256"
	"crypto/x509"
	"encoding/hex"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing/fstest"

	"github.com/go-jose/go-jose/v4"
	"golang.org/x/mod/semver"
)

// Names of the two files a bundle carries beside its policies.
const (
	ManifestName   = ".manifest"
	SignaturesName = ".signatures.json"
)

// Bounds of Read (docs/decisions.md#policy-bundles).
const (
	MaxArchiveBytes = 16 << 20 // the .tar.gz as fetched
	MaxTotalBytes   = 32 << 20 // every file, uncompressed
	MaxFileBytes    = 4 << 20  // one file, uncompressed
	MaxFiles        = 512      // entries, .manifest and .signatures.json included
)

// Errors Read wraps, so a caller can tell why a bundle was refused (and count it).
var (
	ErrMalformed = errors.New("malformed bundle")
	ErrUnsigned  = errors.New("bundle is not signed")
	ErrSignature = errors.New("bundle signature does not verify")
	ErrTampered  = errors.New("bundle content does not match its signature")
)

// Manifest is a bundle's .manifest.
type Manifest struct {
	// Revision names the bundle, e.g. "42"; it is what records carry as
	// policy_revision.
	Revision string `json:"revision"`
	// Previous is the Hash of the bundle this one replaces ("" for the first).
	Previous string `json:"previous,omitempty"`
	// MinMCPGate is the oldest mcpgate release ("v1.4.0") that may run the bundle.
	MinMCPGate string `json:"min_mcpgate,omitempty"`
	// Roots are the parts of the policy name space the bundle owns; informational.
	Roots []string `json:"roots,omitempty"`
	// AcceptDifferences are the policy files ("deny_shell.js") whose blocks and
	// rejections the operator accepts to differ from the running set's on live
	// traffic when the revision runs as the shadow first (gateway run
	// --bundle-shadow, docs/decisions.md#bundle-shadow): a policy added, changed or
	// removed on purpose.
	AcceptDifferences []string `json:"accept_differences,omitempty"`
}

// Bundle is a verified bundle.
type Bundle struct {
	Manifest Manifest
	Hash     string // Hash of the archive
	// Signed is "sha256:" and the hex SHA-256 of the signed payload (every file's
	// hash, .manifest's included): the same for every re-encoding of the archive
	// (another gzip level, bytes after the tar's end), which Hash is not. "Ran here
	// before" is decided by it (docs/decisions.md#policy-bundles).
	Signed string
	Files  map[string][]byte // the policies and tests by name, without .manifest and .signatures.json
}

// FS is the bundle's files as a policies directory (gate.Options.FS).
func (b *Bundle) FS() fs.FS {
	m := fstest.MapFS{}
	for name, data := range b.Files {
		m[name] = &fstest.MapFile{Data: data, Mode: 0o444}
	}
	return m
}

// Hash is a bundle archive's identity: "sha256:" and the hex SHA-256 of its bytes
// (what sha256sum prints). A manifest's previous names a bundle by it.
func Hash(archive []byte) string {
	sum := sha256.Sum256(archive)
	return "sha256:" + hex.EncodeToString(sum[:])
}

var (
	hashRe     = regexp.MustCompile(`^sha256:[0-9a-f]{64}$`)
	revisionRe = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._+-]{0,63}$`)
	fileRe     = regexp.MustCompile(`^[A-Za-z0-9_][A-Za-z0-9._-]{0,127}\.js$`)
)

// Check reports a manifest field that is out of shape.
func (m Manifest) Check() error {
	if !revisionRe.MatchString(m.Revision) {
		return fmt.Errorf("revision %q: want 1 to 64 letters, digits, '.', '_', '+' or '-'", m.Revision)
	}
	if m.Previous != "" && !hashRe.MatchString(m.Previous) {
		return fmt.Errorf("previous %q: want sha256: and 64 lower-case hex digits", m.Previous)
	}
	if m.MinMCPGate != "" && !semver.IsValid(m.MinMCPGate) {
		return fmt.Errorf("min_mcpgate %q: want a version such as v1.4.0", m.MinMCPGate)
	}
	if len(m.Roots) > 64 {
		return fmt.Errorf("roots: %d entries, at most 64", len(m.Roots))
	}
	if len(m.AcceptDifferences) > 256 {
		return fmt.Errorf("accept_differences: %d entries, at most 256", len(m.AcceptDifferences))
	}
	for _, f := range m.AcceptDifferences {
		if !fileRe.MatchString(f) || strings.HasSuffix(f, "_test.js") {
			return fmt.Errorf("accept_differences %q: want a policy file name such as deny_shell.js", f)
		}
	}
	return nil
}

// Supports reports whether mcpgate version (buildVersion's "v1.4.0 (commit …)")
// may run a bundle of m: it errors when version is a release older than
// min_mcpgate. A development build ("dev …") runs every bundle.
func (m Manifest) Supports(version string) error {
	v, _, _ := strings.Cut(version, " ")
	if m.MinMCPGate == "" || !semver.IsValid(v) {
		return nil
	}
	if semver.Compare(v, m.MinMCPGate) < 0 {
		return fmt.Errorf("bundle revision %s needs mcpgate %s or later; this is %s", m.Revision, m.MinMCPGate, v)
	}
	return nil
}

// signatures is .signatures.json; payload is what its one JWS signs.
type signatures struct {
	Signatures []string `json:"signatures"`
}

type payload struct {
	Files []fileHash `json:"files"`
}

type fileHash struct {
	Name      string `json:"name"`
	Hash      string `json:"hash"`      // hex SHA-256 of the file's bytes
	Algorithm string `json:"algorithm"` // SHA-256
}

// Build packs the top-level *.js of dir (policies and *_test.js; dot files,
// subdirectories and other files are left out) with m as .manifest, signed with
// key, into a tar.gz. The archive is the same bytes for the same input.
func Build(dir string, m Manifest, key crypto.Signer) ([]byte, error) {
	if err := m.Check(); err != nil {
		return nil, fmt.Errorf("manifest: %w", err)
	}
	ents, err := os.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("policies directory: %w", err)
	}
	files := map[string][]byte{}
	for _, e := range ents {
		name := e.Name()
		if strings.HasPrefix(name, ".") || !strings.HasSuffix(name, ".js") {
			continue
		}
		if st, err := os.Stat(filepath.Join(dir, name)); err != nil || !st.Mode().IsRegular() {
			continue // subdirectories (policies/examples) and dangling links
		}
		if !fileRe.MatchString(name) {
			return nil, fmt.Errorf("%s: a bundled file name is letters, digits, '.', '_' and '-' ending in .js", name)
		}
		if files[name], err = os.ReadFile(filepath.Join(dir, name)); err != nil {
			return nil, err
		}
	}
	if files[ManifestName], err = json.MarshalIndent(m, "", "  "); err != nil {
		return nil, err
	}
	names := slices.Sorted(func(yield func(string) bool) {
		for n := range files {
			if !yield(n) {
				return
			}
		}
	})
	var p payload
	for _, n := range names {
		sum := sha256.Sum256(files[n])
		p.Files = append(p.Files, fileHash{Name: n, Hash: hex.EncodeToString(sum[:]), Algorithm: "SHA-256"})
	}
	jws, err := sign(p, key)
	if err != nil {
		return nil, err
	}
	if files[SignaturesName], err = json.MarshalIndent(signatures{Signatures: []string{jws}}, "", "  "); err != nil {
		return nil, err
	}
	names = append(names, SignaturesName)
	var buf bytes.Buffer
	gz := gzip.NewWriter(&buf) // no name, no time: the same input gives the same bytes
	tw := tar.NewWriter(gz)
	for _, n := range names {
		if err := tw.WriteHeader(&tar.Header{Name: n, Mode: 0o644, Size: int64(len(files[n])), Typeflag: tar.TypeReg, Format: tar.FormatPAX}); err != nil {
			return nil, err
		}
		if _, err := tw.Write(files[n]); err != nil {
			return nil, err
		}
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	if err := gz.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// Read parses archive, verifies its signature with key and every file against it,
// and returns the bundle. Its errors wrap ErrMalformed, ErrUnsigned, ErrSignature
// or ErrTampered and say which file or field is at fault.
func Read(archive []byte, key crypto.PublicKey) (*Bundle, error) {
	if len(archive) > MaxArchiveBytes {
		return nil, fmt.Errorf("%w: %d bytes, at most %d", ErrMalformed, len(archive), MaxArchiveBytes)
	}
	files, err := unpack(archive)
	if err != nil {
		return nil, err
	}
	sigFile, ok := files[SignaturesName]
	if !ok {
		return nil, fmt.Errorf("%w: no %s", ErrUnsigned, SignaturesName)
	}
	delete(files, SignaturesName)
	var sigs signatures
	if err := strictJSON(sigFile, &sigs); err != nil {
		return nil, fmt.Errorf("%w: %s: %v", ErrMalformed, SignaturesName, err)
	}
	if len(sigs.Signatures) != 1 {
		return nil, fmt.Errorf("%w: %s holds %d signatures, want 1", ErrUnsigned, SignaturesName, len(sigs.Signatures))
	}
	p, signedID, err := verify(sigs.Signatures[0], key)
	if err != nil {
		return nil, err
	}
	signed := map[string]bool{}
	for _, f := range p.Files {
		data, ok := files[f.Name]
		switch {
		case signed[f.Name]:
			return nil, fmt.Errorf("%w: %s is signed twice", ErrTampered, f.Name)
		case !ok:
			return nil, fmt.Errorf("%w: %s is signed but not in the bundle", ErrTampered, f.Name)
		case f.Algorithm != "SHA-256":
			return nil, fmt.Errorf("%w: %s: hash algorithm %q, want SHA-256", ErrMalformed, f.Name, f.Algorithm)
		}
		sum := sha256.Sum256(data)
		if hex.EncodeToString(sum[:]) != f.Hash {
			return nil, fmt.Errorf("%w: %s was changed after signing", ErrTampered, f.Name)
		}
		signed[f.Name] = true
	}
	for name := range files {
		if !signed[name] {
			return nil, fmt.Errorf("%w: %s is not covered by the signature", ErrTampered, name)
		}
	}
	b := &Bundle{Hash: Hash(archive), Signed: signedID, Files: files}
	mf, ok := files[ManifestName]
	if !ok {
		return nil, fmt.Errorf("%w: no %s", ErrMalformed, ManifestName)
	}
	delete(files, ManifestName)
	if err := strictJSON(mf, &b.Manifest); err != nil {
		return nil, fmt.Errorf("%w: %s: %v", ErrMalformed, ManifestName, err)
	}
	if err := b.Manifest.Check(); err != nil {
		return nil, fmt.Errorf("%w: %s: %v", ErrMalformed, ManifestName, err)
	}
	return b, nil
}

// unpack reads the tar.gz within the bounds: regular top-level files only, each
// once, named .manifest, .signatures.json or NAME.js.
func unpack(archive []byte) (map[string][]byte, error) {
	gz, err := gzip.NewReader(bytes.NewReader(archive))
	if err != nil {
		return nil, fmt.Errorf("%w: not gzip: %v", ErrMalformed, err)
	}
	// The headers count too: a bomb of empty entries stops here.
	tr := tar.NewReader(io.LimitReader(gz, MaxTotalBytes+MaxFiles*2048))
	files := map[string][]byte{}
	total := 0
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return files, nil
		}
		if err != nil {
			return nil, fmt.Errorf("%w: tar: %v", ErrMalformed, err)
		}
		switch {
		case len(files) == MaxFiles:
			return nil, fmt.Errorf("%w: more than %d files", ErrMalformed, MaxFiles)
		case h.Typeflag != tar.TypeReg:
			return nil, fmt.Errorf("%w: %q is not a regular file (links and directories are refused)", ErrMalformed, h.Name)
		case h.Name != ManifestName && h.Name != SignaturesName && !fileRe.MatchString(h.Name):
			return nil, fmt.Errorf("%w: unexpected file %q: a bundle holds top-level NAME.js, %s and %s only", ErrMalformed, h.Name, ManifestName, SignaturesName)
		case files[h.Name] != nil:
			return nil, fmt.Errorf("%w: %s appears twice", ErrMalformed, h.Name)
		case h.Size < 0 || h.Size > MaxFileBytes:
			return nil, fmt.Errorf("%w: %s: %d bytes, at most %d", ErrMalformed, h.Name, h.Size, MaxFileBytes)
		case total+int(h.Size) > MaxTotalBytes:
			return nil, fmt.Errorf("%w: more than %d bytes uncompressed", ErrMalformed, MaxTotalBytes)
		}
		data := make([]byte, h.Size)
		if _, err := io.ReadFull(tr, data); err != nil {
			return nil, fmt.Errorf("%w: %s: %v", ErrMalformed, h.Name, err)
		}
		total += len(data)
		files[h.Name] = data
	}
}

func strictJSON(data []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return err
	}
	if dec.More() {
		return errors.New("trailing data")
	}
	return nil
}

// algorithms are the JWS algorithms a bundle may be signed with; the key decides
// which one.
var algorithms = []jose.SignatureAlgorithm{jose.EdDSA, jose.RS256, jose.ES256, jose.ES384, jose.ES512}

func sign(p payload, key crypto.Signer) (string, error) {
	alg, err := algorithm(key.Public())
	if err != nil {
		return "", err
	}
	signer, err := jose.NewSigner(jose.SigningKey{Algorithm: alg, Key: key}, nil)
	if err != nil {
		return "", fmt.Errorf("signing key: %w", err)
	}
	body, err := json.Marshal(p)
	if err != nil {
		return "", err
	}
	obj, err := signer.Sign(body)
	if err != nil {
		return "", fmt.Errorf("sign: %w", err)
	}
	return obj.CompactSerialize()
}

// verify checks jws with key and returns its payload and the payload's identity
// (Bundle.Signed).
func verify(jws string, key crypto.PublicKey) (payload, string, error) {
	var p payload
	obj, err := jose.ParseSignedCompact(jws, algorithms)
	if err != nil {
		return p, "", fmt.Errorf("%w: %v", ErrSignature, err)
	}
	want, err := algorithm(key)
	if err != nil {
		return p, "", err
	}
	if got := obj.Signatures[0].Header.Algorithm; got != string(want) {
		return p, "", fmt.Errorf("%w: signed with %s, the key is for %s", ErrSignature, got, want)
	}
	body, err := obj.Verify(key)
	if err != nil {
		return p, "", fmt.Errorf("%w with this key (wrong key, or the signature was altered)", ErrSignature)
	}
	if err := strictJSON(body, &p); err != nil {
		return p, "", fmt.Errorf("%w: signed payload: %v", ErrMalformed, err)
	}
	return p, Hash(body), nil
}

// algorithm is the JWS algorithm for a public key: EdDSA, RS256, or ES256/384/512
// by curve.
func algorithm(pub crypto.PublicKey) (jose.SignatureAlgorithm, error) {
	switch k := pub.(type) {
	case ed25519.PublicKey:
		return jose.EdDSA, nil
	case *rsa.PublicKey:
		if k.N.BitLen() < 2048 {
			return "", fmt.Errorf("RSA key of %d bits: at least 2048", k.N.BitLen())
		}
		return jose.RS256, nil
	case *ecdsa.PublicKey:
		switch k.Curve {
		case elliptic.P256():
			return jose.ES256, nil
		case elliptic.P384():
			return jose.ES384, nil
		case elliptic.P521():
			return jose.ES512, nil
		}
	}
	return "", fmt.Errorf("key type %T: want Ed25519, RSA or ECDSA (P-256, P-384, P-521)", pub)
}

// ParsePrivateKey reads a PEM "PRIVATE KEY" (PKCS#8, as openssl genpkey writes it):
// Ed25519, RSA or ECDSA.
func ParsePrivateKey(data []byte) (crypto.Signer, error) {
	blk, _ := pem.Decode(data)
	if blk == nil || blk.Type != "PRIVATE KEY" {
		return nil, errors.New(`want a PEM "PRIVATE KEY" (PKCS#8), as openssl genpkey -algorithm ed25519 writes it`)
	}
	k, err := x509.ParsePKCS8PrivateKey(blk.Bytes)
	if err != nil {
		return nil, err
	}
	s, ok := k.(crypto.Signer)
	if !ok {
		return nil, fmt.Errorf("key type %T cannot sign", k)
	}
	if _, err := algorithm(s.Public()); err != nil {
		return nil, err
	}
	return s, nil
}

// ParsePublicKey reads a PEM "PUBLIC KEY" (SPKI, as openssl pkey -pubout writes it):
// Ed25519, RSA or ECDSA.
func ParsePublicKey(data []byte) (crypto.PublicKey, error) {
	blk, _ := pem.Decode(data)
	if blk == nil || blk.Type != "PUBLIC KEY" {
		return nil, errors.New(`want a PEM "PUBLIC KEY", as openssl pkey -pubout writes it`)
	}
	k, err := x509.ParsePKIXPublicKey(blk.Bytes)
	if err != nil {
		return nil, err
	}
	if _, err := algorithm(k); err != nil {
		return nil, err
	}
	return k, nil
}

// LoadPrivateKey and LoadPublicKey read a key file; errors name the file.
func LoadPrivateKey(path string) (crypto.Signer, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	k, err := ParsePrivateKey(data)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return k, nil
}

func LoadPublicKey(path string) (crypto.PublicKey, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	k, err := ParsePublicKey(data)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return k, nil
}
