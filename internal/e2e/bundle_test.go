package e2e

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/mcpgate/mcpgate/internal/bundle"
	"github.com/mcpgate/mcpgate/internal/bundle/bundletest"
	"github.com/mcpgate/mcpgate/internal/testwait"
)

// bundleServer serves one archive at a time with an ETag, as a static server does.
type bundleServer struct {
	mu          sync.Mutex
	data        []byte
	conditional int // requests answered 304
}

func (s *bundleServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	defer s.mu.Unlock()
	etag := `"` + bundle.Hash(s.data)[7:23] + `"`
	if r.Header.Get("If-None-Match") == etag {
		s.conditional++
		w.WriteHeader(http.StatusNotModified)
		return
	}
	w.Header().Set("ETag", etag)
	w.Write(s.data)
}

func (s *bundleServer) publish(data []byte) {
	s.mu.Lock()
	s.data = data
	s.mu.Unlock()
}

// buildBundle runs mcpgate bundle build over files; previous is a bundle file or "";
// extra are more build flags.
func buildBundle(t *testing.T, files map[string]string, rev, previous string, extra ...string) (path string, data []byte) {
	t.Helper()
	dir := t.TempDir()
	for n, src := range files {
		if err := os.WriteFile(filepath.Join(dir, n), []byte(src), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	path = filepath.Join(t.TempDir(), "bundle-"+rev+".tar.gz")
	args := []string{"bundle", "build", dir, "-o", path, "--signing-key", filepath.Join(root, "internal/bundle/testdata/ed25519.key"), "--revision", rev}
	if previous != "" {
		args = append(args, "--previous", previous)
	}
	args = append(args, extra...)
	if out, err := harnessCmd(t, time.Minute, binary, args...).CombinedOutput(); err != nil {
		t.Fatalf("bundle build: %v\n%s", err, out)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return path, data
}

// refusedBundle is a revision 3 a replica must refuse, and the reason /api/status gives.
type refusedBundle struct {
	name, want string
	data       []byte
}

// refusedBundles builds four revisions 3 after previous (a file or a hash) that would
// block tool, each of which a replica must refuse: tampered, unsigned, with a broken
// chain, and failing its own tests.
func refusedBundles(t *testing.T, tool, previous string) []refusedBundle {
	t.Helper()
	_, rev3 := buildBundle(t, blockTool(tool), "3", previous)
	failing := blockTool(tool)
	failing["block_test.js"] = strings.Replace(failing["block_test.js"], `"rejected"`, `"ok"`, 1)
	_, failingTests := buildBundle(t, failing, "3", previous)
	_, brokenChain := buildBundle(t, blockTool(tool), "3", "sha256:"+strings.Repeat("0", 64))
	return []refusedBundle{
		{"tampered", "block.js was changed after signing", bundletest.Repack(t, rev3, func(n string, b []byte) []byte {
			if n == "block.js" {
				return []byte(`/* nothing blocked */`)
			}
			return b
		})},
		{"unsigned", "bundle is not signed", bundletest.Repack(t, rev3, func(n string, b []byte) []byte {
			if n == bundle.SignaturesName {
				return nil
			}
			return b
		})},
		{"broken chain", "broken chain: revision 3 replaces sha256:0000", brokenChain},
		{"failing tests", "fails its own tests: block_test.js", failingTests},
	}
}

// blockTool is a policy that rejects one demo-server tool, with a test that says so.
func blockTool(tool string) map[string]string {
	return map[string]string{
		"block.js": `if (ctx.phase === "pre" && ctx.tool === "` + tool + `") { throw "blocked by the fleet policy"; }`,
		"block_test.js": `function test_blocks() {
  const r = mcpgate.call({tool: "` + tool + `", params: {}, result: {content: [{type: "text", text: "ok"}]}});
  mcpgate.assertEqual(r.outcome, "rejected");
}`,
	}
}

type bundleStatus struct {
	PolicyBundle struct {
		Revision  string `json:"revision"`
		LastError string `json:"last_error"`
		Shadow    *struct {
			Revision string `json:"revision"`
		} `json:"shadow"`
	} `json:"policy_bundle"`
}

// TestPolicyBundleE2E: the real binary pulls a signed bundle from a static HTTP
// server; a good next revision is live within the poll interval and the records
// carry it; a tampered, an unsigned, a broken-chain and a failing-tests bundle are
// each refused (logged, counted, shown in /api/status) with the last good set still
// enforced; a restart with the server gone enforces the last good bundle.
func TestPolicyBundleE2E(t *testing.T) {
	state := t.TempDir()
	srv := &bundleServer{}
	hs := httptest.NewServer(srv)
	defer hs.Close()
	rev1Path, rev1 := buildBundle(t, blockTool("get_forecast"), "1", "")
	srv.publish(rev1)
	const poll = 300 * time.Millisecond
	start := func() (*client.Client, *stderrLog, string) {
		c, log := mcpClient(t, nil, binary, gatewayArgs([]string{"--admin", "127.0.0.1:0",
			"--policy-bundle", hs.URL + "/bundle.tar.gz", "--bundle-key", filepath.Join(root, "internal/bundle/testdata/ed25519.pub"),
			"--bundle-state", state, "--bundle-poll", poll.String()}, []string{binary, "demo-server"})...)
		t.Cleanup(func() {
			if t.Failed() {
				t.Logf("gateway stderr:\n%s", log.String())
			}
		})
		return c, log, adminAddr(t, log)
	}
	c, log, addr := start()
	status := func() bundleStatus {
		var st bundleStatus
		if err := json.Unmarshal([]byte(httpGet(t, "http://"+addr+"/api/status")), &st); err != nil {
			t.Fatal(err)
		}
		return st
	}
	// call runs a tool and returns its record's outcome and policy_revision.
	call := func(c *client.Client, log *stderrLog, tool string) (string, any) {
		t.Helper()
		n := len(log.records())
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		req := mcp.CallToolRequest{}
		req.Params.Name, req.Params.Arguments = tool, map[string]any{"city": "Porto", "id": "C1002"}
		c.CallTool(ctx, req) // a rejection may come as an error
		r := log.waitRecords(t, n+1)[n]
		return r["outcome"].(string), r["policy_revision"]
	}
	if o, rev := call(c, log, "get_forecast"); o != "rejected" || rev != "1" {
		t.Fatalf("revision 1: get_forecast %s, policy_revision %v", o, rev)
	}

	// A good next revision is live within the poll interval.
	_, rev2 := buildBundle(t, blockTool("lookup_customer"), "2", rev1Path)
	srv.publish(rev2)
	published := time.Now()
	testwait.For(t, "revision 2 in /api/status", func() bool { return status().PolicyBundle.Revision == "2" })
	// At most one poll (+20% jitter), plus the checks, compile and tests of a loaded
	// machine.
	d := time.Since(published)
	t.Logf("revision 2 live %v after it was published (poll %v)", d.Round(time.Millisecond), poll)
	if d > poll*6/5+3*time.Second {
		t.Errorf("revision 2 took %v to go live (poll %v)", d, poll)
	}
	if o, rev := call(c, log, "lookup_customer"); o != "rejected" || rev != "2" {
		t.Fatalf("revision 2: lookup_customer %s, policy_revision %v", o, rev)
	}
	if o, _ := call(c, log, "get_forecast"); o != "ok" {
		t.Fatalf("revision 2: get_forecast %s", o)
	}

	// Refused bundles: the last good set stays.
	rev2Hash := bundle.Hash(rev2)
	for _, tc := range refusedBundles(t, "get_forecast", rev2Hash) {
		srv.publish(tc.data)
		testwait.For(t, tc.name+" refused in /api/status", func() bool { return strings.Contains(status().PolicyBundle.LastError, tc.want) })
		if st := status(); st.PolicyBundle.Revision != "2" {
			t.Fatalf("%s: running revision %q", tc.name, st.PolicyBundle.Revision)
		}
		if o, rev := call(c, log, "lookup_customer"); o != "rejected" || rev != "2" {
			t.Fatalf("%s: the last good set is not enforced: lookup_customer %s, policy_revision %v", tc.name, o, rev)
		}
		if o, _ := call(c, log, "get_forecast"); o != "ok" {
			t.Fatalf("%s: get_forecast %s: the refused bundle took effect", tc.name, o)
		}
	}
	// The unchanged bundle is asked for with If-None-Match and answered 304.
	testwait.For(t, "a fetch answered 304", func() bool {
		srv.mu.Lock()
		defer srv.mu.Unlock()
		return srv.conditional > 0
	})
	metrics := httpGet(t, "http://"+addr+"/metrics")
	for _, want := range []string{`mcpgate_policy_bundle_info{revision="2"} 1`, `mcpgate_policy_bundle_refused_total{reason="tampered"} 1`,
		`mcpgate_policy_bundle_refused_total{reason="unsigned"} 1`, `mcpgate_policy_bundle_refused_total{reason="chain"} 1`,
		`mcpgate_policy_bundle_refused_total{reason="tests"} 1`, `mcpgate_policy_bundle_fetches_total{result="unchanged"}`} {
		if !strings.Contains(metrics, want) {
			t.Errorf("/metrics has no %s", want)
		}
	}
	// A restart with the server gone enforces the last good bundle.
	c.Close()
	hs.Close()
	c2, log2, _ := start()
	if o, rev := call(c2, log2, "lookup_customer"); o != "rejected" || rev != "2" {
		t.Fatalf("restart: lookup_customer %s, policy_revision %v", o, rev)
	}
}

// TestPolicyBundleShadowE2E: with --bundle-shadow a new revision runs as the shadow
// of live calls before its swap. One whose policy lets through a call the running
// set rejects is refused (reason shadow: logged, counted, in /api/status) and the
// running set stays; the same change signed as accepted (bundle build --accept-diff)
// goes live when the window ends.
func TestPolicyBundleShadowE2E(t *testing.T) {
	state := t.TempDir()
	srv := &bundleServer{}
	hs := httptest.NewServer(srv)
	defer hs.Close()
	rev1Path, rev1 := buildBundle(t, blockTool("get_forecast"), "1", "")
	srv.publish(rev1)
	// Long enough for a call on a loaded machine to fall inside it; the refusal ends
	// the window at once, only the accepted revision waits it out.
	const window = 15 * time.Second
	c, log := mcpClient(t, nil, binary, gatewayArgs([]string{"--admin", "127.0.0.1:0",
		"--policy-bundle", hs.URL + "/bundle.tar.gz", "--bundle-key", filepath.Join(root, "internal/bundle/testdata/ed25519.pub"),
		"--bundle-state", state, "--bundle-poll", "300ms", "--bundle-shadow", window.String()}, []string{binary, "demo-server"})...)
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("gateway stderr:\n%s", log.String())
		}
	})
	addr := adminAddr(t, log)
	status := func() bundleStatus {
		var st bundleStatus
		if err := json.Unmarshal([]byte(httpGet(t, "http://"+addr+"/api/status")), &st); err != nil {
			t.Fatal(err)
		}
		return st
	}
	call := func(tool string) map[string]any {
		t.Helper()
		n := len(log.records())
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		req := mcp.CallToolRequest{}
		req.Params.Name, req.Params.Arguments = tool, map[string]any{"city": "Porto", "id": "C1002"}
		c.CallTool(ctx, req) // a rejection may come as an error
		return log.waitRecords(t, n+1)[n]
	}
	if r := call("get_forecast"); r["outcome"] != "rejected" || r["policy_revision"] != "1" || r["shadow"] != nil {
		t.Fatalf("revision 1: %v", r)
	}

	// Revision 2 moves the block to lookup_customer: in its shadow run, a
	// get_forecast the running set rejects goes through. Refused.
	_, rev2 := buildBundle(t, blockTool("lookup_customer"), "2", rev1Path)
	srv.publish(rev2)
	testwait.For(t, "revision 2 running as the shadow", func() bool {
		sh := status().PolicyBundle.Shadow
		return sh != nil && sh.Revision == "2"
	})
	r := call("get_forecast")
	if sh, _ := r["shadow"].(map[string]any); r["outcome"] != "rejected" || r["policy_revision"] != "1" || sh == nil || sh["differs"] != true || sh["action_taken"] != "pass" {
		t.Fatalf("during revision 2's shadow run: %v", r)
	}
	testwait.For(t, "revision 2 refused", func() bool {
		return strings.Contains(status().PolicyBundle.LastError, "revision 2 differs from the running set on live traffic")
	})
	if st := status(); st.PolicyBundle.Revision != "1" || st.PolicyBundle.Shadow != nil ||
		!strings.Contains(st.PolicyBundle.LastError, "a call of get_forecast the running set's block.js blocks goes through (event "+r["event_id"].(string)+")") {
		t.Fatalf("after the refusal: %+v", st.PolicyBundle)
	}
	if !strings.Contains(log.String(), "policy bundle refused; keeping the running policy set") {
		t.Error("no refusal logged")
	}
	if m := httpGet(t, "http://"+addr+"/metrics"); !strings.Contains(m, `mcpgate_policy_bundle_refused_total{reason="shadow"} 1`) {
		t.Error("the refusal is not counted")
	}
	if r := call("get_forecast"); r["outcome"] != "rejected" || r["policy_revision"] != "1" || r["shadow"] != nil {
		t.Fatalf("after the refusal: %v", r)
	}

	// The same change, with block.js's differences accepted, goes live when the
	// window ends (it chains to revision 1: revision 2 never ran).
	_, rev3 := buildBundle(t, blockTool("lookup_customer"), "3", rev1Path, "--accept-diff", "block.js")
	srv.publish(rev3)
	testwait.For(t, "revision 3 running as the shadow", func() bool {
		sh := status().PolicyBundle.Shadow
		return sh != nil && sh.Revision == "3"
	})
	if r := call("get_forecast"); r["outcome"] != "rejected" || r["policy_revision"] != "1" {
		t.Fatalf("during revision 3's shadow run: %v", r)
	}
	if !testwait.Within(window+testwait.Timeout, func() bool { return status().PolicyBundle.Revision == "3" }) {
		t.Fatalf("revision 3 not live %v after its shadow run began: %+v", window+testwait.Timeout, status().PolicyBundle)
	}
	if r := call("get_forecast"); r["outcome"] != "ok" || r["policy_revision"] != "3" || r["shadow"] != nil {
		t.Fatalf("revision 3: get_forecast %v", r)
	}
	if r := call("lookup_customer"); r["outcome"] != "rejected" || r["policy_revision"] != "3" {
		t.Fatalf("revision 3: lookup_customer %v", r)
	}
}
