// Package bundletest holds what the tests of policy bundles share. Only _test.go
// files import it.
package bundletest

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"io"
	"testing"
)

// Repack rewrites a bundle archive (tar.gz) entry by entry: edit gets each entry's
// name and bytes and returns the bytes to keep, or nil to leave the entry out. The
// signature is not renewed, so any change makes a tampered or unsigned bundle.
func Repack(t testing.TB, data []byte, edit func(name string, b []byte) []byte) []byte {
	t.Helper()
	zr, err := gzip.NewReader(bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	tr := tar.NewReader(zr)
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	tw := tar.NewWriter(zw)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		b, err := io.ReadAll(tr)
		if err != nil {
			t.Fatal(err)
		}
		if b = edit(h.Name, b); b == nil {
			continue
		}
		h.Size = int64(len(b))
		if err := tw.WriteHeader(h); err != nil {
			t.Fatal(err)
		}
		if _, err := tw.Write(b); err != nil {
			t.Fatal(err)
		}
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}
