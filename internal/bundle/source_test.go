package bundle

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"

	"github.com/opencontainers/go-digest"
	specs "github.com/opencontainers/image-spec/specs-go"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
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

// registry is the pull side of an OCI distribution registry for one repository,
// serving one artifact whose only layer is the bundle.
type registry struct {
	manifest, layer []byte
	pulls           int // manifest GETs
}

func (r *registry) publish(layer []byte) {
	r.layer = layer
	r.manifest, _ = json.Marshal(ocispec.Manifest{
		Versioned:    specs.Versioned{SchemaVersion: 2},
		MediaType:    ocispec.MediaTypeImageManifest,
		ArtifactType: "application/vnd.mcpgate.policy-bundle.v1",
		Config:       ocispec.DescriptorEmptyJSON,
		Layers:       []ocispec.Descriptor{{MediaType: MediaType, Digest: digest.FromBytes(layer), Size: int64(len(layer))}},
	})
}

func (r *registry) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	switch p := req.URL.Path; {
	case p == "/v2/":
	case p == "/v2/org/policies/manifests/v1", p == "/v2/org/policies/manifests/"+digest.FromBytes(r.manifest).String():
		w.Header().Set("Content-Type", ocispec.MediaTypeImageManifest)
		w.Header().Set("Docker-Content-Digest", digest.FromBytes(r.manifest).String())
		w.Header().Set("Content-Length", strconv.Itoa(len(r.manifest)))
		if req.Method == http.MethodGet {
			r.pulls++
			w.Write(r.manifest)
		}
	case p == "/v2/org/policies/blobs/"+digest.FromBytes(r.layer).String():
		w.Header().Set("Content-Length", strconv.Itoa(len(r.layer)))
		w.Write(r.layer)
	default:
		http.NotFound(w, req)
	}
}

// TestFetchOCI: an oci:// source pulls the bundle layer of the tagged artifact
// (over plain HTTP only because the registry is on loopback), reads the manifest
// again only when the tag moved, and refuses a layer that does not match its digest.
func TestFetchOCI(t *testing.T) {
	reg := &registry{}
	reg.publish([]byte("archive-1"))
	srv := httptest.NewServer(reg)
	defer srv.Close()
	f, err := NewFetcher("oci://" + strings.TrimPrefix(srv.URL, "http://") + "/org/policies:v1")
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if data, err := f.Fetch(ctx); err != nil || string(data) != "archive-1" {
		t.Fatalf("first: %q %v", data, err)
	}
	if data, err := f.Fetch(ctx); err != nil || data != nil || reg.pulls != 1 {
		t.Fatalf("unchanged: %q %v, %d manifest pulls", data, err, reg.pulls)
	}
	reg.publish([]byte("archive-2"))
	if data, err := f.Fetch(ctx); err != nil || string(data) != "archive-2" {
		t.Fatalf("moved tag: %q %v", data, err)
	}
	good := reg.layer
	reg.publish([]byte("archive-3"))
	reg.layer = append([]byte(nil), good...) // the blob served is not the one the manifest names
	if _, err := f.Fetch(ctx); err == nil {
		t.Fatal("a layer that does not match its digest was accepted")
	}
	for src, want := range map[string]string{
		"oci://registry.example/org/policies": "no tag",
		"oci://registry.example":              "want oci://",
	} {
		if _, err := NewFetcher(src); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v, want %q", src, err, want)
		}
	}
	if f, err := NewFetcher("oci://registry.example/org/policies:v1"); err != nil || f.repo.PlainHTTP {
		t.Errorf("a registry off loopback must be reached over TLS: %v", err)
	}
}

// TestFetchHostileServer: a 304 to a request that was not conditional is an error
// (there is no archive to keep), an ETag too long or with control characters is not
// sent back, and a redirect is followed only to a source NewFetcher takes.
func TestFetchHostileServer(t *testing.T) {
	ctx := context.Background()
	notModified := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusNotModified)
	}))
	defer notModified.Close()
	f, _ := NewFetcher(notModified.URL)
	if data, err := f.Fetch(ctx); err == nil || data != nil || !strings.Contains(err.Error(), "304") {
		t.Fatalf("a first 304: %q %v", data, err)
	}

	for _, etag := range []string{strings.Repeat("e", maxETag+1), "\"\xe9\""} {
		var sent []string
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			sent = append(sent, r.Header.Get("If-None-Match"))
			w.Header().Set("ETag", etag)
			w.Write([]byte("archive"))
		}))
		f, _ := NewFetcher(srv.URL)
		for range 2 {
			if _, err := f.Fetch(ctx); err != nil {
				t.Fatalf("ETag %.20q: %v", etag, err)
			}
		}
		srv.Close()
		if len(sent) != 2 || sent[1] != "" {
			t.Fatalf("ETag %.20q sent back: %q", etag, sent)
		}
	}

	target := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.Write([]byte("archive")) }))
	defer target.Close()
	for _, tc := range []struct{ to, err string }{
		{target.URL + "/b.tar.gz", ""}, // plain http on loopback, as NewFetcher takes it
		{"http://192.0.2.1/b.tar.gz", "redirected to http://192.0.2.1"},
		{"http://user:pw@127.0.0.1/b.tar.gz", "user-info"},
		{"ftp://127.0.0.1/b.tar.gz", "redirected to ftp://"},
	} {
		redirect := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { http.Redirect(w, r, tc.to, http.StatusFound) }))
		f, _ := NewFetcher(redirect.URL)
		data, err := f.Fetch(ctx)
		redirect.Close()
		if tc.err == "" && (err != nil || string(data) != "archive") || tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err)) {
			t.Errorf("redirect to %s: %q %v, want %q", tc.to, data, err, tc.err)
		}
	}
}
