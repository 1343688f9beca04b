package bundle

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"crypto"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

func mustPriv(t testing.TB, name string) crypto.Signer {
	t.Helper()
	k, err := LoadPrivateKey(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	return k
}

func mustPub(t testing.TB, name string) crypto.PublicKey {
	t.Helper()
	k, err := LoadPublicKey(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	return k
}

// policiesDir is a policies directory with a policy, its test, an example in a
// subdirectory and a note, the last two never bundled.
func policiesDir(t testing.TB) string {
	dir := t.TempDir()
	for name, src := range map[string]string{
		"10-block.js":            "function pre(ctx) { return ctx.params }",
		"10-block_test.js":       "function test_it() {}",
		"README.md":              "notes",
		".hidden.js":             "x",
		"examples/other.js":      "x",
		"examples/other_test.js": "x",
	} {
		if err := os.MkdirAll(filepath.Dir(filepath.Join(dir, name)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, name), []byte(src), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// TestBuildRead: a bundle built with each key type (the PEM files openssl genpkey
// and openssl pkey -pubout wrote) reads back with the public key, holds the
// top-level policies and tests only, and is the same bytes when built again.
func TestBuildRead(t *testing.T) {
	dir := policiesDir(t)
	m := Manifest{Revision: "7", Previous: "sha256:" + strings.Repeat("ab", 32), MinMCPGate: "v1.0.0", Roots: []string{"global"},
		AcceptDifferences: []string{"10-block.js", "old_rule.js"}}
	for _, kind := range []string{"ed25519", "p256", "rsa"} {
		t.Run(kind, func(t *testing.T) {
			key := mustPriv(t, kind+".key")
			a, err := Build(dir, m, key)
			if err != nil {
				t.Fatal(err)
			}
			b, err := Read(a, mustPub(t, kind+".pub"))
			if err != nil {
				t.Fatal(err)
			}
			if got := slices.Sorted(func(y func(string) bool) {
				for n := range b.Files {
					y(n)
				}
			}); !slices.Equal(got, []string{"10-block.js", "10-block_test.js"}) {
				t.Fatalf("files %q", got)
			}
			if b.Manifest.Revision != "7" || b.Manifest.Previous != m.Previous || b.Hash != Hash(a) || !slices.Equal(b.Manifest.Roots, m.Roots) ||
				!slices.Equal(b.Manifest.AcceptDifferences, m.AcceptDifferences) {
				t.Fatalf("bundle %+v", b.Manifest)
			}
			if kind == "ed25519" { // Ed25519 signatures are deterministic
				again, _ := Build(dir, m, key)
				if !bytes.Equal(a, again) {
					t.Fatal("two builds of the same input differ")
				}
			}
		})
	}
}

type entry struct {
	name string
	data []byte
	typ  byte
}

// pack writes entries as a tar.gz, with no checks.
func pack(t testing.TB, ents []entry) []byte {
	var buf bytes.Buffer
	gz := gzip.NewWriter(&buf)
	tw := tar.NewWriter(gz)
	for _, e := range ents {
		h := &tar.Header{Name: e.name, Mode: 0o644, Size: int64(len(e.data)), Typeflag: cmpByte(e.typ, tar.TypeReg)}
		if h.Typeflag != tar.TypeReg {
			h.Size, h.Linkname = 0, "/etc/passwd"
		}
		if err := tw.WriteHeader(h); err != nil {
			t.Fatal(err)
		}
		if _, err := tw.Write(e.data[:h.Size]); err != nil {
			t.Fatal(err)
		}
	}
	tw.Close()
	gz.Close()
	return buf.Bytes()
}

func cmpByte(a, b byte) byte {
	if a != 0 {
		return a
	}
	return b
}

// sigEntry is a .signatures.json signing the hashes of files with key.
func sigEntry(t testing.TB, key crypto.Signer, files map[string][]byte) entry {
	var p payload
	for _, n := range slices.Sorted(func(y func(string) bool) {
		for n := range files {
			y(n)
		}
	}) {
		sum := sha256.Sum256(files[n])
		p.Files = append(p.Files, fileHash{Name: n, Hash: hex.EncodeToString(sum[:]), Algorithm: "SHA-256"})
	}
	jws, err := sign(p, key)
	if err != nil {
		t.Fatal(err)
	}
	data, _ := json.Marshal(signatures{Signatures: []string{jws}})
	return entry{name: SignaturesName, data: data}
}

// TestReadRefuses: every way a bundle can be unsigned, altered or out of shape is
// refused with the error class a caller counts and a message naming the fault.
func TestReadRefuses(t *testing.T) {
	key := mustPriv(t, "ed25519.key")
	pub := mustPub(t, "ed25519.pub")
	manifest := []byte(`{"revision": "2"}`)
	policy := []byte("function pre(ctx) { return ctx.params }")
	good := map[string][]byte{ManifestName: manifest, "a.js": policy}
	sig := sigEntry(t, key, good)
	base := []entry{{name: ManifestName, data: manifest}, {name: "a.js", data: policy}}
	with := func(es ...entry) []byte { return pack(t, append(slices.Clone(base), es...)) }
	if _, err := Read(with(sig), pub); err != nil {
		t.Fatalf("the untouched bundle: %v", err)
	}
	big := bytes.Repeat([]byte{' '}, MaxFileBytes+1)
	many := slices.Clone(base)
	for i := range MaxFiles {
		many = append(many, entry{name: "f" + strings.Repeat("x", i%50) + string(rune('a'+i%26)) + ".js"})
	}
	for _, tc := range []struct {
		name    string
		archive []byte
		key     crypto.PublicKey
		want    error
		msg     string
	}{
		{"unsigned", with(), pub, ErrUnsigned, "no .signatures.json"},
		{"no signature in the file", with(entry{name: SignaturesName, data: []byte(`{"signatures": []}`)}), pub, ErrUnsigned, "0 signatures"},
		{"wrong key", with(sig), mustPub(t, "other.pub"), ErrSignature, "wrong key"},
		{"key of another type", with(sig), mustPub(t, "p256.pub"), ErrSignature, "signed with EdDSA"},
		{"tampered policy", pack(t, []entry{{name: ManifestName, data: manifest}, {name: "a.js", data: []byte("function pre(ctx) { return null }")}, sig}), pub, ErrTampered, "a.js was changed after signing"},
		{"tampered manifest", pack(t, []entry{{name: ManifestName, data: []byte(`{"revision": "3"}`)}, {name: "a.js", data: policy}, sig}), pub, ErrTampered, ".manifest was changed"},
		{"file not covered", with(sig, entry{name: "b.js", data: policy}), pub, ErrTampered, "b.js is not covered"},
		{"signed file missing", pack(t, []entry{{name: ManifestName, data: manifest}, sig}), pub, ErrTampered, "a.js is signed but not in the bundle"},
		{"path traversal", with(sig, entry{name: "../evil.js", data: policy}), pub, ErrMalformed, `unexpected file "../evil.js"`},
		{"subdirectory", with(sig, entry{name: "dir/a.js", data: policy}), pub, ErrMalformed, `unexpected file "dir/a.js"`},
		{"absolute path", with(sig, entry{name: "/etc/a.js", data: policy}), pub, ErrMalformed, "unexpected file"},
		{"other file", with(sig, entry{name: "run.sh", data: policy}), pub, ErrMalformed, "unexpected file"},
		{"symlink", with(sig, entry{name: "b.js", typ: tar.TypeSymlink}), pub, ErrMalformed, "not a regular file"},
		{"hard link", with(sig, entry{name: "b.js", typ: tar.TypeLink}), pub, ErrMalformed, "not a regular file"},
		{"directory", with(sig, entry{name: "d", typ: tar.TypeDir}), pub, ErrMalformed, "not a regular file"},
		{"duplicate", with(sig, entry{name: "a.js", data: policy}), pub, ErrMalformed, "a.js appears twice"},
		{"file too large", with(sig, entry{name: "big.js", data: big}), pub, ErrMalformed, "big.js: 4194305 bytes"},
		{"too many files", pack(t, append(many, sig)), pub, ErrMalformed, "more than 512 files"},
		{"not gzip", []byte("PK\x03\x04 a zip"), pub, ErrMalformed, "not gzip"},
		{"archive too large", make([]byte, MaxArchiveBytes+1), pub, ErrMalformed, "at most"},
		{"no manifest", pack(t, []entry{{name: "a.js", data: policy}, sigEntry(t, key, map[string][]byte{"a.js": policy})}), pub, ErrMalformed, "no .manifest"},
		{"manifest with an unknown field", func() []byte {
			m := []byte(`{"revision": "2", "exec": "x"}`)
			return pack(t, []entry{{name: ManifestName, data: m}, sigEntry(t, key, map[string][]byte{ManifestName: m})})
		}(), pub, ErrMalformed, `unknown field "exec"`},
		{"bad previous", func() []byte {
			m := []byte(`{"revision": "2", "previous": "md5:00"}`)
			return pack(t, []entry{{name: ManifestName, data: m}, sigEntry(t, key, map[string][]byte{ManifestName: m})})
		}(), pub, ErrMalformed, "previous"},
		{"garbage signature", with(entry{name: SignaturesName, data: []byte(`{"signatures": ["a.b.c"]}`)}), pub, ErrSignature, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b, err := Read(tc.archive, tc.key)
			if !errors.Is(err, tc.want) || !strings.Contains(err.Error(), tc.msg) {
				t.Fatalf("got %v (bundle %v), want %v containing %q", err, b, tc.want, tc.msg)
			}
		})
	}
}

// TestSupports: min_mcpgate refuses an older release and lets a development build
// through.
func TestSupports(t *testing.T) {
	m := Manifest{Revision: "1", MinMCPGate: "v1.4.0"}
	for v, ok := range map[string]bool{
		"v1.4.0": true, "v1.5.2 (commit 0123)": true, "v1.3.9": false, "v1.4.0-rc.1": false,
		"dev": true, "dev (0123abc+dirty)": true,
	} {
		if err := m.Supports(v); (err == nil) != ok {
			t.Errorf("%s: %v", v, err)
		}
	}
}

// TestManifestCheck: accept_differences names policy files, never a test, a path or
// anything else.
func TestManifestCheck(t *testing.T) {
	for _, tc := range []struct {
		accept []string
		ok     bool
	}{
		{nil, true},
		{[]string{"deny_shell.js", "10-block.js"}, true},
		{[]string{"deny_shell_test.js"}, false},
		{[]string{"../deny_shell.js"}, false},
		{[]string{"sub/deny_shell.js"}, false},
		{[]string{"*"}, false},
		{[]string{"deny_shell"}, false},
		{[]string{""}, false},
	} {
		err := Manifest{Revision: "1", AcceptDifferences: tc.accept}.Check()
		if (err == nil) != tc.ok {
			t.Errorf("accept %q: %v", tc.accept, err)
		}
	}
}

// TestKeys: a key file of the wrong kind says what is wanted.
func TestKeys(t *testing.T) {
	if _, err := LoadPrivateKey(filepath.Join("testdata", "ed25519.pub")); err == nil || !strings.Contains(err.Error(), "PRIVATE KEY") {
		t.Fatal(err)
	}
	if _, err := LoadPublicKey(filepath.Join("testdata", "ed25519.key")); err == nil || !strings.Contains(err.Error(), "PUBLIC KEY") {
		t.Fatal(err)
	}
}

// FuzzRead: no input panics Read, and whatever it accepts holds only bounded
// top-level policy files and a manifest in shape.
func FuzzRead(f *testing.F) {
	key := mustPriv(f, "ed25519.key")
	pub := mustPub(f, "ed25519.pub")
	good, err := Build(policiesDir(f), Manifest{Revision: "1"}, key)
	if err != nil {
		f.Fatal(err)
	}
	f.Add(good)
	f.Add(good[:len(good)/2])
	f.Add(pack(f, []entry{{name: "../x.js", data: []byte("x")}}))
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, data []byte) {
		b, err := Read(data, pub)
		if err != nil {
			return
		}
		if b.Manifest.Check() != nil {
			t.Fatalf("accepted manifest %+v", b.Manifest)
		}
		for name, data := range b.Files {
			if !fileRe.MatchString(name) || len(data) > MaxFileBytes {
				t.Fatalf("accepted file %q (%d bytes)", name, len(data))
			}
		}
	})
}
