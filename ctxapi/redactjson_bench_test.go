package ctxapi

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/mcpgate/mcpgate/engine"
)

// BenchmarkRewriteStringsAppendRedact is ctx.redactAll({kinds: ["pii_email"]}) on the
// raw JSON of one 4096-byte text content item with three e-mail addresses.
func BenchmarkRewriteStringsAppendRedact(b *testing.B) {
	a, err := engine.New(engine.Options{})
	if err != nil {
		b.Fatal(err)
	}
	text := []byte(strings.Repeat("build log line without anything private in it; ", 100)[:4096])
	for i, addr := range []string{"alice@example.com", "bob.smith@corp.example.org", "carol@example.net"} {
		copy(text[(i+1)*1000:], " "+addr+" ")
	}
	raw, _ := json.Marshal([]map[string]string{{"type": "text", "text": string(text)}})
	kinds := []string{"pii_email"}
	redact := func(dst []byte, s string) ([]byte, int) {
		return a.AppendRedact(dst, s, engine.StrategyRedact, kinds)
	}
	out, n, err := RewriteStringsAppend(raw, ContentSkipKeys, redact)
	var items []struct{ Type, Text string }
	if err != nil || n != 3 || json.Unmarshal(out, &items) != nil || len(items) != 1 ||
		strings.Count(items[0].Text, "[REDACTED:EMAIL]") != 3 || strings.Contains(items[0].Text, "@") {
		b.Fatalf("n=%d err=%v out=%s", n, err, out)
	}
	b.SetBytes(int64(len(raw)))
	b.ReportAllocs()
	for b.Loop() {
		if _, _, err := RewriteStringsAppend(raw, ContentSkipKeys, redact); err != nil {
			b.Fatal(err)
		}
	}
}
