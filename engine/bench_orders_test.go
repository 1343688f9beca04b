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

// BenchmarkAnalyzeServerProse is a clean 512-byte text that names a server, an MCP
// and tools: the words that make output_tool_transfer read it.
func BenchmarkAnalyzeServerProse(b *testing.B) {
	benchResult(b, repeatTo("The filesystem server exposes read_file and write_file; start the MCP server with npx and point the client at it. Each server runs in its own process. ", 512))
}
