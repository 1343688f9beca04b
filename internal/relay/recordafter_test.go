package relay

import (
	"testing"
	"time"

	"github.com/mcpgate/mcpgate/internal/audit"
)

// gatedSink passes a tools/call record on only once open is closed.
type gatedSink struct {
	open chan struct{}
	out  chan *audit.Record
}

func (g gatedSink) Emit(r *audit.Record) {
	if r.Method == "tools/call" {
		<-g.open
	}
	g.out <- r
}

// TestRecordAfterReply: a tools/call's record goes to the sinks after its reply is
// written (docs/decisions.md#records-after-reply): with a sink that takes the record
// only once the client has its answer, the answer still comes, then the record,
// once. Before, the record was handed over before the write and the call hung.
func TestRecordAfterReply(t *testing.T) {
	sink := gatedSink{open: make(chan struct{}), out: make(chan *audit.Record, 16)}
	h := newHarness(t, 0, func(o *Options) { o.Pipeline.Audit = sink })
	h.client(`{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"t","arguments":{}}}`)
	h.upstreamGets() // the gateway's own tools/list
	h.up.lines <- `{"jsonrpc":"2.0","id":` + ownID1 + `,"result":{"tools":[{"name":"t"}]}}`
	h.upstreamGets()
	h.up.lines <- `{"jsonrpc":"2.0","id":5,"result":{"content":[{"type":"text","text":"ok"}]}}`
	if got := h.clientGets(); got != `{"jsonrpc":"2.0","id":5,"result":{"content":[{"type":"text","text":"ok"}]}}` {
		t.Fatalf("client got %s", got)
	}
	close(sink.open)
	calls := 0
	deadline := time.After(5 * time.Second)
	for calls == 0 {
		select {
		case r := <-sink.out:
			if r.Method == "tools/call" {
				calls++
			}
		case <-deadline:
			t.Fatal("no tools/call record after the reply")
		}
	}
	select { // a second one would be a bug; its absence is not timed
	case r := <-sink.out:
		if r.Method == "tools/call" {
			t.Fatalf("a second tools/call record: %+v", r)
		}
	case <-time.After(100 * time.Millisecond):
	}
}

// TestRecordNotHeldByUnreadReply: a client that does not read its reply (the write
// blocks on a full pipe) does not keep the call's record from the sinks: it goes out
// once the write has taken recordHoldMax, before the client reads. Before, it waited
// for the write, and a process ended meanwhile lost it.
func TestRecordNotHeldByUnreadReply(t *testing.T) {
	h := newHarness(t, 0)
	h.client(`{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"t","arguments":{}}}`)
	h.upstreamGets() // the gateway's own tools/list
	h.up.lines <- `{"jsonrpc":"2.0","id":` + ownID1 + `,"result":{"tools":[{"name":"t"}]}}`
	h.upstreamGets()
	h.up.lines <- `{"jsonrpc":"2.0","id":5,"result":{"content":[{"type":"text","text":"ok"}]}}`
	got := make(chan *audit.Record, 1)
	go func() { got <- h.recs.call() }()
	select { // the client has not read: the reply's write is blocked on the pipe
	case r := <-got:
		if r.EventID == "" {
			t.Fatalf("record %+v", r)
		}
	case <-time.After(60 * time.Second):
		t.Fatal("the record waited for the client to read its reply")
	}
	if l := h.clientGets(); l != `{"jsonrpc":"2.0","id":5,"result":{"content":[{"type":"text","text":"ok"}]}}` {
		t.Fatalf("client got %s", l)
	}
}
