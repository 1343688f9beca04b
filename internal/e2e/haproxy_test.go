package e2e

import (
	"context"
	"fmt"
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

// TestHAProxyReplicas runs two replicas behind the shipped deploy/haproxy.cfg and 16
// clients through it: every session's requests reach the replica that opened it (no
// session error, and a session's upstream process never changes), and both replicas
// serve sessions.
func TestHAProxyReplicas(t *testing.T) {
	hap, err := exec.LookPath("haproxy")
	if err != nil {
		if os.Getenv("CI") != "" {
			t.Fatal("CI is set but haproxy is not installed (.ci/run installs it)")
		}
		t.Skip("SKIPPED: install haproxy (Debian package haproxy) to run this test")
	}
	_, fake := httpBinaries(t)
	g1 := startHTTPGateway(t, "--", fake)
	g2 := startHTTPGateway(t, "--", fake)
	bind := freeAddr(t)
	cmd := exec.Command(hap, "-db", "-f", filepath.Join(root, "deploy", "haproxy.cfg"))
	endWithTest(cmd)
	cmd.Env = append(os.Environ(), "MCPGATE_BIND="+bind,
		"MCPGATE_REPLICA_1="+hostPort(g1.url), "MCPGATE_REPLICA_2="+hostPort(g2.url))
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

	url := "http://" + bind + "/mcp"
	const clients, calls = 16, 10
	var wg sync.WaitGroup
	errs := make(chan string, clients*calls)
	for i := range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			// Each client has its own connections, as separate agents would.
			c := &httpClient{url: url, hc: &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{}}}
			r, err := c.do(context.Background(), http.MethodPost, `{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"lb","version":"1"}}}`, nil)
			if err != nil || r.status != 200 {
				errs <- fmt.Sprintf("client %d initialize: %v %d", i, err, r.status)
				return
			}
			c.sid = r.header.Get("Mcp-Session-Id")
			pid := ""
			for j := range calls {
				r, err := c.do(context.Background(), http.MethodPost, httpCallBody(j+1, "pid", map[string]any{}), nil)
				if err != nil || r.status != 200 {
					errs <- fmt.Sprintf("client %d call %d: %v status %d %v", i, j, err, r.status, r.msgs)
					return
				}
				got := httpResultText(r.last())
				if pid == "" {
					pid = got
				}
				if got == "" || got != pid {
					errs <- fmt.Sprintf("client %d call %d reached upstream %q, not its session's %q", i, j, got, pid)
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for e := range errs {
		t.Error(e)
	}
	n1 := strings.Count(g1.stderr.String(), `"msg":"session opened"`)
	n2 := strings.Count(g2.stderr.String(), `"msg":"session opened"`)
	if n1+n2 != clients || n1 == 0 || n2 == 0 {
		t.Errorf("sessions by replica: %d and %d; want %d in all, on both", n1, n2, clients)
	}
}

// freeAddr returns a loopback address no one listens on now.
func freeAddr(t *testing.T) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	must(t, err)
	defer ln.Close()
	return ln.Addr().String()
}

// hostPort returns the host:port of http://host:port/mcp.
func hostPort(u string) string {
	return strings.TrimSuffix(strings.TrimPrefix(u, "http://"), "/mcp")
}
