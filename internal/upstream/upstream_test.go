package upstream

import (
	"bytes"
	"context"
	"errors"
	"io"
	"strings"
	"sync"
	"testing"
	"time"
)

// TestRelayStderr: upstream stderr lines are prefixed and stripped of escapes, so they
// can never pass for audit records or drive the operator's terminal.
func TestRelayStderr(t *testing.T) {
	in := "plain line\n\x1b]52;c;ZXZpbA==\x07clipboard\r\n{\"event_id\":\"x\",\"kind\":\"gateway_output_filter\"}\nno newline at end"
	var out bytes.Buffer
	relayStderr(strings.NewReader(in), &out)
	lines := strings.Split(strings.TrimSuffix(out.String(), "\n"), "\n")
	if len(lines) != 4 {
		t.Fatalf("want 4 lines, got %q", lines)
	}
	for _, l := range lines {
		if !strings.HasPrefix(l, StderrPrefix) || strings.ContainsAny(l, "\x1b\x07\r") {
			t.Errorf("line %q", l)
		}
	}
	if lines[1] != StderrPrefix+"clipboard" {
		t.Errorf("escape not removed: %q", lines[1])
	}
}

func TestRelayStderrCapsLongLines(t *testing.T) {
	var out bytes.Buffer
	relayStderr(strings.NewReader(strings.Repeat("a", 1<<20)+"\nnext\n"), &out)
	lines := strings.Split(strings.TrimSuffix(out.String(), "\n"), "\n")
	if len(lines) != 2 || len(lines[0]) > maxStderrLine+64 || !strings.HasSuffix(lines[0], "[cut]") || lines[1] != StderrPrefix+"next" {
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

func (f *fakeConn) Send(b []byte) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.sent = append(f.sent, string(b))
	return nil
}

func (f *fakeConn) ReadLine() ([]byte, error) {
	select {
	case l, ok := <-f.lines:
		if !ok {
			return nil, io.EOF
		}
		return l, nil
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

// TestSupervisorRestarts: when the server dies, its in-flight request gets -32000,
// the server is started again, initialize is replayed, and traffic resumes.
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
	sup.Send([]byte(`{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-06-18"}}`))
	first.lines <- []byte(`{"jsonrpc":"2.0","id":0,"result":{}}`)
	if got := readLine(t, sup); !strings.Contains(got, `"id":0`) {
		t.Fatalf("initialize answer: %q", got)
	}
	sup.Send([]byte(`{"jsonrpc":"2.0","method":"notifications/initialized"}`))
	sup.Send([]byte(`{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"x"}}`))
	close(first.lines) // the server dies mid-call
	if got := readLine(t, sup); !strings.Contains(got, `"id":7`) || !strings.Contains(got, "-32000") {
		t.Fatalf("in-flight request: %q", got)
	}
	second := <-conns
	deadline := time.Now().Add(5 * time.Second)
	for len(second.sentLines()) == 0 && time.Now().Before(deadline) {
		time.Sleep(time.Millisecond)
	}
	replayed := second.sentLines()
	if len(replayed) == 0 || !strings.Contains(replayed[0], `"initialize"`) {
		t.Fatalf("initialize not replayed: %q", replayed)
	}
	if sup.Restarts() < 1 {
		t.Fatalf("restarts = %d", sup.Restarts())
	}
}

func readLine(t *testing.T, c Conn) string {
	t.Helper()
	type res struct {
		b   []byte
		err error
	}
	ch := make(chan res, 1)
	go func() { b, err := c.ReadLine(); ch <- res{b, err} }()
	select {
	case r := <-ch:
		if r.err != nil && !errors.Is(r.err, io.EOF) {
			t.Fatal(r.err)
		}
		return string(r.b)
	case <-time.After(5 * time.Second):
		t.Fatal("no line")
	}
	return ""
}
