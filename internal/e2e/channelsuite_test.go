package e2e

import (
	"context"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

// TestChannelSuite runs testdata/e2e/channelsuite/check.mjs: the official
// TypeScript SDK client in front of the binary and a hostile upstream whose every
// value comes from payloads.json, one gateway per check: instructions with OSC 52,
// Tags and a chat-template token; a tool description whose HTML comment gives the
// model orders; a homoglyph and an invisible-ending tool name; Tags and a template
// token in a schema; a pinned tool renamed with a poisoned description; a form
// elicitation asking for a token; a URL-mode elicitation over http to a private
// address; sampling with includeContext to a client without sampling.context, and
// with tools of its own carrying OSC 52 and Tags; two servers, one steering the
// other's tool, with Tags in its instructions. Every check must pass.
func TestChannelSuite(t *testing.T) {
	nodeModule(t, "@modelcontextprotocol/sdk/package.json")
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "node", filepath.Join(root, "testdata", "e2e", "channelsuite", "check.mjs"), "--bin", binary, "-v")
	out, err := cmd.CombinedOutput()
	text := string(out)
	for _, line := range strings.Split(text, "\n") {
		if strings.HasPrefix(line, "FAIL") {
			t.Errorf("%s", line)
		}
	}
	m := regexp.MustCompile(`(?m)^(\d+) passed, (\d+) failed$`).FindStringSubmatch(text)
	if err != nil || m == nil || m[2] != "0" || m[1] != "14" {
		t.Fatalf("check.mjs: %v\n%s", err, text)
	}
}
