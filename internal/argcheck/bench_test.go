package argcheck

import (
	"encoding/json"
	"testing"
)

// The cost of the checks per call (docs/engine.md#argument-checks): a listed tool's
// schema compiled once, then each call's arguments validated and read. make bench
// prints the figures; nothing asserts them.
var (
	benchSchema = json.RawMessage(`{"$schema":"http://json-schema.org/draft-07/schema#","type":"object","properties":{
		"path":{"type":"string"},"edits":{"type":"array","items":{"type":"object","properties":{"oldText":{"type":"string"},"newText":{"type":"string"}},"required":["oldText","newText"],"additionalProperties":false}},
		"dryRun":{"type":"boolean","default":false}},"required":["path","edits"],"additionalProperties":false}`)
	benchArgs  = json.RawMessage(`{"path":"/srv/project/src/main.go","edits":[{"oldText":"func main() {\n\tfmt.Println(\"hello\")\n}","newText":"func main() {\n\tfmt.Println(\"hello, world\") // a | b; c\n}"}],"dryRun":true}`)
	benchRoots = Options{Roots: []string{"file:///srv/project"}}
)

func BenchmarkCheck(b *testing.B) {
	tool := NewTool("edit_file", benchSchema)
	Check(tool, "edit_file", benchArgs, benchRoots) // compiled once per listing, on the first call
	b.ReportAllocs()
	b.SetBytes(int64(len(benchArgs)))
	for b.Loop() {
		Check(tool, "edit_file", benchArgs, benchRoots)
	}
}

func BenchmarkCheckNoListing(b *testing.B) {
	b.ReportAllocs()
	b.SetBytes(int64(len(benchArgs)))
	for b.Loop() {
		Check(nil, "edit_file", benchArgs, benchRoots)
	}
}

func BenchmarkCompile(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		Check(NewTool("edit_file", benchSchema), "edit_file", benchArgs, benchRoots)
	}
}
