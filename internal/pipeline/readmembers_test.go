package pipeline

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/mcpgate/mcpgate/internal/jsonscan"
)

// The decoding readers the member reads replaced (docs/decisions.md#read-members):
// each decoded the whole result into a map to read one member.
func inputRequiredDecoded(result json.RawMessage) bool {
	var t string
	return json.Unmarshal(field(result, "resultType"), &t) == nil && t == "input_required"
}

func splitResultDecoded(result json.RawMessage) (content, structured json.RawMessage, ok bool) {
	var m map[string]json.RawMessage
	if json.Unmarshal(result, &m) != nil || m == nil {
		return nil, nil, false
	}
	content = m["content"]
	if len(content) == 0 || string(content) == "null" {
		content = json.RawMessage("[]")
	}
	if sc := m["structuredContent"]; len(sc) > 0 {
		structured = sc
	}
	return content, structured, true
}

// sameReading fails t when inputRequired or splitResult decide otherwise than the
// decoding readers on result.
func sameReading(t *testing.T, result []byte) {
	t.Helper()
	if got, want := inputRequired(result), inputRequiredDecoded(result); got != want {
		t.Fatalf("inputRequired(%q) = %v; decoded %v", result, got, want)
	}
	c, s, ok := splitResult(result)
	wc, ws, wok := splitResultDecoded(result)
	if ok != wok || !bytes.Equal(c, wc) || !bytes.Equal(s, ws) || (s == nil) != (ws == nil) {
		t.Fatalf("splitResult(%q) = %q, %q, %v; decoded %q, %q, %v", result, c, s, ok, wc, ws, wok)
	}
}

// TestReadMembersDecideAsDecoding: reading the members in place decides every result
// as decoding it whole did: escaped names and values, repeated names (the last
// counts), null, absent and non-object results.
func TestReadMembersDecideAsDecoding(t *testing.T) {
	for _, r := range []string{
		`{"content":[{"type":"text","text":"ok"}]}`,
		`{"content":[{"type":"text","text":"a \"quoted\" {brace}"}],"structuredContent":{"k":[1,2]}}`,
		`{"resultType":"input_required","inputRequests":{"a":{"method":"roots/list"}}}`,
		`{"resultType":"input\u005frequired"}`,
		`{"result\u0054ype":"input_required"}`,
		`{"resultType":"input_required","resultType":"complete"}`,
		`{"resultType":"complete","resultType":"input_required"}`,
		`{"resultType":null}`, `{"resultType":7}`, `{"ResultType":"input_required"}`,
		`{"content":null,"structuredContent":null}`,
		`{"content":[1],"content":[2],"\u0063ontent":[3]}`,
		`{"structuredContent":{}}`, `{}`, ` { } `, `null`, `[]`, `"x"`, `12`,
		"{\"content\":[{\"text\":\"\xff\"}],\"resultType\":\"input_required\xff\"}",
	} {
		sameReading(t, []byte(r))
	}
}

// FuzzReadMembers: on any valid JSON (jsonrpc.Parse validated every result the
// pipeline reads) the member reads decide as decoding did.
func FuzzReadMembers(f *testing.F) {
	f.Add(`{"resultType":"input\u005frequired","content":[{"type":"text","text":"x"}]}`)
	f.Add(`{"content":null,"structuredContent":{"a":"}"},"content":[]}`)
	f.Add(`[{"content":[]}]`)
	f.Fuzz(func(t *testing.T, s string) {
		if json.Valid([]byte(s)) {
			sameReading(t, []byte(s))
		}
	})
}

// BenchmarkResultMembers is the CPU the reads of one result cost per call, decoded
// whole (each reader its own json.Unmarshal: inputRequired, splitResult and the
// relay's taskIndex.created) against read in place, on a 4 KiB and a 256 KiB text
// result. Run: go test -run XXX -bench ResultMembers ./internal/pipeline/
func BenchmarkResultMembers(b *testing.B) {
	for _, size := range []int{4 << 10, 256 << 10} {
		text := strings.Repeat("line of build output, \"quoted\" and tabbed\t;\n", size/46)
		item, _ := json.Marshal(map[string]string{"type": "text", "text": text})
		result := []byte(`{"content":[` + string(item) + `],"structuredContent":{"ok":true}}`)
		name := map[int]string{4 << 10: "4KiB", 256 << 10: "256KiB"}[size]
		b.Run(name+"/decoded", func(b *testing.B) {
			b.SetBytes(int64(len(result)))
			for b.Loop() {
				_ = inputRequiredDecoded(result)
				_, _, _ = splitResultDecoded(result)
				var r struct {
					Task *struct {
						TaskID string `json:"taskId"`
					} `json:"task"`
				}
				_ = json.Unmarshal(result, &r)
			}
		})
		b.Run(name+"/members", func(b *testing.B) {
			b.SetBytes(int64(len(result)))
			for b.Loop() {
				_ = inputRequired(result)
				_, _, _ = splitResult(result)
				task := false // the relay's look for a task before decoding one
				jsonscan.Members(result, func(name, _ []byte) { task = task || jsonscan.StringFolds(name, "task") })
			}
		})
	}
}
