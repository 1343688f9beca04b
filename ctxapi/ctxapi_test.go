package ctxapi

import (
	"strings"
	"testing"
	"time"

	"github.com/mcpgate/mcpgate/engine"
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
		out, _, err := rewriteStrings([]byte(tc.in), ContentSkipKeys, up)
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
		out, n, err := rewriteStrings([]byte(tc.in), ContentSkipKeys, grow)
		if err != nil || string(out) != tc.want || n != strings.Count(tc.want, "<")/40 {
			t.Errorf("%s\n got %s (%d, %v)\nwant %s", tc.in, out, n, err, tc.want)
		}
	}
	for _, bad := range []string{`[`, `{"a":"x}`, `[}`, `]`} {
		if _, _, err := rewriteStrings([]byte(bad), nil, up); err == nil {
			t.Errorf("%s: no error", bad)
		}
	}
}

// TestRewriteMembers: fn gets each string's nearest member name, as the engine's
// scan of a result reads it; with the engine's AppendRedactMember an SSN cued only by
// its member name is redacted wherever it sits, and nothing else changes.
func TestRewriteMembers(t *testing.T) {
	var got []string
	_, _, err := RewriteMembersAppend([]byte(`{"a":"1","b":{"c":["2",["3"],{"d":"4"}]},"e\u0073n":"5"}`), nil,
		func(dst []byte, member, s string) ([]byte, int) {
			got = append(got, member+"="+s)
			return dst, 0
		})
	if want := "a=1 c=2 c=3 d=4 esn=5"; err != nil || strings.Join(got, " ") != want {
		t.Fatalf("members %q, %v; want %q", strings.Join(got, " "), err, want)
	}
	got = got[:0]
	if _, _, err := RewriteMembersAppend([]byte(`["x",{"k":"y"}]`), nil, func(dst []byte, member, s string) ([]byte, int) {
		got = append(got, member+"="+s)
		return dst, 0
	}); err != nil || strings.Join(got, " ") != "=x k=y" {
		t.Fatalf("top-level array: %q, %v", got, err)
	}

	a, err := engine.New(engine.Options{})
	if err != nil {
		t.Fatal(err)
	}
	redact := func(raw string, skip map[string]bool) (string, int) {
		out, n, err := RewriteMembersAppend([]byte(raw), skip, func(dst []byte, member, s string) ([]byte, int) {
			return a.AppendRedactMember(dst, s, member, engine.StrategyRedact, []string{"secret", "pii_us_ssn"})
		})
		if err != nil {
			t.Fatalf("%s: %v", raw, err)
		}
		return string(out), n
	}
	cases := []struct {
		name, in, want string
		skip           map[string]bool
	}{
		{"cued member", `{"ssn":"321549876"}`, `{"ssn":"[REDACTED:SSN]"}`, nil},
		{"upper case", `{"SSN":"321549876"}`, `{"SSN":"[REDACTED:SSN]"}`, nil},
		{"snake case", `{"social_security_number":"321549876"}`, `{"social_security_number":"[REDACTED:SSN]"}`, nil},
		{"escaped name", `{"\u0073sn":"321549876"}`, `{"\u0073sn":"[REDACTED:SSN]"}`, nil},
		{"uncued member", `{"id":"321549876","order":"321549876"}`, `{"id":"321549876","order":"321549876"}`, nil},
		{"nested", `{"customer":{"name":"Ada","ssn":"321549876","id":"321549876"}}`, `{"customer":{"name":"Ada","ssn":"[REDACTED:SSN]","id":"321549876"}}`, nil},
		{"array under the member", `{"ssn":["321549876",["412345678"]]}`, `{"ssn":["[REDACTED:SSN]",["[REDACTED:SSN]"]]}`, nil},
		{"objects in an array", `{"people":[{"ssn":"321549876"},{"id":"321549876"}]}`, `{"people":[{"ssn":"[REDACTED:SSN]"},{"id":"321549876"}]}`, nil},
		{"after a member object", `{"ssn":{"v":"x"},"id":"321549876"}`, `{"ssn":{"v":"x"},"id":"321549876"}`, nil},
		{"number, not a string", `{"ssn":321549876}`, `{"ssn":321549876}`, nil},
		{"invalid area", `{"ssn":"666549876"}`, `{"ssn":"666549876"}`, nil},
		{"top-level array", `["321549876"]`, `["321549876"]`, nil},
		{"content text that is JSON", `[{"type":"text","text":"{\"social_security_number\":\"321549876\"}"}]`,
			`[{"type":"text","text":"{\"social_security_number\":\"[REDACTED:SSN]\"}"}]`, ContentSkipKeys},
		{"embedded resource", `[{"type":"resource","resource":{"uri":"x","text":"{\"ssn\": \"321549876\"}"}}]`,
			`[{"type":"resource","resource":{"uri":"x","text":"{\"ssn\": \"[REDACTED:SSN]\"}"}}]`, ContentSkipKeys},
		{"credential member", `{"aws_secret_access_key":"9drTJvcXLB89EXAMPLEoJ3e9fMtaSTxwYgPqdaQz"}`, `{"aws_secret_access_key":"[REDACTED:AWS_SECRET_ACCESS_KEY]"}`, nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, n := redact(c.in, c.skip)
			if got != c.want || (n > 0) != (c.want != c.in) {
				t.Fatalf("redact(%s) = %s, %d; want %s", c.in, got, n, c.want)
			}
		})
	}
}
