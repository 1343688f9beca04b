package relay

import (
	"reflect"
	"strings"
	"sync"
	"testing"

	"github.com/mcpgate/mcpgate/internal/jsonrpc"
)

// TestParamHeadersBuiltWithoutClientHeaders: a tools/call of a tool whose listed
// inputSchema marks x-mcp-header goes upstream with its Mcp-Param-* headers built
// from its arguments also when the client sent none (stdio, or a 2025-11-25 client
// whose hop translates): a url upstream that checks them answers -32020 otherwise.
func TestParamHeadersBuiltWithoutClientHeaders(t *testing.T) {
	up := newFakeUpstream()
	var mu sync.Mutex
	var got map[string][]string
	up.refuse = func(m *jsonrpc.Message) error {
		if m.Method == "tools/call" {
			mu.Lock()
			got = m.ParamHeaders
			mu.Unlock()
		}
		return nil
	}
	h := newHarnessWith(t, up, func(o *Options) { o.MaxMessageBytes = 1 << 16 })
	h.client(`{"jsonrpc":"2.0","id":1,"method":"tools/list"}`)
	h.upstreamGets()
	up.lines <- `{"jsonrpc":"2.0","id":1,"result":{"tools":[{"name":"weather","inputSchema":{"type":"object","properties":{"region":{"type":"string","x-mcp-header":"Region"},"days":{"type":"integer"}}}}]}}`
	h.clientGets()
	h.client(`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"weather","arguments":{"region":"eu west","days":3}}}`)
	if l := h.upstreamGets(); !strings.Contains(l, `"tools/call"`) {
		t.Fatalf("upstream got %q", l)
	}
	mu.Lock()
	defer mu.Unlock()
	if want := map[string][]string{"Mcp-Param-Region": {"eu west"}}; !reflect.DeepEqual(got, want) {
		t.Errorf("the call went with headers %v, want %v", got, want)
	}
}
