package relay

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/mcpgate/mcpgate/gate"
	"github.com/mcpgate/mcpgate/internal/jsonrpc"
	"github.com/mcpgate/mcpgate/internal/methods"
)

// countingRouter routes like the multiplexer: a tool name "<server>_<name>" goes to
// server as <name>; it counts the tools/call requests it routes.
type countingRouter struct {
	*fakeUpstream
	calls *atomic.Int32
}

func (r countingRouter) Route(m *jsonrpc.Message) (*jsonrpc.Message, error) {
	if m.Method != "tools/call" {
		return m, nil
	}
	r.calls.Add(1)
	params := map[string]json.RawMessage{}
	_ = json.Unmarshal(m.Params, &params)
	var name string
	_ = json.Unmarshal(params["name"], &name)
	server, orig, ok := strings.Cut(name, "_")
	if !ok {
		return nil, &jsonrpc.RequestError{Code: methods.CodeInvalidParams, Message: "mcpgate: unknown tool " + name, Unknown: true}
	}
	params["name"], _ = jsonrpc.Marshal(orig)
	b, _ := jsonrpc.Marshal(params)
	out := m.WithParams(b)
	out.Upstream = server
	return out, nil
}

// TestRelayRoutesToolsCallOnce: a tools/call is routed once, before the pipeline;
// the upstream gets the routed name with the pre policy's rewritten arguments, and
// a name that routes nowhere is an unknown tool after the pre policies, as before.
func TestRelayRoutesToolsCallOnce(t *testing.T) {
	dir := t.TempDir()
	policy := `if (ctx.phase === "pre" && ctx.params.text) { ctx.params.text = "rewritten"; }`
	if err := os.WriteFile(filepath.Join(dir, "rewrite.js"), []byte(policy), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name, call, upstream string // upstream: "" when the call must not reach it
		server, outcome      string
	}{
		{"rewritten", `{"name":"a_echo","arguments":{"text":"hi"}}`, `"params":{"arguments":{"text":"rewritten"},"name":"echo"}`, "a", "ok"},
		{"unchanged", `{"name":"b_echo","arguments":{"n":1}}`, `"params":{"arguments":{"n":1},"name":"echo"}`, "b", "ok"},
		{"unknown", `{"name":"echo","arguments":{"text":"hi"}}`, "", "", "unknown_tool"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var calls atomic.Int32
			up := newFakeUpstream()
			h := newHarnessOver(t, countingRouter{up, &calls}, up, func(o *Options) {
				g, err := gate.Load(context.Background(), gate.Options{Dir: dir, Analyzer: o.Pipeline.Analyzer, Logger: o.Logger})
				if err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() { g.Close() })
				o.Pipeline.Gate = g
			})
			h.client(`{"jsonrpc":"2.0","id":5,"method":"tools/call","params":` + tc.call + `}`)
			if got := h.upstreamGets(); !strings.Contains(got, `"tools/list"`) {
				t.Fatalf("want the gateway's own tools/list first, got %q", got)
			}
			h.up.lines <- `{"jsonrpc":"2.0","id":` + ownID1 + `,"result":{"tools":[{"name":"a_echo"},{"name":"b_echo"}]}}`
			if tc.upstream != "" {
				if got := h.upstreamGets(); !strings.Contains(got, tc.upstream) {
					t.Fatalf("upstream got %q, want %s", got, tc.upstream)
				}
				h.up.lines <- `{"jsonrpc":"2.0","id":5,"result":{"content":[{"type":"text","text":"ok"}]}}`
			}
			if got := h.clientGets(); !strings.Contains(got, `"id":5`) {
				t.Fatalf("client got %q", got)
			}
			rec := h.recs.call()
			if rec.Server != tc.server || string(rec.Outcome) != tc.outcome {
				t.Fatalf("record server %q outcome %q, want %q %q", rec.Server, rec.Outcome, tc.server, tc.outcome)
			}
			if n := calls.Load(); n != 1 {
				t.Fatalf("tools/call routed %d times, want 1", n)
			}
		})
	}
}
