package upstream

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mcpgate/mcpgate/internal/jsonrpc"
	"github.com/mcpgate/mcpgate/internal/testwait"
)

// TestRelayStderr: upstream stderr lines are prefixed and stripped of escapes, so they
// can never pass for audit records or drive the operator's terminal.
func TestRelayStderr(t *testing.T) {
	in := "plain line\n\x1b]52;c;ZXZpbA==\x07clipboard\r\n{\"event_id\":\"x\",\"kind\":\"gateway_output_filter\"}\nno newline at end"
	var out bytes.Buffer
	relayStderr(strings.NewReader(in), &out, "")
	lines := strings.Split(strings.TrimSuffix(out.String(), "\n"), "\n")
	if len(lines) != 4 {
		t.Fatalf("want 4 lines, got %q", lines)
	}
	for _, l := range lines {
		if !strings.HasPrefix(l, stderrPrefix) || strings.ContainsAny(l, "\x1b\x07\r") {
			t.Errorf("line %q", l)
		}
	}
	if lines[1] != stderrPrefix+"clipboard" {
		t.Errorf("escape not removed: %q", lines[1])
	}
}

func TestRelayStderrCapsLongLines(t *testing.T) {
	var out bytes.Buffer
	relayStderr(strings.NewReader(strings.Repeat("a", 1<<20)+"\nnext\n"), &out, "")
	lines := strings.Split(strings.TrimSuffix(out.String(), "\n"), "\n")
	if len(lines) != 2 || len(lines[0]) > maxStderrLine+64 || !strings.HasSuffix(lines[0], "[cut]") || lines[1] != stderrPrefix+"next" {
		t.Fatalf("got %d lines, first %d bytes", len(lines), len(lines[0]))
	}
}

func TestStartErrors(t *testing.T) {
	if _, err := Start(Options{}); err == nil || !strings.Contains(err.Error(), "after --") {
		t.Fatalf("no command: %v", err)
	}
	if _, err := Start(Options{Argv: []string{"/nonexistent/mcp-server"}}); err == nil || !strings.Contains(err.Error(), "/nonexistent/mcp-server") {
		t.Fatalf("missing command: %v", err)
	}
}

// fakeConn is a scripted connection for the supervisor.
type fakeConn struct {
	mu     sync.Mutex
	sent   []string
	lines  chan []byte
	closed chan struct{}
	once   sync.Once
}

func newFakeConn() *fakeConn {
	return &fakeConn{lines: make(chan []byte, 16), closed: make(chan struct{})}
}

func (f *fakeConn) Send(m *jsonrpc.Message) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.sent = append(f.sent, string(m.Raw))
	return nil
}

func (f *fakeConn) Recv() (*jsonrpc.Message, error) {
	select {
	case l, ok := <-f.lines:
		if !ok {
			return nil, io.EOF
		}
		return jsonrpc.NewStream(bytes.NewReader(append(l, '\n')), nil, 0).Recv()
	case <-f.closed:
		return nil, io.EOF
	}
}

func (f *fakeConn) Close(context.Context, time.Duration) error {
	f.once.Do(func() { close(f.closed) })
	return nil
}

func (f *fakeConn) sentLines() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.sent...)
}

// waitSent waits until the connection got n messages.
func (f *fakeConn) waitSent(t *testing.T, n int) []string {
	t.Helper()
	testwait.For(t, fmt.Sprintf("%d messages to the server", n), func() bool { return len(f.sentLines()) >= n })
	return f.sentLines()
}

func parse(t *testing.T, line string) *jsonrpc.Message {
	t.Helper()
	m, err := jsonrpc.Parse([]byte(line))
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// TestSupervisorRestarts: when the server dies, Recv reports a reset (the relay fails
// the requests in flight), the server is started again, initialize is replayed,
// notifications/initialized and the subscriptions follow, the client is told to list
// again, and traffic resumes.
func TestSupervisorRestarts(t *testing.T) {
	conns := make(chan *fakeConn, 4)
	sup, err := NewSupervisor(SupervisorOptions{
		Start: func() (Conn, error) {
			c := newFakeConn()
			conns <- c
			return c, nil
		},
		MinBackoff: time.Millisecond,
	})
	if err != nil {
		t.Fatal(err)
	}
	defer sup.Close(context.Background(), time.Second)
	first := <-conns
	sup.Send(parse(t, `{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-06-18"}}`))
	first.lines <- []byte(`{"jsonrpc":"2.0","id":0,"result":{"capabilities":{"tools":{},"resources":{}}}}`)
	if m, err := recv(t, sup); err != nil || m.IDKey() != "0" {
		t.Fatalf("initialize answer: %v %v", m, err)
	}
	sup.Send(parse(t, `{"jsonrpc":"2.0","method":"notifications/initialized"}`))
	sup.Send(parse(t, `{"jsonrpc":"2.0","id":1,"method":"resources/subscribe","params":{"uri":"demo://a"}}`))
	sup.Send(parse(t, `{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"x"}}`))
	close(first.lines) // the server dies mid-call
	var reset *jsonrpc.ResetError
	if _, err := recv(t, sup); !errors.As(err, &reset) {
		t.Fatalf("want a reset, got %v", err)
	}
	if err := sup.Send(parse(t, `{"jsonrpc":"2.0","id":8,"method":"tools/list"}`)); !errors.Is(err, jsonrpc.ErrNotDelivered) {
		// The restart may already be under way; only a down server refuses.
		t.Logf("send while restarting: %v", err)
	}
	second := <-conns
	replayed := second.waitSent(t, 1)
	init := parse(t, replayed[0])
	if init.Method != "initialize" || !strings.Contains(string(init.Params), "2025-06-18") {
		t.Fatalf("initialize not replayed: %q", replayed)
	}
	second.lines <- []byte(`{"jsonrpc":"2.0","id":` + string(init.ID) + `,"result":{"capabilities":{"tools":{},"resources":{}}}}`)
	sent := second.waitSent(t, 3)
	if parse(t, sent[1]).Method != "notifications/initialized" {
		t.Fatalf("initialized not replayed: %q", sent)
	}
	sub := parse(t, sent[2])
	if sub.Method != "resources/subscribe" || !strings.Contains(string(sub.Params), "demo://a") {
		t.Fatalf("subscription not replayed: %q", sent)
	}
	second.lines <- []byte(`{"jsonrpc":"2.0","id":` + string(sub.ID) + `,"result":{}}`)
	var got []string
	for len(got) < 2 {
		m, err := recv(t, sup)
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, m.Method)
	}
	if strings.Join(got, ",") != "notifications/tools/list_changed,notifications/resources/list_changed" {
		t.Fatalf("after the restart the client got %q", got)
	}
	if sup.Restarts() < 1 {
		t.Fatalf("restarts = %d", sup.Restarts())
	}
	if err := sup.Send(parse(t, `{"jsonrpc":"2.0","id":9,"method":"tools/list"}`)); err != nil {
		t.Fatal(err)
	}
	if l := second.waitSent(t, 4); !strings.Contains(l[3], `"id":9`) {
		t.Fatalf("traffic did not resume: %q", l)
	}
}

// TestSupervisorFailedRestartBacksOff: a process that exits before answering the
// replayed initialize fails that attempt at once, and the next attempt follows after
// the backoff, not after the initialize timeout.
func TestSupervisorFailedRestartBacksOff(t *testing.T) {
	conns := make(chan *fakeConn, 8)
	sup, err := NewSupervisor(SupervisorOptions{
		Start: func() (Conn, error) {
			c := newFakeConn()
			conns <- c
			return c, nil
		},
		MinBackoff:  time.Millisecond,
		InitTimeout: time.Hour,
	})
	if err != nil {
		t.Fatal(err)
	}
	defer sup.Close(context.Background(), time.Second)
	first := <-conns
	sup.Send(parse(t, `{"jsonrpc":"2.0","id":0,"method":"initialize","params":{}}`))
	first.lines <- []byte(`{"jsonrpc":"2.0","id":0,"result":{}}`)
	recv(t, sup)
	close(first.lines)
	second := <-conns
	second.waitSent(t, 1)
	close(second.lines) // dies during the replayed initialize
	third := <-conns    // an hour-long InitTimeout would block here
	init := parse(t, third.waitSent(t, 1)[0])
	third.lines <- []byte(`{"jsonrpc":"2.0","id":` + string(init.ID) + `,"result":{}}`)
	testwait.For(t, "the server to come back", func() bool {
		return sup.Send(parse(t, `{"jsonrpc":"2.0","id":1,"method":"ping"}`)) == nil
	})
}

// TestSupervisorStartDown: with StartDown, a server that cannot start is retried with
// backoff; requests meanwhile fail at once with ErrNotDelivered.
func TestSupervisorStartDown(t *testing.T) {
	var mu sync.Mutex
	tries := 0
	conns := make(chan *fakeConn, 1)
	sup, err := NewSupervisor(SupervisorOptions{
		Start: func() (Conn, error) {
			mu.Lock()
			defer mu.Unlock()
			tries++
			if tries < 3 {
				return nil, errors.New("no such file")
			}
			c := newFakeConn()
			conns <- c
			return c, nil
		},
		MinBackoff: time.Millisecond,
		StartDown:  true,
	})
	if err != nil {
		t.Fatal(err)
	}
	defer sup.Close(context.Background(), time.Second)
	<-conns
	select {
	case <-sup.Up():
	case <-time.After(5 * time.Second):
		t.Fatal("not up")
	}
	if _, err := NewSupervisor(SupervisorOptions{Start: func() (Conn, error) { return nil, errors.New("boom") }}); err == nil {
		t.Fatal("without StartDown a failed first start is an error")
	}
}

func recv(t *testing.T, c Conn) (*jsonrpc.Message, error) {
	t.Helper()
	return testwait.Return(t, "a message from the server", c.Recv)
}

// TestSupervisorLogsExitStatus: a server that exits is logged with its exit status.
func TestSupervisorLogsExitStatus(t *testing.T) {
	var logs syncBuffer
	sup, err := NewSupervisor(SupervisorOptions{
		Start: func() (Conn, error) {
			return Start(Options{Argv: []string{"sh", "-c", "read line; exit 3"}})
		},
		Logger:     slog.New(slog.NewTextHandler(&logs, nil)),
		MinBackoff: time.Hour, // one exit is enough
	})
	if err != nil {
		t.Fatal(err)
	}
	defer sup.Close(context.Background(), time.Second)
	sup.Send(parse(t, `{"jsonrpc":"2.0","id":0,"method":"initialize","params":{}}`))
	var reset *jsonrpc.ResetError
	if _, err := recv(t, sup); !errors.As(err, &reset) {
		t.Fatalf("want a reset, got %v", err)
	}
	if !testwait.Within(testwait.Timeout, func() bool { return strings.Contains(logs.String(), "exit status 3") }) {
		t.Fatalf("the exit status is not logged:\n%s", logs.String())
	}
	if strings.Contains(logs.String(), "file already closed") {
		t.Fatalf("log: %s", logs.String())
	}
}

// syncBuffer is a bytes.Buffer a logger or the stderr relay can write on another
// goroutine while the test reads.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// TestSupervisorPassesDrops: a malformed server line comes up through the supervisor
// as a *jsonrpc.DropError with the line's head, so the relay above can fail the
// request it answered; the stream goes on.
func TestSupervisorPassesDrops(t *testing.T) {
	c := newFakeConn()
	sup, err := NewSupervisor(SupervisorOptions{Start: func() (Conn, error) { return c, nil }})
	if err != nil {
		t.Fatal(err)
	}
	defer sup.Close(context.Background(), time.Second)
	c.lines <- []byte(`{"jsonrpc":"2.0","id":5,"result":`)
	c.lines <- []byte(`{"jsonrpc":"2.0","id":6,"result":{}}`)
	var drop *jsonrpc.DropError
	if _, err := recv(t, sup); !errors.As(err, &drop) {
		t.Fatalf("want a drop, got %v", err)
	}
	if id, ok := jsonrpc.PeekID(drop.Head); !ok || string(id) != "5" {
		t.Fatalf("head %q", drop.Head)
	}
	if m, err := recv(t, sup); err != nil || m.IDKey() != "6" {
		t.Fatalf("the stream did not go on: %v %v", m, err)
	}
}

// TestStartGivesTheServerItsEnvironment: with the minimal policy the server gets
// PATH, HOME, the locale and the like, what its configured env sets, and what Pass
// names; never the rest of ours, and never the admin token, even through a pattern.
// Nil Inherited is the minimal set.
func TestStartGivesTheServerItsEnvironment(t *testing.T) {
	t.Setenv("MCPGATE_ADMIN_TOKEN", "admin-secret")
	t.Setenv("MCPGATE_TRIAL_OTHER", "kept")
	t.Setenv("AWS_SECRET_ACCESS_KEY", "aws-secret")
	t.Setenv("LC_TIME", "C")
	t.Setenv("PLAIN_SETTING", "plain")
	cases := []struct {
		name        string
		extra, pass []string
		inherit     bool
		want        string
	}{
		{"minimal", nil, nil, false, "[unset|unset|unset|C|unset|path]"},
		{"configured", []string{"MCPGATE_ADMIN_TOKEN=set-on-purpose", "AWS_SECRET_ACCESS_KEY=cfg"}, nil, false, "[set-on-purpose|unset|cfg|C|unset|path]"},
		{"passed by name", nil, []string{"AWS_SECRET_ACCESS_KEY"}, false, "[unset|unset|aws-secret|C|unset|path]"},
		{"passed by prefix", nil, []string{"MCPGATE_*"}, false, "[unset|kept|unset|C|unset|path]"},
		{"everything passed", nil, []string{"*"}, false, "[unset|kept|aws-secret|C|plain|path]"},
		{"inherited", nil, nil, true, "[unset|unset|unset|C|plain|path]"},
		{"inherited and passed", nil, []string{"AWS_SECRET_ACCESS_KEY", "MCPGATE_*"}, true, "[unset|kept|aws-secret|C|plain|path]"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var errOut syncBuffer
			opts := Options{
				Argv:   []string{"sh", "-c", `echo "[${MCPGATE_ADMIN_TOKEN-unset}|${MCPGATE_TRIAL_OTHER-unset}|${AWS_SECRET_ACCESS_KEY-unset}|${LC_TIME-unset}|${PLAIN_SETTING-unset}|${PATH:+path}]" >&2`},
				Env:    c.extra,
				Stderr: &errOut,
			}
			if c.pass != nil || c.inherit {
				opts.Inherited, _ = EnvPolicy{Inherit: c.inherit, Pass: c.pass}.Environ(os.Environ())
			}
			p, err := Start(opts)
			if err != nil {
				t.Fatal(err)
			}
			defer p.Close(context.Background(), time.Second)
			testwait.For(t, "the server's stderr line", func() bool { return strings.Contains(errOut.String(), "]") })
			if got := errOut.String(); got != stderrPrefix+c.want+"\n" {
				t.Fatalf("server saw %q, want %q", got, stderrPrefix+c.want+"\n")
			}
		})
	}
}

// TestEnvironInherit: the command after -- gets our variables but MCPGATE_*, the
// ones the gateway read itself, and those whose name or value looks like a
// credential; the base list and Pass always pass, the admin token never.
func TestEnvironInherit(t *testing.T) {
	secret := func(v string) bool { return strings.HasPrefix(v, "ghp_") }
	p := EnvPolicy{Inherit: true, Pass: []string{"GITHUB_TOKEN", "MCPGATE_ADMIN_TOKEN"}, Own: []string{"CONFIG_HASH"}, SecretValue: secret}
	tests := []struct {
		kv   string
		keep bool
	}{
		{"PATH=/bin", true},
		{"HOME=/h", true},
		{"CASES_DIR=/tmp/cases", true},
		{"PAYLOADS=/tmp/p.json", true},
		{"EXTRA_TOOLS=a,b", true},
		{"SSL_CERT_FILE=/etc/ssl/ca.pem", true},
		{"SSL_CERT_DIR=/etc/ssl/certs", true},
		{"NODE_EXTRA_CA_CERTS=/etc/ca.pem", true},
		{"AWS_CA_BUNDLE=/etc/ca.pem", true},
		{"REQUESTS_CA_BUNDLE=/etc/ca.pem", true},
		{"PWD=/work", true},
		{"OLDPWD=/", true},
		{"KEYBOARD_LAYOUT=us", true},
		{"AUTHOR_NAME=me", true},
		{"HTTPS_PROXY=http://proxy:3128", true},
		{"GITHUB_TOKEN=ghp_passed", true},         // Pass wins over name and value
		{"MCPGATE_ADMIN_TOKEN=admin", false},      // never, even named by Pass
		{"MCPGATE_AUDIT_OUTPUT=off", false},       // the gateway's own
		{"CONFIG_HASH=abc", false},                // a ${NAME} the gateway read
		{"GITHUB_PERSONAL_ACCESS_TOKEN=x", false}, // names
		{"AWS_SECRET_ACCESS_KEY=x", false},
		{"AWS_REGION=eu-west-1", false},
		{"AZURE_CLIENT_ID=x", false},
		{"GOOGLE_APPLICATION_CREDENTIALS=/k.json", false},
		{"openai_api_key=x", false},
		{"OPENAI_APIKEY=x", false},
		{"NPM_CONFIG__AUTHTOKEN=x", false},
		{"CLIENTSECRET=x", false},
		{"DB_PASSWORD=x", false},
		{"DB_PASSWD=x", false},
		{"DB_PASS=x", false},
		{"MYSQL_PWD=x", false},
		{"SSH_PRIVATE_KEY=x", false},
		{"GCP_CREDENTIALS=x", false},
		{"BASIC_AUTH=x", false},
		{"SITE_COOKIE=x", false},
		{"SESSION_ID=x", false},
		{"SENTRY_DSN=x", false},
		{"OTEL_EXPORTER_OTLP_HEADERS=api-key=x", false},
		{"DATABASE_URL=postgres://db/app", false},
		{"AZ_CONNECTION_STRING=x", false},
		{"UPSTREAM=https://bob:hunter2@example.com/", false}, // values
		{"MIRROR=https://bob@example.com/", false},
		{"SOMETHING=ghp_value", false},
	}
	for _, tc := range tests {
		kept, dropped := p.Environ([]string{tc.kv})
		name, _, _ := strings.Cut(tc.kv, "=")
		if got := len(kept) == 1; got != tc.keep || (tc.keep == (len(dropped) == 1)) {
			t.Errorf("%s: kept %v dropped %v, want kept %v", name, kept, dropped, tc.keep)
		}
		if !tc.keep && dropped[0] != name {
			t.Errorf("%s: dropped %q, want the name alone", name, dropped)
		}
	}
	// minimal: the base list and Pass only
	kept, dropped := EnvPolicy{Pass: []string{"GITHUB_TOKEN"}}.Environ([]string{"PATH=/bin", "CASES_DIR=/c", "GITHUB_TOKEN=t", "LC_ALL=C"})
	if strings.Join(kept, " ") != "PATH=/bin GITHUB_TOKEN=t LC_ALL=C" || strings.Join(dropped, " ") != "CASES_DIR" {
		t.Errorf("minimal: kept %v dropped %v", kept, dropped)
	}
}

// TestSupervisorReinitializeChecked: the answer to the initialize replayed after a
// restart is read by CheckReinitialize as the first answer was; a refusal (another
// serverInfo under --pins-mode block) fails that restart, so the server stays down and
// requests to it fail at once, and the next attempt is read again; an accepted answer
// brings it back.
func TestSupervisorReinitializeChecked(t *testing.T) {
	conns := make(chan *fakeConn, 4)
	sup, err := NewSupervisor(SupervisorOptions{
		Start: func() (Conn, error) {
			c := newFakeConn()
			conns <- c
			return c, nil
		},
		MinBackoff: time.Millisecond, MaxBackoff: 5 * time.Millisecond,
	})
	if err != nil {
		t.Fatal(err)
	}
	defer sup.Close(context.Background(), time.Second)
	var mu sync.Mutex
	var read []string
	sup.CheckReinitialize(func(req, resp *jsonrpc.Message) string {
		mu.Lock()
		defer mu.Unlock()
		read = append(read, req.Method+" "+string(resp.Result))
		if strings.Contains(string(resp.Result), "impostor") {
			return "serverInfo changed"
		}
		return ""
	})
	first := <-conns
	sup.Send(parse(t, `{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-06-18"}}`))
	first.lines <- []byte(`{"jsonrpc":"2.0","id":0,"result":{"capabilities":{},"serverInfo":{"name":"files","version":"1"}}}`)
	if _, err := recv(t, sup); err != nil {
		t.Fatal(err)
	}
	close(first.lines)
	if _, err := recv(t, sup); err == nil {
		t.Fatal("want a reset")
	}
	answer := func(c *fakeConn, name string) {
		init := parse(t, c.waitSent(t, 1)[0])
		c.lines <- []byte(`{"jsonrpc":"2.0","id":` + string(init.ID) + `,"result":{"capabilities":{},"serverInfo":{"name":"` + name + `","version":"1"}}}`)
	}
	answer(<-conns, "impostor") // refused: this restart fails
	third := <-conns            // tried again after the backoff
	if err := sup.Send(parse(t, `{"jsonrpc":"2.0","id":5,"method":"tools/list"}`)); !errors.Is(err, jsonrpc.ErrNotDelivered) {
		t.Fatalf("a request reached a server whose restart was refused: %v", err)
	}
	answer(third, "files")
	testwait.For(t, "the accepted restart", func() bool {
		return sup.Send(parse(t, `{"jsonrpc":"2.0","id":6,"method":"tools/list"}`)) == nil
	})
	mu.Lock()
	defer mu.Unlock()
	if len(read) != 2 || !strings.HasPrefix(read[0], "initialize ") || !strings.Contains(read[0], "impostor") || !strings.Contains(read[1], `"files"`) {
		t.Fatalf("the check read %q", read)
	}
}
