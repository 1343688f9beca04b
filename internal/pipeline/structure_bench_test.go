package pipeline

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/mcpgate/mcpgate/internal/jsonrpc"
)

// BenchmarkToolsListClean: one clean tools/list of 40 tools (names, descriptions,
// small schemas), as a server lists them, through Response with the filter on and no
// pins or policies. It checks the listing comes back byte for byte.
func BenchmarkToolsListClean(b *testing.B) {
	p, _ := newPipeline(b, nil, true, false)
	var entries []string
	for i := range 40 {
		entries = append(entries, fmt.Sprintf(`{"name":"tool_%d_search","description":"Searches the index number %d for documents that match the query, newest first.","inputSchema":{"type":"object","properties":{"query":{"type":"string","description":"What to look for."},"limit":{"type":"integer"}},"required":["query"]}}`, i, i))
	}
	result := `{"tools":[` + strings.Join(entries, ",") + `]}`
	raw := []byte(`{"jsonrpc":"2.0","id":7,"result":` + result + `}`)
	resp, err := jsonrpc.Parse(raw)
	if err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(len(raw)))
	b.ReportAllocs()
	if r := p.Response(context.Background(), Channel{Method: "tools/list"}, resp); string(r.Original) != string(resp.Raw) {
		b.Fatalf("a clean listing changed: %+v", r)
	}
	b.ResetTimer()
	for b.Loop() {
		p.Response(context.Background(), Channel{Method: "tools/list"}, resp)
	}
}

// BenchmarkNamesClean: what the name check adds to a clean 40-tool listing that
// passes undecoded (namesClean: the names read without decoding, their skeletons).
func BenchmarkNamesClean(b *testing.B) {
	var entries []string
	for i := range 40 {
		entries = append(entries, fmt.Sprintf(`{"name":"tool_%d_search","description":"Searches the index number %d for documents that match the query, newest first.","inputSchema":{"type":"object","properties":{"query":{"type":"string","description":"What to look for."},"limit":{"type":"integer"}},"required":["query"]}}`, i, i))
	}
	result := json.RawMessage(`{"tools":[` + strings.Join(entries, ",") + `]}`)
	c := Channel{Method: "tools/list"}
	if !namesClean(c, "tools", result) {
		b.Fatal("clean names reported unclean")
	}
	b.SetBytes(int64(len(result)))
	b.ReportAllocs()
	for b.Loop() {
		namesClean(c, "tools", result)
	}
}
