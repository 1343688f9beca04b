package jsonscan

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/mcpgate/mcpgate/internal/costtest"
)

// membersRef is what encoding/json reads into a map: each decoded name's last value,
// and whether the document is an object.
func membersRef(b []byte) (map[string]json.RawMessage, bool) {
	var m map[string]json.RawMessage
	if json.Unmarshal(b, &m) != nil || m == nil {
		return nil, false
	}
	return m, true
}

// members is Members' reading as a map: each decoded name's last value.
func members(b []byte) (map[string]json.RawMessage, bool) {
	m := map[string]json.RawMessage{}
	ok := Members(b, func(name, v []byte) {
		var s string
		if json.Unmarshal(name, &s) != nil {
			panic("Members gave a name that is not a JSON string: " + string(name))
		}
		m[s] = v
	})
	return m, ok
}

func TestMembers(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want map[string]string // nil: not an object
	}{
		{`{}`, map[string]string{}},
		{` { "a" : 1 , "b":[1,{"c":"}"}] ,"d":"x\"}"} `, map[string]string{"a": "1", "b": `[1,{"c":"}"}]`, "d": `"x\"}"`}},
		{`{"a":1,"a":2}`, map[string]string{"a": "2"}},
		{`{"\u0061":true,"a":null}`, map[string]string{"a": "null"}},
		{`{"a":{"b":{}},"c":-1.5e3}`, map[string]string{"a": `{"b":{}}`, "c": "-1.5e3"}},
		{`null`, nil},
		{`[{"a":1}]`, nil},
		{`"{}"`, nil},
	} {
		got, ok := members([]byte(tc.in))
		if ok != (tc.want != nil) {
			t.Errorf("Members(%s): object %v, want %v", tc.in, ok, tc.want != nil)
			continue
		}
		if !ok {
			continue
		}
		if len(got) != len(tc.want) {
			t.Errorf("Members(%s) = %s; want %v", tc.in, got, tc.want)
		}
		for k, v := range tc.want {
			if string(got[k]) != v {
				t.Errorf("Members(%s)[%q] = %s; want %s", tc.in, k, got[k], v)
			}
		}
	}
}

func TestStringIs(t *testing.T) {
	for _, tc := range []struct {
		raw, s    string
		is, folds bool
	}{
		{`"task"`, "task", true, true},
		{`"\u0074ask"`, "task", true, true},
		{`"Task"`, "task", false, true},
		{`"tas\u212a"`, "task", false, true}, // the Kelvin sign folds to k, as encoding/json matches it
		{`"taskx"`, "task", false, false},
		{`7`, "7", false, false},
		{`null`, "", false, false},
		{"\"a\xff\"", "a\uFFFD", true, true},
		{"", "", false, false},
	} {
		if got := StringIs([]byte(tc.raw), tc.s); got != tc.is {
			t.Errorf("StringIs(%s, %q) = %v", tc.raw, tc.s, got)
		}
		if got := StringFolds([]byte(tc.raw), tc.s); got != tc.folds {
			t.Errorf("StringFolds(%s, %q) = %v", tc.raw, tc.s, got)
		}
	}
}

// FuzzMembers: on valid JSON, Members reads what encoding/json reads into a map (the
// last value of each decoded name, byte for byte), StringIs decodes a name as it does,
// and every name encoding/json matches to a struct field tagged "task" is one
// StringFolds finds.
func FuzzMembers(f *testing.F) {
	f.Add(`{"content":[{"type":"text","text":"a\"b"}],"structuredContent":{"x":1}}`)
	f.Add(`{"resultType":"input\u005frequired","resultType":"complete"}`)
	f.Add(`{"TASK":{"taskId":"t"},"Tas\u212a":1}`)
	f.Add(` [ 1 , "x" ] `)
	f.Fuzz(func(t *testing.T, s string) {
		b := []byte(s)
		if !json.Valid(b) {
			return
		}
		want, wantOK := membersRef(b)
		got, ok := members(b)
		if ok != wantOK {
			t.Fatalf("Members(%q): object %v; encoding/json %v", b, ok, wantOK)
		}
		if ok && len(got) != len(want) {
			t.Fatalf("Members(%q) = %q; encoding/json %q", b, got, want)
		}
		for k, v := range want {
			if !bytes.Equal(got[k], v) {
				t.Fatalf("Members(%q)[%q] = %q; encoding/json %q", b, k, got[k], v)
			}
		}
		var task struct {
			Task json.RawMessage `json:"task"`
		}
		folds := false
		Members(b, func(name, v []byte) {
			var d string
			_ = json.Unmarshal(name, &d)
			if !StringIs(name, d) {
				t.Fatalf("StringIs(%s, %q) = false", name, d)
			}
			folds = folds || StringFolds(name, "task")
		})
		if json.Unmarshal(b, &task) == nil && task.Task != nil && !folds {
			t.Fatalf("%q fills a field tagged task, and StringFolds found no such name", b)
		}
	})
}

// Reading an object's members costs the same per byte at 4 KiB and 1 MiB, on a
// result of nested items with an escape every 80 bytes.
func TestMembersLinear(t *testing.T) {
	shape := func(n int) []byte {
		item := `{"type":"text","text":"` + strings.Repeat("x", 78) + `\n"},`
		b := []byte(`{"content":[`)
		for len(b) < n-len(item)-40 {
			b = append(b, item...)
		}
		return append(b, `{}],"resultType":"complete"}`...)
	}
	small, big := shape(4<<10), shape(1<<20)
	if _, ok := members(big); !ok {
		t.Fatal("Members(big) did not read an object")
	}
	costtest.Linear(t, small, big, func(b []byte) { Members(b, func(_, _ []byte) {}) })
}
