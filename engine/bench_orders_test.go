package engine

import "testing"

// BenchmarkAnalyzeResult512 is a short clean result (512 bytes of prose): a string
// of at most 1 KiB is read whole by the rules of orders in plain words.
func BenchmarkAnalyzeResult512(b *testing.B) { benchResult(b, repeatTo(cleanProse, 512)) }

// BenchmarkAnalyzeDescription is a clean tool description of 180 bytes.
func BenchmarkAnalyzeDescription(b *testing.B) {
	a, _ := New(Options{})
	text := "Read the complete contents of a file from the file system. Handles various text encodings and provides detailed error messages if the file cannot be read."
	wantRules(b, a.AnalyzeText(text))
	b.SetBytes(int64(len(text)))
	b.ReportAllocs()
	for b.Loop() {
		a.AnalyzeText(text)
	}
}
