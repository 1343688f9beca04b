package engine

import (
	"crypto/sha256"
	"encoding/hex"
	"strings"
	"testing"
)

func TestRedact(t *testing.T) {
	a, _ := New(Options{})
	sum := sha256.Sum256([]byte("alice@example.com"))
	h := hex.EncodeToString(sum[:4])
	tests := []struct {
		name     string
		in       string
		strategy Strategy
		kinds    []string
		want     string
		n        int
	}{
		{"email redact", "mail alice@example.com now", StrategyRedact, nil, "mail [REDACTED:EMAIL] now", 1},
		{"email hash", "alice@example.com", StrategyHash, []string{"email"}, "[HASH:EMAIL:" + h + "]", 1},
		{"card mask", "card 4242424242424242.", StrategyMask, nil, "card ************4242.", 1},
		{"mask short", "ip 1.2.3.4", StrategyMask, nil, "ip ***.3.4", 1},
		{"kinds by rule id", "a@b.io 4111 1111 1111 1111", StrategyRedact, []string{"pii_payment_card"}, "a@b.io [REDACTED:CARD]", 1},
		{"kinds filter out", "a@b.io", StrategyRedact, []string{"card"}, "a@b.io", 0},
		{"all kinds", "a@b.io AKIA2OGYBAH6STMMNXNN 123-45-6789", StrategyRedact, nil, "[REDACTED:EMAIL] [REDACTED:AWS_ACCESS_KEY] [REDACTED:SSN]", 3},
		{"private key whole block", "k: -----BEGIN PRIVATE KEY-----\nMIIE\n-----END PRIVATE KEY----- end", StrategyRedact, nil, "k: [REDACTED:PRIVATE_KEY] end", 1},
		{"escapes are not PII", "\x1b]52;c;eA==\x07 <|im_start|>", StrategyRedact, nil, "\x1b]52;c;eA==\x07 <|im_start|>", 0},
		{"unknown strategy redacts", "a@b.io", Strategy("x"), nil, "[REDACTED:EMAIL]", 1},
		{"empty", "", StrategyRedact, nil, "", 0},
		{"many", "a@b.io,c@d.io;e@f.io", StrategyRedact, nil, "[REDACTED:EMAIL],[REDACTED:EMAIL];[REDACTED:EMAIL]", 3},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, n := a.Redact(tc.in, tc.strategy, tc.kinds)
			if got != tc.want || n != tc.n {
				t.Errorf("Redact(%q) = %q, %d; want %q, %d", tc.in, got, n, tc.want, tc.n)
			}
		})
	}
}

func TestRedactCleanNoAlloc(t *testing.T) {
	a, _ := New(Options{})
	s := "nothing sensitive here, just words and 42 numbers."
	a.Redact(s, StrategyRedact, nil)
	if n := testing.AllocsPerRun(100, func() { a.Redact(s, StrategyRedact, nil) }); n != 0 {
		t.Errorf("Redact allocates %v times on clean text", n)
	}
}

func TestAppendRedactMatchesNoAlloc(t *testing.T) {
	a, _ := New(Options{})
	s := "mail alice@example.com or bob@example.org, card 4242424242424242."
	dst := make([]byte, 0, 256)
	want := "mail [REDACTED:EMAIL] or [REDACTED:EMAIL], card 4242424242424242."
	if got, n := a.AppendRedact(dst, s, StrategyRedact, []string{"email"}); string(got) != want || n != 2 {
		t.Fatalf("AppendRedact = %q, %d; want %q, 2", got, n, want)
	}
	if n := testing.AllocsPerRun(100, func() { a.AppendRedact(dst, s, StrategyRedact, []string{"email"}) }); n != 0 {
		t.Errorf("AppendRedact allocates %v times into a buffer with room", n)
	}
}

func TestAppendUpper(t *testing.T) {
	for _, s := range []string{"", "email", "aws_access_key", "Mixed_Case9", "straße", "ǆ", "\xff"} {
		if got := string(appendUpper([]byte("x"), s)); got != "x"+strings.ToUpper(s) {
			t.Errorf("appendUpper(%q) = %q, want %q", s, got, "x"+strings.ToUpper(s))
		}
	}
}

// TestRedactMember: the member name is the context AnalyzeResult gives a value, in
// redaction too; plain Redact and uncued members keep what they redacted before.
func TestRedactMember(t *testing.T) {
	a, _ := New(Options{})
	ssn := []string{"pii_us_ssn"}
	cases := []struct {
		name, member, in, want string
		kinds                  []string
	}{
		{"ssn member", "ssn", "321549876", "[REDACTED:SSN]", ssn},
		{"upper case", "SSN", "321549876", "[REDACTED:SSN]", ssn},
		{"snake case", "social_security_number", "321549876", "[REDACTED:SSN]", ssn},
		{"camel case", "socialSecurityNumber", "321549876", "[REDACTED:SSN]", ssn},
		{"us_ssn, all kinds", "us_ssn", "321549876", "[REDACTED:SSN]", nil},
		{"the family", "taxpayer_ssn", "321549876", "[REDACTED:SSN]", []string{"pii"}},
		{"within text", "ssn", "on file: 321549876.", "on file: [REDACTED:SSN].", ssn},
		{"uncued member", "id", "321549876", "321549876", ssn},
		{"no member", "", "321549876", "321549876", ssn},
		{"member holding ssn", "lessnumber", "321549876", "321549876", ssn},
		{"invalid area", "ssn", "666549876", "666549876", ssn},
		{"ten digits", "ssn", "3215498760", "3215498760", ssn},
		{"other kind asked", "ssn", "321549876", "321549876", []string{"pii_email"}},
		{"dashed, no member", "", "321-54-9876", "[REDACTED:SSN]", ssn},
		{"text cue, snake case", "", "social_security_number: 321549876", "social_security_number: [REDACTED:SSN]", ssn},
		{"json text, snake case", "text", `{"social_security_number":"321549876","id":"321549877"}`, `{"social_security_number":"[REDACTED:SSN]","id":"321549877"}`, ssn},
		{"credential member", "aws_secret_access_key", "9drTJvcXLB89EXAMPLEoJ3e9fMtaSTxwYgPqdaQz", "[REDACTED:AWS_SECRET_ACCESS_KEY]", nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, n := a.RedactMember(c.in, c.member, StrategyRedact, c.kinds)
			if got != c.want || (n > 0) != (c.want != c.in) {
				t.Fatalf("RedactMember(%q, %q) = %q, %d; want %q", c.in, c.member, got, n, c.want)
			}
			app, m := a.AppendRedactMember(nil, c.in, c.member, StrategyRedact, c.kinds)
			if m != n || n > 0 && string(app) != got {
				t.Fatalf("AppendRedactMember = %q, %d; RedactMember gives %q, %d", app, m, got, n)
			}
			if c.member == "" {
				if r, k := a.Redact(c.in, StrategyRedact, c.kinds); r != got || k != n {
					t.Fatalf("Redact = %q, %d; RedactMember(\"\") gives %q, %d", r, k, got, n)
				}
			}
		})
	}
}

// TestRedactCatalogueKinds: a catalogue rule's match is redacted when kinds name it
// by rule id, entity (any case) or family, or are empty, and a pass without the
// catalogue (kinds that want none of its rules) redacts the rest as before.
func TestRedactCatalogueKinds(t *testing.T) {
	a, _ := New(Options{})
	const tok = "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"
	in := "SHOPIFY_TOKEN=" + tok + " mail bob@example.com Authorization: Bearer 7f3kQ9vZ2mX8pL4wR6tY1nB5cH0jD3sAq"
	for _, c := range []struct {
		kinds       []string
		token, mail bool
	}{
		{nil, true, true},
		{[]string{"secret"}, true, false},
		{[]string{"secret_shopify_access_token"}, true, false},
		{[]string{"SHOPIFY_ACCESS_TOKEN"}, true, false},
		{[]string{"email"}, false, true},
		{[]string{"pii"}, false, true},
		{[]string{"secret_github_token", "email"}, false, true},
	} {
		got, _ := a.Redact(in, StrategyRedact, c.kinds)
		if strings.Contains(got, tok) == c.token || strings.Contains(got, "bob@example.com") == c.mail {
			t.Errorf("kinds %v: %q", c.kinds, got)
		}
	}
}
