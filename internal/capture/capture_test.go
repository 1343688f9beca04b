package capture

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/mcpgate/mcpgate/ctxapi"
	"github.com/mcpgate/mcpgate/vocab"
)

func entry(i int, result string) *Entry {
	return &Entry{
		EventID: "00000000-0000-4000-8000-00000000000" + string(rune('0'+i%10)), TS: "2026-12-01T00:00:00.000Z",
		Tool: "read_file", ToolAccess: "read", User: ctxapi.User{UserID: "u1", Roles: []string{"dev"}},
		FilterOutput: true, Arguments: json.RawMessage(`{"path":"/etc/hosts"}`),
		Result: json.RawMessage(result), ActionTaken: vocab.Redact, Outcome: vocab.OutcomeOK,
	}
}

func TestWriteThenReadMode0600(t *testing.T) {
	path := filepath.Join(t.TempDir(), "calls.jsonl")
	if err := os.WriteFile(path, nil, 0o644); err != nil { // an existing, wider file is narrowed
		t.Fatal(err)
	}
	w, err := Open(path, 0, 0, nil)
	if err != nil {
		t.Fatal(err)
	}
	want := []*Entry{entry(1, `{"content":[{"type":"text","text":"a"}]}`), entry(2, `{"content":[]}`)}
	for _, e := range want {
		w.Capture(e)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	st, err := os.Stat(path)
	if err != nil || st.Mode().Perm() != 0o600 {
		t.Fatalf("mode %v, want 0600 (%v)", st.Mode().Perm(), err)
	}
	f, _ := os.Open(path)
	defer f.Close()
	got, err := Read(f)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != len(want) {
		t.Fatalf("read %d entries, wrote %d", len(got), len(want))
	}
	for i := range want {
		if !reflect.DeepEqual(&got[i], want[i]) {
			t.Errorf("entry %d:\n got %+v\nwant %+v", i, got[i], *want[i])
		}
	}
}

func TestRotationKeepsMode0600(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "calls.jsonl")
	w, err := Open(path, 1, 2, nil)
	if err != nil {
		t.Fatal(err)
	}
	big := `{"content":[{"type":"text","text":"` + strings.Repeat("x", 300<<10) + `"}]}`
	for i := range 8 { // 2.4 MiB through a 1 MiB file: at least two rotations
		w.Capture(entry(i, big))
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	files, _ := filepath.Glob(filepath.Join(dir, "calls*.jsonl"))
	if len(files) < 2 {
		t.Fatalf("no rotation: %v", files)
	}
	for _, f := range files {
		if st, err := os.Stat(f); err != nil || st.Mode().Perm() != 0o600 {
			t.Errorf("%s: mode %v (%v), want 0600", f, st.Mode().Perm(), err)
		}
	}
}

func TestReadNamesTheBadLine(t *testing.T) {
	good, _ := json.Marshal(entry(1, `{}`))
	for _, tc := range []struct{ name, text, want string }{
		{"not JSON", string(good) + "\n{oops\n", "line 2"},
		{"no event id", string(good) + "\n\n" + `{"tool":"t"}` + "\n", "line 3: missing event_id"},
		{"an audit record", `{"ts":"2026-12-01T05:09:31.697Z","kind":"gateway_output_filter","event_id":"e1","tool":"read_text_file","method":"tools/call","action_taken":"redact","outcome":"ok"}` + "\n", "line 1: an audit record"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Read(strings.NewReader(tc.text))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %v, want one naming %q", err, tc.want)
			}
		})
	}
}

func FuzzRead(f *testing.F) {
	good, _ := json.Marshal(entry(1, `{"content":[]}`))
	f.Add(string(good) + "\n")
	f.Add("\n\n{}\n")
	f.Add(`{"event_id":"x","tool":"t","arguments":null}`)
	f.Fuzz(func(t *testing.T, text string) {
		es, err := Read(bytes.NewReader([]byte(text)))
		for _, e := range es {
			if e.EventID == "" || e.Tool == "" {
				t.Fatalf("an entry without event_id or tool was accepted: %+v", e)
			}
		}
		if err == nil && strings.TrimSpace(text) != "" && len(es) == 0 {
			t.Fatalf("non-empty input read as nothing without an error: %q", text)
		}
	})
}
