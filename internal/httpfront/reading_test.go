package httpfront

import (
	"context"
	"encoding/json"
	"log/slog"
	"net/http"
	"strings"
	"testing"

	"github.com/mcpgate/mcpgate/ctxapi"
	"github.com/mcpgate/mcpgate/internal/jsonrpc"
	"github.com/mcpgate/mcpgate/internal/methods"
	"github.com/mcpgate/mcpgate/vocab"
)

// TestFrontRefusesAmbiguousMessages: a POST body peers could read two ways is
// answered 400 with -32600 under its id, recorded through Options.Refused, and never
// reaches a session (docs/decisions.md#one-reading).
func TestFrontRefusesAmbiguousMessages(t *testing.T) {
	var got []vocab.Reason
	started := 0
	f := New(Options{
		Auth:    LocalAuth(ctxapi.User{UserID: "u"}),
		Start:   func(context.Context, ctxapi.User) (Backend, error) { started++; return echoBackend{}, nil },
		Refused: func(_ ctxapi.User, a *jsonrpc.AmbiguousError) string { got = append(got, a.Reason); return "ev-1" },
	})
	t.Cleanup(func() { _ = f.Close(context.Background()) })
	for _, body := range []string{
		`{"jsonrpc":"2.0","id":1,"method":"initialize","METHOD":"ping","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`,
		`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"safe","NAME":"wipe"}}`,
		`{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"safe","Arguments":{"force":true}}}`,
		`{"jsonrpc":"2.0","id":9007199254740993,"method":"tools/call","params":{"name":"safe"}}`,
		`{"jsonrpc":"2.0","id":"\udc00","method":"tools/call","params":{"name":"safe"}}`, // U+FFFD to Go and Node servers
	} {
		w := post(f, body, nil)
		var m struct {
			ID    json.RawMessage
			Error struct {
				Code    int
				Message string
			}
		}
		if err := json.Unmarshal(w.Body.Bytes(), &m); err != nil || w.Code != http.StatusBadRequest || m.Error.Code != methods.CodeInvalidRequest ||
			string(m.ID) == "null" || !strings.Contains(m.Error.Message, "ev-1") {
			t.Fatalf("%s: HTTP %d %s", body, w.Code, w.Body)
		}
	}
	if len(got) != 5 || got[0] != vocab.ReasonCaseVariantMember && got[0] != vocab.ReasonDuplicateMember || got[1] != vocab.ReasonDuplicateMember || got[2] != vocab.ReasonCaseVariantMember || got[3] != vocab.ReasonInexactID || got[4] != vocab.ReasonInexactID {
		t.Fatalf("recorded %v", got)
	}
	if started != 0 {
		t.Fatalf("%d sessions started", started)
	}
}

// TestFrontRefusalsLeaveOneRecord: a POST body refused whole as it arrives (a batch,
// an oversized body, malformed JSON, a wrong "jsonrpc") is recorded once through
// Options.Refused with its reason code, the answer cites the record, and the log
// holds nothing of the body.
func TestFrontRefusalsLeaveOneRecord(t *testing.T) {
	const canary = "CANARYv4lue"
	call := `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"t","arguments":{"k":"` + canary + `"}}}`
	var logs strings.Builder
	var got []vocab.Reason
	f := New(Options{
		Auth:            LocalAuth(ctxapi.User{UserID: "u"}),
		Start:           func(context.Context, ctxapi.User) (Backend, error) { return echoBackend{}, nil },
		MaxMessageBytes: 1 << 10,
		Logger:          slog.New(slog.NewTextHandler(&logs, nil)),
		Refused:         func(_ ctxapi.User, a *jsonrpc.AmbiguousError) string { got = append(got, a.Reason); return "ev-9" },
	})
	t.Cleanup(func() { _ = f.Close(context.Background()) })
	for _, tc := range []struct {
		name, body string
		code       int
		reason     vocab.Reason
	}{
		{"batch", "[" + call + "]", methods.CodeInvalidRequest, vocab.ReasonBatchRefused},
		{"oversized", strings.Replace(call, canary, canary+strings.Repeat("a", 2000), 1), methods.CodeInvalidRequest, vocab.ReasonMessageTooLarge},
		{"BOM", "\ufeff" + call, methods.CodeParseError, vocab.ReasonMalformedMessage},
		{"comment", "/*c*/" + call, methods.CodeParseError, vocab.ReasonMalformedMessage},
		{"jsonrpc with a space", strings.Replace(call, `"2.0"`, `"2.0 "`, 1), methods.CodeInvalidRequest, vocab.ReasonMalformedMessage},
	} {
		got = got[:0]
		w := post(f, tc.body, nil)
		var m struct {
			Error struct {
				Code    int
				Message string
			}
		}
		if err := json.Unmarshal(w.Body.Bytes(), &m); err != nil || m.Error.Code != tc.code || !strings.Contains(m.Error.Message, "audit log entry ev-9") {
			t.Fatalf("%s: HTTP %d %s", tc.name, w.Code, w.Body)
		}
		if len(got) != 1 || got[0] != tc.reason {
			t.Fatalf("%s: recorded %v, want [%s]", tc.name, got, tc.reason)
		}
	}
	if strings.Contains(logs.String(), canary) {
		t.Fatalf("log holds the body's value: %s", logs.String())
	}
}
