package translate

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/mcpgate/mcpgate/internal/jsonrpc"
)

// TestQueueBound: while maxQueue messages the translation made wait for Recv (the
// relay is not reading them: its client reads nothing), a client's send is refused
// with an error wrapping jsonrpc.ErrNotDelivered (the request is answered -32000)
// and reaches no server, instead of the queue growing; once Recv takes one, sends go
// through again.
func TestQueueBound(t *testing.T) {
	f := newFake()
	c := Wrap(f, Options{})
	defer c.Close(context.Background(), 0)
	for range maxQueue {
		c.enqueue(jsonrpc.NewNotification("notifications/message", map[string]any{"level": "info", "data": "x"}))
	}
	err := c.Send(mustParse(t, `{"jsonrpc":"2.0","id":1,"method":"tools/list"}`))
	if !errors.Is(err, jsonrpc.ErrNotDelivered) {
		t.Fatalf("Send with a full queue: %v; want an error wrapping ErrNotDelivered", err)
	}
	select {
	case m := <-f.sent:
		t.Fatalf("the server got %s while the queue was full", m.Raw)
	case <-time.After(50 * time.Millisecond):
	}
	if _, err := c.Recv(); err != nil {
		t.Fatal(err)
	}
	if err := c.Send(mustParse(t, `{"jsonrpc":"2.0","id":2,"method":"tools/list"}`)); err != nil {
		t.Fatalf("Send once Recv took one: %v", err)
	}
}

// enqueue hands Recv a message as the translation does.
func (c *Conn) enqueue(m *jsonrpc.Message) {
	c.mu.Lock()
	c.enqueueLocked(m)
	c.mu.Unlock()
}
