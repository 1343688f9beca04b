package vet

import (
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"regexp"
	"slices"
	"strings"
)

// DefaultPyPIIndex is the Python package index from the environment ($UV_DEFAULT_INDEX,
// $UV_INDEX_URL, $PIP_INDEX_URL, as uvx and pipx read them), or https://pypi.org/simple.
func DefaultPyPIIndex() string {
	for _, k := range []string{"UV_DEFAULT_INDEX", "UV_INDEX_URL", "PIP_INDEX_URL"} {
		if v := os.Getenv(k); v != "" {
			return v
		}
	}
	return "https://pypi.org/simple"
}

var pypiSep = regexp.MustCompile(`[-_.]+`)

// pypiNorm is a project name normalized as PEP 503 §"Normalized Names" says.
func pypiNorm(name string) string {
	return strings.ToLower(pypiSep.ReplaceAllString(name, "-"))
}

// PyPIIntegrity is the integrity a lock holds for a PyPI release: "files-sha256:" and
// the hex SHA-256 of its files' "filename sha256hex\n" lines, sorted. Any file
// replaced, added or removed changes it.
func PyPIIntegrity(files []LockedFile) string {
	lines := make([]string, len(files))
	for i, f := range files {
		lines[i] = f.Filename + " " + strings.ToLower(f.SHA256) + "\n"
	}
	slices.Sort(lines)
	sum := sha256.Sum256([]byte(strings.Join(lines, "")))
	return "files-sha256:" + hex.EncodeToString(sum[:])
}

// pypi reads the release's files from the index's JSON simple API (PEP 691:
// GET INDEX/NAME/ with Accept application/vnd.pypi.simple.v1+json) and keeps those
// whose filename names the version (a wheel's second field, an sdist's last).
func (r Resolver) pypi(ctx context.Context, p PackageRef) Resolution {
	index := strings.TrimSuffix(cmp.Or(r.PyPIIndex, DefaultPyPIIndex()), "/")
	u := index + "/" + url.PathEscape(pypiNorm(p.Name)) + "/"
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return Resolution{Err: err}
	}
	req.Header.Set("Accept", "application/vnd.pypi.simple.v1+json")
	c := r.Client
	if c == nil {
		c = http.DefaultClient
	}
	resp, err := c.Do(req)
	if err != nil {
		return Resolution{Err: fmt.Errorf("python package index: %s: %w", p.Spec(), err)}
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return Resolution{Err: fmt.Errorf("python package index: %s: %s", p.Spec(), resp.Status)}
	}
	files, err := pypiFiles(io.LimitReader(resp.Body, 64<<20), lockVersion(p))
	if err != nil {
		return Resolution{Err: fmt.Errorf("python package index: %s: %w", p.Spec(), err)}
	}
	return Resolution{Integrity: PyPIIntegrity(files), Files: files}
}

// pypiFiles reads a PEP 691 project page and returns the files of version, sorted by
// name. A file without a sha256 hash, or no file of the version, is an error.
func pypiFiles(rd io.Reader, version string) ([]LockedFile, error) {
	var page struct {
		Files []struct {
			Filename string            `json:"filename"`
			Hashes   map[string]string `json:"hashes"`
		} `json:"files"`
	}
	if err := json.NewDecoder(rd).Decode(&page); err != nil {
		return nil, fmt.Errorf("not a PEP 691 project page: %w", err)
	}
	var out []LockedFile
	for _, f := range page.Files {
		if !strings.EqualFold(fileVersion(f.Filename), version) {
			continue
		}
		h := strings.ToLower(f.Hashes["sha256"])
		if len(h) != 64 {
			return nil, fmt.Errorf("%s has no sha256 hash", f.Filename)
		}
		out = append(out, LockedFile{Filename: f.Filename, SHA256: h})
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("no file of version %s", version)
	}
	slices.SortFunc(out, func(a, b LockedFile) int { return cmp.Compare(a.Filename, b.Filename) })
	return out, nil
}

// fileVersion is the version a distribution's filename names: a wheel's second
// dash-separated field (PEP 427), an sdist's text after its last dash (PEP 625);
// "" for anything else.
func fileVersion(name string) string {
	if base, ok := strings.CutSuffix(name, ".whl"); ok {
		if parts := strings.Split(base, "-"); len(parts) >= 5 {
			return parts[1]
		}
		return ""
	}
	for _, ext := range []string{".tar.gz", ".zip", ".tar.bz2", ".tgz"} {
		if base, ok := strings.CutSuffix(name, ext); ok {
			if i := strings.LastIndexByte(base, '-'); i > 0 {
				return base[i+1:]
			}
		}
	}
	return ""
}

// filesChanged names the files of a PyPI release that differ between the lock and
// now (" (changed: a.whl; added: b.whl)"), or "" when there are none to name.
func filesChanged(locked, now []LockedFile) string {
	if len(locked) == 0 && len(now) == 0 {
		return ""
	}
	hash := func(fs []LockedFile) map[string]string {
		m := map[string]string{}
		for _, f := range fs {
			m[f.Filename] = f.SHA256
		}
		return m
	}
	was, is := hash(locked), hash(now)
	var changed, added, removed []string
	for n, h := range is {
		switch w, ok := was[n]; {
		case !ok:
			added = append(added, n)
		case w != h:
			changed = append(changed, n)
		}
	}
	for n := range was {
		if _, ok := is[n]; !ok {
			removed = append(removed, n)
		}
	}
	var parts []string
	for _, x := range []struct {
		what string
		list []string
	}{{"changed", changed}, {"added", added}, {"removed", removed}} {
		if len(x.list) > 0 {
			slices.Sort(x.list)
			parts = append(parts, x.what+": "+strings.Join(x.list, ", "))
		}
	}
	if len(parts) == 0 {
		return ""
	}
	return " (" + strings.Join(parts, "; ") + ")"
}
