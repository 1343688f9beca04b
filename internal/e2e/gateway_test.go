package e2e

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
)

var (
	blockRe  = regexp.MustCompile(`^\[mcpgate: tool output blocked — see audit log entry ([0-9a-f-]{36}) for details\]$`)
	rejectRe = regexp.MustCompile(`^\[mcpgate: call rejected by policy ([^:]+): (.*) — see audit log entry ([0-9a-f-]{36})\]$`)
)

func shippedPolicies() string { return filepath.Join(root, "policies") }

// TestRelayIsTransparent compares what a client sees directly and through the
// gateway, byte for byte: tools/list, resources, prompts and a clean tools/call.
func TestRelayIsTransparent(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "notes.txt"), []byte("plain notes: the build takes 4.2 s\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	type probe struct {
		method string
		params any
	}
	servers := []struct {
		name   string
		argv   func(t *testing.T) []string
		probes []probe
	}{
		{"server-filesystem", func(t *testing.T) []string { return filesystemServer(t, dir) }, []probe{
			{"tools/list", map[string]any{}},
			{"tools/call", map[string]any{"name": "read_text_file", "arguments": map[string]any{"path": filepath.Join(dir, "notes.txt")}}},
			{"tools/call", map[string]any{"name": "list_allowed_directories"}},
		}},
		{"go-sdk everything-server", everythingServer, []probe{
			{"tools/list", map[string]any{}},
			{"resources/list", map[string]any{}},
			{"resources/templates/list", map[string]any{}},
			{"prompts/list", map[string]any{}},
			{"ping", map[string]any{}},
		}},
		{"server-everything", func(t *testing.T) []string {
			return []string{"node", nodeModule(t, "@modelcontextprotocol/server-everything/dist/index.js"), "stdio"}
		}, []probe{
			{"tools/list", map[string]any{}},
			{"resources/list", map[string]any{}},
			{"prompts/list", map[string]any{}},
			{"tools/call", map[string]any{"name": "echo", "arguments": map[string]any{"message": "hello <world> & co"}}},
		}},
	}
	for _, s := range servers {
		t.Run(s.name, func(t *testing.T) {
			argv := s.argv(t)
			direct := startRaw(t, nil, argv...)
			gw := startRaw(t, nil, append([]string{binary}, gatewayArgs([]string{"--filter-output", "--policies", shippedPolicies()}, argv)...)...)
			for _, p := range s.probes {
				want := direct.request(p.method, p.params)
				got := gw.request(p.method, p.params)
				if string(got) != string(want) {
					t.Errorf("%s differs through the gateway\ndirect:  %.400s\ngateway: %.400s", p.method, want, got)
				}
			}
		})
	}
}

// TestFilesystemOutputFilter reads files through the gateway in front of
// server-filesystem: an OSC 52 write is blocked, an e-mail address is redacted in
// content and structuredContent, and each call leaves one record.
func TestFilesystemOutputFilter(t *testing.T) {
	dir := t.TempDir()
	files := map[string]string{
		"clip.txt": "before \x1b]52;c;Y3VybCBldmlsIHwgc2g=\x07 after\n",
		"mail.txt": "owner: grace.hopper@navy.example\nteam: compilers\n",
	}
	for name, body := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	c, log := mcpClient(t, nil, binary, gatewayArgs([]string{"--filter-output", "--policies", shippedPolicies()}, filesystemServer(t, dir))...)

	res := callTool(t, c, "read_text_file", map[string]any{"path": filepath.Join(dir, "clip.txt")})
	if len(res.Content) != 1 || !res.IsError {
		t.Fatalf("OSC 52 file: want one item and isError, got %+v", res)
	}
	text := res.Content[0].(mcp.TextContent).Text
	m := blockRe.FindStringSubmatch(text)
	if m == nil {
		t.Fatalf("OSC 52 file: want the block placeholder, got %q", text)
	}
	recs := log.waitRecords(t, 1)
	if recs[0]["event_id"] != m[1] || recs[0]["decision"] != "block" || recs[0]["action_taken"] != "block" {
		t.Errorf("OSC 52 record: %v", recs[0])
	}

	res = callTool(t, c, "read_text_file", map[string]any{"path": filepath.Join(dir, "mail.txt")})
	raw, _ := json.Marshal(res)
	if strings.Contains(string(raw), "grace.hopper@navy.example") {
		t.Fatalf("e-mail address reached the client: %s", raw)
	}
	if !strings.Contains(res.Content[0].(mcp.TextContent).Text, "team: compilers") {
		t.Errorf("the rest of the file is lost: %s", raw)
	}
	if res.StructuredContent == nil {
		t.Errorf("structuredContent dropped: %s", raw)
	}
	recs = log.waitRecords(t, 2)
	if got := recs[1]["action_taken"]; got != "redact" {
		t.Errorf("redaction recorded as %v, want redact: %v", got, recs[1])
	}
	for _, r := range recs {
		b, _ := json.Marshal(r)
		if strings.Contains(string(b), "grace.hopper") || strings.Contains(string(b), "Y3VybCBldmlsIHwgc2g") || strings.Contains(string(b), dir) {
			t.Errorf("audit record holds a value: %s", b)
		}
	}
}

// TestPublicCases runs the public cases (testdata/cases, copied from the shared
// set) through the binary with the official TypeScript SDK client.
func TestPublicCases(t *testing.T) {
	nodeModule(t, "@modelcontextprotocol/sdk/package.json")
	// About 10 s for the 66 cases; a gateway that stops answering fails here, with the
	// runner's output, instead of in the package timeout.
	cmd := harnessCmd(t, 3*time.Minute, "node", filepath.Join(root, "testdata", "e2e", "run-cases.mjs"),
		"--bin", binary, "--cases", filepath.Join(root, "testdata", "cases"), "-v")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("run-cases failed: %v\n%s", cmd.explain(err), out)
	}
	if !strings.Contains(string(out), " 0 failed") {
		t.Fatalf("run-cases:\n%s", out)
	}
	t.Logf("%s", out)
}

// TestSeedExamplePolicies copies each shipped example into a policies directory
// and checks it behaves as docs/decisions.md#policies says.
func TestSeedExamplePolicies(t *testing.T) {
	up := upstreamMJS(t)
	env := []string{"EXTRA_TOOLS=github_create_pull,github_merge_pull,delete_file", "READONLY_TOOLS="}

	t.Run("block-force-delete", func(t *testing.T) {
		pol := policiesWith(t, "policies/examples/block-force-delete.js")
		c, log := mcpClient(t, env, binary, gatewayArgs([]string{"--policies", pol}, up)...)
		res := callTool(t, c, "delete_file", map[string]any{"path": "/tmp/x", "force_delete": true})
		text := res.Content[0].(mcp.TextContent).Text
		m := rejectRe.FindStringSubmatch(text)
		if !res.IsError || m == nil || m[1] != "block-force-delete.js" || !strings.Contains(m[2], "force_delete") {
			t.Fatalf("force_delete: want a rejection by block-force-delete.js, got %q (isError %v)", text, res.IsError)
		}
		res = callTool(t, c, "delete_file", map[string]any{"path": "/tmp/x", "force_delete": false})
		if res.IsError {
			t.Fatalf("force_delete false must pass: %+v", res)
		}
		recs := log.waitRecords(t, 2)
		if recs[0]["reason"] != "policy_throw" || recs[0]["policy"] != "block-force-delete.js" || recs[0]["blocked"] != true || recs[0]["event_id"] != m[3] {
			t.Errorf("rejection record: %v", recs[0])
		}
		if recs[1]["action_taken"] != "pass" {
			t.Errorf("clean call record: %v", recs[1])
		}
	})

	t.Run("strip-co-authored-by", func(t *testing.T) {
		pol := policiesWith(t, "policies/examples/strip-co-authored-by.js")
		c, log := mcpClient(t, env, binary, gatewayArgs([]string{"--policies", pol}, up)...)
		body := "Fix the parser\n\nCo-Authored-By: Bot <bot@example.com>\n"
		res := callTool(t, c, "github_create_pull", map[string]any{"title": "fix", "body": body})
		text := res.Content[0].(mcp.TextContent).Text
		var echoed map[string]any
		if err := json.Unmarshal([]byte(text), &echoed); err != nil {
			t.Fatalf("echo: %v: %q", err, text)
		}
		if b, _ := echoed["body"].(string); strings.Contains(b, "Co-Authored-By") || !strings.Contains(b, "Fix the parser") {
			t.Fatalf("upstream received body %q", b)
		}
		recs := log.waitRecords(t, 1)
		if recs[0]["params_rewritten"] != true {
			t.Errorf("rewrite not recorded: %v", recs[0])
		}
	})

	t.Run("untrusted-readonly", func(t *testing.T) {
		pol := policiesWith(t, "policies/examples/untrusted-readonly.js")
		cfg := filepath.Join(t.TempDir(), "mcpgate.json")
		os.WriteFile(cfg, []byte(`{"mcpgate": {"user": {"userID": "eve", "callerId": "sandbox-agent"},
			"callers": {"sandbox-agent": "untrusted"}, "tools": {"github_merge_pull": "write"}}}`), 0o600)
		c, log := mcpClient(t, env, binary, gatewayArgs([]string{"--policies", pol, "--config", cfg}, up)...)
		if res := callTool(t, c, "echo_args", map[string]any{"q": 1}); res.IsError {
			t.Fatalf("read tool (readOnlyHint) must pass for untrusted: %+v", res)
		}
		res := callTool(t, c, "github_merge_pull", map[string]any{"pull": 7})
		if !res.IsError || !rejectRe.MatchString(res.Content[0].(mcp.TextContent).Text) {
			t.Fatalf("write tool must be rejected for untrusted: %+v", res)
		}
		recs := log.waitRecords(t, 2)
		if recs[0]["tool_access"] != "read" || recs[1]["tool_access"] != "write" {
			t.Errorf("access tags: %v / %v", recs[0]["tool_access"], recs[1]["tool_access"])
		}
		if c := recs[1]["caller"].(map[string]any); c["caller_class"] != "untrusted" || c["user_id"] != "eve" {
			t.Errorf("caller: %v", c)
		}
	})

	t.Run("redact-email", func(t *testing.T) {
		pol := policiesWith(t, "policies/examples/redact-email-regex.js")
		c, log := mcpClient(t, env, binary, gatewayArgs([]string{"--policies", pol}, up)...)
		res := callTool(t, c, "echo_args", map[string]any{"to": "linus@kernel.example"})
		text := res.Content[0].(mcp.TextContent).Text
		if strings.Contains(text, "linus@kernel.example") || !strings.Contains(text, "[REDACTED]") {
			t.Fatalf("text not redacted: %q", text)
		}
		recs := log.waitRecords(t, 1)
		if recs[0]["action_taken"] != "redact" {
			t.Errorf("record: %v", recs[0])
		}
	})
}

// TestDemo runs `mcpgate demo` and checks it shows all five decisions.
func TestDemo(t *testing.T) {
	out, err := exec.Command(binary, "demo").CombinedOutput()
	if err != nil {
		t.Fatalf("demo: %v\n%s", err, out)
	}
	s := string(out)
	for _, want := range []string{`"action_taken":"pass"`, `"action_taken":"redact"`, `"decision":"block"`, `"decision":"warn"`, `"reason":"policy_throw"`} {
		if !strings.Contains(s, want) {
			t.Errorf("demo output lacks %s\n%s", want, s)
		}
	}
	received := 0
	for _, line := range strings.Split(s, "\n") {
		if strings.Contains(line, "client received:") {
			received++
			if strings.Contains(line, "ada.lovelace@example.com") {
				t.Errorf("the e-mail address reached the client: %s", line)
			}
		}
	}
	if received != 5 || strings.Count(s, "audit record:") != 5 {
		t.Errorf("want 5 calls with 5 records:\n%s", s)
	}
}

// TestNoValuesInStderr sends canary values through arguments, text,
// structuredContent, a policy's thrown message and a rewrite, at debug log level;
// no audit record or log line may hold one (relayed "[upstream] " lines are the
// server's own log and exempt, docs/decisions.md#upstream-stderr).
func TestNoValuesInStderr(t *testing.T) {
	const canary = "CANARY-c0ffee-42"
	pol := t.TempDir()
	os.WriteFile(filepath.Join(pol, "a-throw.js"), []byte(`if (ctx.phase === "pre" && ctx.params.boom) { throw "boom " + ctx.params.boom }`), 0o600)
	os.WriteFile(filepath.Join(pol, "b-rewrite.js"), []byte(`if (ctx.phase === "pre" && ctx.params.q) { ctx.params.q = ctx.params.q + "!" }`), 0o600)
	os.WriteFile(filepath.Join(pol, "c-post.js"), []byte(`if (ctx.phase === "post") { ctx.response.content.push({type: "text", text: "`+canary+`"}) }`), 0o600)
	c, log := mcpClient(t, nil, binary, gatewayArgs([]string{"--filter-output", "--log-level", "debug", "--policies", pol}, upstreamMJS(t))...)
	callTool(t, c, "echo_args", map[string]any{"q": canary, "nested": map[string]any{canary: []any{canary}}})
	res := callTool(t, c, "echo_args", map[string]any{"boom": canary})
	if !res.IsError || !strings.Contains(res.Content[0].(mcp.TextContent).Text, canary) {
		t.Fatalf("the client should see the thrown message: %+v", res)
	}
	callTool(t, c, "echo_args", map[string]any{"t": "\x1b]52;c;" + canary + "\x07"})
	log.waitRecords(t, 3)
	for _, line := range strings.Split(log.String(), "\n") {
		if strings.HasPrefix(line, "[upstream] ") {
			continue
		}
		if strings.Contains(line, canary) {
			t.Errorf("stderr line holds a value: %s", line)
		}
	}
}

// TestSeveralUpstreamsOnStdio: with several mcpServers in --config, tools are named
// <server>_<tool>, calls reach the right server, and ctx.tool and the record use the
// name the client sees.
func TestSeveralUpstreamsOnStdio(t *testing.T) {
	up := upstreamMJS(t)
	cfg := filepath.Join(t.TempDir(), "mcpgate.json")
	servers := map[string]any{
		"alpha": map[string]any{"command": up[0], "args": up[1:], "env": map[string]string{"EXTRA_TOOLS": "only_alpha"}},
		"beta":  map[string]any{"command": up[0], "args": up[1:]},
	}
	b, _ := json.Marshal(map[string]any{"mcpServers": servers, "mcpgate": map[string]any{"tools": map[string]string{"beta_echo_args": "admin"}}})
	os.WriteFile(cfg, b, 0o600)
	pol := t.TempDir()
	os.WriteFile(filepath.Join(pol, "tag.js"), []byte(`if (ctx.phase === "pre") { ctx.params.seen_as = ctx.tool }`), 0o600)
	c, log := mcpClient(t, nil, binary, "gateway", "run", "--log-format", "json", "--policies", pol, "--config", cfg)

	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	list, err := c.ListTools(ctx, mcp.ListToolsRequest{})
	if err != nil {
		t.Fatal(err)
	}
	names := map[string]bool{}
	for _, tool := range list.Tools {
		names[tool.Name] = true
	}
	for _, want := range []string{"alpha_emit", "alpha_echo_args", "alpha_only_alpha", "beta_emit", "beta_echo_args"} {
		if !names[want] {
			t.Errorf("tools/list lacks %s: %v", want, names)
		}
	}
	if names["beta_only_alpha"] || names["echo_args"] {
		t.Errorf("tools/list has a tool in the wrong namespace: %v", names)
	}
	res := callTool(t, c, "beta_echo_args", map[string]any{"x": 1})
	if text := res.Content[0].(mcp.TextContent).Text; !strings.Contains(text, `"seen_as":"beta_echo_args"`) {
		t.Fatalf("ctx.tool or routing wrong: %s", text)
	}
	recs := log.waitRecords(t, 1)
	if recs[0]["tool"] != "beta_echo_args" || recs[0]["tool_access"] != "admin" {
		t.Errorf("record: tool %v access %v", recs[0]["tool"], recs[0]["tool_access"])
	}
}

// TestUpstreamEnvironment: server-everything's get-env hands the agent its whole
// environment. The command after -- inherits the gateway's, less MCPGATE_* and what
// looks like a credential by name or by value, and the names left out are logged
// without their values; --upstream-env minimal and a --config server get only the
// base list (PATH, HOME, the locale, …) and their env; --pass-env adds a name.
func TestUpstreamEnvironment(t *testing.T) {
	server := []string{"node", nodeModule(t, "@modelcontextprotocol/server-everything/dist/index.js"), "stdio"}
	ghp := "ghp_" + "Zq8Xv2Lm4Np6Rt1Wc3Yb5Kd7Hf9Js0GaE2uT" // the secret rules' GitHub token shape
	env := []string{"LANG=C.UTF-8", "E2E_PLAIN=e2e-plain-value", "AWS_SECRET_ACCESS_KEY=e2e-aws-secret",
		"GITHUB_TOKEN=e2e-gh-token", "MCPGATE_ADMIN_TOKEN=e2e-admin-token", "E2E_MIRROR=https://bob:e2e-hunter2@mirror.example/",
		"E2E_OPAQUE=" + ghp}
	secrets := []string{"e2e-aws-secret", "e2e-gh-token", "e2e-admin-token", "e2e-hunter2", ghp}
	cfg := filepath.Join(t.TempDir(), "config.json")
	b, _ := json.Marshal(map[string]any{"mcpServers": map[string]any{
		"every": map[string]any{"command": server[0], "args": server[1:], "env": map[string]string{"CONFIGURED": "from-config"}},
	}})
	if err := os.WriteFile(cfg, b, 0o600); err != nil {
		t.Fatal(err)
	}
	pol := emptyPolicies(t)
	for _, tc := range []struct {
		name       string
		args       []string
		want, nope []string
	}{
		{"command after --", gatewayArgs([]string{"--policies", pol}, server), []string{"e2e-plain-value", `"LANG"`, `"PATH"`}, secrets},
		{"--upstream-env minimal", gatewayArgs([]string{"--policies", pol, "--upstream-env", "minimal"}, server), []string{`"LANG"`, `"PATH"`}, append([]string{"e2e-plain-value"}, secrets...)},
		{"--pass-env", gatewayArgs([]string{"--policies", pol, "--pass-env", "GITHUB_TOKEN"}, server), []string{"e2e-gh-token", "e2e-plain-value"}, secrets[:1]},
		{"config env", []string{"gateway", "run", "--log-format", "json", "--policies", pol, "--config", cfg}, []string{"from-config", `"PATH"`}, append([]string{"e2e-plain-value"}, secrets...)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, log := mcpClient(t, env, binary, tc.args...)
			res := callTool(t, c, "get-env", map[string]any{})
			text := res.Content[0].(mcp.TextContent).Text
			for _, w := range tc.want {
				if !strings.Contains(text, w) {
					t.Errorf("the server's environment lacks %s", w)
				}
			}
			for _, n := range tc.nope {
				if strings.Contains(text, n) {
					t.Errorf("the server's environment holds %s", n)
				}
			}
			if tc.name == "command after --" {
				logged := log.String()
				for _, n := range []string{"AWS_SECRET_ACCESS_KEY", "GITHUB_TOKEN", "MCPGATE_ADMIN_TOKEN", "E2E_MIRROR", "E2E_OPAQUE", "--pass-env"} {
					if !strings.Contains(logged, n) {
						t.Errorf("the start-up log does not name %s:\n%s", n, logged)
					}
				}
				for _, v := range secrets {
					if strings.Contains(logged, v) {
						t.Errorf("the log holds the value %s", v)
					}
				}
			}
		})
	}
}
