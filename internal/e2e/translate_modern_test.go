package e2e

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mcpgate/mcpgate/internal/testwait"
)

// TestTranslateModernClient: a v2 client pinned to 2026-07-28, and one in auto mode,
// in front of the v1 SDK server (2025-11-25 only): the gateway initializes the
// server itself, answers server/discover from its InitializeResult and makes every
// result valid in 2026-07-28, so the client negotiates 2026-07-28, lists, calls,
// gets a prompt and reads; on stdio and on the HTTP front, with one server and with
// two (one server/discover answer merged from two translated hops, or from a
// translated hop and a v2 server's own answer).
func TestTranslateModernClient(t *testing.T) {
	up := upstreamMJS(t)
	cfg := filepath.Join(t.TempDir(), "config.json")
	s := map[string]any{"command": up[0], "args": up[1:]}
	writeJSON(t, cfg, map[string]any{"mcpServers": map[string]any{"a": s, "b": s}})
	dual := modernServer(t, "serve")
	mixedCfg := filepath.Join(t.TempDir(), "mixed.json")
	writeJSON(t, mixedCfg, map[string]any{"mcpServers": map[string]any{"a": s, "b": map[string]any{"command": dual[0], "args": dual[1:]}}})
	mixed := []string{binary, "gateway", "run", "--config", mixedCfg, "--policies", emptyPolicies(t)}
	one := append([]string{binary, "gateway", "run", "--policies", emptyPolicies(t), "--"}, up...)
	several := []string{binary, "gateway", "run", "--config", cfg, "--policies", emptyPolicies(t)}
	h1 := startHTTPGateway(t, append([]string{"--"}, up...)...)
	h2 := startHTTPGateway(t, "--config", cfg)
	h3 := startHTTPGateway(t, "--config", mixedCfg)
	for _, c := range []struct {
		front, mode    string
		several, mixed bool
	}{
		{"stdio", "pin", false, false}, {"stdio", "auto", false, false}, {"stdio", "pin", true, false}, {"stdio", "pin", true, true},
		{"http", "pin", false, false}, {"http", "auto", false, false}, {"http", "pin", true, false}, {"http", "pin", true, true},
	} {
		name := fmt.Sprintf("%s %s several=%v mixed=%v", c.front, c.mode, c.several, c.mixed)
		conf := map[string]any{"mode": c.mode, "list": true, "prefix": "", "discover": true}
		if c.several {
			conf["prefix"] = "a_"
		}
		switch {
		case c.front == "stdio" && c.mixed:
			conf["cmd"] = mixed
		case c.mixed:
			conf["url"] = h3.url
		case c.front == "stdio" && c.several:
			conf["cmd"] = several
		case c.front == "stdio":
			conf["cmd"] = one
		case c.several:
			conf["url"] = h2.url
		default:
			conf["url"] = h1.url
		}
		out := revisionClientCfg(t, conf)
		if string(out["version"]) != `"2026-07-28"` || out["connect"] != nil {
			t.Errorf("%s: negotiated %s: %v", name, out["version"], out)
			continue
		}
		if !strings.Contains(string(out["tools"]), `"`+conf["prefix"].(string)+`echo_args"`) || !strings.Contains(string(out["echo"]), `"hi"`) ||
			strings.Contains(string(out["echo"]), `"error"`) {
			t.Errorf("%s: tools %s, echo %s", name, out["tools"], out["echo"])
		}
		if !strings.Contains(string(out["discover"]), `"supportedVersions":["2026-07-28"]`) || !strings.Contains(string(out["discover"]), `"tools"`) {
			t.Errorf("%s: server/discover %s", name, out["discover"])
		}
		if c.mixed && (!strings.Contains(string(out["tools"]), `"b_echo"`) || !strings.Contains(string(out["discover"]), `"prompts"`)) {
			t.Errorf("%s: tools %s, server/discover %s: want the v2 server's too", name, out["tools"], out["discover"])
		}
	}
}

// upstreamCase is one way to reach a test server through the gateway: the gateway
// run arguments, and the prefix of its tools.
type upstreamCase struct {
	name   string
	args   []string
	prefix string
}

// upstreamCases are the ways the translation tests reach their server: the same
// server over stdio, as a url upstream, and each of the two behind the multiplexer.
func upstreamCases(t *testing.T, stdioUp []string, url string) []upstreamCase {
	several := filepath.Join(t.TempDir(), "config.json")
	writeJSON(t, several, map[string]any{"mcpServers": map[string]any{
		"a": map[string]any{"command": stdioUp[0], "args": stdioUp[1:]},
		"b": map[string]any{"url": url},
	}})
	urlOnly := filepath.Join(t.TempDir(), "config.json")
	writeJSON(t, urlOnly, map[string]any{"mcpServers": map[string]any{"m": map[string]any{"url": url}}})
	return []upstreamCase{
		{"stdio upstream", append([]string{"--"}, stdioUp...), ""},
		{"url upstream", []string{"--config", urlOnly}, ""},
		{"several, stdio", []string{"--config", several}, "a_"},
		{"several, url", []string{"--config", several}, "b_"},
		// the translation inside a second gateway, whose own input requests and
		// answers the first relays
		{"through a second gateway", append([]string{"--", binary, "gateway", "run", "--policies", emptyPolicies(t), "--"}, stdioUp...), ""},
	}
}

// askClient runs testdata/e2e/ask-client.mjs (the v2 client SDK pinned to
// 2026-07-28, answering elicitation and sampling) with conf and returns what it
// printed.
func askClient(t *testing.T, conf map[string]any) map[string]json.RawMessage {
	t.Helper()
	nodeModule(t, "@modelcontextprotocol/client/package.json")
	return scriptJSON(t, "ask-client.mjs", conf)
}

// askServer is testdata/e2e/ask-v1.mjs over stdio: a v1 SDK server whose tools
// confirm and sample send elicitation/create and sampling/createMessage.
func askServer(t *testing.T) []string {
	nodeModule(t, "@modelcontextprotocol/sdk/package.json")
	return []string{"node", filepath.Join(root, "testdata", "e2e", "ask-v1.mjs"), "stdio"}
}

// askHTTP starts testdata/e2e/ask-v1.mjs over Streamable HTTP and returns its URL.
func askHTTP(t *testing.T) string {
	nodeModule(t, "@modelcontextprotocol/sdk/package.json")
	return scriptHTTP(t, "ask-v1.mjs", "http")
}

// TestTranslateModernMRTR: a v1 SDK server's tools elicit and sample while the
// 2026-07-28 client's tools/call is in flight; the client gets each as an input
// request of an input_required result, answers it with its own handler, and the
// retry gets the tool's final result, which shows the server got the answer; on
// stdio and the HTTP front, over a stdio and a url upstream, and behind the
// multiplexer.
func TestTranslateModernMRTR(t *testing.T) {
	for _, c := range upstreamCases(t, askServer(t), askHTTP(t)) {
		for _, http := range []bool{false, true} {
			name := fmt.Sprintf("%s, http=%v", c.name, http)
			conf := legacyFront(t, http, c.args...)
			conf["prefix"] = c.prefix
			conf["tools"] = [][]any{{"echo", map[string]any{"text": "hi"}}, {"confirm", map[string]any{"what": "prod"}}, {"sample", map[string]any{}}}
			out := askClient(t, conf)
			if string(out["version"]) != `"2026-07-28"` || !strings.Contains(string(out["echo"]), `"text":"hi"`) {
				t.Errorf("%s: %v", name, out)
				continue
			}
			if got := string(out["asked"]); got != `[{"method":"elicitation/create","message":"Deploy?"},{"method":"sampling/createMessage"}]` {
				t.Errorf("%s: the client was asked %s", name, got)
			}
			if !strings.Contains(string(out["confirm"]), `answer: accept {\"sure\":true} for prod`) || !strings.Contains(string(out["sample"]), `sampled: hi there`) {
				t.Errorf("%s: confirm %s, sample %s", name, out["confirm"], out["sample"])
			}
		}
	}
}

// TestTranslateModernMRTRBlocked: with --filter-output, a v1 server's elicitation
// whose message carries an OSC 52 escape is withheld as the input request of a
// 2026-07-28 server would be: the client's handler is never asked, the call gets the
// refusal that cites the record, the record names elicitation/create via
// tools/call, and the escape reaches no log; and the v1 server's request is answered
// with an error at once, as a withheld 2025-11-25 request is (the relay cancels the
// request the withheld result answered, which ends the round).
func TestTranslateModernMRTRBlocked(t *testing.T) {
	t.Setenv("ELICIT_HOSTILE", "1")
	for _, http := range []bool{false, true} {
		var out map[string]json.RawMessage
		var log string
		tools := [][]any{{"confirm", map[string]any{"what": "prod"}}}
		var g *httpGateway
		if http {
			g = startHTTPGateway(t, append([]string{"--filter-output", "--"}, askServer(t)...)...)
			out = askClient(t, map[string]any{"url": g.url, "prefix": "", "tools": tools})
			log = g.stderr.String()
		} else {
			audit := filepath.Join(t.TempDir(), "audit.jsonl")
			out = askClient(t, map[string]any{"prefix": "", "tools": tools, "cmd": append([]string{binary, "gateway", "run", "--filter-output",
				"--policies", emptyPolicies(t), "--audit-file", audit, "--"}, askServer(t)...)})
			b, _ := os.ReadFile(audit)
			log = string(b)
		}
		if string(out["asked"]) != `[]` || !reqBlockedRe.MatchString(string(out["confirm"])) {
			t.Fatalf("http=%v: asked %s, confirm %s", http, out["asked"], out["confirm"])
		}
		id := reqBlockedRe.FindStringSubmatch(string(out["confirm"]))[1]
		var rec map[string]any
		for _, line := range strings.Split(log, "\n") {
			if strings.Contains(line, id) && strings.Contains(line, `"event_id"`) {
				_ = json.Unmarshal([]byte(line), &rec)
			}
		}
		if rec == nil || rec["method"] != "elicitation/create" || rec["via"] != "tools/call" || rec["blocked"] != true {
			t.Errorf("http=%v: record %s: %v\n%s", http, id, rec, log)
		}
		if strings.Contains(log, "cm0gLXJmIH4") {
			t.Errorf("http=%v: the elicitation's text reached the log", http)
		}
		if http && !testwait.Within(10*time.Second, func() bool { return strings.Contains(g.stderr.String(), "confirm: the elicitation failed") }) {
			t.Errorf("the v1 server's elicitation was not answered:\n%s", g.stderr.String())
		}
	}
}

// TestTranslateModernInputResponses: the client's answer to a translated input
// request goes through the input rules on the retry, as a 2026-07-28 server's would:
// a pre policy that refuses answers with findings refuses the retry, so the answer
// (an OSC 52 escape) never reaches the v1 server, and the record lists the input
// rule.
func TestTranslateModernInputResponses(t *testing.T) {
	pol := t.TempDir()
	must(t, os.WriteFile(filepath.Join(pol, "deny.js"), []byte(`if (ctx.phase === "pre" && ctx.findings.some((f) => f.pointer.startsWith("/inputResponses"))) throw new Error("answer refused");`), 0o600))
	audit := filepath.Join(t.TempDir(), "audit.jsonl")
	out := askClient(t, map[string]any{"prefix": "", "tools": [][]any{{"confirm", map[string]any{"what": "prod"}}},
		"answer": map[string]any{"action": "accept", "content": map[string]any{"sure": "copy \x1b]52;c;cm0gLXJmIH4=\x07 now"}},
		"cmd":    append([]string{binary, "gateway", "run", "--filter-output", "--policies", pol, "--audit-file", audit, "--"}, askServer(t)...)})
	if !strings.Contains(string(out["asked"]), "Deploy?") || !strings.Contains(string(out["confirm"]), "answer refused") || strings.Contains(string(out["confirm"]), "answer: accept") {
		t.Fatalf("asked %s, confirm %s", out["asked"], out["confirm"])
	}
	b, _ := os.ReadFile(audit)
	if !strings.Contains(string(b), `"input_rule_ids":[`) {
		t.Errorf("no record lists an input rule:\n%s", b)
	}
}

// TestTranslateModernRetryBound: a hostile v2 client whose Multi Round-Trip retry
// carries other arguments ("public") than the call the v1 server is running
// ("prod") gets -32602 and a retry_mismatch record, on stdio and the HTTP front; the
// server's result for "prod" never reaches it under the retry's arguments
// (docs/decisions.md#retry-binding).
func TestTranslateModernRetryBound(t *testing.T) {
	for _, http := range []bool{false, true} {
		conf := map[string]any{"prefix": "", "tools": [][]any{{"confirm", map[string]any{"what": "prod"}}},
			"tamperRetry": map[string]any{"what": "public"}}
		var log func() string
		if http {
			g := startHTTPGateway(t, append([]string{"--"}, askServer(t)...)...)
			conf["url"], log = g.url, g.stderr.String
		} else {
			audit := filepath.Join(t.TempDir(), "audit.jsonl")
			conf["cmd"] = append([]string{binary, "gateway", "run", "--policies", emptyPolicies(t), "--audit-file", audit, "--"}, askServer(t)...)
			log = func() string { b, _ := os.ReadFile(audit); return string(b) }
		}
		out := askClient(t, conf)
		// Refused before the server sees it: by the round's binding (retry_mismatch), or
		// first by the sealed requestState, which is bound to the arguments too.
		confirm := string(out["confirm"])
		if !strings.Contains(string(out["asked"]), "Deploy?") || strings.Contains(confirm, "answer: accept") ||
			!strings.Contains(confirm, "a retry must repeat the request") && !strings.Contains(confirm, "requestState was not issued") {
			t.Errorf("http=%v: asked %s, confirm %s", http, out["asked"], confirm)
		}
		if !testwait.Within(testwait.Timeout, func() bool {
			return strings.Contains(log(), `"reason":"retry_mismatch"`) || strings.Contains(log(), `"reason":"request_state_invalid"`)
		}) {
			t.Errorf("http=%v: no retry_mismatch or request_state_invalid record:\n%s", http, log())
		}
	}
}

// TestTranslateModernListen: a pinned v2 client's subscriptions/listen in front of a
// v1 server is held open by the gateway, acknowledged with what the server offers
// (tools list_changed; not prompts, which it lacks), and the server's
// notifications/tools/list_changed after a new tool reaches the client on it; on
// stdio and the HTTP front. With two such servers the multiplexer holds the listen
// over one per server, acknowledges once with what they acknowledged, and the one
// server's list_changed reaches the client on it.
func TestTranslateModernListen(t *testing.T) {
	several := filepath.Join(t.TempDir(), "config.json")
	up := askServer(t)
	s := map[string]any{"command": up[0], "args": up[1:]}
	writeJSON(t, several, map[string]any{"mcpServers": map[string]any{"a": s, "b": s}})
	for _, c := range []struct {
		http   bool
		prefix string
		args   []string
	}{
		{false, "", append([]string{"--"}, up...)}, {true, "", append([]string{"--"}, up...)},
		{false, "a_", []string{"--config", several}}, {true, "a_", []string{"--config", several}},
	} {
		conf := legacyFront(t, c.http, c.args...)
		conf["prefix"], conf["listen"] = c.prefix, map[string]any{"toolsListChanged": true, "promptsListChanged": true}
		conf["tools"] = [][]any{{"grow", map[string]any{}}, {"grown", map[string]any{}}}
		out := askClient(t, conf)
		if string(out["honored"]) != `{"toolsListChanged":true}` || string(out["changed"]) != "1" || !strings.Contains(string(out["grown"]), `"text":"grown"`) {
			t.Errorf("http=%v prefix=%q: %v", c.http, c.prefix, out)
		}
	}
}
