package relay

import (
	"bytes"
	"encoding/json"
	"log/slog"
	"strings"
	"sync"
	"testing"

	"github.com/mcpgate/mcpgate/vocab"
)

// syncBuffer is a log sink safe for the session's goroutines.
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

// TestRelayRefusalsLeaveOneRecord: every client message refused as it arrives (a
// batch, an oversized line, an id in use, malformed input) leaves exactly one record
// with its reason code, the answer cites the record's event_id, and neither the
// record nor the log line holds anything of the message.
func TestRelayRefusalsLeaveOneRecord(t *testing.T) {
	const canary = "CANARYv4lue"
	call := `{"jsonrpc":"2.0","id":%s,"method":"tools/call","params":{"name":"t","arguments":{"k":"` + canary + `"}}}`
	callID := func(id string) string { return strings.Replace(call, "%s", id, 1) }
	tests := []struct {
		name, line string
		code       int
		reason     vocab.Reason
	}{
		{"batch", "[" + callID("1") + "]", -32600, vocab.ReasonBatchRefused},
		{"oversized", strings.Replace(callID("2"), canary, canary+strings.Repeat("a", 2000), 1), -32600, vocab.ReasonMessageTooLarge},
		{"id in use", callID("7e1"), -32600, vocab.ReasonIDInUse},
		{"id in use as 70.0", callID("70.0"), -32600, vocab.ReasonIDInUse},
		{"BOM", "\ufeff" + callID("3"), -32700, vocab.ReasonMalformedMessage},
		{"comment", strings.Replace(callID("4"), `{"jsonrpc"`, `{/*c*/"jsonrpc"`, 1), -32700, vocab.ReasonMalformedMessage},
		{"jsonrpc with a space", strings.Replace(callID("5"), `"2.0"`, `"2.0 "`, 1), -32600, vocab.ReasonMalformedMessage},
		{"truncated", `{"jsonrpc":"2.0","id":6,"params":{"k":"` + canary, -32700, vocab.ReasonMalformedMessage},
	}
	logs := &syncBuffer{}
	h := newHarness(t, 0, func(o *Options) { o.Logger = slog.New(slog.NewTextHandler(logs, nil)) })
	h.client(`{"jsonrpc":"2.0","id":70,"method":"resources/list"}`) // in flight throughout
	h.upstreamGets()
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			h.client(tc.line)
			got := h.clientGets()
			if c := errorCode(t, got); c != tc.code {
				t.Fatalf("code %d, want %d: %s", c, tc.code, got)
			}
			// The record is written before the answer is sent.
			if n := len(h.recs.ch); n != 1 {
				t.Fatalf("%d records, want 1", n)
			}
			rec := <-h.recs.ch
			if rec.Reason != tc.reason || rec.EventID == "" {
				t.Fatalf("record reason %q event_id %q, want %q", rec.Reason, rec.EventID, tc.reason)
			}
			if !strings.Contains(got, "audit log entry "+rec.EventID) {
				t.Fatalf("answer does not cite the record %s: %s", rec.EventID, got)
			}
			b, _ := json.Marshal(rec)
			if strings.Contains(string(b), canary) {
				t.Fatalf("record holds the message's value: %s", b)
			}
		})
	}
	if strings.Contains(logs.String(), canary) {
		t.Fatalf("log holds the message's value: %s", logs.String())
	}
	// The request in flight is still answered, under the client's own id.
	h.up.lines <- `{"jsonrpc":"2.0","id":70,"result":{"resources":[]}}`
	if got := h.clientGets(); !strings.Contains(got, `"id":70,`) {
		t.Fatalf("client got %q", got)
	}
}

// TestRelayIDPrecision: ids are keyed by exact value, so a server's answer under an
// id that only equals the client's after float64 rounding answers nothing; an answer
// under an equal id in another spelling reaches the client with the client's bytes.
func TestRelayIDPrecision(t *testing.T) {
	h := newHarness(t, 0)
	h.client(`{"jsonrpc":"2.0","id":9007199254740993,"method":"resources/list"}`)
	h.upstreamGets()
	h.up.lines <- `{"jsonrpc":"2.0","id":9007199254740992,"result":{"resources":["wrong"]}}`
	h.up.lines <- `{"jsonrpc":"2.0","id":9007199254740993.0,"result":{"resources":[]}}`
	if got := h.clientGets(); !strings.Contains(got, `"id":9007199254740993,`) || !strings.Contains(got, `"resources":[]`) {
		t.Fatalf("client got %q", got)
	}
	h.client(`{"jsonrpc":"2.0","id":70,"method":"prompts/list"}`)
	h.upstreamGets()
	h.up.lines <- `{"jsonrpc":"2.0","id":7e1,"result":{"prompts":[]}}`
	if got := h.clientGets(); !strings.Contains(got, `"id":70,`) {
		t.Fatalf("client got %q, want the client's id 70", got)
	}
}
