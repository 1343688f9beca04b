package httpfront

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/mcpgate/mcpgate/ctxapi"
	"github.com/mcpgate/mcpgate/internal/jsonrpc"
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
	} {
		w := post(f, body, nil)
		var m struct {
			ID    json.RawMessage
			Error struct {
				Code    int
				Message string
			}
		}
		if err := json.Unmarshal(w.Body.Bytes(), &m); err != nil || w.Code != http.StatusBadRequest || m.Error.Code != jsonrpc.CodeInvalidRequest ||
			string(m.ID) == "null" || !strings.Contains(m.Error.Message, "ev-1") {
			t.Fatalf("%s: HTTP %d %s", body, w.Code, w.Body)
		}
	}
	if len(got) != 3 || got[0] != vocab.ReasonCaseVariantMember && got[0] != vocab.ReasonDuplicateMember || got[1] != vocab.ReasonDuplicateMember || got[2] != vocab.ReasonCaseVariantMember {
		t.Fatalf("recorded %v", got)
	}
	if started != 0 {
		t.Fatalf("%d sessions started", started)
	}
}
