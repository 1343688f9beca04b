package vet

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/mcpgate/mcpgate/engine"
)

// shellServer is the command after " -- " of a shell example that runs a server
// through mcpgate ("mcpgate gateway run … -- npx -y pkg@1.2.3 /srv").
var shellServer = regexp.MustCompile(`\s--\s+((?:npx|uvx|pipx|docker|podman|bunx|npm|pnpm|yarn|uv)\s.*)$`)

// TestDocExamplesVetClean: every server configuration the README and docs/*.md show
// (a JSON block with a server block, and the command after "--" of a shell line)
// passes mcpgate vet --profile strict with nothing at or above warn level, so a user
// who copies an example is not told off by the gateway's own start-up checks (an
// unpinned "npx -y pkg" is vet_unpinned_package).
func TestDocExamplesVetClean(t *testing.T) {
	files, _ := filepath.Glob("../../docs/*.md")
	files = append(files, "../../README.md")
	n := 0
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		name := strings.TrimPrefix(f, "../../")
		parts := strings.Split(string(b), "```")
		for i := 1; i < len(parts); i += 2 {
			block := parts[i]
			lang, body, _ := strings.Cut(block, "\n")
			var c *Config
			switch strings.TrimSpace(lang) {
			case "json":
				if c, err = ParseConfig([]byte(body)); err != nil {
					continue
				}
			case "sh", "bash", "shell", "":
				c = &Config{}
				for _, line := range strings.Split(strings.ReplaceAll(body, "\\\n", " "), "\n") {
					if m := shellServer.FindStringSubmatch(line); m != nil {
						w := strings.Fields(m[1])
						c.Servers = append(c.Servers, Server{Name: "example", Pointer: "/mcpServers/example", Command: w[0], Args: w[1:]})
					}
				}
			default:
				continue
			}
			if name == "docs/vet.md" || len(c.Servers) == 0 {
				continue // vet.md shows findings on purpose
			}
			n++
			for _, x := range Run(Input{Config: c}, Options{Strict: true}) {
				if x.Severity >= engine.SeverityMedium && !x.Allowed {
					t.Errorf("%s: example block %d: %s %s: %s", name, i/2+1, x.RuleID, x.Pointer, x.Message)
				}
			}
		}
	}
	if n < 5 {
		t.Errorf("vetted %d examples, want the README's client configurations and shell lines at least", n)
	}
}
