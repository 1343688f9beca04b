package engine

import (
	"github.com/mcpgate/mcpgate/internal/costtest"
	"slices"
	"strings"
	"testing"
)

// cleanProse is ASCII prose and log text with no escapes, no PII and no secrets.
const cleanProse = `The gateway relays every tools/call to the upstream server and scans the result before
it reaches the agent. Most results are plain text: build logs, file listings, search hits
and short answers. This paragraph is the kind of text a file reader returns, with words,
commas, periods and the odd number such as 42 or 3.14 in it. Nothing in it is hostile.
INFO server started on port 8080 with 4 workers; cache warm after 12 ms.
WARN request took longer than expected; retrying with backoff of 250 ms.
`

// mixedText is realistic mixed output: coloured build lines, multilingual text,
// emoji, JSON with ids and timestamps, a little PII.
const mixedText = "\x1b[1m\x1b[32m   Compiling\x1b[0m serde v1.0.219 (2026-11-29T19:49:50Z)\n" +
	"\x1b[31m--- FAIL: TestRedact (0.02s)\x1b[0m got \"[REDACTED:EMAIL]\"\n" +
	"{\"id\":\"550e8400-e29b-41d4-a716-446655440000\",\"sha\":\"037cc07e4b1f\",\"total\":4999.95}\n" +
	"مرحبا بالعالم — שלום עולם — 部署已完成，没有错误。 — परिनियोजन पूरा हुआ\n" +
	"Release 🎉 👨‍👩‍👧 🇩🇪 ❤️ contact ops@example.com or +1 415 555 2671\n" +
	"2026-11-29T19:49:51.002Z DEBUG [pipeline] tools/call id=17 tool=read_text_file elapsed=1.42ms\n"

func repeatTo(s string, n int) string {
	return strings.Repeat(s, n/len(s)+1)[:n]
}

// wantRules fails the benchmark unless r finds exactly the rules want (none for
// clean text), so a benchmark never times a scan that stopped finding what it must.
func wantRules(b *testing.B, r Report, want ...string) {
	b.Helper()
	if got := r.RuleIDs(); !slices.Equal(got, want) {
		b.Fatalf("rules %v, want %v", got, want)
	}
}

// mixedRules are what the rules find in mixedText: its e-mail address and phone number.
var mixedRules = []string{"pii_email", "pii_phone"}

func BenchmarkAnalyzeTextCleanASCII(b *testing.B) {
	a, _ := New(Options{})
	text := repeatTo(cleanProse, 1<<20)
	wantRules(b, a.AnalyzeText(text))
	b.SetBytes(int64(len(text)))
	b.ReportAllocs()
	for b.Loop() {
		a.AnalyzeText(text)
	}
}

func BenchmarkAnalyzeTextMixed1MiB(b *testing.B) {
	a, _ := New(Options{})
	text := repeatTo(mixedText, 1<<20)
	wantRules(b, a.AnalyzeText(text), mixedRules...)
	b.SetBytes(int64(len(text)))
	b.ReportAllocs()
	for b.Loop() {
		a.AnalyzeText(text)
	}
}

func benchResult(b *testing.B, text string, want ...string) {
	a, _ := New(Options{})
	doc := []byte(`{"content":[{"type":"text","text":` + string(appendQuoted(nil, text)) + `}],"structuredContent":{"path":"/srv/app","count":3},"isError":false}`)
	r, err := a.AnalyzeResult(doc)
	if err != nil {
		b.Fatal(err)
	}
	wantRules(b, r, want...)
	b.SetBytes(int64(len(doc)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := a.AnalyzeResult(doc); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkAnalyzeResult4KiB is the typical result: 4 KiB of clean text.
func BenchmarkAnalyzeResult4KiB(b *testing.B) { benchResult(b, repeatTo(cleanProse, 4<<10)) }

// BenchmarkAnalyzeResult4KiBMixed is 4 KiB of mixed text (escapes, PII, emoji).
func BenchmarkAnalyzeResult4KiBMixed(b *testing.B) {
	benchResult(b, repeatTo(mixedText, 4<<10), mixedRules...)
}

func BenchmarkSanitizeMixed1MiB(b *testing.B) {
	text := repeatTo(mixedText, 1<<20)
	if out := Sanitize(text); strings.ContainsRune(out, 0x1b) || len(out) >= len(text) {
		b.Fatalf("Sanitize left an ESC or removed nothing (%d of %d bytes)", len(out), len(text))
	}
	b.SetBytes(int64(len(text)))
	b.ReportAllocs()
	for b.Loop() {
		Sanitize(text)
	}
}

func BenchmarkRedact4KiB(b *testing.B) {
	a, _ := New(Options{})
	text := repeatTo(mixedText, 4<<10)
	if out, n := a.Redact(text, StrategyRedact, []string{"email"}); n != strings.Count(text, "ops@example.com") || strings.Contains(out, "@example.com") {
		b.Fatalf("Redact replaced %d e-mail addresses of %d", n, strings.Count(text, "ops@example.com"))
	}
	b.SetBytes(int64(len(text)))
	b.ReportAllocs()
	for b.Loop() {
		a.Redact(text, StrategyRedact, []string{"email"})
	}
}

// jsonIDLines is log text with an id and a timestamp on every line: the shape that
// once merged every catalogue window into one that spanned the whole text.
const jsonIDLines = `{"id":"req_5f2a9c1e0042","ts":"2026-12-02T14:51:07.113Z","level":"info","msg":"cache miss for session key"}
{"id":"req_7d01bb34a917","ts":"2026-12-02T14:51:07.118Z","level":"debug","msg":"token refreshed for user 1042"}
14:51:07.120 INFO handled request sha=037cc07e4b1f9a2d in 1.42ms
`

// The scan costs the same per byte at 4 KiB and 1 MiB of text with a catalogue token
// on every line (docs/engine.md#linear-cost): its windows once merged into one.
func TestAnalyzeTextLinear(t *testing.T) {
	if testing.Short() {
		t.Skip("timing property")
	}
	a, _ := New(Options{MaxScanBytes: 2 << 20})
	for name, shape := range map[string]string{"json-ids": jsonIDLines} {
		t.Run(name, func(t *testing.T) {
			small, big := repeatTo(shape, 4<<10), repeatTo(shape, 1<<20)
			if rs, rb := a.AnalyzeText(small).RuleIDs(), a.AnalyzeText(big).RuleIDs(); !slices.Equal(rs, rb) {
				t.Fatalf("rules differ: %v at 4 KiB, %v at 1 MiB", rs, rb)
			}
			costtest.Linear(t, []byte(small), []byte(big), func(b []byte) { a.AnalyzeText(string(b)) })
		})
	}
}

// timestampedLogs is UTF-8 log text with a millisecond timestamp on every line.
const timestampedLogs = "2026-12-02 14:51:07.113 INFO  überprüfe Verbindung zum Server db-1 (Versuch 2 von 5)\n" +
	"2026-12-02 14:51:07.118 DEBUG 缓存命中率 97.5%，耗时 1.42ms\n" +
	"14:51:07.120 WARN  la requête a pris plus de temps que prévu; nouvel essai dans 250 ms\n" +
	"2026-12-02T14:51:07.131Z INFO  работа завершена без ошибок за 12 мс\n"

// naiveCount is the naive per-byte loop the scan is measured against: one table
// lookup and one add per byte.
func naiveCount(s string) int {
	n := 0
	for i := 0; i < len(s); i++ {
		n += int(naiveTable[s[i]])
	}
	return n
}

// naiveTable marks the bytes the naive loop counts: ESC and non-ASCII bytes.
var naiveTable = func() (t [256]uint8) {
	t[0x1b] = 1
	for c := 0x80; c < 0x100; c++ {
		t[c] = 1
	}
	return
}()

func benchNaive(b *testing.B, text string) {
	want := 0
	for _, r := range []byte(text) {
		if r == 0x1b || r >= 0x80 {
			want++
		}
	}
	if got := naiveCount(text); got != want {
		b.Fatalf("naive loop counted %d, want %d", got, want)
	}
	b.SetBytes(int64(len(text)))
	for b.Loop() {
		naiveCount(text)
	}
}

// BenchmarkNaiveLoopCleanASCII is the naive loop over AnalyzeTextCleanASCII's bytes.
func BenchmarkNaiveLoopCleanASCII(b *testing.B) { benchNaive(b, repeatTo(cleanProse, 1<<20)) }

// BenchmarkNaiveLoopTimestampedLogs is the naive loop over AnalyzeTextTimestampedLogs's bytes.
func BenchmarkNaiveLoopTimestampedLogs(b *testing.B) {
	benchNaive(b, repeatTo(timestampedLogs, 1<<20))
}

func BenchmarkAnalyzeTextTimestampedLogs(b *testing.B) {
	a, _ := New(Options{MaxScanBytes: 2 << 20})
	text := repeatTo(timestampedLogs, 1<<20)
	wantRules(b, a.AnalyzeText(text))
	b.SetBytes(int64(len(text)))
	b.ReportAllocs()
	for b.Loop() {
		a.AnalyzeText(text)
	}
}

// A clean log with a timestamp on every line allocates nothing: HH:MM:SS.mmm is
// refused as an IPv6 address by its shape, before netip.ParseAddr builds an error.
func TestTimestampsAllocateNothing(t *testing.T) {
	a, _ := New(Options{})
	text := repeatTo(timestampedLogs, 64<<10)
	if r := a.AnalyzeText(text); len(r.Findings) != 0 {
		t.Fatalf("findings in clean logs: %v", r.RuleIDs())
	}
	if n := testing.AllocsPerRun(5, func() { a.AnalyzeText(text) }); n != 0 {
		t.Fatalf("%.0f allocations per scan of %d bytes of timestamped logs", n, len(text))
	}
}
