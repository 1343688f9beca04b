package ctxapi

import (
	"strings"
	"testing"
	"time"
)

func TestRateLimiter(t *testing.T) {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	rl := NewRateLimiter(time.Hour, func() time.Time { return now })
	for i := 1; i <= 5; i++ {
		rl.Arrive("u")
		if got, want := rl.Exceeded("u", 3), i >= 4; got != want {
			t.Fatalf("call %d: Exceeded(3) = %v", i, got)
		}
		if rl.Exceeded("other", 0) {
			t.Fatal("users share a window")
		}
		now = now.Add(10 * time.Minute)
	}
	// sliding: at 0:50 the calls from 0:00 and 0:10 have left the window
	now = now.Add(10 * time.Minute) // 1:00 → calls at 0:10..0:40 remain
	if c := rl.Count("u"); c != 4 {
		t.Fatalf("count after slide = %d, want 4", c)
	}
	now = now.Add(2 * time.Hour)
	if rl.Count("u") != 0 || rl.Exceeded("u", 0) {
		t.Fatal("window did not expire")
	}
}

func TestRateLimiterBoundedMemory(t *testing.T) {
	now := time.Unix(0, 0)
	rl := NewRateLimiter(time.Hour, func() time.Time { return now })
	for i := 0; i < 20000; i++ {
		rl.Arrive("u")
		now = now.Add(500 * time.Millisecond)
	}
	if n := len(rl.users["u"].buckets); n > 3600 {
		t.Fatalf("%d buckets", n)
	}
	if c := rl.Count("u"); c < 7190 || c > 7200 {
		t.Fatalf("count %d", c)
	}
}

func TestRewriteStrings(t *testing.T) {
	up := func(s string) (string, int) {
		if strings.Contains(s, "secret") {
			return strings.ReplaceAll(s, "secret", "[X]"), 1
		}
		return s, 0
	}
	cases := []struct{ in, want string }{
		{`[{"type":"text","text":"a secret"}]`, `[{"type":"text","text":"a [X]"}]`},
		{`[{"type":"image","data":"secret","mimeType":"secret"}]`, `[{"type":"image","data":"secret","mimeType":"secret"}]`},
		{`[{"type":"resource","resource":{"uri":"x","blob":"secret","text":"secret \"q\" \u00e9"}}]`, `[{"type":"resource","resource":{"uri":"x","blob":"secret","text":"[X] \"q\" é"}}]`},
		{` [ {"secret" : "secret", "n": [1, true, null, "secret"]} ] `, ` [ {"secret" : "[X]", "n": [1, true, null, "[X]"]} ] `},
		{`[{"type":"text","text":"nothing"}]`, `[{"type":"text","text":"nothing"}]`},
	}
	for _, tc := range cases {
		out, _, err := RewriteStrings([]byte(tc.in), ContentSkipKeys, up)
		if err != nil || string(out) != tc.want {
			t.Errorf("%s\n got %s (%v)\nwant %s", tc.in, out, err, tc.want)
		}
	}
	// the output outgrows raw: replacements longer than what they replace, in
	// several strings, and new text that escapes differently from the input
	grow := func(s string) (string, int) {
		if s == "" {
			return s, 0
		}
		return strings.Repeat("<"+s+"\n>", 40), 1
	}
	growCases := []struct{ in, want string }{
		{`["a","b",{"type":"c","k":""}]`, `["` + strings.Repeat(`<a\n>`, 40) + `","` + strings.Repeat(`<b\n>`, 40) + `",{"type":"c","k":""}]`},
		{`["\u00e9"]`, `["` + strings.Repeat("<\u00e9\\n>", 40) + `"]`},
		{"[\"\u2028\"]", `["` + strings.Repeat(`<\u2028\n>`, 40) + `"]`},
		{"[\"\xff\"]", `["` + strings.Repeat(`<\ufffd\n>`, 40) + `"]`},
	}
	for _, tc := range growCases {
		out, n, err := RewriteStrings([]byte(tc.in), ContentSkipKeys, grow)
		if err != nil || string(out) != tc.want || n != strings.Count(tc.want, "<")/40 {
			t.Errorf("%s\n got %s (%d, %v)\nwant %s", tc.in, out, n, err, tc.want)
		}
	}
	for _, bad := range []string{`[`, `{"a":"x}`, `[}`, `]`} {
		if _, _, err := RewriteStrings([]byte(bad), nil, up); err == nil {
			t.Errorf("%s: no error", bad)
		}
	}
}
