package reqstate

import (
	"encoding/base64"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"
)

func testSealer(now *time.Time) *Sealer {
	return New([]byte("0123456789abcdef0123456789abcdef"), time.Minute, func() time.Time { return *now })
}

func TestSealOpen(t *testing.T) {
	now := time.Unix(1_800_000_000, 0)
	base := Binding{Caller: "alice", Session: "s1", Method: "tools/call", Name: "transfer_funds", Arguments: json.RawMessage(`{"amount":50,"to":"x"}`)}
	for _, tc := range []struct {
		name  string
		open  func(b Binding) Binding
		token func(tok string) string
		after time.Duration
		want  error
	}{
		{name: "same request", want: nil},
		{name: "arguments reordered and spaced", open: func(b Binding) Binding { b.Arguments = json.RawMessage(` { "to" : "x", "amount" : 50 } `); return b }},
		{name: "other caller", open: func(b Binding) Binding { b.Caller = "mallory"; return b }, want: ErrForged},
		{name: "other session", open: func(b Binding) Binding { b.Session = "s2"; return b }, want: ErrForged},
		{name: "other method", open: func(b Binding) Binding { b.Method = "prompts/get"; return b }, want: ErrForged},
		{name: "other tool", open: func(b Binding) Binding { b.Name = "read_calendar"; return b }, want: ErrForged},
		{name: "other arguments", open: func(b Binding) Binding { b.Arguments = json.RawMessage(`{"amount":5000,"to":"x"}`); return b }, want: ErrForged},
		{name: "arguments dropped", open: func(b Binding) Binding { b.Arguments = nil; return b }, want: ErrForged},
		{name: "expired", after: 2 * time.Minute, want: ErrExpired},
		{name: "server's own state", token: func(string) string { return "eyJwcmluY2lwYWwiOiJib2IifQ==" }, want: ErrMalformed},
		{name: "empty", token: func(string) string { return "" }, want: ErrMalformed},
		{name: "no mac", token: func(tok string) string { return tok[:strings.LastIndexByte(tok, '.')] }, want: ErrMalformed},
		{name: "payload swapped", token: func(tok string) string {
			p, _ := json.Marshal(payload{State: "approved", Exp: now.Add(time.Hour).UnixMilli(), Nonce: "n"})
			return Prefix + base64.RawURLEncoding.EncodeToString(p) + tok[strings.LastIndexByte(tok, '.'):]
		}, want: ErrForged},
		{name: "mac flipped", token: func(tok string) string {
			b := []byte(tok)
			if b[len(b)-2] == 'A' {
				b[len(b)-2] = 'B'
			} else {
				b[len(b)-2] = 'A'
			}
			return string(b)
		}, want: ErrForged},
	} {
		t.Run(tc.name, func(t *testing.T) {
			clock := now
			s := testSealer(&clock)
			tok, err := s.Seal(base, "server-state-1")
			if err != nil {
				t.Fatal(err)
			}
			if !strings.HasPrefix(tok, Prefix) || strings.Contains(tok, "server-state-1") {
				t.Fatalf("token %q", tok)
			}
			b := base
			if tc.open != nil {
				b = tc.open(b)
			}
			if tc.token != nil {
				tok = tc.token(tok)
			}
			clock = clock.Add(tc.after)
			inner, err := s.Open(b, tok)
			if !errors.Is(err, tc.want) {
				t.Fatalf("Open: %v, want %v", err, tc.want)
			}
			if tc.want == nil && inner != "server-state-1" {
				t.Fatalf("inner %q", inner)
			}
		})
	}
}

func TestOpenOnce(t *testing.T) {
	now := time.Unix(1_800_000_000, 0)
	s := testSealer(&now)
	b := Binding{Caller: "alice", Session: "s", Method: "tools/call", Name: "t"}
	tok, _ := s.Seal(b, "st")
	if err := s.Check(b, tok); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Open(b, tok); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Open(b, tok); !errors.Is(err, ErrReplayed) {
		t.Fatalf("replay: %v", err)
	}
}

func TestOtherKey(t *testing.T) {
	now := time.Unix(1_800_000_000, 0)
	b := Binding{Method: "tools/call", Name: "t"}
	tok, _ := testSealer(&now).Seal(b, "st")
	other := New([]byte("another key, another process....."), time.Minute, func() time.Time { return now })
	if _, err := other.Open(b, tok); !errors.Is(err, ErrForged) {
		t.Fatalf("other key: %v", err)
	}
	if _, err := Default().Seal(b, strings.Repeat("x", MaxInner+1)); !errors.Is(err, ErrTooLarge) {
		t.Fatalf("too large: %v", err)
	}
}

func TestCanonical(t *testing.T) {
	for in, want := range map[string]string{
		``: ``, `null`: ``, ` {"b":1, "a":[1.50,"x"]} `: `{"a":[1.50,"x"],"b":1}`, `not json`: `not json`,
	} {
		if got := string(Canonical(json.RawMessage(in))); got != want {
			t.Errorf("Canonical(%q) = %q, want %q", in, got, want)
		}
	}
}

// FuzzOpen: any token opens without a panic, and only a sealed token for the same
// binding opens at all (a seed's token is sealed afresh in each fuzz worker).
func FuzzOpen(f *testing.F) {
	now := time.Unix(1_800_000_000, 0)
	s := testSealer(&now)
	b := Binding{Caller: "c", Session: "s", Method: "tools/call", Name: "n", Arguments: json.RawMessage(`{"a":1}`)}
	tok, _ := s.Seal(b, "inner")
	f.Add(tok, "n")
	f.Add(Prefix+"e30.AAAA", "n")
	f.Add(Prefix+".", "")
	f.Add("AEAD:v1:opaque", "n")
	f.Fuzz(func(t *testing.T, token, name string) {
		fresh := testSealer(&now)
		bb := b
		bb.Name = name
		inner, err := fresh.Open(bb, token)
		if err == nil && (!strings.HasPrefix(token, Prefix) || name != b.Name || inner != "inner") {
			t.Fatalf("opened %q for name %q: %q", token, name, inner)
		}
	})
}
