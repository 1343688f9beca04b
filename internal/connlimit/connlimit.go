package connlimit

import (
	"fmt"
	"log/slog"
	"net"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/mcpgate/mcpgate/internal/jsonrpc"
	"github.com/mcpgate/mcpgate/internal/methods"
)

// Defaults.
const (
	// DefaultPerAddr is the most connections one remote address holds by default
	// (lowered to a quarter of the total where the total is small).
	DefaultPerAddr = 256
	// maxDefaultTotal bounds the default total however high the descriptor limit.
	maxDefaultTotal = 16384
	minDefaultTotal = 16
	// lingering bounds the refused connections being drained at once; past it a
	// refused connection is closed without its answer.
	lingering = 64
)

// Options bound a listener. Zero values take the defaults; -1 turns a bound off.
type Options struct {
	PerAddr int  // connections one remote IP holds at once (DefaultTotal-derived default)
	Total   int  // connections held at once (DefaultTotal)
	HTTP    bool // answer a refused connection with HTTP 429/503 (false: TLS, just close)
	Logger  *slog.Logger
	// What names the listener in log lines ("MCP", "admin").
	What string
}

// DefaultTotal is half the process's soft file-descriptor limit (RLIMIT_NOFILE),
// between 16 and 16384; 1024 when the limit cannot be read.
func DefaultTotal() int {
	var r syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &r); err != nil || r.Cur == 0 {
		return 1024
	}
	n := r.Cur / 2
	return int(min(max(n, minDefaultTotal), maxDefaultTotal))
}

// DefaultPerAddrFor is the per-address default for a total: DefaultPerAddr, or a
// quarter of the total when that is smaller (at least 4).
func DefaultPerAddrFor(total int) int {
	if total <= 0 {
		return DefaultPerAddr
	}
	return min(DefaultPerAddr, max(total/4, 4))
}

// Listener is a net.Listener that holds at most Options.Total connections, and at
// most Options.PerAddr of one remote IP.
type Listener struct {
	net.Listener
	o Options

	mu      sync.Mutex
	total   int
	perAddr map[string]int

	draining atomic.Int64
	refused  atomic.Int64
	lastLog  atomic.Int64
}

// Wrap bounds ln.
func Wrap(ln net.Listener, o Options) *Listener {
	if o.Total == 0 {
		o.Total = DefaultTotal()
	}
	if o.PerAddr == 0 {
		o.PerAddr = DefaultPerAddrFor(o.Total)
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	return &Listener{Listener: ln, o: o, perAddr: map[string]int{}}
}

// Limits returns the bounds in force: per address and in all (-1: none).
func (l *Listener) Limits() (perAddr, total int) { return l.o.PerAddr, l.o.Total }

// Open returns the connections held now.
func (l *Listener) Open() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.total
}

// Refused returns how many connections were refused so far.
func (l *Listener) Refused() int64 { return l.refused.Load() }

// Accept returns the next connection within the bounds; one past them is answered
// and closed here, and Accept waits for the next.
func (l *Listener) Accept() (net.Conn, error) {
	for {
		c, err := l.Listener.Accept()
		if err != nil {
			return nil, err
		}
		ip := hostOf(c.RemoteAddr())
		l.mu.Lock()
		status := 0
		switch {
		case l.o.Total > 0 && l.total >= l.o.Total:
			status = 503
		case l.o.PerAddr > 0 && l.perAddr[ip] >= l.o.PerAddr:
			status = 429
		default:
			l.total++
			l.perAddr[ip]++
		}
		l.mu.Unlock()
		if status == 0 {
			return &conn{Conn: c, l: l, ip: ip}, nil
		}
		l.refuse(c, status)
	}
}

func (l *Listener) release(ip string) {
	l.mu.Lock()
	l.total--
	if l.perAddr[ip]--; l.perAddr[ip] <= 0 {
		delete(l.perAddr, ip)
	}
	l.mu.Unlock()
}

// refuse answers a connection past a bound and closes it. The answer is written
// before anything is read; the request is then drained for up to a second (at most
// `lingering` connections at once, the others closed at once) so the client reads the
// answer instead of a reset.
func (l *Listener) refuse(c net.Conn, status int) {
	n := l.refused.Add(1)
	if now := time.Now().Unix(); l.lastLog.Load() < now-10 && l.lastLog.Swap(now) < now-10 { // one line per 10 s at most
		why := "the listener holds as many connections as it may"
		if status == 429 {
			why = "this remote address holds as many connections as it may"
		}
		l.o.Logger.Warn(fmt.Sprintf("connection refused (%d): %s", status, why), "listener", l.o.What, "remote", c.RemoteAddr().String(),
			"max_conns_per_addr", l.o.PerAddr, "max_conns", l.o.Total, "refused_so_far", n)
	}
	if !l.o.HTTP {
		_ = c.Close()
		return
	}
	msg := "mcpgate: too many connections from this address (the gateway's --max-conns-per-addr); close idle ones or retry later"
	text := "Too Many Requests"
	if status == 503 {
		msg, text = "mcpgate: the gateway holds as many connections as it may (--max-conns); retry later", "Service Unavailable"
	}
	body := jsonrpc.ErrorResponse(nil, methods.CodeUpstreamUnavailable, msg)
	_ = c.SetWriteDeadline(time.Now().Add(time.Second))
	_, err := fmt.Fprintf(c, "HTTP/1.1 %d %s\r\nContent-Type: application/json\r\nContent-Length: %d\r\nRetry-After: 1\r\nConnection: close\r\n\r\n%s",
		status, text, len(body), body)
	if err != nil || l.draining.Load() >= lingering { // too many draining: no wait for the request
		_ = c.Close()
		return
	}
	l.draining.Add(1)
	go func() {
		defer l.draining.Add(-1)
		if tc, ok := c.(interface{ CloseWrite() error }); ok {
			_ = tc.CloseWrite()
		}
		_ = c.SetReadDeadline(time.Now().Add(time.Second))
		buf := make([]byte, 4096)
		for {
			if _, err := c.Read(buf); err != nil {
				break
			}
		}
		_ = c.Close()
	}()
}

// conn gives its place back once, on Close.
type conn struct {
	net.Conn
	l    *Listener
	ip   string
	once sync.Once
}

func (c *conn) Close() error {
	err := c.Conn.Close()
	c.once.Do(func() { c.l.release(c.ip) })
	return err
}

// CloseWrite shuts the sending side down (a *net.TCPConn's), which net/http does
// before it closes a connection it refused (431, 400) so the client reads the answer
// instead of a reset.
func (c *conn) CloseWrite() error {
	if cw, ok := c.Conn.(interface{ CloseWrite() error }); ok {
		return cw.CloseWrite()
	}
	return nil
}

// hostOf is the remote IP of addr (the whole address when it has no port).
func hostOf(addr net.Addr) string {
	if a, ok := addr.(*net.TCPAddr); ok {
		return a.IP.String()
	}
	if h, _, err := net.SplitHostPort(addr.String()); err == nil {
		return h
	}
	return addr.String()
}
