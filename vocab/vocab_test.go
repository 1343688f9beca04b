package vocab

import (
	"errors"
	"fmt"
	"os"
	"strings"
	"testing"
)

func TestStrongestIsOrderFree(t *testing.T) {
	all := append([]Action{""}, Actions...)
	for _, a := range all {
		for _, b := range all {
			if x, y := Strongest(a, b), Strongest(b, a); x != y {
				t.Errorf("Strongest(%q, %q) = %q but Strongest(%q, %q) = %q", a, b, x, b, a, y)
			}
		}
	}
}

func TestLadder(t *testing.T) {
	tests := []struct {
		a, b, want Action
	}{
		{"", "", Pass},
		{Pass, Warn, Warn},
		{Warn, Mask, Mask},
		{Mask, Redact, Redact},
		{Redact, Mask, Redact},
		{Mask, Mask, Mask},
		{Redact, Block, Block},
		{Block, Warn, Block},
		{"unknown", Pass, "unknown"},
	}
	for _, tc := range tests {
		if got := Strongest(tc.a, tc.b); got != tc.want {
			t.Errorf("Strongest(%q, %q) = %q, want %q", tc.a, tc.b, got, tc.want)
		}
	}
	if Redact.Rank() != Mask.Rank() {
		t.Error("redact and mask must share a rung")
	}
}

func TestParseAction(t *testing.T) {
	tests := []struct {
		in   string
		want Action
		ok   bool
	}{
		{"redact", Redact, true},
		{"REDACTED", Redact, true},
		{"redacted", Redact, true},
		{"Masked", Mask, true},
		{"blocked", Block, true},
		{"pass", Pass, true},
		{"WARN", Warn, true},
		{"allow", "", false},
		{"", "", false},
	}
	for _, tc := range tests {
		got, ok := ParseAction(tc.in)
		if got != tc.want || ok != tc.ok {
			t.Errorf("ParseAction(%q) = %q, %v; want %q, %v", tc.in, got, ok, tc.want, tc.ok)
		}
	}
}

func TestRejectionIs(t *testing.T) {
	err := fmt.Errorf("wrapped: %w", &Rejection{Code: ReasonPolicyTimeout, Policy: "slow.js", Message: "secret-value"})
	if !errors.Is(err, ReasonPolicyTimeout) {
		t.Error("errors.Is does not match the rejection's code")
	}
	if errors.Is(err, ReasonPolicyThrow) {
		t.Error("errors.Is matches another code")
	}
	var r *Rejection
	if !errors.As(err, &r) || r.Policy != "slow.js" {
		t.Errorf("errors.As = %v", r)
	}
	if strings.Contains(err.Error(), "secret-value") {
		t.Errorf("Error() carries the policy's message: %q", err.Error())
	}
}

func TestReasonsAreSnakeCase(t *testing.T) {
	seen := map[Reason]bool{}
	for _, r := range Reasons {
		if seen[r] {
			t.Errorf("%q listed twice", r)
		}
		seen[r] = true
		if strings.Trim(string(r), "abcdefghijklmnopqrstuvwxyz_") != "" {
			t.Errorf("%q is not snake_case", r)
		}
	}
}

// Every reason code a record can hold is documented for users.
func TestReasonsInREADME(t *testing.T) {
	b, err := os.ReadFile("../README.md")
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range Reasons {
		if !strings.Contains(string(b), "`"+string(r)+"`") {
			t.Errorf("README does not document reason %q", r)
		}
	}
}
