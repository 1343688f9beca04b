package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mcpgate/mcpgate/internal/bundle/bundletest"
)

const bundleKeys = "../../internal/bundle/testdata/"

// repack rewrites the bundle at path (bundletest.Repack) into a new file.
func repack(t *testing.T, path string, edit func(name string, data []byte) []byte) string {
	t.Helper()
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(t.TempDir(), "edited.tar.gz")
	if err := os.WriteFile(out, bundletest.Repack(t, raw, edit), 0o644); err != nil {
		t.Fatal(err)
	}
	return out
}

// TestBundleBuildVerify: a bundle built from a directory verifies with its key (exit
// 0); a tampered, an unsigned, a wrongly keyed and a broken-chain bundle each exit 1
// with a message that says why.
func TestBundleBuildVerify(t *testing.T) {
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "a.js"), []byte("function pre(ctx) { return ctx.params }"), 0o644)
	os.WriteFile(filepath.Join(dir, "a_test.js"), []byte("function test_a() {}"), 0o644)
	tmp := t.TempDir()
	first, second := filepath.Join(tmp, "b1.tar.gz"), filepath.Join(tmp, "b2.tar.gz")
	mcpgate := func(args ...string) (int, string, string) {
		var out, errb bytes.Buffer
		code := run(context.Background(), args, nil, &out, &errb)
		return code, out.String(), errb.String()
	}
	if code, out, errs := mcpgate("bundle", "build", dir, "-o", first, "--signing-key", bundleKeys+"ed25519.key"); code != 0 || !strings.Contains(out, "revision 1, sha256:") {
		t.Fatalf("build: exit %d: %s%s", code, out, errs)
	}
	if code, out, errs := mcpgate("bundle", "build", dir, "-o", second, "--signing-key", bundleKeys+"ed25519.key", "--previous", first,
		"--accept-diff", "a.js", "--accept-diff", "gone.js"); code != 0 || !strings.Contains(out, "revision 2,") {
		t.Fatalf("build --previous: exit %d: %s%s", code, out, errs)
	}
	code, out, errs := mcpgate("bundle", "verify", second, "--key", bundleKeys+"ed25519.pub", "--previous", first)
	if code != 0 || !strings.Contains(out, "verified") || !strings.Contains(out, "revision  2") || !strings.Contains(out, "tests     a_test.js") ||
		!strings.Contains(out, "accepted differences a.js gone.js") {
		t.Fatalf("verify: exit %d: %s%s", code, out, errs)
	}
	tampered := repack(t, second, func(name string, data []byte) []byte {
		if name == "a.js" {
			return []byte("function pre(ctx) { return {} }")
		}
		return data
	})
	unsigned := repack(t, second, func(name string, data []byte) []byte {
		if name == ".signatures.json" {
			return nil
		}
		return data
	})
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"tampered", []string{tampered, "--key", bundleKeys + "ed25519.pub"}, "a.js was changed after signing"},
		{"unsigned", []string{unsigned, "--key", bundleKeys + "ed25519.pub"}, "bundle is not signed: no .signatures.json"},
		{"wrong key", []string{second, "--key", bundleKeys + "other.pub"}, "signature does not verify with this key"},
		{"broken chain", []string{first, "--key", bundleKeys + "ed25519.pub", "--previous", second}, "broken chain: its previous is (none)"},
		{"private key given", []string{second, "--key", bundleKeys + "ed25519.key"}, `--key: ` + bundleKeys + `ed25519.key: want a PEM "PUBLIC KEY"`},
		{"no key", []string{second}, "give --key PUB"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, out, errs := mcpgate(append([]string{"bundle", "verify"}, tc.args...)...)
			if code != exitError || !strings.Contains(errs, tc.want) || out != "" {
				t.Fatalf("exit %d, stdout %q, stderr %q; want %q", code, out, errs, tc.want)
			}
		})
	}
}

// TestBundleBuildRefuses: build refuses, exit 1 and nothing written, a directory
// with no policy (only tests, or nothing: every replica would then enforce none)
// and an -o that is the --previous bundle (the previous file would be lost).
func TestBundleBuildRefuses(t *testing.T) {
	dir, empty, onlyTests, tmp := t.TempDir(), t.TempDir(), t.TempDir(), t.TempDir()
	os.WriteFile(filepath.Join(dir, "a.js"), []byte("function pre(ctx) { return ctx.params }"), 0o644)
	os.WriteFile(filepath.Join(onlyTests, "a_test.js"), []byte("function test_a() {}"), 0o644)
	os.WriteFile(filepath.Join(onlyTests, ".b.js"), []byte("function pre(ctx) { return ctx.params }"), 0o644)
	mcpgate := func(args ...string) (int, string, string) {
		var out, errb bytes.Buffer
		code := run(context.Background(), args, nil, &out, &errb)
		return code, out.String(), errb.String()
	}
	first := filepath.Join(tmp, "b1.tar.gz")
	if code, out, errs := mcpgate("bundle", "build", dir, "-o", first, "--signing-key", bundleKeys+"ed25519.key"); code != 0 {
		t.Fatalf("build: exit %d: %s%s", code, out, errs)
	}
	before, _ := os.ReadFile(first)
	for _, tc := range []struct {
		name, dir, out, previous, want string
	}{
		{"empty directory", empty, filepath.Join(tmp, "e.tar.gz"), "", "holds no policy"},
		{"tests only", onlyTests, filepath.Join(tmp, "t.tar.gz"), "", "holds no policy"},
		{"output is previous", dir, first, first, "is the --previous bundle"},
		{"output is previous by another path", dir, first, tmp + "/./b1.tar.gz", "is the --previous bundle"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			args := []string{"bundle", "build", tc.dir, "-o", tc.out, "--signing-key", bundleKeys + "ed25519.key"}
			if tc.previous != "" {
				args = append(args, "--previous", tc.previous)
			}
			code, out, errs := mcpgate(args...)
			if code != exitError || !strings.Contains(errs, tc.want) || out != "" {
				t.Fatalf("exit %d, stdout %q, stderr %q; want %q", code, out, errs, tc.want)
			}
			if tc.out != first {
				if _, err := os.Stat(tc.out); err == nil {
					t.Errorf("%s was written", tc.out)
				}
			}
		})
	}
	if after, _ := os.ReadFile(first); !bytes.Equal(before, after) {
		t.Error("the --previous bundle was overwritten")
	}
}

// TestBundleShadowFlags: --bundle-shadow needs --policy-bundle, a duration of 0 or
// more, and no --shadow DIR (one shadow per gateway).
func TestBundleShadowFlags(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--bundle-shadow", "1m"}, "--bundle-shadow goes with --policy-bundle"},
		{[]string{"--policy-bundle", "b.tar.gz", "--bundle-key", "k.pub", "--bundle-shadow", "-1s"}, "--bundle-shadow: want a duration"},
		{[]string{"--policy-bundle", "b.tar.gz", "--bundle-key", "k.pub", "--bundle-shadow", "1m", "--shadow", t.TempDir()}, "cannot be combined with --shadow DIR"},
	} {
		var out, errb bytes.Buffer
		args := append(append([]string{"gateway", "run"}, tc.args...), "--", "true")
		if code := run(context.Background(), args, nil, &out, &errb); code == 0 || !strings.Contains(errb.String(), tc.want) {
			t.Errorf("%q: exit %d, stderr %q; want %q", tc.args, code, errb.String(), tc.want)
		}
	}
}
