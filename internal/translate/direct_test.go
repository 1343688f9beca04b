package translate

import (
	"bytes"
	"context"
	"runtime"
	"testing"

	"github.com/mcpgate/mcpgate/internal/jsonrpc"
)

// hopServer is a fake server that tells, for each read of it, whether the read ran
// on a goroutine of the translation's rather than in Recv's caller.
type hopServer struct {
	*fakeServer
	viaHop chan bool
}

func (s hopServer) Recv() (*jsonrpc.Message, error) {
	buf := make([]byte, 16<<10)
	buf = buf[:runtime.Stack(buf, false)]
	s.viaHop <- !bytes.Contains(buf, []byte("translate.(*Conn).Recv("))
	return s.fakeServer.Recv()
}

// TestPassingHopReadsDirectly: once a 2025-11-25 client's server answered its
// initialize in a 2025-era revision, Recv reads the server in its caller's goroutine,
// with no goroutine between them; before that, and again once a second initialize
// is refused and the hop translates, reads run on the hop's own goroutine, and the
// translation still answers (the probe goes out).
func TestPassingHopReadsDirectly(t *testing.T) {
	f := hopServer{newFake(), make(chan bool, 16)}
	c := Wrap(f, Options{})
	defer c.Close(context.Background(), 0)
	recv := func() *jsonrpc.Message {
		t.Helper()
		m, err := c.Recv()
		if err != nil {
			t.Fatal(err)
		}
		return m
	}
	serve := func(line string) { go func() { f.recv <- mustParse(t, line) }() }

	if err := c.Send(mustParse(t, initReq)); err != nil {
		t.Fatal(err)
	}
	<-f.sent
	serve(`{"jsonrpc":"2.0","id":1,"result":{"protocolVersion":"2025-11-25","capabilities":{},"serverInfo":{"name":"s","version":"1"}}}`)
	if m := recv(); m.IDKey() != "1" {
		t.Fatalf("got %s, want the initialize result", m.Raw)
	}
	if !<-f.viaHop {
		t.Fatal("the read before the server answered initialize ran in Recv's caller")
	}
	serve(`{"jsonrpc":"2.0","id":2,"result":{"content":[]}}`)
	if m := recv(); m.IDKey() != "2" {
		t.Fatalf("got %s, want the call's result", m.Raw)
	}
	if <-f.viaHop {
		t.Fatal("on a passing hop the read ran on the hop's goroutine")
	}

	// A second initialize, refused: the hop translates from then on.
	if err := c.Send(mustParse(t, `{"jsonrpc":"2.0","id":3,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"cl","version":"9"}}}`)); err != nil {
		t.Fatal(err)
	}
	<-f.sent
	serve(`{"jsonrpc":"2.0","id":3,"error":{"code":-32022,"message":"Unsupported protocol version"}}`)
	go func() { _, _ = c.Recv() }() // waits for the probe's answer
	if !<-f.viaHop {
		t.Fatal("the read of the answer to a second initialize ran in Recv's caller")
	}
	if probe := <-f.sent; probe.Method != "server/discover" {
		t.Fatalf("after the refusal the server got %s, want the server/discover probe", probe.Raw)
	}
	if !<-f.viaHop {
		t.Fatal("once the hop translates, a read ran in Recv's caller")
	}
}

// TestModernPassingHopReadsDirectly: once a 2026-07-28 client's server listed
// 2026-07-28 in its server/discover result, Recv reads the server in its caller's
// goroutine; before that (the answer to the probe) on the hop's own.
func TestModernPassingHopReadsDirectly(t *testing.T) {
	f := hopServer{newFake(), make(chan bool, 16)}
	c := Wrap(f, Options{})
	defer c.Close(context.Background(), 0)
	serve := func(line string) { go func() { f.recv <- mustParse(t, line) }() }
	if err := c.Send(mustParse(t, `{"jsonrpc":"2.0","id":1,"method":"server/discover","params":{`+menv+`}}`)); err != nil {
		t.Fatal(err)
	}
	<-f.sent
	serve(`{"jsonrpc":"2.0","id":1,"result":{"resultType":"complete","supportedVersions":["2026-07-28"],"capabilities":{}}}`)
	if m, err := c.Recv(); err != nil || m.IDKey() != "1" {
		t.Fatalf("got %v (%v), want the discover result", m, err)
	}
	if !<-f.viaHop {
		t.Fatal("the read of the probe's answer ran in Recv's caller")
	}
	serve(`{"jsonrpc":"2.0","id":2,"result":{"content":[],"resultType":"complete"}}`)
	if m, err := c.Recv(); err != nil || m.IDKey() != "2" {
		t.Fatalf("got %v (%v), want the call's result", m, err)
	}
	if <-f.viaHop {
		t.Fatal("on a passing hop the read ran on the hop's goroutine")
	}
}
