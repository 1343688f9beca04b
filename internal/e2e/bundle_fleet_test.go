package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
	"oras.land/oras-go/v2"
	"oras.land/oras-go/v2/registry/remote"

	"github.com/mcpgate/mcpgate/internal/bundle"
	"github.com/mcpgate/mcpgate/internal/testwait"
)

// startRegistry runs the distribution registry (make deps builds it) on a loopback
// port, storing in memory, and returns its host:port.
func startRegistry(t *testing.T) string {
	bin := need(t, filepath.Join(root, "testdata/e2e/bin/registry"), "the distribution registry (make deps)")
	addr := freeAddr(t)
	cfg := filepath.Join(t.TempDir(), "config.yml")
	must(t, os.WriteFile(cfg, []byte("version: 0.1\nlog:\n  level: error\nstorage:\n  inmemory: {}\nhttp:\n  addr: "+addr+"\n"), 0o600))
	cmd := exec.Command(bin, "serve", cfg)
	endWithTest(cmd)
	log := &stderrLog{}
	cmd.Stdout, cmd.Stderr = log, log
	must(t, cmd.Start())
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	if !testwait.Within(testwait.Timeout, func() bool {
		c, err := net.Dial("tcp", addr)
		if err == nil {
			c.Close()
		}
		return err == nil
	}) {
		t.Fatalf("the registry did not listen on %s:\n%s", addr, log.String())
	}
	return addr
}

// pushBundle pushes data as the bundle layer of an artifact tagged tag, as
// oras push … FILE:application/vnd.mcpgate.policy-bundle.v1.tar+gzip does.
func pushBundle(t *testing.T, repo *remote.Repository, tag string, data []byte) {
	t.Helper()
	ctx := context.Background()
	layer, err := oras.PushBytes(ctx, repo, bundle.MediaType, data)
	must(t, err)
	man, err := oras.PackManifest(ctx, repo, oras.PackManifestVersion1_1, "application/vnd.mcpgate.policy-bundle.v1",
		oras.PackManifestOptions{Layers: []ocispec.Descriptor{layer}})
	must(t, err)
	must(t, repo.Tag(ctx, man, tag))
}

// TestPolicyBundleFleet: two replicas behind the shipped deploy/haproxy.cfg pull one
// bundle, from a static HTTP server and from an OCI registry (the distribution
// registry): a good revision is live on both within the poll interval and the
// records of calls through HAProxy carry it; a tampered, an unsigned, a broken-chain
// and a failing-tests bundle are each refused by both, which go on enforcing the
// last good set.
func TestPolicyBundleFleet(t *testing.T) {
	hap, err := exec.LookPath("haproxy")
	if err != nil {
		if os.Getenv("CI") != "" {
			t.Fatal("CI is set but haproxy is not installed (.ci/run installs it)")
		}
		t.Skip("SKIPPED: install haproxy (Debian package haproxy) to run this test")
	}
	_, fake := httpBinaries(t)
	pub := filepath.Join(root, "internal/bundle/testdata/ed25519.pub")
	// Revision 1 rejects echo; revision 2 rejects pid instead.
	rev1Path, rev1 := buildBundle(t, blockTool("echo"), "1", "")
	rev2Path, rev2 := buildBundle(t, blockTool("pid"), "2", rev1Path)
	// Each would let pid through again; the last good set (revision 2) rejects it.
	refused := refusedBundles(t, "echo", rev2Path)
	const poll = 500 * time.Millisecond

	for _, source := range []string{"http", "oci"} {
		t.Run(source, func(t *testing.T) {
			var url string
			var publish func([]byte)
			switch source {
			case "http":
				srv := &bundleServer{}
				hs := httptest.NewServer(srv)
				t.Cleanup(hs.Close)
				url, publish = hs.URL+"/bundle.tar.gz", srv.publish
			case "oci":
				reg := startRegistry(t)
				repo, err := remote.NewRepository(reg + "/fleet/policies")
				must(t, err)
				repo.PlainHTTP = true
				url, publish = "oci://"+reg+"/fleet/policies:live", func(b []byte) { pushBundle(t, repo, "live", b) }
			}
			publish(rev1)
			var replicas []*httpGateway
			var admins []string
			for i := range 2 {
				g := startHTTPGateway(t, "--policy-bundle", url, "--bundle-key", pub, "--bundle-state", t.TempDir(),
					"--bundle-poll", poll.String(), "--admin", "127.0.0.1:0", "--replica", fmt.Sprintf("gw%d", i+1), "--", fake)
				replicas = append(replicas, g)
				admins = append(admins, adminAddr(t, g.stderr))
			}
			bind := freeAddr(t)
			cmd := exec.Command(hap, "-db", "-f", filepath.Join(root, "deploy", "haproxy.cfg"))
			endWithTest(cmd)
			cmd.Env = append(os.Environ(), "MCPGATE_BIND="+bind,
				"MCPGATE_REPLICA_1="+hostPort(replicas[0].url), "MCPGATE_REPLICA_2="+hostPort(replicas[1].url))
			must(t, cmd.Start())
			t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
			testwait.For(t, "haproxy listening", func() bool {
				c, err := net.Dial("tcp", bind)
				if err == nil {
					c.Close()
				}
				return err == nil
			})
			revisions := func() []string {
				var out []string
				for _, a := range admins {
					var st bundleStatus
					must(t, json.Unmarshal([]byte(httpGet(t, "http://"+a+"/api/status")), &st))
					out = append(out, st.PolicyBundle.Revision+" "+st.PolicyBundle.LastError)
				}
				return out
			}
			// calls opens 4 sessions through HAProxy (round robin: both replicas) and
			// calls tool in each; it returns each call's record as "replica outcome revision".
			calls := func(tool string) map[string]bool {
				seen := map[string]bool{}
				before := []int{len(replicas[0].stderr.records()), len(replicas[1].stderr.records())}
				for i := range 4 {
					c := newHTTPClient("http://" + bind + "/mcp")
					c.initialize(t)
					c.call(t, i+1, tool, map[string]any{"text": "x"})
				}
				testwait.For(t, "4 records of "+tool, func() bool { // records are written after the reply
					n := 0
					for i, g := range replicas {
						for _, r := range g.stderr.records()[before[i]:] {
							if r["tool"] == tool {
								n++
								seen[fmt.Sprintf("%v %v %v", r["replica"], r["outcome"], r["policy_revision"])] = true
							}
						}
					}
					return n >= 4
				})
				return seen
			}
			want := func(tool string, outcome, rev string) {
				t.Helper()
				got := calls(tool)
				exp := map[string]bool{"gw1 " + outcome + " " + rev: true, "gw2 " + outcome + " " + rev: true}
				if fmt.Sprint(got) != fmt.Sprint(exp) {
					t.Fatalf("%s through HAProxy: records %v, want %v", tool, got, exp)
				}
			}
			want("echo", "rejected", "1")

			publish(rev2)
			published := time.Now()
			testwait.For(t, "revision 2 on both replicas", func() bool {
				r := revisions()
				return strings.HasPrefix(r[0], "2 ") && strings.HasPrefix(r[1], "2 ")
			})
			t.Logf("%s: revision 2 live on both replicas %v after it was published (poll %v)", source, time.Since(published).Round(time.Millisecond), poll)
			want("pid", "rejected", "2")
			want("echo", "ok", "2")

			for _, bad := range refused {
				publish(bad.data)
				testwait.For(t, "the "+bad.name+" bundle refused on both replicas", func() bool {
					r := revisions()
					return strings.Contains(r[0], bad.want) && strings.Contains(r[1], bad.want)
				})
				if r := revisions(); !strings.HasPrefix(r[0], "2 ") || !strings.HasPrefix(r[1], "2 ") {
					t.Fatalf("revisions after the %s bundle: %q", bad.name, r)
				}
				want("pid", "rejected", "2")
				want("echo", "ok", "2")
			}
		})
	}
}
