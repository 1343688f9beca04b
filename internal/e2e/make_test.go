package e2e

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// makeTarget runs `make -s target` at the repository root with env added.
func makeTarget(t *testing.T, target string, env ...string) string {
	t.Helper()
	mk, err := exec.LookPath("make")
	if err != nil {
		t.Skip("make is not installed")
	}
	cmd := exec.Command(mk, "-s", target)
	cmd.Dir = root
	cmd.Env = append(os.Environ(), env...)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("make %s: %v\n%s", target, err, out)
	}
	return string(out)
}

// TestMakeNotices: `make test` says when the browser test was skipped, and a cold
// build says it is compiling instead of staying silent for minutes.
func TestMakeNotices(t *testing.T) {
	empty := t.TempDir() // a PATH without chromium
	if out := makeTarget(t, "console-notice", "PATH="+empty); !strings.Contains(out, "TestConsoleE2E") || !strings.Contains(out, "SKIPPED") {
		t.Errorf("no notice without chromium: %q", out)
	}
	withChromium := t.TempDir()
	if err := os.WriteFile(filepath.Join(withChromium, "chromium"), []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	if out := makeTarget(t, "console-notice", "PATH="+withChromium); out != "" {
		t.Errorf("a notice although chromium is there: %q", out)
	}

	bin := filepath.Join(t.TempDir(), "mcpgate")
	if out := makeTarget(t, "build", "BIN="+bin, "GO=true"); !strings.Contains(out, "compiling") {
		t.Errorf("a cold build is silent: %q", out)
	}
}
