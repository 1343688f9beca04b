package guardrail

import (
	"encoding/json"
	"reflect"
	"testing"
)

func TestLeaves(t *testing.T) {
	tests := []struct {
		name   string
		doc    string
		result bool
		want   []Text
	}{
		{"arguments", `{"b":"x","a":{"c/d":["y",1,true,null,{"e~":"z"}]}}`, false,
			[]Text{{"/a/c~1d/0", "y"}, {"/a/c~1d/4/e~0", "z"}, {"/b", "x"}}},
		{"result", `{"content":[{"type":"text","text":"hi"},{"type":"image","data":"AAAA","mimeType":"image/png"},{"type":"resource","resource":{"uri":"file:///a","text":"t","blob":"QQ=="}}],"structuredContent":{"v":"s"},"_meta":{"m":"no"},"isError":false}`, true,
			[]Text{{"/content/0/text", "hi"}, {"/content/2/resource/text", "t"}, {"/content/2/resource/uri", "file:///a"}, {"/structuredContent/v", "s"}}},
		// type, mimeType, blob and data are left out only as a content block's own
		// members (or its embedded resource's): elsewhere the output rules read them as
		// text, and so does the guardrail
		{"data-named members outside a block", `{"content":[{"type":"text","text":"hi","_meta":{"data":"m"},"annotations":{"type":"a"}},{"type":"resource","resource":{"uri":"u","resource":{"blob":"b"}}}],"structuredContent":{"data":"d","type":"t","x":{"mimeType":"m2","blob":"b2"}}}`, true,
			[]Text{{"/content/0/_meta/data", "m"}, {"/content/0/annotations/type", "a"}, {"/content/0/text", "hi"},
				{"/content/1/resource/resource/blob", "b"}, {"/content/1/resource/uri", "u"},
				{"/structuredContent/data", "d"}, {"/structuredContent/type", "t"}, {"/structuredContent/x/blob", "b2"}, {"/structuredContent/x/mimeType", "m2"}}},
		{"no content", `{}`, true, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Leaves(json.RawMessage(tt.doc), tt.result)
			if err != nil || !reflect.DeepEqual(got, tt.want) {
				t.Fatalf("got %v, %v\nwant %v", got, err, tt.want)
			}
		})
	}
	if _, err := Leaves(json.RawMessage(`[1]`), false); err == nil {
		t.Fatal("an array was read as an object")
	}
}

// TestLeavesUnder: a block part leaves out its own type, mimeType, blob and data; a
// free part (read whole by the output rules) leaves out nothing.
func TestLeavesUnder(t *testing.T) {
	doc := json.RawMessage(`{"contents":[{"uri":"u","mimeType":"text/plain","text":"t"}],"other":{"data":"d","type":"x"}}`)
	got, err := LeavesUnder(doc, [][]string{{"contents", "0"}, {"other"}, {"missing"}}, []bool{true, false, false})
	want := []Text{{"/contents/0/text", "t"}, {"/contents/0/uri", "u"}, {"/other/data", "d"}, {"/other/type", "x"}}
	if err != nil || !reflect.DeepEqual(got, want) {
		t.Fatalf("got %v, %v\nwant %v", got, err, want)
	}
}

func TestReplace(t *testing.T) {
	doc := json.RawMessage(`{"a":[{"t":"x"},2.50],"b":"<y>"}`)
	got, err := Replace(doc, []Text{{"/a/0/t", "new"}})
	if err != nil || string(got) != `{"a":[{"t":"new"},2.50],"b":"<y>"}` {
		t.Fatalf("%s %v", got, err)
	}
	for _, p := range []string{"/a/1", "/a/9/t", "/c", "/a/x/t", ""} {
		if _, err := Replace(doc, []Text{{p, "v"}}); err == nil {
			t.Errorf("pointer %q replaced no string leaf but was accepted", p)
		}
	}
}

// FuzzLeaves: any document; when it has leaves, writing them back unchanged gives a
// document with the same leaves, and no input panics.
func FuzzLeaves(f *testing.F) {
	f.Add([]byte(`{"content":[{"type":"text","text":"hi"}],"structuredContent":{"a":["b"]}}`), true)
	f.Add([]byte(`{"a/b":{"~":"x"},"n":1e400}`), false)
	f.Fuzz(func(t *testing.T, doc []byte, result bool) {
		leaves, err := Leaves(doc, result)
		if err != nil || len(leaves) == 0 {
			return
		}
		out, err := Replace(doc, leaves)
		if err != nil {
			t.Fatalf("writing back %v: %v", leaves, err)
		}
		again, err := Leaves(out, result)
		if err != nil || !reflect.DeepEqual(again, leaves) {
			t.Fatalf("leaves changed: %v -> %v (%v)", leaves, again, err)
		}
	})
}

// FuzzDecision: any answer body reads as allow, deny or malformed, never a panic;
// an allow needs a literal true.
func FuzzDecision(f *testing.F) {
	for _, s := range []string{`{"decision":true}`, `{"result":{"allow":true}}`, `{"result":true}`, `{}`, `null`, `{"result":null}`} {
		f.Add([]byte(s), true)
		f.Add([]byte(s), false)
	}
	f.Fuzz(func(t *testing.T, raw []byte, authzen bool) {
		kind := KindOPA
		if authzen {
			kind = KindAuthZEN
		}
		allowed, ok := decision(kind, raw)
		if allowed && !ok {
			t.Fatal("allowed without a decision")
		}
	})
}
