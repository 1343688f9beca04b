package jsonrpc

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
	"unicode"

	"github.com/mcpgate/mcpgate/vocab"
)

// TestParseRefusesAmbiguousMessages pins the one-reading rule
// (docs/decisions.md#one-reading) in both directions: every message here is read one
// way by encoding/json (case-insensitive, ſ→s, K→k, the last of equal members) and
// another by an exact-name reader (JSON.parse, Python), so Parse refuses it.
func TestParseRefusesAmbiguousMessages(t *testing.T) {
	const call = `"params":{"name":"wipe","arguments":{}}`
	tests := []struct {
		name, line string
		why        vocab.Reason
		kind       Kind
		id, method string
	}{
		// Envelope, client → server.
		{"METHOD before method", `{"jsonrpc":"2.0","id":7,"METHOD":"ping","method":"tools/call",` + call + `}`, vocab.ReasonCaseVariantMember, KindRequest, "7", ""},
		{"METHOD after method", `{"jsonrpc":"2.0","id":7,"method":"tools/call","METHOD":"ping",` + call + `}`, vocab.ReasonDuplicateMember, KindRequest, "7", ""},
		{"method twice", `{"jsonrpc":"2.0","id":7,"method":"ping","method":"tools/call",` + call + `}`, vocab.ReasonDuplicateMember, KindRequest, "7", ""},
		{"escaped method twice", `{"jsonrpc":"2.0","id":7,"method":"ping","m\u0065thod":"tools/call",` + call + `}`, vocab.ReasonDuplicateMember, KindRequest, "7", ""},
		{"PARAMS beside params", `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"safe"},"PARAMS":{"name":"wipe"}}`, vocab.ReasonDuplicateMember, KindRequest, "1", "tools/call"},
		{"paramſ beside params", `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"safe"},"paramſ":{"name":"wipe"}}`, vocab.ReasonDuplicateMember, KindRequest, "1", "tools/call"},
		{"param\\u017f beside params", `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"safe"},"param\u017f":{"name":"wipe"}}`, vocab.ReasonDuplicateMember, KindRequest, "1", "tools/call"},
		{"METHOD alone", `{"jsonrpc":"2.0","id":1,"METHOD":"tools/call",` + call + `}`, vocab.ReasonCaseVariantMember, KindRequest, "1", ""},
		{"Params alone", `{"jsonrpc":"2.0","id":1,"method":"tools/call","Params":{"name":"wipe"}}`, vocab.ReasonCaseVariantMember, KindRequest, "1", "tools/call"},
		{"id twice", `{"jsonrpc":"2.0","id":1,"Id":2,"method":"ping"}`, vocab.ReasonDuplicateMember, KindRequest, "", "ping"},
		{"JSONRPC", `{"jsonrpc":"2.0","JSONRPC":"1.0","id":1,"method":"ping"}`, vocab.ReasonDuplicateMember, KindRequest, "1", "ping"},
		// Arguments: Go servers fold them into their argument structs.
		{"NAME beside name", `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"safe","NAME":"wipe"}}`, vocab.ReasonDuplicateMember, KindRequest, "1", "tools/call"},
		{"Kelvin name", `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"safe","arguments":{"kind":1,"\u212aind":2}}}`, vocab.ReasonDuplicateMember, KindRequest, "1", "tools/call"},
		{"Arguments alone", `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"safe","Arguments":{"force":true}}}`, vocab.ReasonCaseVariantMember, KindRequest, "1", "tools/call"},
		{"Arguments beside arguments", `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"safe","arguments":{},"Arguments":{"force":true}}}`, vocab.ReasonDuplicateMember, KindRequest, "1", "tools/call"},
		{"force and FORCE", `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"safe","arguments":{"force":false,"FORCE":true}}}`, vocab.ReasonDuplicateMember, KindRequest, "1", "tools/call"},
		{"nested argument", `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"safe","arguments":{"opts":[{"x":1,"ſ":2,"s":3}]}}}`, vocab.ReasonDuplicateMember, KindRequest, "1", "tools/call"},
		{"uri twice", `{"jsonrpc":"2.0","id":1,"method":"resources/read","params":{"uri":"file:///ok","URI":"file:///secret"}}`, vocab.ReasonDuplicateMember, KindRequest, "1", "resources/read"},
		{"Uri alone", `{"jsonrpc":"2.0","id":1,"method":"resources/read","params":{"Uri":"file:///secret"}}`, vocab.ReasonCaseVariantMember, KindRequest, "1", "resources/read"},
		{"_meta twice", `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"x","_meta":{"progressToken":1,"progresstoken":2}}}`, vocab.ReasonDuplicateMember, KindRequest, "1", "tools/call"},
		{"_meta ProgressToken", `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"x","_META":{}}}`, vocab.ReasonCaseVariantMember, KindRequest, "1", "tools/call"},
		{"notification", `{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":1,"requestID":2}}`, vocab.ReasonDuplicateMember, KindNotification, "", "notifications/cancelled"},
		// Server → client.
		{"second result", `{"jsonrpc":"2.0","id":3,"result":{"content":[{"type":"text","text":"ok"}]},"RESULT":{"content":[{"type":"text","text":"evil"}]}}`, vocab.ReasonDuplicateMember, KindResponse, "3", ""},
		{"second result, shorter", `{"jsonrpc":"2.0","id":3,"result":{"content":[{"type":"text","text":"evil"}]},"RESULT":{"content":[]}}`, vocab.ReasonDuplicateMember, KindResponse, "3", ""},
		{"result twice", `{"jsonrpc":"2.0","id":3,"result":{"content":[]},"result":{"content":[]}}`, vocab.ReasonDuplicateMember, KindResponse, "3", ""},
		{"Result alone", `{"jsonrpc":"2.0","id":3,"Result":{"content":[]}}`, vocab.ReasonCaseVariantMember, KindResponse, "3", ""},
		{"content item TEXT", `{"jsonrpc":"2.0","id":3,"result":{"content":[{"type":"text","text":"ok","TEXT":"evil"}]}}`, vocab.ReasonDuplicateMember, KindResponse, "3", ""},
		{"content item Text alone", `{"jsonrpc":"2.0","id":3,"result":{"content":[{"type":"text","Text":"evil"}]}}`, vocab.ReasonCaseVariantMember, KindResponse, "3", ""},
		{"isError twice", `{"jsonrpc":"2.0","id":3,"result":{"content":[],"isError":false,"IsError":true}}`, vocab.ReasonDuplicateMember, KindResponse, "3", ""},
		{"structuredContent keys", `{"jsonrpc":"2.0","id":3,"result":{"content":[],"structuredContent":{"email":"a","EMAIL":"b"}}}`, vocab.ReasonDuplicateMember, KindResponse, "3", ""},
		{"error twice", `{"jsonrpc":"2.0","id":3,"error":{"code":1,"message":"a","MESSAGE":"b"}}`, vocab.ReasonDuplicateMember, KindResponse, "3", ""},
		{"disguised server request", `{"jsonrpc":"2.0","id":9,"method":"ping","Method":"sampling/createMessage","params":{}}`, vocab.ReasonDuplicateMember, KindRequest, "9", ""},
		{"disguised log notification", `{"jsonrpc":"2.0","method":"notifications/progress","METHOD":"notifications/message","params":{"level":"info","data":"x"}}`, vocab.ReasonDuplicateMember, KindNotification, "", ""},
		{"response turned request", `{"jsonrpc":"2.0","id":4,"result":{},"Method":"sampling/createMessage"}`, vocab.ReasonCaseVariantMember, KindRequest, "4", ""},
		// Content blocks wherever they stand: only an ElicitResult's content is data.
		{"sampling message content Text", `{"jsonrpc":"2.0","id":3,"method":"sampling/createMessage","params":{"messages":[{"role":"user","content":{"type":"text","Text":"EXFIL"}}],"maxTokens":9}}`, vocab.ReasonCaseVariantMember, KindRequest, "3", "sampling/createMessage"},
		{"sampling message content array Text", `{"jsonrpc":"2.0","id":3,"method":"sampling/createMessage","params":{"messages":[{"role":"user","content":[{"type":"text","Text":"EXFIL"}]}],"maxTokens":9}}`, vocab.ReasonCaseVariantMember, KindRequest, "3", "sampling/createMessage"},
		{"prompts/get message content Text", `{"jsonrpc":"2.0","id":3,"result":{"messages":[{"role":"user","content":{"type":"text","Text":"EXFIL"}}]}}`, vocab.ReasonCaseVariantMember, KindResponse, "3", ""},
		{"CreateMessageResult content Text", `{"jsonrpc":"2.0","id":3,"result":{"role":"assistant","content":{"type":"text","Text":"EXFIL"},"model":"m"}}`, vocab.ReasonCaseVariantMember, KindResponse, "3", ""},
		{"CreateMessageResult content MimeType", `{"jsonrpc":"2.0","id":3,"result":{"role":"assistant","content":{"type":"image","data":"AA==","MimeType":"image/png"},"model":"m"}}`, vocab.ReasonCaseVariantMember, KindResponse, "3", ""},
		{"tool result content array Text", `{"jsonrpc":"2.0","id":3,"result":{"content":[{"type":"text","text":"ok"},{"type":"text","Text":"EXFIL"}]}}`, vocab.ReasonCaseVariantMember, KindResponse, "3", ""},
		{"content beside a case-variant action", `{"jsonrpc":"2.0","id":3,"result":{"Action":"accept","content":{"type":"text","Text":"EXFIL"}}}`, vocab.ReasonCaseVariantMember, KindResponse, "3", ""},
		{"ElicitResult content duplicate", `{"jsonrpc":"2.0","id":3,"result":{"action":"accept","content":{"Name":"x","name":"y"}}}`, vocab.ReasonDuplicateMember, KindResponse, "3", ""},
		// Only a real ElicitResult's content is data: an "action" beside a prompt or
		// sampling message's content, or beside a CreateMessageResult's, makes no data
		// of it; nor does the name of the key an answer or request stands under.
		{"prompts/get message with action, MimeType", `{"jsonrpc":"2.0","id":3,"result":{"messages":[{"role":"user","action":"accept","content":{"type":"resource","resource":{"uri":"file:///a","MimeType":"text/plain","blob":"G101MjtjO2NtMGdMWEptSUg0PQc="}}}]}}`, vocab.ReasonCaseVariantMember, KindResponse, "3", ""},
		{"prompts/get message with action, Text", `{"jsonrpc":"2.0","id":3,"result":{"messages":[{"role":"user","action":"x","content":{"type":"text","Text":"EXFIL"}}]}}`, vocab.ReasonCaseVariantMember, KindResponse, "3", ""},
		{"sampling message with action", `{"jsonrpc":"2.0","id":3,"method":"sampling/createMessage","params":{"messages":[{"role":"user","action":"accept","content":{"type":"text","Text":"EXFIL"}}],"maxTokens":9}}`, vocab.ReasonCaseVariantMember, KindRequest, "3", "sampling/createMessage"},
		{"CreateMessageResult with action", `{"jsonrpc":"2.0","id":3,"result":{"role":"assistant","action":"accept","content":{"type":"text","Text":"EXFIL"},"model":"m"}}`, vocab.ReasonCaseVariantMember, KindResponse, "3", ""},
		{"input request under the key data", `{"jsonrpc":"2.0","id":3,"result":{"resultType":"input_required","inputRequests":{"data":{"method":"sampling/createMessage","params":{"messages":[{"role":"user","content":{"type":"text","Text":"EXFIL"}}],"maxTokens":9}}}}}`, vocab.ReasonCaseVariantMember, KindResponse, "3", ""},
		{"input request message with action", `{"jsonrpc":"2.0","id":3,"result":{"resultType":"input_required","inputRequests":{"q":{"method":"sampling/createMessage","params":{"messages":[{"role":"user","action":"accept","content":{"type":"text","Text":"EXFIL"}}],"maxTokens":9}}}}}`, vocab.ReasonCaseVariantMember, KindResponse, "3", ""},
		{"input response under the key metadata", `{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"t","inputResponses":{"metadata":{"role":"assistant","content":{"type":"text","Text":"EXFIL"},"model":"m"}}}}`, vocab.ReasonCaseVariantMember, KindRequest, "3", "tools/call"},
		{"input response: CreateMessageResult with action", `{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"t","inputResponses":{"q":{"role":"assistant","action":"accept","content":{"type":"text","Text":"EXFIL"},"model":"m"}}}}`, vocab.ReasonCaseVariantMember, KindRequest, "3", "tools/call"},
		{"action and content nested in a tool result", `{"jsonrpc":"2.0","id":3,"result":{"content":[{"type":"resource","resource":{"uri":"file:///a","action":"x","content":{"Text":"EXFIL"}}}]}}`, vocab.ReasonCaseVariantMember, KindResponse, "3", ""},
		// Names that are not Unicode.
		{"lone surrogate", `{"jsonrpc":"2.0","id":1,"method":"x","params":{"a\ud800":1}}`, vocab.ReasonInvalidMemberName, KindRequest, "1", "x"},
		{"invalid UTF-8", "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"x\",\"params\":{\"a\xff\":1}}", vocab.ReasonInvalidMemberName, KindRequest, "1", "x"},
		{"many members", `{"jsonrpc":"2.0","id":1,"method":"x","params":{"arguments":{` + manyMembers(40) + `,"K7":1}}}`, vocab.ReasonDuplicateMember, KindRequest, "1", "x"},
		// At the edges of the hashed names: the last name compared pairwise, the
		// first one hashed, each repeated right after.
		{"many members, 16th twice", `{"jsonrpc":"2.0","id":1,"method":"x","params":{"arguments":{` + manyMembers(16) + `,"k15":1}}}`, vocab.ReasonDuplicateMember, KindRequest, "1", "x"},
		{"many members, 17th twice", `{"jsonrpc":"2.0","id":1,"method":"x","params":{"arguments":{` + manyMembers(17) + `,"k16":1,"k17":1}}}`, vocab.ReasonDuplicateMember, KindRequest, "1", "x"},
		{"many members, last twice", `{"jsonrpc":"2.0","id":1,"method":"x","params":{"arguments":{` + manyMembers(5000) + `,"k4999":1}}}`, vocab.ReasonDuplicateMember, KindRequest, "1", "x"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			m, err := Parse([]byte(tc.line))
			var a *AmbiguousError
			if !errors.As(err, &a) {
				t.Fatalf("Parse = %v, want an *AmbiguousError", err)
			}
			if a.Reason != tc.why || a.Kind != tc.kind || string(a.ID) != tc.id || a.Method != tc.method {
				t.Fatalf("got reason %s kind %d id %q method %q; want %s %d %q %q", a.Reason, a.Kind, a.ID, a.Method, tc.why, tc.kind, tc.id, tc.method)
			}
			if m.Kind != KindInvalid || string(m.ID) != tc.id {
				t.Fatalf("message kind %d id %q", m.Kind, m.ID)
			}
			if strings.Contains(err.Error(), "wipe") || strings.Contains(err.Error(), "evil") {
				t.Fatalf("error carries a value: %v", err)
			}
		})
	}
}

func manyMembers(n int) string {
	var b strings.Builder
	for i := range n {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, `"k%d":%d`, i, i)
	}
	return b.String()
}

// TestParseKeepsOneReadingMessages: what real peers send passes, data included.
func TestParseKeepsOneReadingMessages(t *testing.T) {
	for _, line := range []string{
		`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"x","arguments":{"Name":"Bob","Type":"user","ID":7}}}`,
		`{"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"text","text":"a"}],"structuredContent":{"Name":"a","Items":[{"Key":"v"}]}}}`,
		`{"jsonrpc":"2.0","id":1,"result":{"tools":[{"name":"t","inputSchema":{"type":"object","properties":{"Path":{"type":"string"}}}}]}}`,
		`{"jsonrpc":"2.0","id":1,"result":{"action":"accept","content":{"Name":"Bob","Email":"b@example.com"}}}`,
		`{"jsonrpc":"2.0","id":1,"result":{"action":"accept","content":{"Name":"x","name2":"y","Text":"t","Type":1}}}`,
		`{"jsonrpc":"2.0","id":1,"result":{"content":{"Text":"t","MimeType":"m"},"action":"accept"}}`,
		`{"jsonrpc":"2.0","id":1,"result":{"content":{"Text":"t"},"\u0061ction":"accept"}}`,
		`{"jsonrpc":"2.0","id":1,"result":{"action":"accept","content":{"Name":"Bob"},"_meta":{"k":1}}}`,
		`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"t","arguments":{},"inputResponses":{"q":{"action":"accept","content":{"Name":"Bob","Text":"t"}},"r":{"roots":[]}}}}`,
		`{"jsonrpc":"2.0","id":1,"method":"tasks/update","params":{"taskId":"t","inputResponses":{"Name":{"action":"accept","content":{"MimeType":"free"}}}}}`,
		`{"jsonrpc":"2.0","id":1,"result":{"resultType":"input_required","inputRequests":{"Name":{"method":"roots/list"},"TEXT":{"method":"elicitation/create","params":{"message":"m","requestedSchema":{"type":"object","properties":{"Text":{"type":"string"}}}}}}}}`,
		`[{"jsonrpc":"2.0","id":1,"result":{"action":"accept","content":{"Name":"Bob"}}}]`,
		`{"jsonrpc":"2.0","id":1,"method":"sampling/createMessage","params":{"messages":[{"role":"user","content":{"type":"text","text":"a"}}],"maxTokens":9}}`,
		`{"jsonrpc":"2.0","id":1,"result":{"role":"assistant","content":{"type":"text","text":"a"},"model":"m","stopReason":"endTurn"}}`,
		`{"jsonrpc":"2.0","id":1,"result":{"messages":[{"role":"user","content":{"type":"resource","resource":{"uri":"file:///a","text":"t"}}}]}}`,
		`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"x","_meta":{"progressToken":1,"io.example/Trace":"t"}}}`,
		`{"jsonrpc":"2.0","method":"notifications/message","params":{"level":"info","data":{"Message":"m","Level":3}}}`,
		`{"jsonrpc":"2.0","id":1,"result":{"content":[],"x-Vendor":1,"extra":{"a":1,"b":2}}}`,
		`{"jsonrpc":"2.0","id":1,"method":"x","params":{"arguments":{` + manyMembers(40) + `}}}`,
		`{"jsonrpc":"2.0","id":1,"method":"x","params":{"arguments":{"a\u00e9":1,"a\u00c9x":2,"😀":3,"\ud83d\ude00x":4}}}`,
		`{"jsonrpc":"2.0","id":1,"method":"x","params":{"arguments":{"\u0130":1,"i":2,"\u0131":3}}}`,
		` {"jsonrpc":"2.0","id":1,"method":"x","params":{ "a" : [ 1 , {"b" : null } ] , "c":true }} `,
	} {
		if _, err := Parse([]byte(line)); err != nil {
			t.Errorf("Parse(%s) = %v", line, err)
		}
	}
}

// TestFoldMatchesEqualFold: appendFolded folds two runes alike exactly when their
// simple case folding orbits are one (the encoding/json matching the rule protects).
func TestFoldMatchesEqualFold(t *testing.T) {
	for r := rune(0); r <= unicode.MaxRune; r++ {
		f := foldRune(r)
		for s := unicode.SimpleFold(r); s != r; s = unicode.SimpleFold(s) {
			if foldRune(s) != f {
				t.Fatalf("%U and %U share an orbit but fold to %U and %U", r, s, f, foldRune(s))
			}
		}
	}
	if string(appendFolded(nil, []byte("paramſ"))) != "PARAMS" || string(appendFolded(nil, []byte("\u212aind"))) != "KIND" {
		t.Fatal("ſ or K does not fold to ASCII")
	}
}

// BenchmarkParse measures Parse beside the envelope decode it did before the
// one-reading check, on a tools/call request and on a 4 KiB tools/call result (the
// relay/stdio latency workload); each case checks its result first.
func BenchmarkParse(b *testing.B) {
	text := strings.Repeat("lorem ipsum dolor sit amet, ", 4096/28+1)[:4096]
	cases := map[string]string{
		"request":     `{"jsonrpc":"2.0","id":1001,"method":"tools/call","params":{"name":"big","arguments":{"bytes":4096},"_meta":{"progressToken":7}}}`,
		"result-4KiB": `{"jsonrpc":"2.0","id":1001,"result":{"content":[{"type":"text","text":"` + text + `"}],"structuredContent":{"bytes":4096,"kind":"text"},"isError":false}}`,
		// About 1 MiB: an object of 75,000 short names, each one checked for a duplicate.
		"members-1MiB": `{"jsonrpc":"2.0","id":1001,"result":{"structuredContent":{` + manyMembers(75000) + `}}}`,
	}
	for name, line := range cases {
		b.Run(name+"/envelope-only", func(b *testing.B) {
			var e envelope
			if json.Unmarshal([]byte(line), &e) != nil || e.JSONRPC != "2.0" {
				b.Fatal("bad case")
			}
			b.SetBytes(int64(len(line)))
			b.ReportAllocs()
			for b.Loop() {
				var e envelope
				_ = json.Unmarshal(bytes.Clone([]byte(line)), &e)
			}
		})
		b.Run(name+"/parse", func(b *testing.B) {
			if m, err := Parse([]byte(line)); err != nil || m.Kind == KindInvalid {
				b.Fatalf("Parse: %v", err)
			}
			b.SetBytes(int64(len(line)))
			b.ReportAllocs()
			for b.Loop() {
				_, _ = Parse([]byte(line))
			}
		})
		b.Run(name+"/check-only", func(b *testing.B) {
			lb := []byte(line)
			if checkReading(lb) != "" {
				b.Fatal("refused")
			}
			b.SetBytes(int64(len(line)))
			b.ReportAllocs()
			for b.Loop() {
				_ = checkReading(lb)
			}
		})
	}
}
