package e2e

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
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

// The one-reading tests (docs/decisions.md#one-reading) put real SDK servers behind
// the real binary: foldgo (mcp-go, which decodes with encoding/json and so folds
// member names) and testdata/e2e/fold.mjs (the TypeScript SDK, v1 and v2, which reads
// exact names). Each server records in its RAN_FILE the calls it really ran. A
// pre policy forbids wipe and force; every attack is a message the gateway once
// judged one way while a server ran it another.

var foldGoBin struct {
	once sync.Once
	path string
	err  error
}

// foldGo builds testdata/foldgo once.
func foldGo(t *testing.T) string {
	t.Helper()
	foldGoBin.once.Do(func() {
		dir, err := os.MkdirTemp("", "mcpgate-e2e-foldgo-")
		if err != nil {
			foldGoBin.err = err
			return
		}
		foldGoBin.path = filepath.Join(dir, "foldgo")
		if out, err := exec.Command("go", "build", "-o", foldGoBin.path, "./testdata/foldgo").CombinedOutput(); err != nil {
			foldGoBin.err = fmt.Errorf("go build ./testdata/foldgo: %v\n%s", err, out)
		}
	})
	if foldGoBin.err != nil {
		t.Fatal(foldGoBin.err)
	}
	return foldGoBin.path
}

// foldServer is one upstream of the matrix and the file it records its calls in.
type foldServer struct {
	name string // configured server name
	sdk  string // "mcp-go", "ts-v1", "ts-v2"
	ran  string
}

func (s foldServer) entry(t *testing.T) map[string]any {
	env := map[string]string{"RAN_FILE": s.ran}
	switch s.sdk {
	case "mcp-go":
		return map[string]any{"command": foldGo(t), "env": env}
	case "ts-v2":
		env["SDK"] = "v2"
	}
	need(t, filepath.Join(root, "testdata", "e2e", "node_modules", "@modelcontextprotocol", "server"), "the TypeScript SDK test bed (make deps)")
	return map[string]any{"command": "node", "args": []string{filepath.Join(root, "testdata", "e2e", "fold.mjs")}, "env": env}
}

// calls returns what the server ran.
func (s foldServer) calls() string {
	b, _ := os.ReadFile(s.ran)
	return string(b)
}

// foldGateway writes the config and the policy for servers; it returns the
// gateway's flags.
func foldGateway(t *testing.T, servers []foldServer) []string {
	t.Helper()
	m := map[string]any{}
	for _, s := range servers {
		m[s.name] = s.entry(t)
	}
	cfg := filepath.Join(t.TempDir(), "mcpgate.json")
	b, _ := json.Marshal(map[string]any{"mcpServers": m})
	if err := os.WriteFile(cfg, b, 0o600); err != nil {
		t.Fatal(err)
	}
	pol := t.TempDir()
	deny := `if (ctx.phase === "pre" && (/(^|_)wipe$/.test(ctx.tool) || ctx.params.force === true)) { throw "wipe and force are not allowed"; }`
	if err := os.WriteFile(filepath.Join(pol, "deny.js"), []byte(deny), 0o600); err != nil {
		t.Fatal(err)
	}
	return []string{"--config", cfg, "--policies", pol, "--filter-output"}
}

// attacks are the client messages of both findings, for a tool prefix ("" with one
// server, "<server>_" with several). Each must be refused with -32600.
func attacks(prefix string) []string {
	call := func(id int, envelope string) string {
		return fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,%s}`, id, envelope)
	}
	p := prefix
	return []string{
		// Envelope members that differ only by case: a ping to the gateway, the
		// tools/call to an exact reader; harmless params to the gateway, others to
		// the server.
		call(101, `"method":"tools/call","params":{"name":"`+p+`wipe"},"METHOD":"ping"`),
		call(102, `"method":"tools/call","params":{"name":"`+p+`wipe"},"PARAMS":{"name":"`+p+`safe"}`),
		call(103, `"method":"tools/call","params":{"name":"`+p+`wipe"},"paramſ":{"name":"`+p+`safe"}`),
		call(104, `"METHOD":"tools/call","params":{"name":"`+p+`wipe"}`),
		// Argument members a Go server folds.
		call(105, `"method":"tools/call","params":{"name":"`+p+`safe","NAME":"wipe"}`),
		call(106, `"method":"tools/call","params":{"name":"`+p+`act","Arguments":{"force":true}}`),
		call(107, `"method":"tools/call","params":{"name":"`+p+`act","arguments":{},"Arguments":{"force":true}}`),
		call(108, `"method":"tools/call","params":{"name":"`+p+`act","arguments":{"force":false,"FORCE":true}}`),
		// One argument named like a schema property only under folding.
		call(109, `"method":"tools/call","params":{"name":"`+p+`act","arguments":{"Force":true}}`),
		// An id a double cannot hold (docs/decisions.md#exact-ids): mcp-go answers it
		// as 9007199254740992, which the gateway would take for another request.
		`{"jsonrpc":"2.0","id":9007199254740993,"method":"tools/call","params":{"name":"` + p + `safe","arguments":{}}}`,
	}
}

// checkRefused checks one refusal answer.
func checkRefused(t *testing.T, attack string, m map[string]any) {
	t.Helper()
	code, msg := httpErrorOf(m)
	var want map[string]any
	_ = json.Unmarshal([]byte(attack), &want)
	if code != -32600 || !strings.Contains(msg, "more than one reading") || fmt.Sprint(m["id"]) != fmt.Sprint(want["id"]) {
		t.Errorf("%s: answered %v", attack, m)
	}
}

// checkNotRan checks that no server ran a forbidden call, and that the clean
// call before the attacks ran.
func checkNotRan(t *testing.T, servers []foldServer) {
	t.Helper()
	for _, s := range servers {
		got := s.calls()
		if !strings.Contains(got, "safe") {
			t.Errorf("%s (%s) never ran the clean call: %q", s.name, s.sdk, got)
		}
		if strings.Contains(got, "wipe") || strings.Contains(got, "force=true") {
			t.Errorf("%s (%s) ran a forbidden call: %q", s.name, s.sdk, got)
		}
	}
}

// checkRefusalRecords checks that each refusal left one record naming its reason
// and no value.
func checkRefusalRecords(t *testing.T, log *stderrLog, n int) {
	t.Helper()
	refusals := func() (out []map[string]any) {
		for _, r := range log.allRecords() {
			switch r["reason"] {
			case "duplicate_member", "case_variant_member", "invalid_member_name", "inexact_id":
				out = append(out, r)
			}
		}
		return out
	}
	if !testwait.Within(testwait.Timeout, func() bool { return len(refusals()) >= n }) {
		t.Fatalf("want %d refusal records, have %d:\n%s", n, len(refusals()), log.String())
	}
	for _, r := range refusals() {
		b, _ := json.Marshal(r)
		if strings.Contains(string(b), "wipe") || strings.Contains(string(b), `"force`) || r["outcome"] == "ok" {
			t.Errorf("refusal record %s", b)
		}
	}
}

// lineClient is a raw newline-delimited JSON-RPC client that keeps every line it read.
type lineClient struct {
	t    *testing.T
	in   io.WriteCloser
	out  *bufio.Reader
	seen []string
}

func startLineClient(t *testing.T, log *stderrLog, args ...string) *lineClient {
	t.Helper()
	cmd := exec.Command(binary, args...)
	in, _ := cmd.StdinPipe()
	out, _ := cmd.StdoutPipe()
	cmd.Stderr = log
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		in.Close()
		done := make(chan struct{})
		go func() { _ = cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			_ = cmd.Process.Kill()
			<-done
		}
	})
	c := &lineClient{t: t, in: in, out: bufio.NewReaderSize(out, 1<<20)}
	c.rpc(`{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{"sampling":{}},"clientInfo":{"name":"e2e","version":"1"}}}`)
	c.send(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	return c
}

func (c *lineClient) send(line string) {
	c.t.Helper()
	if _, err := io.WriteString(c.in, line+"\n"); err != nil {
		c.t.Fatal(err)
	}
}

// rpc sends a request and returns its response; every line read on the way is kept.
func (c *lineClient) rpc(line string) map[string]any {
	c.t.Helper()
	var req map[string]any
	if err := json.Unmarshal([]byte(line), &req); err != nil {
		c.t.Fatalf("bad request %s: %v", line, err)
	}
	c.send(line)
	type read struct {
		line string
		err  error
	}
	for {
		ch := make(chan read, 1)
		go func() { l, err := c.out.ReadString('\n'); ch <- read{l, err} }()
		var r read
		select {
		case r = <-ch:
		case <-time.After(testwait.Timeout):
			c.t.Fatalf("no answer to %s; read %q", line, c.seen)
		}
		if r.err != nil {
			c.t.Fatalf("read: %v", r.err)
		}
		c.seen = append(c.seen, r.line)
		var m map[string]any
		if json.Unmarshal([]byte(r.line), &m) == nil && m["method"] == nil && fmt.Sprint(m["id"]) == fmt.Sprint(req["id"]) {
			return m
		}
	}
}

// oneReadingCases lists the topologies: one server of each SDK, and all three behind
// one gateway (tool names prefixed with the server's name).
func oneReadingCases(t *testing.T) map[string][]foldServer {
	dir := t.TempDir()
	s := func(name, sdk string) foldServer {
		return foldServer{name: name, sdk: sdk, ran: filepath.Join(dir, name+"-"+sdk+".txt")}
	}
	return map[string][]foldServer{
		"one mcp-go": {s("only", "mcp-go")},
		"one ts-v1":  {s("only", "ts-v1")},
		"one ts-v2":  {s("only", "ts-v2")},
		"several":    {s("go", "mcp-go"), s("ts", "ts-v1"), s("tstwo", "ts-v2")},
	}
}

// prefixes returns the tool prefix of each server of a topology.
func prefixes(servers []foldServer) []string {
	if len(servers) == 1 {
		return []string{""}
	}
	var p []string
	for _, s := range servers {
		p = append(p, s.name+"_")
	}
	return p
}

// TestOneReadingOnStdio: over stdio, with one server and with several, every attack
// of both findings is refused with -32600 and a record; no server runs it; clean
// calls still run.
func TestOneReadingOnStdio(t *testing.T) {
	for name, servers := range oneReadingCases(t) {
		t.Run(name, func(t *testing.T) {
			log := &stderrLog{}
			c := startLineClient(t, log, append([]string{"gateway", "run", "--log-format", "json"}, foldGateway(t, servers)...)...)
			n := 0
			for i, p := range prefixes(servers) {
				if m := c.rpc(fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"%ssafe","arguments":{}}}`, 10+i, p)); httpResultText(m) != "safe" {
					t.Fatalf("clean call %ssafe: %v", p, m)
				}
				for _, a := range attacks(p) {
					checkRefused(t, a, c.rpc(a))
					n++
				}
			}
			checkNotRan(t, servers)
			checkRefusalRecords(t, log, n)
		})
	}
}

// TestOneReadingOverHTTP: the same over Streamable HTTP.
func TestOneReadingOverHTTP(t *testing.T) {
	for name, servers := range oneReadingCases(t) {
		t.Run(name, func(t *testing.T) {
			g := startHTTPGateway(t, foldGateway(t, servers)...)
			c := newHTTPClient(g.url)
			c.initialize(t)
			n := 0
			for i, p := range prefixes(servers) {
				if m := c.call(t, 10+i, p+"safe", map[string]any{}); httpResultText(m) != "safe" {
					t.Fatalf("clean call %ssafe: %v", p, m)
				}
				for _, a := range attacks(p) {
					r := c.post(t, a)
					// Refused where it is parsed: HTTP 400; refused once the tool's
					// schema is read (the lone "Force"): a JSON-RPC error like any call's.
					if r.status != http.StatusBadRequest && !(strings.Contains(a, `"Force"`) && r.status == http.StatusOK) {
						t.Errorf("%s: HTTP %d", a, r.status)
					}
					checkRefused(t, a, r.last())
					n++
				}
			}
			checkNotRan(t, servers)
			checkRefusalRecords(t, g.stderr, n)
		})
	}
}

// TestOneReadingServerToClient: a TypeScript SDK server that writes a second reading
// of its own response, a ping that is also a sampling request, and a progress
// notification that is also a log message: none reaches the client, over stdio and
// over HTTP, with one server and with several.
func TestOneReadingServerToClient(t *testing.T) {
	dir := t.TempDir()
	for _, transport := range []string{"stdio", "http"} {
		for _, several := range []bool{false, true} {
			name := fmt.Sprintf("%s several=%v", transport, several)
			t.Run(name, func(t *testing.T) {
				servers := []foldServer{{name: "ts", sdk: "ts-v1", ran: filepath.Join(dir, name+"-ts.txt")}}
				if several {
					servers = append(servers, foldServer{name: "go", sdk: "mcp-go", ran: filepath.Join(dir, name+"-go.txt")})
				}
				p := prefixes(servers)[0]
				flags := foldGateway(t, servers)
				var call func(body string) (map[string]any, []string)
				var log *stderrLog
				if transport == "stdio" {
					log = &stderrLog{}
					c := startLineClient(t, log, append([]string{"gateway", "run", "--log-format", "json"}, flags...)...)
					call = func(body string) (map[string]any, []string) {
						c.seen = nil
						m := c.rpc(body)
						return m, c.seen
					}
				} else {
					g := startHTTPGateway(t, flags...)
					log = g.stderr
					c := newHTTPClient(g.url)
					c.initialize(t)
					call = func(body string) (map[string]any, []string) {
						r := c.post(t, body)
						var seen []string
						for _, m := range r.msgs {
							b, _ := json.Marshal(m)
							seen = append(seen, string(b))
						}
						return r.last(), seen
					}
				}
				body := func(id int, kind string) string {
					return fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"%shostile","arguments":{"kind":%q},"_meta":{"progressToken":"p"}}}`, id, p, kind)
				}
				m, seen := call(body(1, "result"))
				code, refusedText := httpErrorOf(m)
				if code == 0 || !strings.Contains(refusedText, "more than one reading") {
					t.Errorf("second result: %v", m)
				}
				for i, kind := range []string{"request", "notification"} {
					m, s := call(body(2+i, kind))
					if httpResultText(m) != "hostile done" {
						t.Errorf("%s: %v", kind, m)
					}
					seen = append(seen, s...)
				}
				for _, l := range seen {
					if strings.Contains(l, "evil") || strings.Contains(l, "sampling/createMessage") || strings.Contains(l, "notifications/message") {
						t.Errorf("the client saw %s", l)
					}
				}
				checkRefusalRecords(t, log, 3)
				// The refused result leaves one record, the call's, cited by its error.
				var calls []map[string]any
				testwait.Within(testwait.Timeout, func() bool { // written beside the answer
					calls = nil
					for _, r := range log.allRecords() {
						if r["method"] == "tools/call" && r["outcome"] == "upstream_error" {
							calls = append(calls, r)
						}
					}
					return len(calls) > 0
				})
				if len(calls) != 1 || calls[0]["reason"] != "duplicate_member" || !strings.Contains(refusedText, fmt.Sprint(calls[0]["event_id"])) {
					t.Errorf("want one record of the refused call, cited by %q; have %v", refusedText, calls)
				}
			})
		}
	}
}
