package e2e

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/mcpgate/mcpgate/internal/testwait"
)

// Several servers as one gateway (docs/servers.md), driven by the official
// TypeScript SDK client (testdata/e2e/driver.mjs) over stdio and Streamable HTTP,
// against server-everything, server-filesystem and the go-sdk everything-server.

// driver is one TypeScript SDK client session.
type driver struct {
	t      *testing.T
	in     io.WriteCloser
	lines  chan map[string]any
	stderr *stderrLog
	caps   map[string]any
	seq    int
}

// startDriver connects the TypeScript client: spec is {"url":…} or
// {"command":…,"args":[…]}.
func startDriver(t *testing.T, spec map[string]any) *driver {
	t.Helper()
	nodeModule(t, "@modelcontextprotocol/sdk/package.json")
	b, _ := json.Marshal(spec)
	cmd := exec.Command("node", filepath.Join(root, "testdata", "e2e", "driver.mjs"), string(b))
	endWithTest(cmd)
	d := &driver{t: t, lines: make(chan map[string]any, 64), stderr: &stderrLog{}}
	cmd.Stderr = d.stderr
	in, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	d.in = in
	t.Cleanup(func() {
		_ = in.Close()
		done := make(chan struct{})
		go func() { _ = cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			_ = cmd.Process.Kill()
		}
	})
	go func() {
		sc := bufio.NewScanner(out)
		sc.Buffer(nil, 16<<20)
		for sc.Scan() {
			var m map[string]any
			if json.Unmarshal(sc.Bytes(), &m) == nil {
				d.lines <- m
			}
		}
		close(d.lines)
	}()
	first := d.next()
	if first["connected"] != true {
		t.Fatalf("the TypeScript client could not connect: %v\nstderr:\n%s", first, d.stderr.String())
	}
	d.caps, _ = first["capabilities"].(map[string]any)
	return d
}

func (d *driver) next() map[string]any {
	d.t.Helper()
	select {
	case m, ok := <-d.lines:
		if !ok {
			d.t.Fatalf("the driver exited; stderr:\n%s", d.stderr.String())
		}
		return m
	case <-time.After(40 * time.Second):
		d.t.Fatalf("the driver did not answer; stderr:\n%s", d.stderr.String())
	}
	return nil
}

func (d *driver) send(cmd map[string]any) map[string]any {
	d.t.Helper()
	d.seq++
	cmd["id"] = d.seq
	b, _ := json.Marshal(cmd)
	if _, err := d.in.Write(append(b, '\n')); err != nil {
		d.t.Fatal(err)
	}
	for {
		m := d.next()
		if id, _ := m["id"].(float64); int(id) == d.seq {
			return m
		}
	}
}

// request returns the result, or nil and the error message.
func (d *driver) request(method string, params any) (map[string]any, string) {
	d.t.Helper()
	m := d.send(map[string]any{"method": method, "params": params})
	if e, ok := m["error"].(map[string]any); ok {
		return nil, fmt.Sprint(e["code"], " ", e["message"])
	}
	r, _ := m["result"].(map[string]any)
	return r, ""
}

func (d *driver) mustRequest(method string, params any) map[string]any {
	d.t.Helper()
	r, errText := d.request(method, params)
	if r == nil {
		d.t.Fatalf("%s: %s", method, errText)
	}
	return r
}

// names lists the values of key in a listing's field.
func names(res map[string]any, field, key string) []string {
	list, _ := res[field].([]any)
	var out []string
	for _, x := range list {
		if m, ok := x.(map[string]any); ok {
			s, _ := m[key].(string)
			out = append(out, s)
		}
	}
	return out
}

func hasPrefixed(list []string, prefix string) bool {
	for _, s := range list {
		if strings.HasPrefix(s, prefix) {
			return true
		}
	}
	return false
}

// waitNote waits until the client got a notification with this method.
func (d *driver) waitNote(method string, within time.Duration) {
	d.t.Helper()
	got := testwait.Within(within, func() bool {
		notes, _ := d.send(map[string]any{"op": "notes"})["notes"].([]any)
		return slices.Contains(notes, any(method))
	})
	if !got {
		d.t.Fatalf("no %s within %s", method, within)
	}
}

func writeJSON(t *testing.T, path string, v any) {
	t.Helper()
	b, _ := json.Marshal(v)
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
}

func nodeServer(t *testing.T, pkg string, args ...string) map[string]any {
	return map[string]any{"command": "node", "args": append([]string{nodeModule(t, pkg+"/dist/index.js")}, args...)}
}

// gatewaySession starts a gateway over cfg and connects the TypeScript client over
// stdio or HTTP; it returns the client and the gateway's stderr (log and records).
func gatewaySession(t *testing.T, transport, cfg, policies string) (*driver, *stderrLog) {
	t.Helper()
	if transport == "http" {
		g := startHTTPGateway(t, "--config", cfg, "--policies", policies)
		return startDriver(t, map[string]any{"url": g.url}), g.stderr
	}
	d := startDriver(t, map[string]any{"command": binary, "args": []string{"gateway", "run", "--log-format", "json", "--config", cfg, "--policies", policies}})
	return d, d.stderr
}

// descendants lists the processes below pid with their command lines.
func descendants(pid int) map[int]string {
	parent := map[int]int{}
	cmdline := map[int]string{}
	ents, _ := os.ReadDir("/proc")
	for _, e := range ents {
		p, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		stat, err := os.ReadFile("/proc/" + e.Name() + "/stat")
		if err != nil {
			continue
		}
		s := string(stat)
		i := strings.LastIndexByte(s, ')')
		if i < 0 {
			continue
		}
		f := strings.Fields(s[i+1:])
		if len(f) < 2 {
			continue
		}
		pp, _ := strconv.Atoi(f[1])
		parent[p] = pp
		c, _ := os.ReadFile("/proc/" + e.Name() + "/cmdline")
		cmdline[p] = strings.ReplaceAll(string(c), "\x00", " ")
	}
	out := map[int]string{}
	for p := range parent {
		for q := parent[p]; q > 1; q = parent[q] {
			if q == pid {
				out[p] = cmdline[p]
				break
			}
		}
	}
	return out
}

// killServer kills the one process below pid whose command line holds marker.
func killServer(t *testing.T, pid int, marker string) {
	t.Helper()
	for p, c := range descendants(pid) {
		if strings.Contains(c, marker) && !strings.Contains(c, "driver.mjs") && !strings.Contains(c, "gateway run") {
			if err := syscall.Kill(p, syscall.SIGKILL); err != nil {
				t.Fatal(err)
			}
			return
		}
	}
	t.Fatalf("no process %q below %d", marker, pid)
}

var transports = []string{"stdio", "http"}

// toolRecord waits for the audit record of a tools/call of tool.
func toolRecord(t *testing.T, log *stderrLog, tool string) map[string]any {
	t.Helper()
	var found map[string]any
	testwait.For(t, "the record of "+tool, func() bool {
		for _, rec := range log.records() {
			if rec["tool"] == tool {
				found = rec
				return true
			}
		}
		return false
	})
	return found
}

// TestServersAsOneGateway: with server-everything (twice), server-filesystem, the
// go-sdk everything-server and a server that cannot start, the gateway starts, names
// and routes every tool and resource, resource links returned by a tool can be read,
// a URI built from a template reaches its server, the same URI on two servers never
// collides, and the broken server is named in the log.
func TestServersAsOneGateway(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "note.txt"), []byte("hello from fs"), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg := filepath.Join(t.TempDir(), "config.json")
	writeJSON(t, cfg, map[string]any{"mcpServers": map[string]any{
		"everything": nodeServer(t, "@modelcontextprotocol/server-everything", "stdio"),
		"twin":       nodeServer(t, "@modelcontextprotocol/server-everything", "stdio"),
		"fs":         nodeServer(t, "@modelcontextprotocol/server-filesystem", dir),
		"go":         map[string]any{"command": everythingServer(t)[0]},
		"broken":     map[string]any{"command": "/nonexistent/server"},
	}})
	for _, tr := range transports {
		t.Run(tr, func(t *testing.T) {
			d, log := gatewaySession(t, tr, cfg, emptyPolicies(t))
			tools := names(d.mustRequest("tools/list", nil), "tools", "name")
			for _, p := range []string{"everything_get-resource-links", "twin_echo", "fs_read_text_file"} {
				if !hasPrefixed(tools, p) {
					t.Errorf("tools/list lacks %s: %v", p, tools)
				}
			}
			if !hasPrefixed(tools, "go_") || hasPrefixed(tools, "broken_") {
				t.Errorf("tools/list: %v", tools)
			}
			if !strings.Contains(log.String(), `"upstream":"broken"`) || !strings.Contains(log.String(), "/nonexistent/server") {
				t.Errorf("the log does not name the broken server:\n%s", log.String())
			}
			if !strings.Contains(log.String(), "[upstream] fs: ") {
				t.Errorf("relayed stderr lines do not name their server:\n%s", log.String())
			}

			// 1. Resource links returned by a tool can be read at once.
			res := d.mustRequest("tools/call", map[string]any{"name": "everything_get-resource-links", "arguments": map[string]any{"count": 2}})
			var links []string
			content, _ := res["content"].([]any)
			for _, c := range content {
				if m := c.(map[string]any); m["type"] == "resource_link" {
					links = append(links, m["uri"].(string))
				}
			}
			if len(links) != 2 {
				t.Fatalf("links: %v", content)
			}
			for _, uri := range append(links, "everything+demo://resource/dynamic/text/7") {
				if !strings.HasPrefix(uri, "everything+demo://") {
					t.Fatalf("link not namespaced: %s", uri)
				}
				r := d.mustRequest("resources/read", map[string]any{"uri": uri})
				contents, _ := r["contents"].([]any)
				if len(contents) == 0 || contents[0].(map[string]any)["uri"] != uri {
					t.Fatalf("resources/read %s: %v", uri, r)
				}
			}
			// 2. The same URI on two servers: listed once per server, each readable.
			uris := names(d.mustRequest("resources/list", nil), "resources", "uri")
			seen := map[string]bool{}
			for _, u := range uris {
				if seen[u] {
					t.Fatalf("resources/list shows %s twice", u)
				}
				seen[u] = true
			}
			var same string
			for _, u := range uris {
				if rest, ok := strings.CutPrefix(u, "everything+"); ok && seen["twin+"+rest] {
					same = rest
					break
				}
			}
			if same == "" {
				t.Fatalf("no URI both servers expose: %v", uris)
			}
			for _, srv := range []string{"everything", "twin"} {
				r := d.mustRequest("resources/read", map[string]any{"uri": srv + "+" + same})
				if c, _ := r["contents"].([]any); len(c) == 0 {
					t.Fatalf("%s+%s: %v", srv, same, r)
				}
			}
			tmpls := names(d.mustRequest("resources/templates/list", nil), "resourceTemplates", "uriTemplate")
			if !hasPrefixed(tmpls, "everything+demo://") || !hasPrefixed(tmpls, "twin+demo://") {
				t.Fatalf("templates: %v", tmpls)
			}
			// A bare URI names no server.
			if r, errText := d.request("resources/read", map[string]any{"uri": "demo://resource/dynamic/text/7"}); r != nil || !strings.Contains(errText, "-32002") {
				t.Fatalf("bare URI: %v %s", r, errText)
			}
			// A filesystem tool with the server named in the record.
			r := d.mustRequest("tools/call", map[string]any{"name": "fs_read_text_file", "arguments": map[string]any{"path": filepath.Join(dir, "note.txt")}})
			if !strings.Contains(fmt.Sprint(r["content"]), "hello from fs") {
				t.Fatalf("fs_read_text_file: %v", r)
			}
			if rec := toolRecord(t, log, "fs_read_text_file"); rec["server"] != "fs" {
				t.Fatalf("record: %v", rec)
			}
			if rec := toolRecord(t, log, "everything_get-resource-links"); rec["server"] != "everything" {
				t.Fatalf("record: %v", rec)
			}
			// An unknown tool is its own outcome: no server was called.
			if r, errText := d.request("tools/call", map[string]any{"name": "nosuch_x", "arguments": map[string]any{}}); r != nil || !strings.Contains(errText, "-32602") {
				t.Fatalf("unknown tool: %v %s", r, errText)
			}
			if rec := toolRecord(t, log, "nosuch_x"); rec["outcome"] != "unknown_tool" {
				t.Fatalf("unknown tool record: %v", rec)
			}
			// Listings neither warn about servers without prompts or resources, nor
			// about the broken one (its restarts are logged instead).
			if strings.Contains(log.String(), "listing an upstream failed") {
				t.Fatalf("a listing logged a warning:\n%s", log.String())
			}
		})
	}
}

// TestServersPolicyOnCtxServer: a policy keyed on ctx.server makes one server
// read-only, with two servers configured and with one.
func TestServersPolicyOnCtxServer(t *testing.T) {
	dir := t.TempDir()
	pol := t.TempDir()
	if err := os.WriteFile(filepath.Join(pol, "fs-read-only.js"), []byte(`if (ctx.phase === "pre" && ctx.server === "fs" && ctx.toolAccess !== "read") {
  throw "the fs server is read-only";
}
`), 0o600); err != nil {
		t.Fatal(err)
	}
	two := filepath.Join(t.TempDir(), "two.json")
	writeJSON(t, two, map[string]any{"mcpServers": map[string]any{
		"fs":         nodeServer(t, "@modelcontextprotocol/server-filesystem", dir),
		"everything": nodeServer(t, "@modelcontextprotocol/server-everything", "stdio"),
	}})
	one := filepath.Join(t.TempDir(), "one.json")
	writeJSON(t, one, map[string]any{"mcpServers": map[string]any{"fs": nodeServer(t, "@modelcontextprotocol/server-filesystem", dir)}})
	prefixed := filepath.Join(t.TempDir(), "prefixed.json")
	writeJSON(t, prefixed, map[string]any{"mcpServers": map[string]any{"fs": nodeServer(t, "@modelcontextprotocol/server-filesystem", dir)},
		"mcpgate": map[string]any{"prefixNames": true}})
	for _, tc := range []struct{ name, cfg, prefix string }{{"two servers", two, "fs_"}, {"one server", one, ""}, {"one server with prefixNames", prefixed, "fs_"}} {
		for _, tr := range transports {
			t.Run(tc.name+"/"+tr, func(t *testing.T) {
				d, log := gatewaySession(t, tr, tc.cfg, pol)
				file := filepath.Join(dir, tr+strings.ReplaceAll(tc.name, " ", "")+".txt")
				r, errText := d.request("tools/call", map[string]any{"name": tc.prefix + "write_file", "arguments": map[string]any{"path": file, "content": "x"}})
				if r != nil && r["isError"] != true {
					t.Fatalf("write went through: %v", r)
				}
				if _, err := os.Stat(file); err == nil {
					t.Fatal("the file was written")
				}
				if r == nil && errText == "" {
					t.Fatal("no answer")
				}
				d.mustRequest("tools/call", map[string]any{"name": tc.prefix + "list_allowed_directories", "arguments": map[string]any{}})
				if rec := toolRecord(t, log, tc.prefix+"write_file"); rec["outcome"] != "rejected" || rec["server"] != "fs" || rec["policy"] != "fs-read-only.js" {
					t.Fatalf("write record: %v", rec)
				}
				if rec := toolRecord(t, log, tc.prefix+"list_allowed_directories"); rec["outcome"] != "ok" || rec["server"] != "fs" {
					t.Fatalf("read record: %v", rec)
				}
			})
		}
	}
}

// TestServersRestartListChanged: kill one of two servers and list 20 ms later: the
// listing waits for it or leaves it out, never fails, and list_changed follows when
// its tools are back.
func TestServersRestartListChanged(t *testing.T) {
	cfg := filepath.Join(t.TempDir(), "config.json")
	// Two go-sdk servers: neither sends list_changed of its own accord, so the one the
	// client gets comes from the restart.
	writeJSON(t, cfg, map[string]any{"mcpServers": map[string]any{
		"go":  map[string]any{"command": everythingServer(t)[0]},
		"go2": map[string]any{"command": everythingServer(t)[0]},
	}})
	for _, tr := range transports {
		t.Run(tr, func(t *testing.T) {
			var d *driver
			var gwPid int
			if tr == "http" {
				g := startHTTPGateway(t, "--config", cfg, "--warm-pool", "0") // killServer finds the session's process alone
				d, gwPid = startDriver(t, map[string]any{"url": g.url}), g.cmd.Process.Pid
			} else {
				d = startDriver(t, map[string]any{"command": binary, "args": []string{"gateway", "run", "--log-format", "json", "--config", cfg, "--policies", emptyPolicies(t)}})
				gwPid = os.Getpid() // the driver and its gateway run below the test
			}
			if tools := names(d.mustRequest("tools/list", nil), "tools", "name"); !hasPrefixed(tools, "go_") {
				t.Fatalf("tools: %v", tools)
			}
			for _, method := range []string{"tools/list", "prompts/list"} {
				d.send(map[string]any{"op": "notes"}) // clear
				killServer(t, gwPid, "everything-server")
				time.Sleep(20 * time.Millisecond) // a notification 20 ms after the result
				first := d.mustRequest(method, nil)
				d.waitNote("notifications/tools/list_changed", 15*time.Second)
				if tools := names(d.mustRequest("tools/list", nil), "tools", "name"); !hasPrefixed(tools, "go_") || !hasPrefixed(tools, "go2_") {
					t.Fatalf("after the restart (%s first answered %v): tools %v", method, first, tools)
				}
			}
		})
	}
}

// freePort returns a loopback port nothing listens on.
func freePort(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

// TestServersRemoteRestart: a remote upstream that restarts (and so forgets the
// session: HTTP 404) gets a new session with the client's initialize replayed; calls
// work again without restarting mcpgate.
func TestServersRemoteRestart(t *testing.T) {
	bin := everythingServer(t)[0]
	addr := freePort(t)
	start := func() *exec.Cmd {
		cmd := exec.Command(bin, "-http", addr, "-stateless=false")
		endWithTest(cmd)
		cmd.Stdout, cmd.Stderr = io.Discard, io.Discard
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
		testwait.For(t, "everything-server to listen", func() bool {
			c, err := net.Dial("tcp", addr)
			if err == nil {
				c.Close()
			}
			return err == nil
		})
		return cmd
	}
	srv := start()
	cfg := filepath.Join(t.TempDir(), "config.json")
	writeJSON(t, cfg, map[string]any{"mcpServers": map[string]any{"far": map[string]any{"url": "http://" + addr + "/mcp"}}})
	for _, tr := range transports {
		t.Run(tr, func(t *testing.T) {
			d, log := gatewaySession(t, tr, cfg, emptyPolicies(t))
			tools := names(d.mustRequest("tools/list", nil), "tools", "name")
			if len(tools) == 0 {
				t.Fatal("no tools")
			}
			_ = srv.Process.Kill()
			_ = srv.Wait()
			srv = start()
			recovered := testwait.Within(15*time.Second, func() bool {
				r, _ := d.request("tools/list", nil)
				return r != nil && len(names(r, "tools", "name")) == len(tools)
			})
			if !recovered {
				t.Fatalf("the remote session never recovered:\n%s", log.String())
			}
			if !strings.Contains(log.String(), "no longer knows the session") {
				t.Fatalf("no session-loss log line:\n%s", log.String())
			}
		})
	}
}

// TestServersFailedRestartBacksOff: a server whose restarts fail at first (the new
// process exits before answering the replayed initialize) is back after the backoff
// — 100 ms doubling — not after the 30 s initialize timeout, and list_changed follows.
func TestServersFailedRestartBacksOff(t *testing.T) {
	bin := everythingServer(t)[0]
	for _, tr := range transports {
		t.Run(tr, func(t *testing.T) {
			count := filepath.Join(t.TempDir(), "starts")
			script := filepath.Join(t.TempDir(), "flaky.sh")
			// Start 1 serves; starts 2 and 3 exit at once; start 4 serves again.
			body := "#!/bin/sh\nn=$(cat " + count + " 2>/dev/null || echo 0)\necho $((n+1)) > " + count +
				"\nif [ \"$n\" -ge 1 ] && [ \"$n\" -le 2 ]; then exit 1; fi\nexec " + bin + "\n"
			if err := os.WriteFile(script, []byte(body), 0o700); err != nil {
				t.Fatal(err)
			}
			cfg := filepath.Join(t.TempDir(), "config.json")
			writeJSON(t, cfg, map[string]any{"mcpServers": map[string]any{
				"flaky":      map[string]any{"command": script},
				"everything": nodeServer(t, "@modelcontextprotocol/server-everything", "stdio"),
			}})
			var d *driver
			var log *stderrLog
			var gwPid int
			if tr == "http" {
				g := startHTTPGateway(t, "--config", cfg, "--warm-pool", "0") // the script counts its starts; killServer finds the session's process alone
				d, log, gwPid = startDriver(t, map[string]any{"url": g.url}), g.stderr, g.cmd.Process.Pid
			} else {
				d = startDriver(t, map[string]any{"command": binary, "args": []string{"gateway", "run", "--log-format", "json", "--config", cfg, "--policies", emptyPolicies(t)}})
				log, gwPid = d.stderr, os.Getpid()
			}
			d.mustRequest("tools/list", nil)
			killed := time.Now()
			killServer(t, gwPid, "everything-server")
			back := testwait.Within(8*time.Second, func() bool {
				r, _ := d.request("tools/list", nil)
				return hasPrefixed(names(r, "tools", "name"), "flaky_")
			})
			if !back {
				t.Fatalf("not back after %s:\n%s", time.Since(killed), log.String())
			}
			d.waitNote("notifications/tools/list_changed", 5*time.Second)
			if n := strings.Count(log.String(), "upstream restart failed"); n != 2 {
				t.Fatalf("%d failed restarts logged, want 2:\n%s", n, log.String())
			}
		})
	}
}

// TestServersConfigAndCommand: a command after -- together with mcpServers in
// --config is refused at start, naming the servers, instead of one silently winning.
func TestServersConfigAndCommand(t *testing.T) {
	cfg := filepath.Join(t.TempDir(), "config.json")
	writeJSON(t, cfg, map[string]any{"mcpServers": map[string]any{"fs": map[string]any{"command": "x"}}})
	out, err := exec.Command(binary, "gateway", "run", "--policies", emptyPolicies(t), "--config", cfg, "--", "some-server").CombinedOutput()
	if err == nil || !strings.Contains(string(out), "mcpServers") || !strings.Contains(string(out), "fs") {
		t.Fatalf("want a start-up error naming mcpServers and fs, got %v:\n%s", err, out)
	}
}
