package bundle

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// Fetcher gets a bundle archive from where gateway run --policy-bundle says: an
// https:// URL, an http:// URL of a loopback host, or a file path. It is not safe for
// concurrent use.
type Fetcher struct {
	src    string
	client *http.Client // nil for a file
	etag   string       // the last 200's ETag, sent as If-None-Match
	last   string       // the Hash of the last archive returned
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
	case err == nil && u.Scheme != "" && len(u.Scheme) > 1: // "C:" is a path
		return nil, fmt.Errorf("scheme %q: want https://, http:// to loopback, or a file path", u.Scheme)
	default:
		return &Fetcher{src: src}, nil
	}
	if u.User != nil {
		return nil, errors.New("a bundle URL carries no user-info; serve it without credentials or over a private network")
	}
	return &Fetcher{src: src, client: &http.Client{Timeout: 30 * time.Second}}, nil
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
	if f.client == nil {
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
			return nil, nil
		case http.StatusOK:
		default:
			return nil, fmt.Errorf("GET answered %s", resp.Status)
		}
		if data, err = readBounded(resp.Body); err != nil {
			return nil, err
		}
		f.etag = resp.Header.Get("ETag")
	}
	if h := Hash(data); h != f.last {
		f.last = h
		return data, nil
	}
	return nil, nil
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
// bundle it ran (history, one a line), the ancestors a new bundle's previous may name.
type State struct{ Dir string }

// Last returns the last good archive; nil when there is none.
func (s State) Last() ([]byte, error) {
	data, err := os.ReadFile(filepath.Join(s.Dir, "current.tar.gz"))
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	return data, err
}

// Save makes archive the last good bundle (written whole, then renamed) and adds
// its hash to the history.
func (s State) Save(archive []byte) error {
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
	if s.Known(Hash(archive)) {
		return nil
	}
	h, err := os.OpenFile(filepath.Join(s.Dir, "history"), os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o600)
	if err != nil {
		return err
	}
	_, err = fmt.Fprintln(h, Hash(archive))
	if cerr := h.Close(); err == nil {
		err = cerr
	}
	return err
}

// Known reports whether a bundle of this hash ran here before.
func (s State) Known(hash string) bool {
	f, err := os.Open(filepath.Join(s.Dir, "history"))
	if err != nil {
		return false
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if strings.TrimSpace(sc.Text()) == hash {
			return true
		}
	}
	return false
}
