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
		{"id past 2^53", callID("9007199254740993"), -32600, vocab.ReasonInexactID},
		{"fractional id", callID("0.5"), -32600, vocab.ReasonInexactID},
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

// TestRelayIDPrecision: ids are keyed by exact value, and a numeric id that peers
// reading ids as doubles (JSON.parse, mcp-go) or truncating them (go-sdk) would read
// as another id is refused in either direction (docs/decisions.md#exact-ids): a
// client's call under 9007199254740993 never reaches the server, which would answer
// it as 9007199254740992 (nor one under a string id that is not Unicode text), and a
// server's roots/list under such an id never reaches
// the client, whose answer the roots pins would then not recognise. An answer under
// an equal id in another spelling reaches the client with the client's bytes.
func TestRelayIDPrecision(t *testing.T) {
	h := newHarness(t, 0)
	// A string id that is not Unicode text ("\xff", a lone surrogate) is U+FFFD to
	// a Go or Node server: the answer to a call under "\xff" would settle another
	// call in flight under "\ufffd", and be judged and recorded as that call's.
	for _, id := range []string{"9007199254740993", "9007199254740992", "-9007199254740993", "1.5", "\"\xff\"", `"\ud800"`} {
		h.client(`{"jsonrpc":"2.0","id":` + id + `,"method":"tools/call","params":{"name":"read_db","arguments":{}}}`)
		got := h.clientGets()
		if errorCode(t, got) != -32600 || !strings.Contains(got, `"id":`+id+`,`) {
			t.Fatalf("client got %s", got)
		}
		if rec := h.recs.refusal(t); rec.Reason != vocab.ReasonInexactID || rec.Method != "tools/call" || !strings.Contains(got, rec.EventID) {
			t.Fatalf("record %+v for %s", rec, got)
		}
	}
	h.up.lines <- `{"jsonrpc":"2.0","id":9007199254740993,"method":"roots/list"}`
	if got := h.upstreamGets(); errorCode(t, got) != -32600 || !strings.Contains(got, `"id":9007199254740993,`) {
		t.Fatalf("upstream got %s", got)
	}
	if rec := h.recs.refusal(t); rec.Reason != vocab.ReasonInexactID || rec.Method != "roots/list" {
		t.Fatalf("record %+v", rec)
	}
	h.client(`{"jsonrpc":"2.0","id":9007199254740991,"method":"resources/list"}`)
	if got := h.upstreamGets(); !strings.Contains(got, `"id":9007199254740991,`) {
		t.Fatalf("upstream got %s", got)
	}
	h.up.lines <- `{"jsonrpc":"2.0","id":9007199254740992,"result":{"resources":["wrong"]}}` // refused: answers nothing
	h.recs.refusal(t)
	h.up.lines <- `{"jsonrpc":"2.0","id":9007199254740991.0,"result":{"resources":[]}}`
	if got := h.clientGets(); !strings.Contains(got, `"id":9007199254740991,`) || !strings.Contains(got, `"resources":[]`) {
		t.Fatalf("client got %q", got)
	}
	h.client(`{"jsonrpc":"2.0","id":70,"method":"prompts/list"}`)
	h.upstreamGets()
	h.up.lines <- `{"jsonrpc":"2.0","id":7e1,"result":{"prompts":[]}}`
	if got := h.clientGets(); !strings.Contains(got, `"id":70,`) {
		t.Fatalf("client got %q, want the client's id 70", got)
	}
}
