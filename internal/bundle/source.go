package bundle

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
	"oras.land/oras-go/v2/content"
	"oras.land/oras-go/v2/registry/remote"
)

// MediaType is a bundle's layer in an OCI artifact (oras push … FILE:MediaType).
const MediaType = "application/vnd.mcpgate.policy-bundle.v1.tar+gzip"

// Fetcher gets a bundle archive from where gateway run --policy-bundle says: an
// https:// URL, an http:// URL of a loopback host, an oci://REGISTRY/REPO:TAG
// artifact, or a file path. It is not safe for concurrent use.
type Fetcher struct {
	src    string
	client *http.Client       // for http(s)
	repo   *remote.Repository // for oci
	etag   string             // the last 200's ETag, sent as If-None-Match; for oci the last manifest digest
	last   string             // the Hash of the last archive returned
}

// NewFetcher checks src and returns its Fetcher.
func NewFetcher(src string) (*Fetcher, error) {
	u, err := url.Parse(src)
	switch {
	case err == nil && u.Scheme == "https":
	case err == nil && u.Scheme == "http":
		if !loopbackHost(u.Hostname()) {
			return nil, errors.New("plain http:// is for a loopback host only (127.0.0.1, ::1, localhost); use https://")
		}
	case err == nil && u.Scheme == "oci":
		repo, err := remote.NewRepository(strings.TrimPrefix(src, "oci://"))
		if err != nil {
			return nil, fmt.Errorf("want oci://REGISTRY/REPOSITORY:TAG (or @sha256:…): %w", err)
		}
		if repo.Reference.Reference == "" {
			return nil, errors.New("oci:// names no tag or digest: want oci://REGISTRY/REPOSITORY:TAG")
		}
		h, _, splitErr := net.SplitHostPort(repo.Reference.Registry)
		if splitErr != nil {
			h = repo.Reference.Registry
		}
		repo.PlainHTTP = loopbackHost(strings.Trim(h, "[]")) // TLS everywhere but on loopback
		repo.MaxMetadataBytes = 1 << 20
		repo.Client = &http.Client{Timeout: 30 * time.Second}
		return &Fetcher{src: src, repo: repo}, nil
	case err == nil && u.Scheme != "" && len(u.Scheme) > 1: // "C:" is a path
		return nil, fmt.Errorf("scheme %q: want https://, http:// to loopback, or a file path", u.Scheme)
	default:
		return &Fetcher{src: src}, nil
	}
	if u.User != nil {
		return nil, errors.New("a bundle URL carries no user-info; serve it without credentials or over a private network")
	}
	return &Fetcher{src: src, client: &http.Client{Timeout: 30 * time.Second, CheckRedirect: checkRedirect}}, nil
}

// maxETag bounds the ETag kept for If-None-Match; a longer one is not kept.
const maxETag = 256

// checkRedirect follows a redirect only as NewFetcher takes a source: https://, or
// plain http:// to a loopback host, without user-info, at most 10 times.
func checkRedirect(req *http.Request, via []*http.Request) error {
	switch u := req.URL; {
	case len(via) >= 10:
		return errors.New("stopped after 10 redirects")
	case u.User != nil:
		return errors.New("redirected to a URL with user-info")
	case u.Scheme == "https", u.Scheme == "http" && loopbackHost(u.Hostname()):
		return nil
	default:
		return fmt.Errorf("redirected to %s://%s: a bundle is fetched over https://, or plain http:// from a loopback host only", u.Scheme, u.Host)
	}
}

func loopbackHost(h string) bool {
	if h == "localhost" {
		return true
	}
	ip := net.ParseIP(h)
	return ip != nil && ip.IsLoopback()
}

// Fetch returns the archive, or nil when it is the one the last Fetch returned (a 304
// to If-None-Match, or the same bytes). An archive over MaxArchiveBytes is an error.
func (f *Fetcher) Fetch(ctx context.Context) ([]byte, error) {
	var data []byte
	if f.repo != nil {
		var err error
		if data, err = f.fetchOCI(ctx); err != nil || data == nil {
			return nil, err
		}
	} else if f.client == nil {
		fh, err := os.Open(f.src)
		if err != nil {
			return nil, err
		}
		defer fh.Close()
		if data, err = readBounded(fh); err != nil {
			return nil, err
		}
	} else {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, f.src, nil)
		if err != nil {
			return nil, err
		}
		if f.etag != "" {
			req.Header.Set("If-None-Match", f.etag)
		}
		resp, err := f.client.Do(req)
		if err != nil {
			return nil, err
		}
		defer resp.Body.Close()
		switch resp.StatusCode {
		case http.StatusNotModified:
			if f.etag == "" { // nothing was asked conditionally: no archive to keep
				return nil, errors.New("GET answered 304 Not Modified to a request without If-None-Match")
			}
			return nil, nil
		case http.StatusOK:
		default:
			return nil, fmt.Errorf("GET answered %s", resp.Status)
		}
		if data, err = readBounded(resp.Body); err != nil {
			return nil, err
		}
		f.etag = resp.Header.Get("ETag")
		if len(f.etag) > maxETag || strings.ContainsFunc(f.etag, func(r rune) bool { return r < 0x20 || r > 0x7e }) {
			f.etag = "" // not one to send back: the next fetch is unconditional
		}
	}
	if h := Hash(data); h != f.last {
		f.last = h
		return data, nil
	}
	return nil, nil
}

// fetchOCI resolves the tag; when the manifest digest changed it reads the manifest
// and the bundle layer (of MediaType, or the only layer), each checked against its
// digest and bounded. nil means the digest is the last one.
func (f *Fetcher) fetchOCI(ctx context.Context) ([]byte, error) {
	desc, err := f.repo.Resolve(ctx, f.repo.Reference.Reference)
	if err != nil {
		return nil, err
	}
	if string(desc.Digest) == f.etag {
		return nil, nil
	}
	raw, err := content.FetchAll(ctx, f.repo, desc)
	if err != nil {
		return nil, err
	}
	var m ocispec.Manifest
	if err := json.Unmarshal(raw, &m); err != nil {
		return nil, fmt.Errorf("%w: OCI manifest: %v", ErrMalformed, err)
	}
	var layer *ocispec.Descriptor
	for i, l := range m.Layers {
		if l.MediaType == MediaType || len(m.Layers) == 1 {
			layer = &m.Layers[i]
		}
	}
	switch {
	case layer == nil:
		return nil, fmt.Errorf("%w: the OCI artifact has no layer of media type %s", ErrMalformed, MediaType)
	case layer.Size > MaxArchiveBytes:
		return nil, fmt.Errorf("%w: layer of %d bytes, at most %d", ErrMalformed, layer.Size, MaxArchiveBytes)
	}
	data, err := content.FetchAll(ctx, f.repo.Blobs(), *layer)
	if err != nil {
		return nil, err
	}
	f.etag = string(desc.Digest)
	return data, nil
}

func readBounded(r io.Reader) ([]byte, error) {
	data, err := io.ReadAll(io.LimitReader(r, MaxArchiveBytes+1))
	if err != nil {
		return nil, err
	}
	if len(data) > MaxArchiveBytes {
		return nil, fmt.Errorf("%w: more than %d bytes", ErrMalformed, MaxArchiveBytes)
	}
	return data, nil
}

// State is the directory where a gateway keeps its last good bundle (current.tar.gz),
// so that a restart without the server still enforces it, and the hashes of every
// bundle it ran (history, one a line: its Hash, then its Signed), the ancestors a new
// bundle's previous may name.
type State struct{ Dir string }

// Last returns the last good archive; nil when there is none.
func (s State) Last() ([]byte, error) {
	data, err := os.ReadFile(filepath.Join(s.Dir, "current.tar.gz"))
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	return data, err
}

// Save makes b's archive the last good bundle (written whole, then renamed) and adds
// its Hash and Signed to the history.
func (s State) Save(archive []byte, b *Bundle) error {
	if err := os.MkdirAll(s.Dir, 0o700); err != nil {
		return err
	}
	tmp, err := os.CreateTemp(s.Dir, ".current-*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.Write(archive); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Sync(); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	if err := os.Rename(tmp.Name(), filepath.Join(s.Dir, "current.tar.gz")); err != nil {
		return err
	}
	if s.Known(Hash(archive)) && (b.Signed == "" || s.Known(b.Signed)) {
		return nil
	}
	h, err := os.OpenFile(filepath.Join(s.Dir, "history"), os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o600)
	if err != nil {
		return err
	}
	_, err = fmt.Fprintln(h, strings.TrimSpace(Hash(archive)+" "+b.Signed))
	if cerr := h.Close(); err == nil {
		err = cerr
	}
	return err
}

// IsLatest reports whether b is the bundle the history names last (by its Hash or
// Signed): the last good bundle on disk must be, else it was put back in place of
// the one activated after it. A history that does not exist or is empty names none,
// and any bundle is then the latest.
func (s State) IsLatest(b *Bundle) bool {
	data, err := os.ReadFile(filepath.Join(s.Dir, "history"))
	if err != nil {
		return errors.Is(err, os.ErrNotExist)
	}
	var last []string
	for line := range strings.SplitSeq(string(data), "\n") {
		if f := strings.Fields(line); len(f) > 0 {
			last = f
		}
	}
	return last == nil || slices.Contains(last, b.Hash) || b.Signed != "" && slices.Contains(last, b.Signed)
}

// Known reports whether a bundle of this Hash or Signed ran here before.
func (s State) Known(hash string) bool {
	f, err := os.Open(filepath.Join(s.Dir, "history"))
	if err != nil {
		return false
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if slices.Contains(strings.Fields(sc.Text()), hash) {
			return true
		}
	}
	return false
}
