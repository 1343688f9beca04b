package gateway

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestShadowGuardrails: a --shadow directory's guardrails.json gives the candidate its
// own guardrails; without the file it has none of its own (it shares the live ones),
// with {} it has none at all, and a bad file stops start-up naming it.
func TestShadowGuardrails(t *testing.T) {
	write := func(body string) string {
		dir := t.TempDir()
		if body != "" {
			if err := os.WriteFile(filepath.Join(dir, ShadowGuardrailsFile), []byte(body), 0o600); err != nil {
				t.Fatal(err)
			}
		}
		return dir
	}
	if s, err := shadowGuardrails(write("")); s != nil || err != nil {
		t.Fatalf("no file: %v, %v", s, err)
	}
	if s, err := shadowGuardrails(write(`{}`)); s == nil || err != nil || len(s.Names()) != 0 {
		t.Fatalf("{}: %v, %v", s, err)
	}
	s, err := shadowGuardrails(write(`{"g": {"kind": "generic", "url": "http://127.0.0.1:1/x", "failMode": "open"}}`))
	if err != nil || s == nil || strings.Join(s.Names(), ",") != "g (generic, fail open)" {
		t.Fatalf("one guardrail: %v, %v", s.Names(), err)
	}
	for _, body := range []string{`[`, `{"g": {"kind": "generic"}}`} {
		if _, err := shadowGuardrails(write(body)); err == nil || !strings.Contains(err.Error(), ShadowGuardrailsFile) {
			t.Errorf("%s: %v, want an error naming the file", body, err)
		}
	}
}
