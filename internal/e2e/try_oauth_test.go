package e2e

import (
	"context"
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"
)

// readmeBlock returns the code block of README.md that follows the marker comment.
func readmeBlock(t *testing.T, marker string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(root, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	_, rest, ok := strings.Cut(string(b), "<!-- "+marker+" -->\n```sh\n")
	block, _, ok2 := strings.Cut(rest, "```\n")
	if !ok || !ok2 {
		t.Fatalf("README.md has no sh block after <!-- %s -->", marker)
	}
	return block
}

// quietPorts returns n distinct free loopback ports below Linux's ephemeral range
// (32768 and up), which no other test's listener on port 0 can be given between this
// check and the lines' own listen. pick draws a candidate (nil: a random one in
// 20000–31999); a port drawn twice is drawn again, so two listeners never share one.
func quietPorts(t testing.TB, n int, pick func() int) []string {
	t.Helper()
	if pick == nil {
		pick = func() int { return 20000 + rand.IntN(12000) }
	}
	var ports []string
	for range 100 * n {
		if len(ports) == n {
			break
		}
		p := fmt.Sprint(pick())
		if slices.Contains(ports, p) {
			continue
		}
		if l, err := net.Listen("tcp", "127.0.0.1:"+p); err == nil {
			l.Close()
			ports = append(ports, p)
		}
	}
	if len(ports) < n {
		t.Fatalf("found %d of %d free ports between 20000 and 32000", len(ports), n)
	}
	return ports
}

// TestQuietPortsDistinct: a candidate drawn twice is drawn again, so the provider and
// the gateway are never told to listen on one port.
func TestQuietPortsDistinct(t *testing.T) {
	draws := []int{24242, 24242, 24242}
	got := quietPorts(t, 2, func() int {
		if len(draws) > 0 {
			p := draws[0]
			draws = draws[1:]
			return p
		}
		return 20000 + rand.IntN(12000)
	})
	if len(got) != 2 || got[0] == got[1] {
		t.Fatalf("quietPorts = %v, want two distinct ports", got)
	}
}

// TestTryOAuthLocally runs the README's "Try OAuth locally" lines as they are, in
// bash, with mcpgate on PATH, the test bed's provider where make deps puts it, and
// the two ports the lines listen on (9412, 8080) swapped for free ones: the call
// answers with scan_text's result, and the audit record names the signed-in user and
// its client.
func TestTryOAuthLocally(t *testing.T) {
	provider := filepath.Join(root, "testdata", "e2e", "bin", "oidc-server")
	if _, err := os.Stat(provider); err != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("the OpenID provider is not built (make deps): %v", err)
		}
		t.Skip("the OpenID provider is not built: make deps")
	}
	bash, err := exec.LookPath("bash")
	if err != nil {
		t.Skip("bash is not installed")
	}
	if _, err := exec.LookPath("curl"); err != nil {
		t.Skip("curl is not installed")
	}
	block := readmeBlock(t, "try-oauth-locally")
	ports := quietPorts(t, 2, nil)
	lines := strings.ReplaceAll(strings.ReplaceAll(block, "9412", ports[0]), "8080", ports[1])
	dir := t.TempDir()
	bin := filepath.Join(dir, "bin")
	if err := os.MkdirAll(filepath.Join(dir, "testdata", "e2e", "bin"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(bin, 0o755); err != nil {
		t.Fatal(err)
	}
	for link, target := range map[string]string{filepath.Join(dir, "testdata", "e2e", "bin", "oidc-server"): provider, filepath.Join(bin, "mcpgate"): binary} {
		if err := os.Symlink(target, link); err != nil {
			t.Fatal(err)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, bash, "-c", lines)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "PATH="+bin+string(os.PathListSeparator)+os.Getenv("PATH"))
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true} // the lines' background jobs end with the group
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	stdout, err := os.Create(filepath.Join(dir, "stdout")) // a file: the background jobs hold it after bash ends
	if err != nil {
		t.Fatal(err)
	}
	defer stdout.Close()
	cmd.Stdout, cmd.Stderr = stdout, stdout
	err = cmd.Run()
	_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGTERM)
	out, _ := os.ReadFile(stdout.Name())
	log, _ := os.ReadFile(filepath.Join(dir, "mcpgate.log"))
	if err != nil || !strings.Contains(string(out), `"verdict":"allow"`) || !strings.Contains(string(out), `"resultType":"complete"`) {
		oidc, _ := os.ReadFile(filepath.Join(dir, "oidc.log"))
		t.Fatalf("the lines: %v\nstdout: %s\nmcpgate.log:\n%s\noidc.log:\n%.3000s", err, out, log, oidc)
	}
	for _, want := range []string{`"user_id":"id2"`, `"caller_id":"web"`, "names no audience is taken as meant for this gateway"} {
		if !strings.Contains(string(log), want) {
			t.Errorf("mcpgate.log lacks %s:\n%s", want, log)
		}
	}
}
