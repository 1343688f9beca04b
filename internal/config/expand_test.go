package config

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func env(m map[string]string) LookupFunc {
	return func(n string) (string, bool) { v, ok := m[n]; return v, ok }
}

func TestExpand(t *testing.T) {
	vars := env(map[string]string{"TOKEN": "s3cr3t", "EMPTY": "", "Q": `a"b}c`})
	for _, tc := range []struct{ in, want, err string }{
		{in: "plain", want: "plain"},
		{in: "${TOKEN}", want: "s3cr3t"},
		{in: "Bearer ${TOKEN}!", want: "Bearer s3cr3t!"},
		{in: "${TOKEN}${TOKEN}", want: "s3cr3ts3cr3t"},
		{in: "${EMPTY}", want: ""},               // set and empty is empty
		{in: "${EMPTY:-dflt}", want: "dflt"},     // :- also covers empty, as in the shell
		{in: "${UNSET:-dflt}", want: "dflt"},     // unset with a default
		{in: "${UNSET:-}", want: ""},             // an empty default
		{in: "${UNSET:-a:-b}", want: "a:-b"},     // the default is the rest up to }
		{in: "${TOKEN:-dflt}", want: "s3cr3t"},   // set wins over the default
		{in: "$HOME and $", want: "$HOME and $"}, // only the braced form expands
		{in: "$${TOKEN}", want: "${TOKEN}"},      // $${ is a literal ${
		{in: "${Q}", want: `a"b}c`},              // a value's quote or brace is not re-read
		{in: "${UNSET}", err: "environment variable UNSET is not set (set it, or give a default: ${UNSET:-default})"},
		{in: "x ${TOKEN", err: `"${TOKEN" is not closed with }`},
		{in: "${}", err: `"" is not a variable name`},
		{in: "${1X}", err: `"1X" is not a variable name`},
		{in: "${A-B}", err: `"A-B" is not a variable name`},
	} {
		got, err := Expand(tc.in, vars)
		switch {
		case tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err)):
			t.Errorf("Expand(%q): err %v, want %q", tc.in, err, tc.err)
		case tc.err == "" && (err != nil || got != tc.want):
			t.Errorf("Expand(%q) = %q, %v; want %q", tc.in, got, err, tc.want)
		}
	}
}

// TestLoadExpandsEnvironment: the file's string values are expanded from the
// environment before the configuration is decoded; keys are not; an unset variable is
// a start-up error naming the file, the value's path and the variable, never a value.
func TestLoadExpandsEnvironment(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "config.json")
	const file = `{"mcpServers": {
  "github": {"command": "${NPX:-npx}", "args": ["-y", "server-github"], "env": {"GITHUB_TOKEN": "${MCPGATE_TEST_GH}"}},
  "search": {"url": "https://${MCPGATE_TEST_HOST:-mcp.example.org}/mcp", "headers": {"Authorization": "Bearer ${MCPGATE_TEST_GH}"}}
 },
 "mcpgate": {"user": {"userID": "${MCPGATE_TEST_USER:-local}"}, "callers": {"${KEY}": "trusted"}, "audit": {"rotateMB": 10}}}`
	if err := os.WriteFile(path, []byte(file), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv("MCPGATE_TEST_GH", `ghp_"quoted"`)
	t.Setenv("MCPGATE_TEST_USER", "alice")
	c, err := Load(path)
	if err != nil {
		t.Fatal(err)
	}
	gh, search := c.MCPServers["github"], c.MCPServers["search"]
	if gh.Command != "npx" || gh.Env["GITHUB_TOKEN"] != `ghp_"quoted"` || search.URL != "https://mcp.example.org/mcp" ||
		search.Headers["Authorization"] != `Bearer ghp_"quoted"` || c.Gate.User.UserID != "alice" || c.Gate.Audit.RotateMB != 10 {
		t.Fatalf("%+v %+v %+v", gh, search, c.Gate)
	}
	if _, ok := c.Gate.Callers["${KEY}"]; !ok {
		t.Fatalf("a key was expanded: %v", c.Gate.Callers)
	}

	os.Unsetenv("MCPGATE_TEST_GH") // t.Setenv restores it
	_, err = Load(path)
	if err == nil {
		t.Fatal("an unset variable without a default loaded")
	}
	msg := err.Error()
	for _, w := range []string{path, `"mcpServers.github.env.GITHUB_TOKEN": environment variable MCPGATE_TEST_GH is not set`,
		`"mcpServers.search.headers.Authorization": environment variable MCPGATE_TEST_GH is not set`} {
		if !strings.Contains(msg, w) {
			t.Errorf("error lacks %q:\n%s", w, msg)
		}
	}
	if strings.Contains(msg, "quoted") {
		t.Errorf("error holds a value: %s", msg)
	}
}

// FuzzExpand: Expand never panics; text without "${" comes back as it was; a result
// holds no reference when the environment has every name.
func FuzzExpand(f *testing.F) {
	for _, s := range []string{"${A}", "${A:-x}", "$${A}", "${", "}${", "${A:-${B}}", "a$b${_9}c", "${\x00}"} {
		f.Add(s)
	}
	lookup := func(n string) (string, bool) { return "v", true }
	f.Fuzz(func(t *testing.T, s string) {
		got, err := Expand(s, lookup)
		if !strings.Contains(s, "${") && (err != nil || got != s) {
			t.Fatalf("Expand(%q) = %q, %v: changed text without a reference", s, got, err)
		}
		if err == nil && !strings.Contains(s, "$${") && strings.Count(got, "${") > strings.Count(s, ":-") {
			t.Fatalf("Expand(%q) = %q: a reference survived", s, got)
		}
	})
}

// TestExpandDefaultIgnoresUnsetValue: an unset variable takes its default whatever
// the lookup returned beside "not set".
func TestExpandDefaultIgnoresUnsetValue(t *testing.T) {
	got, err := Expand("${X:-d}", func(string) (string, bool) { return "junk", false })
	if err != nil || got != "d" {
		t.Fatalf("%q, %v", got, err)
	}
}
