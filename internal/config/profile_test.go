package config

import (
	"strings"
	"testing"

	"github.com/mcpgate/mcpgate/engine"
)

// TestProfileName: the flag wins over the file's "profile", which wins over the
// default; a bad name in either is an error naming where it came from.
func TestProfileName(t *testing.T) {
	for _, tc := range []struct {
		file, flag string
		want       string
		wantErr    string
	}{
		{file: `{}`, want: ProfileDefault},
		{file: `{"mcpgate":{"profile":"strict"}}`, want: ProfileStrict},
		{file: `{"mcpgate":{"profile":"strict"}}`, flag: "default", want: ProfileDefault},
		{file: `{}`, flag: "strict", want: ProfileStrict},
		{file: `{}`, flag: "paranoid", wantErr: "--profile \"paranoid\": want default or strict"},
	} {
		c, err := Parse([]byte(tc.file))
		if err != nil {
			t.Fatal(err)
		}
		got, err := c.ProfileName(tc.flag)
		if tc.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("%s %q: err %v, want %q", tc.file, tc.flag, err, tc.wantErr)
			}
			continue
		}
		if err != nil || got != tc.want {
			t.Errorf("%s %q: %q, %v; want %q", tc.file, tc.flag, got, err, tc.want)
		}
	}
	if _, err := Parse([]byte(`{"mcpgate":{"profile":"lax"}}`)); err == nil || !strings.Contains(err.Error(), `"mcpgate.profile"`) {
		t.Fatalf("bad profile in the file: %v", err)
	}
}

// TestArgumentRuleSeverity: an argument rule that mcpgate rules lists is named in the
// error as one whose severity is fixed, not as an unknown id.
func TestArgumentRuleSeverity(t *testing.T) {
	_, err := Parse([]byte(`{"mcpgate":{"rules":{"argument_template":"none"}}}`))
	if err == nil || !strings.Contains(err.Error(), "severities are fixed") {
		t.Fatalf("err %v", err)
	}
}

// TestStrictSeverities: the strict profile raises output_tool_transfer to High (an
// order in a result to act through another server's tool then blocks); the
// configuration's own "rules" override still wins, and the default profile keeps the
// engine's severities.
func TestStrictSeverities(t *testing.T) {
	c := Default()
	if got := c.SeveritiesIn(false)[engine.RuleToolTransfer]; got != engine.SeverityNone {
		t.Fatalf("default profile: %v", got)
	}
	if got := c.SeveritiesIn(true)[engine.RuleToolTransfer]; got != engine.SeverityHigh {
		t.Fatalf("strict: %v", got)
	}
	c.Gate.Rules = map[string]string{engine.RuleToolTransfer: "medium"}
	if got := c.SeveritiesIn(true)[engine.RuleToolTransfer]; got != engine.SeverityMedium {
		t.Fatalf("strict with the configuration's override: %v", got)
	}
	if StrictSeverities[engine.RuleToolTransfer] != engine.SeverityHigh {
		t.Fatal("SeveritiesIn changed StrictSeverities")
	}
}
