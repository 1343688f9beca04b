package pipeline

import (
	"context"
	"strings"
	"testing"
)

// BenchmarkCallPostPolicy is one tools/call through the pipeline with a post policy
// (so the result is split for it) on a 4 KiB and a 256 KiB clean text result, no
// audit sink (docs/http.md#added-latency).
// Run: go test -run XXX -bench CallPostPolicy ./internal/pipeline/
func BenchmarkCallPostPolicy(b *testing.B) {
	const redact = `if (ctx.phase === "post") { ctx.redactAll({ kinds: ["pii_email"] }) }`
	for _, size := range []int{4 << 10, 256 << 10} {
		name := map[int]string{4 << 10: "4KiB", 256 << 10: "256KiB"}[size]
		b.Run(name, func(b *testing.B) {
			result := `{"content":[{"type":"text","text":"` + strings.Repeat("build ok; ", size/10) + `"}]}`
			p, _ := newPipeline(b, map[string]string{"redact-email.js": redact}, true, false)
			p.Audit = nil
			up := upstreamReturning(result, nil)
			b.SetBytes(int64(len(result)))
			b.ReportAllocs()
			for b.Loop() {
				p.Handle(context.Background(), call(`{"path":"x"}`), up)
			}
			p.Wait()
		})
	}
}
