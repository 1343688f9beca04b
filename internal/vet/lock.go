package vet

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/sigstore/sigstore-go/pkg/root"
)

// LockFileName is the lock's name next to the configuration.
const LockFileName = "mcpgate.lock"

// Lock is mcpgate.lock: each pinned package's resolved version and integrity, as
// reviewed (docs/vet.md#lock).
type Lock struct {
	Version  int             `json:"version"` // 1
	Packages []LockedPackage `json:"packages"`
}

// LockedPackage is one package. Integrity is npm's dist.integrity ("sha512-…", SRI),
// an image's digest ("sha256:…"), or for a PyPI release PyPIIntegrity of its Files.
type LockedPackage struct {
	Ecosystem string       `json:"ecosystem"`
	Name      string       `json:"name"`
	Version   string       `json:"version"`
	Integrity string       `json:"integrity"`
	Tarball   string       `json:"tarball,omitempty"`
	Files     []LockedFile `json:"files,omitempty"` // a PyPI release's wheels and sdist
	// Provenance is the source repository a verified npm provenance attestation
	// names ("https://github.com/org/repo"); "" when the registry offered none.
	Provenance string `json:"provenance,omitempty"`
}

// LockedFile is one file of a PyPI release: its name and the index's sha256 (hex).
type LockedFile struct {
	Filename string `json:"filename"`
	SHA256   string `json:"sha256"`
}

// Resolution is what a registry says of a package now.
type Resolution struct {
	Integrity, Tarball string
	Files              []LockedFile
	Err                error
	// Provenance is the source repository of the npm provenance attestation the
	// registry offers, verified (VerifyNPMProvenance); ProvenanceErr says why it
	// is not: it did not verify, or (errProvenanceFetch) it could not be fetched.
	// Both are empty when the registry offers none, or the Resolver has no Trusted root.
	Provenance    string
	ProvenanceErr error
}

// ReadLock reads a lock file; a missing file is (nil, nil).
func ReadLock(path string) (*Lock, error) {
	b, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var l Lock
	if err := json.Unmarshal(b, &l); err != nil || l.Version != 1 {
		return nil, fmt.Errorf("%s is not a version 1 mcpgate.lock", path)
	}
	return &l, nil
}

// WriteLock writes l to path (sorted, mode 0644), through a temporary file.
func WriteLock(path string, l *Lock) error {
	l.Version = 1
	slices.SortFunc(l.Packages, func(a, b LockedPackage) int {
		return cmp.Or(cmp.Compare(a.Ecosystem, b.Ecosystem), cmp.Compare(a.Name, b.Name), cmp.Compare(a.Version, b.Version))
	})
	l.Packages = slices.CompactFunc(l.Packages, func(a, b LockedPackage) bool {
		return a.Ecosystem == b.Ecosystem && a.Name == b.Name && a.Version == b.Version
	})
	b, err := json.MarshalIndent(l, "", "  ")
	if err != nil {
		return err
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), ".mcpgate.lock-*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.Write(append(b, '\n')); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Chmod(0o644); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), path)
}

func (l *Lock) find(p PackageRef) *LockedPackage {
	for i, x := range l.Packages {
		if x.Ecosystem == p.Ecosystem && x.Name == lockName(p) && x.Version == lockVersion(p) {
			return &l.Packages[i]
		}
	}
	return nil
}

func lockVersion(p PackageRef) string { return strings.TrimPrefix(p.Version, "v") }

// lockName is the package's name in the lock: a PyPI name normalized (PEP 503), so
// "MCP_Server.Fetch" and "mcp-server-fetch" are one package.
func lockName(p PackageRef) string {
	if p.Ecosystem == "pypi" {
		return pypiNorm(p.Name)
	}
	return p.Name
}

// Lockable are the packages of the configuration that a lock can hold: npm and PyPI
// packages with an exact version, and images with a digest.
func Lockable(c *Config) []PackageRef {
	var out []PackageRef
	for _, s := range c.Servers {
		for _, p := range Packages(s) {
			if lockable(p) {
				out = append(out, p)
			}
		}
	}
	return out
}

func lockable(p PackageRef) bool {
	return ((p.Ecosystem == "npm" || p.Ecosystem == "pypi") && p.Pinned()) || (p.Ecosystem == "oci" && p.Digest != "")
}

// Resolver finds a package's integrity now. NPMRegistry is the npm registry's base
// URL (https://registry.npmjs.org by default, or $npm_config_registry); PyPIIndex a
// Python package index's simple API (DefaultPyPIIndex).
type Resolver struct {
	NPMRegistry string
	PyPIIndex   string
	Client      *http.Client
	// Trusted verifies npm provenance attestations where the registry offers them
	// (docs/vet.md#provenance); nil skips them.
	Trusted root.TrustedMaterial
}

// DefaultNPMRegistry is the npm registry from the environment, or the public one.
func DefaultNPMRegistry() string {
	for _, k := range []string{"npm_config_registry", "NPM_CONFIG_REGISTRY"} {
		if v := os.Getenv(k); v != "" {
			return v
		}
	}
	return "https://registry.npmjs.org"
}

// Resolve finds the integrity of each package: npm's dist.integrity from the
// registry's version document (GET REGISTRY/NAME/VERSION), an image's digest from
// its reference. Keys are PackageRef.Spec.
func (r Resolver) Resolve(ctx context.Context, refs []PackageRef) map[string]Resolution {
	out := map[string]Resolution{}
	for _, p := range refs {
		if _, done := out[p.Spec()]; done {
			continue
		}
		switch p.Ecosystem {
		case "oci":
			out[p.Spec()] = Resolution{Integrity: p.Digest}
		case "npm":
			out[p.Spec()] = r.npm(ctx, p)
		case "pypi":
			out[p.Spec()] = r.pypi(ctx, p)
		}
	}
	return out
}

func (r Resolver) npm(ctx context.Context, p PackageRef) Resolution {
	reg := strings.TrimSuffix(cmp.Or(r.NPMRegistry, DefaultNPMRegistry()), "/")
	u := reg + "/" + strings.Replace(p.Name, "/", "%2f", 1) + "/" + url.PathEscape(lockVersion(p))
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return Resolution{Err: err}
	}
	req.Header.Set("Accept", "application/json")
	c := r.Client
	if c == nil {
		c = http.DefaultClient
	}
	resp, err := c.Do(req)
	if err != nil {
		return Resolution{Err: err}
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return Resolution{Err: fmt.Errorf("npm registry: %s %s", p.Spec(), resp.Status)}
	}
	var doc struct {
		Version string `json:"version"`
		Dist    struct {
			Integrity    string `json:"integrity"`
			Tarball      string `json:"tarball"`
			Attestations struct {
				URL        string `json:"url"`
				Provenance struct {
					PredicateType string `json:"predicateType"`
				} `json:"provenance"`
			} `json:"attestations"`
		} `json:"dist"`
	}
	if err := json.NewDecoder(io.LimitReader(resp.Body, 16<<20)).Decode(&doc); err != nil {
		return Resolution{Err: fmt.Errorf("npm registry: %s: %w", p.Spec(), err)}
	}
	if doc.Dist.Integrity == "" {
		return Resolution{Err: fmt.Errorf("npm registry: %s has no dist.integrity", p.Spec())}
	}
	res := Resolution{Integrity: doc.Dist.Integrity, Tarball: doc.Dist.Tarball}
	if a := doc.Dist.Attestations; r.Trusted != nil && a.URL != "" {
		b, err := r.npmAttestations(ctx, c, a.URL, cmp.Or(a.Provenance.PredicateType, "https://slsa.dev/provenance/v1"))
		if err == nil {
			res.Provenance, err = VerifyNPMProvenance(r.Trusted, b, p.Name, lockVersion(p), doc.Dist.Integrity)
		}
		res.ProvenanceErr = err
	}
	return res
}

// NewLock builds a lock from resolved packages; packages that did not resolve are
// returned as errors.
func NewLock(refs []PackageRef, res map[string]Resolution) (*Lock, []error) {
	l := &Lock{Version: 1}
	var errs []error
	for _, p := range refs {
		r := res[p.Spec()]
		if r.Err != nil || r.Integrity == "" {
			errs = append(errs, fmt.Errorf("%s: %v", p.Spec(), cmp.Or(r.Err, errors.New("not resolved"))))
			continue
		}
		if r.ProvenanceErr != nil {
			errs = append(errs, fmt.Errorf("%s: provenance: %v", p.Spec(), r.ProvenanceErr))
			continue
		}
		l.Packages = append(l.Packages, LockedPackage{Ecosystem: p.Ecosystem, Name: lockName(p), Version: lockVersion(p), Integrity: r.Integrity, Tarball: r.Tarball, Files: r.Files, Provenance: r.Provenance})
	}
	return l, errs
}

// checkProvenance: an npm provenance attestation that does not verify, or names
// another source repository than the lock (vet_provenance_invalid); one the lock
// holds that cannot be fetched or is no longer offered (vet_integrity_unverified).
func checkProvenance(server, ptr string, p PackageRef, lp *LockedPackage, r Resolution) []Finding {
	spec := strconv.Quote(p.Spec())
	switch {
	case r.Err != nil:
	case r.ProvenanceErr != nil && errors.Is(r.ProvenanceErr, errProvenanceFetch):
		return []Finding{newFinding(RuleIntegrityUnverified, server, ptr, spec+"'s provenance attestation could not be fetched from the registry to verify it")}
	case r.ProvenanceErr != nil:
		return []Finding{newFinding(RuleProvenanceInvalid, server, ptr, spec+"'s provenance attestation does not verify ("+provenanceReason(r.ProvenanceErr)+"): the registry offers a signature that does not match the package; do not run it until reviewed")}
	case lp.Provenance != "" && r.Provenance == "" && r.Integrity == lp.Integrity:
		return []Finding{newFinding(RuleIntegrityUnverified, server, ptr, spec+" was locked with provenance from "+lp.Provenance+", and the registry offers none now to verify")}
	case lp.Provenance != "" && r.Provenance == "":
		return []Finding{newFinding(RuleProvenanceInvalid, server, ptr, spec+" was locked with provenance from "+lp.Provenance+", and the registry offers none now")}
	case lp.Provenance != "" && r.Provenance != lp.Provenance:
		return []Finding{newFinding(RuleProvenanceInvalid, server, ptr, spec+" was built from "+r.Provenance+", not from "+lp.Provenance+" as locked: another repository publishes it now")}
	}
	return nil
}

// provenanceReason is a verification error's first line, cut to 200 bytes: it
// names keys, logs and digests of the attestation, never a configuration value.
func provenanceReason(err error) string {
	s, _, _ := strings.Cut(err.Error(), "\n")
	if len(s) > 200 {
		s = s[:200] + "…"
	}
	return s
}

// checkLock: a locked package whose integrity now differs (swapped), one that could
// not be resolved, and a pinned package the lock does not hold.
func checkLock(s Server, l *Lock, res map[string]Resolution) []Finding {
	var out []Finding
	for _, p := range Packages(s) {
		if !lockable(p) {
			continue
		}
		ptr := s.Pointer + "/args/" + strconv.Itoa(p.Arg)
		lp := l.find(p)
		if lp == nil {
			out = append(out, newFinding(RuleNotLocked, s.Name, ptr, strconv.Quote(p.Spec())+" is not in "+LockFileName+": mcpgate vet --lock adds it"))
			continue
		}
		r, ok := res[p.Spec()]
		switch {
		case !ok:
		case r.Err != nil || r.Integrity == "":
			out = append(out, newFinding(RuleIntegrityUnverified, s.Name, ptr, strconv.Quote(p.Spec())+"'s integrity could not be resolved to compare with "+LockFileName))
		case r.Integrity != lp.Integrity:
			out = append(out, newFinding(RuleIntegrityMismatch, s.Name, ptr,
				strconv.Quote(p.Spec())+" resolves to an artifact whose integrity differs from the one in "+LockFileName+filesChanged(lp.Files, r.Files)+": the package was swapped since it was reviewed; review it, then mcpgate vet --lock"))
		}
		if ok {
			out = append(out, checkProvenance(s.Name, ptr, p, lp, r)...)
		}
	}
	return out
}
