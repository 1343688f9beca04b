package relay

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/mcpgate/mcpgate/internal/reqstate"
	"github.com/mcpgate/mcpgate/vocab"
)

const modernMeta = `"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{"elicitation":{"form":{}}}}`

// upstreamGetsMethod returns the next message the upstream gets for method, answering
// the gateway's own tools/list on the way.
func (h *harness) upstreamGetsMethod(method string) string {
	h.t.Helper()
	for {
		got := h.upstreamGets()
		if strings.Contains(got, `"id":`+ownID1) && strings.Contains(got, `"tools/list"`) {
			h.up.lines <- `{"jsonrpc":"2.0","id":` + ownID1 + `,"result":{"tools":[{"name":"pay","inputSchema":{"type":"object"}},{"name":"other","inputSchema":{"type":"object"}}]}}`
			continue
		}
		if strings.Contains(got, `"method":"`+method+`"`) {
			return got
		}
	}
}

// issue sends a first request of method (tools/call or prompts/get) and has the
// server answer input_required with requestState SERVER-STATE; it returns the
// requestState the client got.
func (h *harness) issue(id, method, name, args string) string {
	h.t.Helper()
	h.client(`{"jsonrpc":"2.0","id":` + id + `,"method":"` + method + `","params":{"name":"` + name + `","arguments":` + args + `,` + modernMeta + `}}`)
	h.upstreamGetsMethod(method)
	h.up.lines <- `{"jsonrpc":"2.0","id":` + id + `,"result":{"resultType":"input_required","inputRequests":{"ok":{"method":"elicitation/create","params":{"mode":"form","message":"Proceed?","requestedSchema":{"type":"object","properties":{"ok":{"type":"boolean"}}}}}},"requestState":"SERVER-STATE"}}`
	var r struct {
		Result struct {
			ResultType   string `json:"resultType"`
			RequestState string `json:"requestState"`
		} `json:"result"`
	}
	got := h.clientGets()
	if err := json.Unmarshal([]byte(got), &r); err != nil || r.Result.ResultType != "input_required" {
		h.t.Fatalf("first answer %s", got)
	}
	if !strings.HasPrefix(r.Result.RequestState, reqstate.Prefix) || strings.Contains(got, "SERVER-STATE") {
		h.t.Fatalf("the server's requestState reached the client unsealed: %s", got)
	}
	return r.Result.RequestState
}

func retryLine(id, method, name, args, state string) string {
	s, _ := json.Marshal(state)
	return `{"jsonrpc":"2.0","id":` + id + `,"method":"` + method + `","params":{"name":"` + name + `","arguments":` + args +
		`,"inputResponses":{"ok":{"action":"accept","content":{"ok":true}}},"requestState":` + string(s) + `,` + modernMeta + `}}`
}

// TestRelaySealsRequestState: an input_required result's requestState reaches a
// 2026-07-28 client sealed (tools/call through the pipeline, prompts/get relayed);
// the retry that presents it for the same caller, session, method, name and
// arguments reaches the server with the server's own state; a retry with the server's
// raw state, a changed or made-up state, another tool, other arguments, or the same
// state a second time is answered -32602 with a request_state_invalid record and
// never reaches the server.
func TestRelaySealsRequestState(t *testing.T) {
	for _, method := range []string{"tools/call", "prompts/get"} {
		t.Run(method, func(t *testing.T) {
			h := newHarness(t, 0, func(o *Options) { o.MaxMessageBytes = 1 << 16 })
			sealed := h.issue("1", method, "pay", `{"amount":50}`)
			h.client(retryLine("2", method, "pay", ` { "amount" : 50 } `, sealed))
			if got := h.upstreamGetsMethod(method); !strings.Contains(got, `"requestState":"SERVER-STATE"`) || strings.Contains(got, reqstate.Prefix) {
				t.Fatalf("the retry reached the server as %s", got)
			}
			h.up.lines <- `{"jsonrpc":"2.0","id":2,"result":{"content":[{"type":"text","text":"paid"}],"messages":[]}}`
			if got := h.clientGets(); !strings.Contains(got, `"id":2`) || strings.Contains(got, "error") {
				t.Fatalf("retry answer %s", got)
			}
			for i, tc := range []struct{ name, args, state string }{
				{"pay", `{"amount":50}`, sealed},         // used once already
				{"pay", `{"amount":50}`, "SERVER-STATE"}, // the server's own, as a client that saw it would send it
				{"pay", `{"amount":50}`, sealed[:len(sealed)-3] + "AAA"},
				{"pay", `{"amount":50}`, "AEAD:v1:opaque"},
			} {
				h.client(retryLine(string(rune('3'+i)), method, tc.name, tc.args, tc.state))
				if got := h.clientGets(); errorCode(t, got) != -32602 || !strings.Contains(got, "requestState") {
					t.Fatalf("case %d: %s", i, got)
				}
			}
			fresh := h.issue("10", method, "pay", `{"amount":50}`)
			for i, tc := range []struct{ name, args string }{{"other", `{"amount":50}`}, {"pay", `{"amount":5000}`}, {"pay", `{}`}} {
				h.client(retryLine(string(rune('5'+i))+"0", method, tc.name, tc.args, fresh))
				if got := h.clientGets(); errorCode(t, got) != -32602 {
					t.Fatalf("bound case %d: %s", i, got)
				}
			}
			// nothing refused reached the server: the next thing it gets is this ping
			h.client(`{"jsonrpc":"2.0","id":99,"method":"ping"}`)
			if got := h.upstreamGets(); !strings.Contains(got, `"ping"`) {
				t.Fatalf("the server got %s", got)
			}
			refused := 0
			for len(h.recs.ch) > 0 {
				if rec := <-h.recs.ch; rec.Reason == vocab.ReasonRequestStateInvalid {
					refused++
				}
			}
			if refused != 7 {
				t.Fatalf("%d request_state_invalid records, want 7", refused)
			}
		})
	}
}
