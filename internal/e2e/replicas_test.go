package e2e

import (
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"encoding/json"
	"io"
	"net"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	_ "github.com/jackc/pgx/v5/stdlib" // the "pgx" driver, to make a schema of our own

	"github.com/mcpgate/mcpgate/internal/testsvc"
)

// TestReplicasShareState runs two gateway replicas on one Redis and one PostgreSQL
// (from MCPGATE_TEST_REDIS_URL and MCPGATE_TEST_POSTGRES_URL; .ci/run starts both):
// a limit of 4 calls per hour holds across both replicas; every record of both lands
// in the one PostgreSQL store, naming its replica, and `mcpgate audit --db
// postgres://…` reads them; when Redis goes away mid-run, the replica that fails open
// serves the call and the one that fails closed rejects it, both at once.
func TestReplicasShareState(t *testing.T) {
	redisURL, pgURL := testsvc.RedisURL(t), testsvc.PostgresURL(t)
	_, fake := httpBinaries(t)
	dsn := freshSchema(t, pgURL)
	ru, err := url.Parse(redisURL)
	must(t, err)
	rdb := newTCPProxy(t, ru.Host) // Redis, through a plug the test can pull
	ru.Host = rdb.addr()
	redisVia := ru.String()

	dir := t.TempDir()
	pol := filepath.Join(dir, "policies")
	must(t, os.Mkdir(pol, 0o755))
	must(t, os.WriteFile(filepath.Join(pol, "limit.js"), []byte(`if (ctx.phase === "pre" && ctx.rateLimitExceeded(4)) throw "rate limit exceeded (4 calls/hour)";`), 0o600))
	var b [6]byte
	_, _ = rand.Read(b[:])
	user := "replica-test-" + hex.EncodeToString(b[:]) // a window no other run shares
	cfg := filepath.Join(dir, "config.json")
	must(t, os.WriteFile(cfg, []byte(`{"mcpgate": {"user": {"userID": "`+user+`"}}}`), 0o600))

	// The store's timeout is far above any round trip of a loaded machine, so that only
	// the pulled plug (refused at once) makes a replica fail open or closed: with 200 ms
	// a slow Redis reply under load read as an outage and replica b rejected call 2.
	var gws []*httpGateway
	start := func(name, fail string) *httpClient {
		g := startHTTPGateway(t, "--config", cfg, "--policies", pol, "--replica", name, "--admin", "127.0.0.1:0",
			"--rate-limit-store", redisVia, "--rate-limit-fail", fail, "--rate-limit-timeout", "5s",
			"--audit-db", dsn, "--", fake)
		gws = append(gws, g)
		c := newHTTPClient(g.url)
		c.initialize(t)
		return c
	}
	a, bb := start("a", "open"), start("b", "closed")
	for i, c := range []*httpClient{a, bb, a, bb, a, bb} {
		got := httpResultText(c.call(t, 10+i, "echo", map[string]any{"text": "hi"}))
		if limited := strings.Contains(got, "rate limit exceeded"); limited != (i >= 4) {
			t.Fatalf("call %d (replica %s): %q; the 5th call across both replicas is the first one over 4/hour", i+1, []string{"a", "b"}[i%2], got)
		}
	}

	rdb.pull() // Redis goes away
	if got := httpResultText(a.call(t, 20, "echo", map[string]any{"text": "open"})); got != "fakeup: open" {
		t.Fatalf("replica a (--rate-limit-fail open) without Redis: %q, want the call served", got)
	}
	if got := httpResultText(bb.call(t, 21, "echo", map[string]any{"text": "closed"})); !strings.Contains(got, "rate limit exceeded") {
		t.Fatalf("replica b (--rate-limit-fail closed) without Redis: %q, want it over the limit", got)
	}

	for _, g := range gws { // each replica counted its failure where an operator looks
		metrics := httpGet(t, "http://"+adminAddr(t, g.stderr)+"/metrics")
		if !strings.Contains(metrics, "mcpgate_rate_limit_store_errors_total 1") {
			t.Errorf("/metrics without one rate-limit store error:\n%s", grepLines(metrics, "rate_limit"))
		}
		if !strings.Contains(g.stderr.String(), "rate-limit store unreachable") {
			t.Error("no log line says the rate-limit store is unreachable")
		}
	}
	for _, g := range gws {
		g.stop(t) // flushes the replica's records
	}
	out, err := exec.Command(binary, "audit", "--db", dsn, "--format", "json", "--limit", "100").CombinedOutput()
	if err != nil {
		t.Fatalf("mcpgate audit --db postgres://…: %v\n%s", err, out)
	}
	var res struct {
		Records []struct {
			Replica string `json:"replica"`
			Reason  string `json:"reason"`
		} `json:"records"`
	}
	if err := json.Unmarshal(out, &res); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	per := map[string]int{}
	for _, r := range res.Records {
		per[r.Replica]++
	}
	if len(res.Records) != 8 || per["a"] != 4 || per["b"] != 4 {
		t.Fatalf("PostgreSQL holds %d records by replica %v; want 8, 4 from each", len(res.Records), per)
	}
}

// freshSchema returns a DSN whose tables live in a new schema, dropped at cleanup.
func freshSchema(t *testing.T, base string) string {
	t.Helper()
	var b [6]byte
	_, _ = rand.Read(b[:])
	schema := "mcpgate_e2e_" + hex.EncodeToString(b[:])
	db, err := sql.Open("pgx", base)
	must(t, err)
	if _, err := db.Exec(`CREATE SCHEMA ` + schema); err != nil {
		t.Fatalf("PostgreSQL at MCPGATE_TEST_POSTGRES_URL: %v", err)
	}
	t.Cleanup(func() { _, _ = db.Exec(`DROP SCHEMA ` + schema + ` CASCADE`); db.Close() })
	sep := "?"
	if strings.Contains(base, "?") {
		sep = "&"
	}
	return base + sep + "search_path=" + schema
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// tcpProxy forwards loopback connections to a service until pulled.
type tcpProxy struct {
	ln    net.Listener
	to    string
	mu    sync.Mutex
	conns []net.Conn
}

func newTCPProxy(t *testing.T, to string) *tcpProxy {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	must(t, err)
	p := &tcpProxy{ln: ln, to: to}
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			u, err := net.Dial("tcp", to)
			if err != nil {
				c.Close()
				continue
			}
			p.mu.Lock()
			p.conns = append(p.conns, c, u)
			p.mu.Unlock()
			go func() { _, _ = io.Copy(u, c); u.Close() }()
			go func() { _, _ = io.Copy(c, u); c.Close() }()
		}
	}()
	t.Cleanup(p.pull)
	return p
}

func (p *tcpProxy) addr() string { return p.ln.Addr().String() }

// pull closes the listener and every connection: the service is gone.
func (p *tcpProxy) pull() {
	p.ln.Close()
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, c := range p.conns {
		c.Close()
	}
	p.conns = nil
}

// grepLines returns the lines of s that contain sub.
func grepLines(s, sub string) string {
	var out []string
	for _, l := range strings.Split(s, "\n") {
		if strings.Contains(l, sub) {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}
