package bound

import (
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
