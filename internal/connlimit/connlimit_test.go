package connlimit

import (
	"bufio"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"
)

// dialFrom connects to addr from the loopback address src.
func dialFrom(t *testing.T, src, addr string) net.Conn {
	t.Helper()
	d := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(src)}, Timeout: 10 * time.Second}
	c, err := d.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// answer reads what the listener answered a connection: an HTTP status, or 0 when the
// connection was accepted (nothing arrives before the client speaks).
func answer(t *testing.T, c net.Conn) int {
	t.Helper()
	_ = c.SetReadDeadline(time.Now().Add(300 * time.Millisecond))
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		if ne, ok := err.(net.Error); ok && ne.Timeout() {
			return 0
		}
		t.Fatalf("reading the answer: %v", err)
	}
	resp.Body.Close()
	if !resp.Close || !strings.HasPrefix(resp.Header.Get("Content-Type"), "application/json") {
		t.Fatalf("answer headers %v", resp.Header)
	}
	return resp.StatusCode
}

// TestLimits: with 2 per address and 3 in all, an address's third connection gets
// 429, a connection past the total 503, each before it sends a byte; a closed
// connection gives its place back.
func TestLimits(t *testing.T) {
	inner, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	l := Wrap(inner, Options{PerAddr: 2, Total: 3, HTTP: true})
	defer l.Close()
	accepted := make(chan net.Conn, 16)
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			accepted <- c
		}
	}()
	addr := inner.Addr().String()
	take := func(src string, want int) net.Conn {
		t.Helper()
		c := dialFrom(t, src, addr)
		var srv net.Conn
		if want == 0 {
			srv = <-accepted // the server holds it
		}
		if got := answer(t, c); got != want {
			t.Fatalf("from %s: answer %d, want %d", src, got, want)
		}
		return srv
	}
	take("127.0.0.1", 0)
	take("127.0.0.1", 0)
	take("127.0.0.1", 429)
	held := take("127.0.0.2", 0)
	take("127.0.0.3", 503)
	if l.Open() != 3 || l.Refused() != 2 {
		t.Fatalf("open %d, refused %d", l.Open(), l.Refused())
	}
	if _, ok := held.(interface{ CloseWrite() error }); !ok {
		t.Fatal("a held connection cannot CloseWrite: net/http's 431 and 400 answers would reach the client as a reset")
	}
	held.Close() // the server ends one: its place is free again
	held.Close()
	take("127.0.0.3", 0)
	if l.Open() != 3 {
		t.Fatalf("open %d after a close and a new connection", l.Open())
	}
}
