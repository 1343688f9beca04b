package e2e

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/mcpgate/mcpgate/internal/testwait"
)

var (
	root   string // module root
	binary string // the built mcpgate
)

func TestMain(m *testing.M) {
	wd, _ := os.Getwd()
	root = filepath.Clean(filepath.Join(wd, "..", ".."))
	dir, err := os.MkdirTemp("", "mcpgate-e2e-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	binary = filepath.Join(dir, "mcpgate")
	if b := os.Getenv("MCPGATE_E2E_BINARY"); b != "" { // a helper run of this binary (TestHarnessChildrenEndWithIt)
		binary = b
	} else {
		build := exec.Command("go", "build", "-o", binary, "./cmd/mcpgate")
		build.Dir = root
		build.Stdout, build.Stderr = os.Stderr, os.Stderr
		if err := build.Run(); err != nil {
			fmt.Fprintln(os.Stderr, "e2e: build mcpgate:", err)
			os.Exit(1)
		}
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// need returns the path of a test-bed file and fails (under CI) or skips the test
// when it is missing: CI must install the whole test bed (.ci/run).
func need(t *testing.T, path, what string) string {
	t.Helper()
	if _, err := os.Stat(path); err != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("%s is missing at %s: .ci/run must install it", what, path)
		}
		t.Skipf("%s is not installed (%s); run `make deps`", what, path)
	}
	return path
}

func nodeModule(t *testing.T, rel string) string {
	return need(t, filepath.Join(root, "testdata", "e2e", "node_modules", rel), "npm package "+rel)
}

// upstreamMJS is the scriptable case upstream (testdata/e2e/upstream.mjs).
func upstreamMJS(t *testing.T) []string {
	nodeModule(t, "@modelcontextprotocol/sdk/package.json")
	return []string{"node", filepath.Join(root, "testdata", "e2e", "upstream.mjs")}
}

func filesystemServer(t *testing.T, dir string) []string {
	return []string{"node", nodeModule(t, "@modelcontextprotocol/server-filesystem/dist/index.js"), dir}
}

func everythingServer(t *testing.T) []string {
	return []string{need(t, filepath.Join(root, "testdata", "e2e", "bin", "everything-server"), "go-sdk everything-server")}
}

// stderrLog collects a process's stderr and picks out audit records.
type stderrLog struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (l *stderrLog) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.Write(p)
}

func (l *stderrLog) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.String()
}

// records returns the tools/call audit records so far: JSON lines with event_id and
// kind whose method is tools/call. The records of other channels (a listing the client
// asked for, a notification) are in allRecords.
func (l *stderrLog) records() []map[string]any {
	var out []map[string]any
	for _, m := range l.allRecords() {
		if m["method"] == "tools/call" {
			out = append(out, m)
		}
	}
	return out
}

// allRecords returns every audit record so far, of every method.
func (l *stderrLog) allRecords() []map[string]any {
	var out []map[string]any
	for _, line := range strings.Split(l.String(), "\n") {
		var m map[string]any
		if json.Unmarshal([]byte(line), &m) == nil && m["event_id"] != nil && m["kind"] != nil {
			out = append(out, m)
		}
	}
	return out
}

// waitRecords waits until at least n records have been written.
func (l *stderrLog) waitRecords(t *testing.T, n int) []map[string]any {
	t.Helper()
	if !testwait.Within(testwait.Timeout, func() bool { return len(l.records()) >= n }) {
		t.Fatalf("want %d audit records, have %d; stderr:\n%s", n, len(l.records()), l.String())
	}
	return l.records()
}

// gatewayArgs builds `gateway run` arguments around an upstream command.
func gatewayArgs(flags []string, upstream []string) []string {
	args := append([]string{"gateway", "run", "--log-format", "json"}, flags...)
	return append(append(args, "--"), upstream...)
}

// emptyPolicies returns a new empty policies directory.
func emptyPolicies(t *testing.T) string { return t.TempDir() }

// policiesWith returns a directory holding the named files copied from the repo.
func policiesWith(t *testing.T, files ...string) string {
	dir := t.TempDir()
	for _, f := range files {
		b, err := os.ReadFile(filepath.Join(root, f))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, filepath.Base(f)), b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// mcpClient starts command with mcp-go's stdio client and initializes it.
func mcpClient(t *testing.T, env []string, command string, args ...string) (*client.Client, *stderrLog) {
	t.Helper()
	log := &stderrLog{}
	c, err := client.NewStdioMCPClientWithOptions(command, env, args, transport.WithCommandStderrWriter(log))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	init := mcp.InitializeRequest{}
	init.Params.ProtocolVersion = mcp.LATEST_PROTOCOL_VERSION
	init.Params.ClientInfo = mcp.Implementation{Name: "mcpgate-e2e", Version: "1"}
	if _, err := c.Initialize(ctx, init); err != nil {
		t.Fatalf("initialize: %v\nstderr:\n%s", err, log.String())
	}
	return c, log
}

func callTool(t *testing.T, c *client.Client, name string, args map[string]any) *mcp.CallToolResult {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	req := mcp.CallToolRequest{}
	req.Params.Name = name
	req.Params.Arguments = args
	res, err := c.CallTool(ctx, req)
	if err != nil {
		t.Fatalf("tools/call %s: %v", name, err)
	}
	return res
}

// rawConn is a minimal JSON-RPC client over stdio that keeps each response's exact
// bytes, for byte-for-byte comparisons.
type rawConn struct {
	t      *testing.T
	cmd    *exec.Cmd
	in     io.WriteCloser
	out    *bufio.Reader
	stderr *stderrLog
	id     int
}

func startRaw(t *testing.T, env []string, argv ...string) *rawConn {
	t.Helper()
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Env = append(os.Environ(), env...)
	in, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	log := &stderrLog{}
	cmd.Stderr = log
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	c := &rawConn{t: t, cmd: cmd, in: in, out: bufio.NewReaderSize(out, 1<<20), stderr: log}
	t.Cleanup(func() {
		in.Close()
		done := make(chan struct{})
		go func() { cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(5 * time.Second):
			cmd.Process.Kill()
			<-done
		}
	})
	c.request("initialize", map[string]any{
		"protocolVersion": "2025-06-18",
		"capabilities":    map[string]any{},
		"clientInfo":      map[string]any{"name": "raw", "version": "1"},
	})
	c.send(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	return c
}

func (c *rawConn) send(line string) {
	c.t.Helper()
	if _, err := io.WriteString(c.in, line+"\n"); err != nil {
		c.t.Fatalf("write: %v", err)
	}
}

// request sends a request and returns the exact bytes of its "result" (or "error").
func (c *rawConn) request(method string, params any) json.RawMessage {
	c.t.Helper()
	c.id++
	b, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": c.id, "method": method, "params": params})
	c.send(string(b))
	return c.await(c.id)
}

func (c *rawConn) await(id int) json.RawMessage {
	c.t.Helper()
	type resp struct {
		ID     json.RawMessage `json:"id"`
		Result json.RawMessage `json:"result"`
		Error  json.RawMessage `json:"error"`
		Method string          `json:"method"`
	}
	done := make(chan json.RawMessage, 1)
	errc := make(chan error, 1)
	go func() {
		for {
			line, err := c.out.ReadBytes('\n')
			if err != nil {
				errc <- err
				return
			}
			var r resp
			if json.Unmarshal(line, &r) != nil || r.Method != "" || string(r.ID) != fmt.Sprint(id) {
				continue
			}
			if r.Error != nil {
				done <- append(json.RawMessage(`{"error":`), append(r.Error, '}')...)
				return
			}
			done <- r.Result
			return
		}
	}()
	select {
	case r := <-done:
		return r
	case err := <-errc:
		c.t.Fatalf("read response %d: %v\nstderr:\n%s", id, err, c.stderr.String())
	case <-time.After(30 * time.Second):
		c.t.Fatalf("no response to request %d\nstderr:\n%s", id, c.stderr.String())
	}
	return nil
}

// endWithTest makes cmd end with the test binary, even when it is killed and no
// cleanup runs: the kernel sends cmd SIGKILL (PR_SET_PDEATHSIG) when this process
// exits, so no server, driver or balancer of a killed run lives on under init.
func endWithTest(cmd *exec.Cmd) {
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	cmd.SysProcAttr.Pdeathsig = syscall.SIGKILL
}

// boundedCmd is a test-bed driver (a node script and the gateways and servers it
// starts) that is killed, with its whole process group, once limit has passed: a
// hang fails its test with what the driver printed instead of running into the
// package timeout.
type boundedCmd struct {
	*exec.Cmd
	ctx   context.Context
	limit time.Duration
}

func harnessCmd(t *testing.T, limit time.Duration, name string, args ...string) boundedCmd {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), limit)
	t.Cleanup(cancel)
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL} // ends with the test binary, even killed
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = 5 * time.Second // a child still holding stdout does not keep Wait waiting
	return boundedCmd{Cmd: cmd, ctx: ctx, limit: limit}
}

// explain names a kill at the limit as what it is.
func (c boundedCmd) explain(err error) error {
	if err != nil && c.ctx.Err() != nil {
		name := c.Args[0]
		if len(c.Args) > 1 && !strings.HasPrefix(c.Args[1], "-") {
			name = c.Args[1] // the script
		}
		return fmt.Errorf("%s did not finish within %s and was killed (%v)", filepath.Base(name), c.limit, err)
	}
	return err
}

// TestHarnessCmdKillsAHang: a driver that hangs, with a child holding its stdout, is
// killed at the limit and its error says so, well before the package timeout.
func TestHarnessCmdKillsAHang(t *testing.T) {
	start := time.Now()
	cmd := harnessCmd(t, 300*time.Millisecond, "sh", "-c", "echo started; sleep 60 & sleep 60")
	out, err := cmd.CombinedOutput()
	err = cmd.explain(err)
	if err == nil || !strings.Contains(err.Error(), "did not finish within 300ms") || string(out) != "started\n" {
		t.Fatalf("err %v, output %q", err, out)
	}
	if d := time.Since(start); d > 10*time.Second {
		t.Fatalf("the hang was killed after %s", d)
	}
}
