package e2e

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/mcpgate/mcpgate/internal/testwait"
)

// The HTTP end-to-end tests run the real mcpgate binary (gateway run --listen) in
// front of testdata/fakeup, a scriptable stdio MCP server.

var httpBins struct {
	once          sync.Once
	gw, fake, dir string
	err           error
}

// httpBinaries returns the mcpgate TestMain built and builds fakeup once.
func httpBinaries(t testing.TB) (gw, fake string) {
	t.Helper()
	httpBins.once.Do(func() {
		dir, err := os.MkdirTemp("", "mcpgate-e2e-http-")
		if err != nil {
			httpBins.err = err
			return
		}
		httpBins.dir = dir
		httpBins.gw = binary
		httpBins.fake = filepath.Join(dir, "fakeup")
		out, err := exec.Command("go", "build", "-o", httpBins.fake, "./testdata/fakeup").CombinedOutput()
		if err != nil {
			httpBins.err = fmt.Errorf("go build ./testdata/fakeup: %v\n%s", err, out)
		}
	})
	if httpBins.err != nil {
		t.Fatal(httpBins.err)
	}
	return httpBins.gw, httpBins.fake
}

type httpGateway struct {
	url    string
	cmd    *exec.Cmd
	stderr *stderrLog
	done   chan struct{}
}

var servingRE = regexp.MustCompile(`"url":"(https?://[^"]+)"`)

// startHTTPGateway runs `mcpgate gateway run --listen 127.0.0.1:0 ARGS...`.
func startHTTPGateway(t testing.TB, args ...string) *httpGateway {
	t.Helper()
	return startHTTPGatewayUnder(t, nil, args...)
}

// startHTTPGatewayUnder runs the gateway as startHTTPGateway does, under the command
// wrapper (e.g. prlimit --nofile=256 --), when one is given.
func startHTTPGatewayUnder(t testing.TB, wrapper []string, args ...string) *httpGateway {
	t.Helper()
	gw, _ := httpBinaries(t)
	full := []string{"gateway", "run", "--listen", "127.0.0.1:0", "--log-format", "json"}
	if !slices.Contains(args, "--policy-bundle") { // which takes the place of --policies
		full = append(full, "--policies", t.TempDir())
	}
	full = append(full, args...)
	argv := append(append(append([]string{}, wrapper...), gw), full...)
	cmd := exec.Command(argv[0], argv[1:]...)
	// The gateway ends when the test binary does, even killed: SIGTERM drains it and
	// it closes its upstreams (which have their own parent-death signal).
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGTERM}
	g := &httpGateway{cmd: cmd, stderr: &stderrLog{}, done: make(chan struct{})}
	cmd.Stderr = g.stderr
	cmd.Stdout = io.Discard
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { _ = cmd.Wait(); close(g.done) }()
	t.Cleanup(func() { g.stop(t) })
	exited := false
	started := testwait.Within(2*testwait.Timeout, func() bool {
		if m := servingRE.FindStringSubmatch(g.stderr.String()); m != nil {
			g.url = m[1]
			return true
		}
		select {
		case <-g.done:
			exited = true
			return true
		default:
			return false
		}
	})
	switch {
	case exited:
		t.Fatalf("gateway exited at start:\n%s", g.stderr.String())
	case !started:
		t.Fatalf("gateway did not start listening:\n%s", g.stderr.String())
	}
	return g
}

// stop sends SIGTERM and waits.
func (g *httpGateway) stop(t testing.TB) {
	select {
	case <-g.done:
		return
	default:
	}
	_ = g.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-g.done:
	case <-time.After(15 * time.Second):
		_ = g.cmd.Process.Kill()
		t.Errorf("gateway did not exit on SIGTERM")
	}
}

// httpClient is a minimal Streamable HTTP MCP client.
type httpClient struct {
	url, sid, token string
	hc              *http.Client
}

func newHTTPClient(url string) *httpClient {
	return &httpClient{url: url, hc: &http.Client{Timeout: 30 * time.Second, Transport: httpTransport}}
}

// httpTransport keeps connections alive across the many clients of a test.
var httpTransport = &http.Transport{MaxIdleConns: 256, MaxIdleConnsPerHost: 256, IdleConnTimeout: 30 * time.Second}

// httpReply is one POST's outcome.
type httpReply struct {
	status int
	header http.Header
	msgs   []map[string]any // JSON body or SSE events, in order
}

// last returns the final message (the response).
func (r httpReply) last() map[string]any {
	if len(r.msgs) == 0 {
		return nil
	}
	return r.msgs[len(r.msgs)-1]
}

func (c *httpClient) do(ctx context.Context, method, body string, hdr map[string]string) (httpReply, error) {
	req, err := http.NewRequestWithContext(ctx, method, c.url, strings.NewReader(body))
	if err != nil {
		return httpReply{}, err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	if c.sid != "" {
		req.Header.Set("Mcp-Session-Id", c.sid)
	}
	if c.token != "" {
		req.Header.Set("Authorization", "Bearer "+c.token)
	}
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	resp, err := c.hc.Do(req)
	if err != nil {
		return httpReply{}, err
	}
	defer resp.Body.Close()
	r := httpReply{status: resp.StatusCode, header: resp.Header}
	if strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		sc := bufio.NewScanner(resp.Body)
		sc.Buffer(make([]byte, 1<<20), 128<<20)
		for sc.Scan() {
			if d, ok := strings.CutPrefix(sc.Text(), "data: "); ok {
				var m map[string]any
				if json.Unmarshal([]byte(d), &m) == nil {
					r.msgs = append(r.msgs, m)
				}
			}
		}
		return r, sc.Err()
	}
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return r, err
	}
	var m map[string]any
	if json.Unmarshal(b, &m) == nil {
		r.msgs = append(r.msgs, m)
	}
	return r, nil
}

func (c *httpClient) post(t testing.TB, body string) httpReply {
	t.Helper()
	r, err := c.do(context.Background(), http.MethodPost, body, nil)
	if err != nil {
		t.Fatalf("POST %s: %v", body, err)
	}
	return r
}

// initialize opens a session.
func (c *httpClient) initialize(t testing.TB) {
	t.Helper()
	r := c.post(t, `{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{"sampling":{}},"clientInfo":{"name":"e2e","version":"1"}}}`)
	if r.status != http.StatusOK || r.last()["result"] == nil {
		t.Fatalf("initialize: status %d, %v", r.status, r.msgs)
	}
	c.sid = r.header.Get("Mcp-Session-Id")
	if c.sid == "" {
		t.Fatal("initialize: no Mcp-Session-Id")
	}
	if r := c.post(t, `{"jsonrpc":"2.0","method":"notifications/initialized"}`); r.status != http.StatusAccepted {
		t.Fatalf("notifications/initialized: status %d", r.status)
	}
}

func httpCallBody(id int, tool string, args map[string]any) string {
	b, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": map[string]any{"name": tool, "arguments": args}})
	return string(b)
}

// call runs one tools/call and returns its response message.
func (c *httpClient) call(t testing.TB, id int, tool string, args map[string]any) map[string]any {
	t.Helper()
	r := c.post(t, httpCallBody(id, tool, args))
	if r.status != http.StatusOK {
		t.Fatalf("tools/call %s: status %d %v", tool, r.status, r.msgs)
	}
	return r.last()
}

// httpResultText returns content[0].text of a tools/call response, or "".
func httpResultText(m map[string]any) string {
	res, _ := m["result"].(map[string]any)
	content, _ := res["content"].([]any)
	if len(content) == 0 {
		return ""
	}
	item, _ := content[0].(map[string]any)
	s, _ := item["text"].(string)
	return s
}

// httpErrorOf returns a response's error code and message (0 when none).
func httpErrorOf(m map[string]any) (int, string) {
	e, _ := m["error"].(map[string]any)
	if e == nil {
		return 0, ""
	}
	code, _ := e["code"].(float64)
	msg, _ := e["message"].(string)
	return int(code), msg
}

// mustEcho checks that the gateway serves a normal call.
func (c *httpClient) mustEcho(t testing.TB, id int) {
	t.Helper()
	m := c.call(t, id, "echo", map[string]any{"text": "still here"})
	if got := httpResultText(m); got != "fakeup: still here" {
		t.Fatalf("next call: got %q (%v)", got, m)
	}
}

// httpExec runs a command and returns its combined output.
func httpExec(name string, args ...string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, name, args...).CombinedOutput()
	return string(out), err
}

// sseEvents POSTs body and streams the SSE events' data on a channel, which is
// closed at the end of the stream.
func (c *httpClient) sseEvents(t testing.TB, ctx context.Context, body string) <-chan map[string]any {
	t.Helper()
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, c.url, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Mcp-Session-Id", c.sid)
	resp, err := c.hc.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	ch := make(chan map[string]any, 16)
	go func() {
		defer close(ch)
		defer resp.Body.Close()
		sc := bufio.NewScanner(resp.Body)
		for sc.Scan() {
			if d, ok := strings.CutPrefix(sc.Text(), "data: "); ok {
				var m map[string]any
				if json.Unmarshal([]byte(d), &m) == nil {
					ch <- m
				}
			}
		}
	}()
	return ch
}
