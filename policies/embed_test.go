package policies

import (
	"io/fs"
	"os"
	"regexp"
	"strings"
	"testing"
)

// TestExamplesNeverOverwriteTheShippedSet: copying examples/*.js up a level (the
// docs' copy command) must not replace a shipped policy or its test, so no example
// may share a name with a top-level file.
func TestExamplesNeverOverwriteTheShippedSet(t *testing.T) {
	top, err := fs.Glob(FS, "*.js")
	if err != nil || len(top) == 0 {
		t.Fatalf("no shipped policies: %v", err)
	}
	shipped := map[string]bool{}
	for _, n := range top {
		shipped[n] = true
	}
	ex, err := fs.Glob(FS, "examples/*.js")
	if err != nil || len(ex) == 0 {
		t.Fatalf("no examples: %v", err)
	}
	for _, n := range ex {
		if base := strings.TrimPrefix(n, "examples/"); shipped[base] {
			t.Errorf("example %s has the name of a shipped policy: copying it up would overwrite %s", n, base)
		}
	}
}

// TestDocsCopyCommandsNeverClobber: every command in the README and docs/policies.md
// that copies into a policies directory uses cp -n (no clobber), so it can never
// overwrite a policy that is already there.
func TestDocsCopyCommandsNeverClobber(t *testing.T) {
	copyLine := regexp.MustCompile(`(?m)^\s*(?:\$ )?cp\b[^\n]*policies/[^\n]*$`)
	for _, doc := range []string{"../README.md", "../docs/policies.md"} {
		b, err := os.ReadFile(doc)
		if err != nil {
			t.Fatal(err)
		}
		lines := copyLine.FindAllString(string(b), -1)
		if len(lines) == 0 {
			t.Errorf("%s: no copy command found; the test would prove nothing", doc)
		}
		for _, l := range lines {
			if !strings.Contains(l, "cp -n ") && !strings.Contains(l, "cp -rn ") {
				t.Errorf("%s: copy command without -n: %s", doc, strings.TrimSpace(l))
			}
		}
	}
}
