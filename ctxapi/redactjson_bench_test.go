package ctxapi

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/mcpgate/mcpgate/engine"
)

// BenchmarkRewriteStringsAppendRedact is ctx.redactAll({kinds: ["pii_email"]}) (member
// names passed, as the gate does) on the
// raw JSON of one 4096-byte text content item with three e-mail addresses: the gate
// workload's text (no JSON escapes), and the same text as lines of 64 bytes (a \n
// escape per line, as most tool output has), also 64 times over (256 KiB).
func BenchmarkRewriteStringsAppendRedact(b *testing.B) {
	text := []byte(strings.Repeat("build log line without anything private in it; ", 100)[:4096])
	for i, addr := range []string{"alice@example.com", "bob.smith@corp.example.org", "carol@example.net"} {
		copy(text[(i+1)*1000:], " "+addr+" ")
	}
	lines := []byte(string(text))
	for i := 63; i < len(lines); i += 64 {
		if lines[i] == ' ' {
			lines[i] = '\n'
		}
	}
	b.Run("plain", func(b *testing.B) { benchRedactJSON(b, string(text)) })
	b.Run("lines", func(b *testing.B) { benchRedactJSON(b, string(lines)) })
	b.Run("lines-256KiB", func(b *testing.B) { benchRedactJSON(b, strings.Repeat(string(lines), 64)) })
}

func benchRedactJSON(b *testing.B, text string) {
	a, err := engine.New(engine.Options{})
	if err != nil {
		b.Fatal(err)
	}
	raw, _ := json.Marshal([]map[string]string{{"type": "text", "text": text}})
	kinds := []string{"pii_email"}
	redact := func(dst []byte, member, s string) ([]byte, int) {
		return a.AppendRedactMember(dst, s, member, engine.StrategyRedact, kinds)
	}
	out, n, err := RewriteMembersAppend(raw, ContentSkipKeys, redact)
	var items []struct{ Type, Text string }
	if err != nil || n != 3*len(text)/4096 || json.Unmarshal(out, &items) != nil || len(items) != 1 ||
		strings.Count(items[0].Text, "[REDACTED:EMAIL]") != n || strings.Contains(items[0].Text, "@") {
		b.Fatalf("n=%d err=%v out=%s", n, err, out)
	}
	b.SetBytes(int64(len(raw)))
	b.ReportAllocs()
	for b.Loop() {
		if _, _, err := RewriteMembersAppend(raw, ContentSkipKeys, redact); err != nil {
			b.Fatal(err)
		}
	}
}
