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

// TestMakeNotices: `make test` says when the browser test or the real OpenID
// provider's test was skipped, and a cold build says it is compiling instead of
// staying silent for minutes. The environment is set for each case, so the test
// holds whether or not MCPGATE_TEST_OIDC_ISSUER is set where it runs.
func TestMakeNotices(t *testing.T) {
	const issuer = "MCPGATE_TEST_OIDC_ISSUER=http://localhost:9412/"
	empty := t.TempDir() // a PATH without chromium
	if out := makeTarget(t, "console-notice", "PATH="+empty, issuer); !strings.Contains(out, "TestConsoleE2E") || !strings.Contains(out, "SKIPPED") || strings.Contains(out, "TestOAuthRealServer") {
		t.Errorf("no notice (or more than one) without chromium: %q", out)
	}
	withChromium := t.TempDir()
	if err := os.WriteFile(filepath.Join(withChromium, "chromium"), []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	if out := makeTarget(t, "console-notice", "PATH="+withChromium, issuer); out != "" {
		t.Errorf("a notice although chromium and the provider are there: %q", out)
	}
	if out := makeTarget(t, "console-notice", "PATH="+withChromium, "MCPGATE_TEST_OIDC_ISSUER="); !strings.Contains(out, "TestOAuthRealServer") || strings.Contains(out, "TestConsoleE2E") {
		t.Errorf("no notice (or the wrong one) without the provider: %q", out)
	}

	bin := filepath.Join(t.TempDir(), "mcpgate")
	if out := makeTarget(t, "build", "BIN="+bin, "GO=true"); !strings.Contains(out, "compiling") {
		t.Errorf("a cold build is silent: %q", out)
	}
}

// TestMakeSkipNotices: `make test` names each end-to-end test it skipped for want of a
// service (HAProxy, Redis, PostgreSQL, the load test), and is silent when all are there.
func TestMakeSkipNotices(t *testing.T) {
	none := []string{"PATH=" + t.TempDir(), "MCPGATE_TEST_REDIS_URL=", "MCPGATE_TEST_POSTGRES_URL=", "MCPGATE_LOAD="}
	out := makeTarget(t, "skip-notices", none...)
	for _, want := range []string{"TestHAProxyReplicas", "MCPGATE_TEST_REDIS_URL", "MCPGATE_TEST_POSTGRES_URL", "TestLoadHTTP"} {
		if !strings.Contains(out, want) {
			t.Errorf("no notice naming %s: %q", want, out)
		}
	}
	if n := strings.Count(out, "NOTICE:"); n != 4 {
		t.Errorf("%d notices, want 4: %q", n, out)
	}
	withHAProxy := t.TempDir()
	if err := os.WriteFile(filepath.Join(withHAProxy, "haproxy"), []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	all := []string{"PATH=" + withHAProxy, "MCPGATE_TEST_REDIS_URL=redis://x", "MCPGATE_TEST_POSTGRES_URL=postgres://x", "MCPGATE_LOAD=1"}
	if out := makeTarget(t, "skip-notices", all...); out != "" {
		t.Errorf("notices although every service is there: %q", out)
	}
}
