package e2e

import (
	"bufio"
	"fmt"
	"net"
	"net/http"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// dialFrom opens a TCP connection to the gateway from the loopback address src, so
// a test can be several remote addresses at once.
func dialFrom(t *testing.T, src, url string) net.Conn {
	t.Helper()
	host := strings.TrimSuffix(strings.TrimPrefix(url, "http://"), "/mcp")
	d := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(src)}, Timeout: 30 * time.Second}
	c, err := d.Dial("tcp", host)
	if err != nil {
		t.Fatalf("dial from %s: %v", src, err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// rawStatus reads one HTTP response's status from c, waiting up to d; 0 when the
// connection was closed without one, -1 when none came in time.
func rawStatus(c net.Conn, br *bufio.Reader, d time.Duration) int {
	_ = c.SetReadDeadline(time.Now().Add(d))
	resp, err := http.ReadResponse(br, nil)
	if err != nil {
		if ne, ok := err.(net.Error); ok && ne.Timeout() {
			return -1
		}
		return 0
	}
	resp.Body.Close()
	return resp.StatusCode
}

// TestHTTPHeldOpen runs the real gateway under a 256-descriptor limit and a 3 GiB
// address-space limit (prlimit) and has callers hold open what they can:
//   - 300 keep-alive connections from one address that each got a 401: the address's
//     share of the listener is held, the rest are answered 429 and closed;
//   - 40 POSTs of a caller with a token, each declaring a 60 MiB body and sending part
//     of it: the caller's body budget (128 MiB) admits two, the rest get 429 (or the
//     connection cap's 429) before a byte of their body is read; the admitted ones get
//     408 when --body-read-timeout passes;
//
// and meanwhile a caller with a valid token, from another address, opens a session
// and calls a tool; the gateway stays up and logs no out-of-memory.
func TestHTTPHeldOpen(t *testing.T) {
	prlimit, err := exec.LookPath("prlimit")
	if err != nil {
		t.Skip("prlimit (util-linux) is not installed")
	}
	_, fake := httpBinaries(t)
	const attacker, valid = "attacker-token-0123456789", "valid-token-0123456789"
	cfg := filepath.Join(t.TempDir(), "config.json")
	httpWriteFile(t, cfg, fmt.Sprintf(`{"mcpgate":{"tokens":[{"sha256":%q,"userID":"mallory"},{"sha256":%q,"userID":"alice"}]}}`,
		sha256hex(attacker), sha256hex(valid)))
	g := startHTTPGatewayUnder(t, []string{prlimit, "--nofile=256:256", "--as=3221225472", "--"},
		"--config", cfg, "--body-read-timeout", "5s", "--", fake)
	if !strings.Contains(g.stderr.String(), `"max_conns":128`) || !strings.Contains(g.stderr.String(), `"max_conns_per_addr":32`) {
		t.Errorf("connection bounds not derived from the descriptor limit:\n%s", g.stderr.String())
	}
	host := strings.TrimSuffix(strings.TrimPrefix(g.url, "http://"), "/mcp")

	// 1. Idle keep-alive connections after a 401, from 127.0.0.2.
	held, refused := 0, 0
	for range 300 {
		c := dialFrom(t, "127.0.0.2", g.url)
		br := bufio.NewReader(c)
		fmt.Fprintf(c, "POST /mcp HTTP/1.1\r\nHost: %s\r\nContent-Type: application/json\r\nContent-Length: 2\r\n\r\n{}", host)
		switch st := rawStatus(c, br, 10*time.Second); st {
		case -1:
			t.Fatalf("a connection from 127.0.0.2 got no answer in 10 s (%d held, %d refused so far): the gateway is out of descriptors", held, refused)
		case http.StatusUnauthorized:
			held++
		case http.StatusTooManyRequests, 0: // 429, or closed when many refusals are draining
			refused++
		default:
			t.Fatalf("an idle connection got %d", st)
		}
	}
	if held > 32 || refused < 300-32 {
		t.Fatalf("from one address: %d connections held, %d refused; want at most 32 held", held, refused)
	}

	// 2. Huge slow bodies from a caller with a token, from 127.0.0.3.
	const declared = 60 << 20
	var wg sync.WaitGroup
	var mu sync.Mutex
	statuses := map[int]int{}
	var admitted []func() int
	for range 40 {
		c := dialFrom(t, "127.0.0.3", g.url)
		br := bufio.NewReader(c)
		fmt.Fprintf(c, "POST /mcp HTTP/1.1\r\nHost: %s\r\nAuthorization: Bearer %s\r\nContent-Type: application/json\r\nAccept: application/json\r\nContent-Length: %d\r\n\r\n",
			host, attacker, declared)
		_ = c.SetWriteDeadline(time.Now().Add(10 * time.Second))
		_, _ = c.Write([]byte(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"x":"` + strings.Repeat("a", 1<<20)))
		st := rawStatus(c, br, 2*time.Second)
		if st == -1 { // no answer: its body is being read
			admitted = append(admitted, func() int { return rawStatus(c, br, 60*time.Second) })
			continue
		}
		mu.Lock()
		statuses[st]++
		mu.Unlock()
	}
	if len(admitted) > 2 {
		t.Fatalf("%d slow 60 MiB bodies of one caller admitted at once, want at most 2 (128 MiB); refused: %v", len(admitted), statuses)
	}
	for st := range statuses {
		if st != http.StatusTooManyRequests && st != 0 {
			t.Fatalf("a POST over the budget got %d (%v), want 429", st, statuses)
		}
	}

	// 3. Meanwhile a valid caller from 127.0.0.1 is served.
	c := newHTTPClient(g.url)
	c.hc = &http.Client{Timeout: 30 * time.Second}
	c.token = valid
	c.initialize(t)
	c.mustEcho(t, 1)

	// 4. The admitted slow bodies end with 408 once --body-read-timeout passes.
	for _, wait := range admitted {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if st := wait(); st != http.StatusRequestTimeout && st != 0 {
				t.Errorf("a stalled body got %d, want 408", st)
			}
		}()
	}
	wg.Wait()
	select {
	case <-g.done:
		t.Fatalf("the gateway exited:\n%s", g.stderr.String())
	default:
	}
	if strings.Contains(g.stderr.String(), "out of memory") || strings.Contains(g.stderr.String(), "too many open files") {
		t.Fatalf("the gateway ran out of memory or descriptors:\n%s", g.stderr.String())
	}
	c.mustEcho(t, 2)
}
