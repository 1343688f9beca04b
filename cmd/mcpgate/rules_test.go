package main

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"testing"
)

func TestRulesCommand(t *testing.T) {
	var out, errOut bytes.Buffer
	if code := run(context.Background(), []string{"rules"}, strings.NewReader(""), &out, &errOut); code != exitOK {
		t.Fatalf("exit %d: %s", code, errOut.String())
	}
	for _, want := range []string{"output_osc52_clipboard_write", "terminal_escape", "HIGH", "pii_email", "INFO"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("text output lacks %q:\n%s", want, out.String())
		}
	}
	out.Reset()
	if code := run(context.Background(), []string{"rules", "--format", "json"}, strings.NewReader(""), &out, &errOut); code != exitOK {
		t.Fatalf("exit %d", code)
	}
	var rules []struct{ ID, Severity string }
	if err := json.Unmarshal(out.Bytes(), &rules); err != nil || len(rules) < 20 {
		t.Fatalf("json: %v, %d rules", err, len(rules))
	}
	if code := run(context.Background(), []string{"rules", "--format", "yaml"}, strings.NewReader(""), &out, &errOut); code != exitError {
		t.Fatalf("bad format: exit %d", code)
	}
}
