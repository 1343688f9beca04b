//go:build unix

package pipeline

import (
	"io"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"

	"github.com/mcpgate/mcpgate/internal/guardrail"
)

// The sides of BenchmarkGuardrailCost with a guardrail: a local content guardrail on
// loopback HTTP answering NONE, on tools/call (asked twice a call: the arguments and
// the result), and on tools/list with its verdict cache on (the default 5m) and off
// ("0"). Each checks how often the service was asked.
func init() {
	guardCostCases = append(guardCostCases,
		guardCostCase{name: "call/generic", setup: guardCostService(nil, nil, func(calls int) int64 { return int64(2 * calls) })},
		guardCostCase{name: "list/cache", setup: guardCostService([]string{"tools/list"}, nil, func(int) int64 { return 1 })},
		guardCostCase{name: "list/nocache", setup: guardCostService([]string{"tools/list"}, map[string]string{"tools/list": "0"},
			func(calls int) int64 { return int64(calls) })},
	)
}

// guardCostService starts a NONE service and gives p a guardrail on it for methods
// with cacheTTL; the check wants asked(calls) requests after calls calls.
func guardCostService(methods []string, cacheTTL map[string]string, asked func(calls int) int64) func(b *testing.B, p *Pipeline) func(*testing.B, int) {
	return func(b *testing.B, p *Pipeline) func(*testing.B, int) {
		var n atomic.Int64
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			n.Add(1)
			_, _ = io.Copy(io.Discard, r.Body)
			_, _ = io.WriteString(w, `{"action":"NONE"}`)
		}))
		b.Cleanup(srv.Close)
		s, err := guardrail.New(map[string]guardrail.Spec{"g": {Kind: "generic", URL: srv.URL, Methods: methods, CacheTTL: cacheTTL, Timeout: "10s"}})
		if err != nil {
			b.Fatal(err)
		}
		p.Guardrails = s
		return func(b *testing.B, calls int) {
			if got, want := n.Load(), asked(calls); got != want {
				b.Fatalf("the guardrail was asked %d times after %d calls, want %d", got, calls, want)
			}
		}
	}
}
