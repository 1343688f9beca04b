package bound

import (
	"encoding/json"
	"strings"
	"testing"
	"unicode/utf8"
)

func TestTruncate(t *testing.T) {
	for _, tc := range []struct {
		in   string
		max  int
		want string
	}{
		{"short", 10, "short"},
		{"exactly10!", 10, "exactly10!"},
		{"abcdefghijk", 10, "abcdefg…"},
		{"ééééé", 6, "é…"}, // "é" is 2 bytes and "…" 3: one é fits
		{"abc", 2, "…"},    // below 3 bytes only the mark is left
	} {
		got := Truncate(tc.in, tc.max)
		if got != tc.want {
			t.Errorf("Truncate(%q, %d) = %q, want %q", tc.in, tc.max, got, tc.want)
		}
		if !utf8.ValidString(got) {
			t.Errorf("Truncate(%q, %d) = %q is not valid UTF-8", tc.in, tc.max, got)
		}
	}
}

func TestToolNameOK(t *testing.T) {
	for _, tc := range []struct {
		name string
		ok   bool
	}{
		{"", false},
		{"echo", true},
		{strings.Repeat("a", 128), true},
		{strings.Repeat("a", 129), false},
		{strings.Repeat("é", 128), true}, // 128 characters, 256 bytes
		{strings.Repeat("é", 129), false},
		{strings.Repeat("x", 4<<20), false},
	} {
		if got := ToolNameOK(tc.name); got != tc.ok {
			t.Errorf("ToolNameOK(%d bytes) = %v, want %v", len(tc.name), got, tc.ok)
		}
	}
}

func FuzzTruncate(f *testing.F) {
	f.Add("hello world", 5)
	f.Add("ééé", 4)
	f.Fuzz(func(t *testing.T, s string, max int) {
		if max < 0 || max > 1<<16 {
			return
		}
		got := Truncate(s, max)
		if len(s) <= max && got != s {
			t.Fatalf("a fitting string changed: %q → %q", s, got)
		}
		if len(s) > max && len(got) > max && max >= 3 {
			t.Fatalf("Truncate(%q, %d) = %d bytes", s, max, len(got))
		}
		if utf8.ValidString(s) && !utf8.ValidString(got) {
			t.Fatalf("valid input became invalid: %q", got)
		}
	})
}

func TestEscapeControls(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"plain tool_name", "plain tool_name"},
		{"ü € 日本", "ü € 日本"},
		{"read\u202efile", `read\u202efile`},
		{"a\u0085b\u009bc", `a\u0085b\u009bc`},
		{"\u2066x\u2069\u200e\u200f\u061c", `\u2066x\u2069\u200e\u200f\u061c`},
	} {
		if got := string(EscapeControls([]byte(tc.in))); got != tc.want {
			t.Errorf("EscapeControls(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
	// Inside JSON the escaped line decodes to the same value.
	line, _ := json.Marshal(map[string]string{"tool": "x\u202eevil\u0085"})
	var back map[string]string
	if err := json.Unmarshal(EscapeControls(line), &back); err != nil || back["tool"] != "x\u202eevil\u0085" {
		t.Fatalf("round trip: %v %q", err, back["tool"])
	}
}

func FuzzEscapeControls(f *testing.F) {
	f.Add([]byte("read\u202efile\u0085"))
	f.Fuzz(func(t *testing.T, b []byte) {
		out := EscapeControls(b)
		for _, r := range string(out) {
			if isHidingControl(r) {
				t.Fatalf("%q left in %q", r, out)
			}
		}
		if utf8.Valid(b) {
			line, _ := json.Marshal(string(b))
			var back string
			if err := json.Unmarshal(EscapeControls(line), &back); err != nil || back != string(b) {
				t.Fatalf("JSON round trip of %q: %v %q", b, err, back)
			}
		}
	})
}
