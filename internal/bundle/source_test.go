package bundle

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// TestNewFetcher: https, http to a loopback host and file paths are sources; plain
// http elsewhere, user-info and other schemes are not.
func TestNewFetcher(t *testing.T) {
	for src, want := range map[string]string{
		"https://policies.example/bundle.tar.gz": "",
		"http://127.0.0.1:8080/b.tar.gz":         "",
		"http://[::1]/b.tar.gz":                  "",
		"http://localhost/b.tar.gz":              "",
		"/var/lib/mcpgate/bundle.tar.gz":         "",
		"bundle.tar.gz":                          "",
		"http://policies.example/b.tar.gz":       "loopback host only",
		"http://10.0.0.1/b.tar.gz":               "loopback host only",
		"https://u:p@policies.example/b.tar.gz":  "no user-info",
		"ftp://policies.example/b.tar.gz":        `scheme "ftp"`,
	} {
		_, err := NewFetcher(src)
		if (want == "") != (err == nil) || (err != nil && !strings.Contains(err.Error(), want)) {
			t.Errorf("%s: %v, want %q", src, err, want)
		}
	}
}

// TestFetchETag: the second fetch sends the first answer's ETag as If-None-Match and
// a 304 is "unchanged" (nil); a new archive is returned once.
func TestFetchETag(t *testing.T) {
	body, etag := "archive-1", `"1"`
	var conditional int
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("If-None-Match") == etag {
			conditional++
			w.WriteHeader(http.StatusNotModified)
			return
		}
		w.Header().Set("ETag", etag)
		w.Write([]byte(body))
	}))
	defer srv.Close()
	f, err := NewFetcher(srv.URL + "/bundle.tar.gz")
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if data, err := f.Fetch(ctx); err != nil || string(data) != "archive-1" {
		t.Fatalf("first: %q %v", data, err)
	}
	if data, err := f.Fetch(ctx); err != nil || data != nil || conditional != 1 {
		t.Fatalf("unchanged: %q %v (conditional %d)", data, err, conditional)
	}
	body, etag = "archive-2", `"2"`
	if data, err := f.Fetch(ctx); err != nil || string(data) != "archive-2" {
		t.Fatalf("new: %q %v", data, err)
	}
}
