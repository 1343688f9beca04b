package pipeline

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/mcpgate/mcpgate/internal/guardrail"
)

// BenchmarkGuardrailCall: one tools/call (a 4 KiB text result, no policies) with no
// guardrail, with a local content guardrail answering NONE (called in pre and post),
// and with a local OPA-shaped authorization service as well: the added latency of a
// guardrail on loopback (docs/guardrails.md#cost). Reported, never asserted.
func BenchmarkGuardrailCall(b *testing.B) {
	none := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		_, _ = io.WriteString(w, `{"action":"NONE"}`)
	}))
	defer none.Close()
	allow := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		_, _ = io.WriteString(w, `{"result":true}`)
	}))
	defer allow.Close()
	text := make([]byte, 4096)
	for i := range text {
		text[i] = 'a' + byte(i%26)
		if i%80 == 79 {
			text[i] = ' '
		}
	}
	result := textResult(string(text))
	for _, bc := range []struct {
		name  string
		specs map[string]guardrail.Spec
	}{
		{"none", nil},
		{"content", map[string]guardrail.Spec{"g": {Kind: "generic", URL: none.URL}}},
		{"content+opa", map[string]guardrail.Spec{"g": {Kind: "generic", URL: none.URL}, "opa": {Kind: "opa", URL: allow.URL}}},
	} {
		b.Run(bc.name, func(b *testing.B) {
			p, _ := newPipeline(b, nil, true, false)
			p.Audit = nil
			if bc.specs != nil {
				s, err := guardrail.New(bc.specs)
				if err != nil {
					b.Fatal(err)
				}
				p.Guardrails = s
			}
			up := upstreamReturning(result, nil)
			b.ReportAllocs()
			for b.Loop() {
				p.Handle(context.Background(), call(`{"path":"/tmp/a","query":"hello world"}`), up)
			}
		})
	}
}
