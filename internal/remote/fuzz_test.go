package remote

import (
	"bytes"
	"context"
	"log/slog"
	"testing"
)

// FuzzReadSSE: parsing a remote server's event stream never panics or blocks, and
// every queued message that is JSON is one line.
func FuzzReadSSE(f *testing.F) {
	f.Add([]byte("id: 1\ndata: {\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{}}\n\n"))
	f.Add([]byte("data: {\"a\":\ndata: 1}\n\n: comment\nevent: x\n\ndata:"))
	f.Fuzz(func(t *testing.T, stream []byte) {
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		c := &Client{opts: Options{MaxMessageBytes: 1 << 12}, log: slog.New(slog.DiscardHandler), out: make(chan item, 1<<12), gone: make(chan struct{}), ctx: ctx, cancel: cancel}
		last := ""
		c.readSSE(bytes.NewReader(stream), []byte("1"), &last)
		close(c.out)
		for it := range c.out {
			if it.msg != nil && bytes.ContainsAny(it.msg.Raw, "\n\r") {
				t.Fatalf("queued a multi-line message %q", it.msg.Raw)
			}
		}
	})
}
