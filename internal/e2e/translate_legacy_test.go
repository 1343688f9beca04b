package e2e

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// legacyClient runs testdata/e2e/legacy-client.mjs (the v1 client SDK, 2025-11-25)
// with conf and returns what it printed.
func legacyClient(t *testing.T, conf map[string]any) map[string]json.RawMessage {
	t.Helper()
	nodeModule(t, "@modelcontextprotocol/sdk/package.json")
	return scriptJSON(t, "legacy-client.mjs", conf)
}

// mrtrServer is testdata/e2e/mrtr.mjs over stdio: a v2 server that speaks 2026-07-28
// only and whose tool confirm asks the client through an input_required elicitation.
func mrtrServer(t *testing.T) []string {
	nodeModule(t, "@modelcontextprotocol/server/package.json")
	return []string{node22(t), filepath.Join(root, "testdata", "e2e", "mrtr.mjs"), "stdio"}
}

// mrtrHTTP starts testdata/e2e/mrtr.mjs over Streamable HTTP (the node adapter) and
// returns its URL.
func mrtrHTTP(t *testing.T) string {
	nodeModule(t, "@modelcontextprotocol/node/package.json")
	return scriptHTTP(t, "mrtr.mjs", "http")
}

// legacyFront returns the legacy-client.mjs conf that reaches the gateway with args
// (gateway run flags, then the upstream) over stdio, or over its HTTP front.
func legacyFront(t *testing.T, http bool, args ...string) map[string]any {
	if http {
		return map[string]any{"url": startHTTPGateway(t, args...).url}
	}
	return map[string]any{"cmd": append([]string{binary, "gateway", "run", "--policies", emptyPolicies(t)}, args...)}
}

// TestTranslateLegacyMatrix: the v1 SDK client (2025-11-25) through the gateway, on
// the stdio front and the HTTP front, with one server and with two, in front of a v2
// server that serves both revisions, one that serves 2026-07-28 only (translated:
// the gateway answers initialize from server/discover and adds the _meta envelope)
// and a v1 server: it connects, lists, calls, gets the prompt and reads the
// resource, and pings; a translated server's capabilities promise no list-changed
// notifications, which only subscriptions/listen would bring (the multiplexer's
// own, for servers that join, stay).
func TestTranslateLegacyMatrix(t *testing.T) {
	servers := map[string][]string{"dual": modernServer(t, "serve"), "modern-only": modernServer(t, "reject"), "v1": upstreamMJS(t)}
	for _, server := range []string{"dual", "modern-only", "v1"} {
		for _, several := range []bool{false, true} {
			for _, http := range []bool{false, true} {
				name := fmt.Sprintf("server %s, several=%v, http=%v", server, several, http)
				up := servers[server]
				prefix, uri := "", "res:///a"
				args := append([]string{"--"}, up...)
				if several {
					cfg := filepath.Join(t.TempDir(), "config.json")
					s := map[string]any{"command": up[0], "args": up[1:]}
					writeJSON(t, cfg, map[string]any{"mcpServers": map[string]any{"a": s, "b": s}})
					args = []string{"--config", cfg}
					prefix, uri = "a_", "a+res:///a"
				}
				conf := legacyFront(t, http, args...)
				conf["prefix"] = prefix
				if server != "v1" { // upstream.mjs has tools only
					conf["uri"], conf["prompt"] = uri, true
				}
				start := time.Now()
				out := legacyClient(t, conf)
				t.Logf("%s: %s", name, time.Since(start).Round(time.Millisecond))
				if out["connect"] != nil || !strings.Contains(string(out["tools"]), `"`+prefix+"echo") ||
					!strings.Contains(string(out["echo"]), "hi") || string(out["ping"]) != "{}" {
					t.Errorf("%s: %v", name, out)
					continue
				}
				if server == "v1" {
					continue
				}
				if !strings.Contains(string(out["prompt"]), `"text":"plain"`) || !strings.Contains(string(out["read"]), `"text":"plain"`) {
					t.Errorf("%s: prompt %s, read %s", name, out["prompt"], out["read"])
				}
				if server == "modern-only" && !several && strings.Contains(string(out["capabilities"]), "listChanged") {
					t.Errorf("%s: capabilities %s promise list-changed notifications", name, out["capabilities"])
				}
			}
		}
	}
}

// TestTranslateLegacyMRTR: a v2 server that speaks 2026-07-28 only and asks for input
// with input_required (an elicitation from the tool confirm, with requestState),
// driven by a v1 client that answers elicitation/create: the client gets the
// elicitation as a 2025-11-25 request, its answer reaches the server in the retry's
// inputResponses with the server's requestState byte for byte, and the tool's result
// reaches the client; on stdio and the HTTP front, over a stdio and a url upstream,
// and behind the multiplexer.
func TestTranslateLegacyMRTR(t *testing.T) {
	for _, c := range upstreamCases(t, mrtrServer(t), mrtrHTTP(t)) {
		for _, http := range []bool{false, true} {
			for _, answer := range []string{"accept", "decline"} {
				name := fmt.Sprintf("%s, http=%v, %s", c.name, http, answer)
				conf := legacyFront(t, http, c.args...)
				conf["prefix"], conf["confirm"] = c.prefix, true
				want := `answer: accept {\"sure\":true} state st:prod` + "\u2028" + `<&>`
				if answer == "decline" {
					conf["answer"] = map[string]any{"action": "decline"}
					want = `answer: decline {} state st:prod` + "\u2028" + `<&>`
				}
				out := legacyClient(t, conf)
				if string(out["elicited"]) != `["Deploy?"]` || !strings.Contains(string(out["confirm"]), want) {
					t.Errorf("%s: elicited %s, confirm %s; want %s", name, out["elicited"], out["confirm"], want)
				}
			}
		}
	}
}

// TestTranslateLegacyMRTRBlocked: with --filter-output, an input_required
// elicitation whose message carries an OSC 52 escape is withheld like a 2025-11-25
// server's: the client's handler is never asked, the tool call fails with the
// refusal that cites the record, and the record names elicitation/create, via
// tools/call.
func TestTranslateLegacyMRTRBlocked(t *testing.T) {
	t.Setenv("ELICIT_HOSTILE", "1")
	g := startHTTPGateway(t, append([]string{"--filter-output", "--"}, mrtrServer(t)...)...)
	out := legacyClient(t, map[string]any{"url": g.url, "prefix": "", "confirm": true})
	if string(out["elicited"]) != `[]` || !reqBlockedRe.MatchString(string(out["confirm"])) {
		t.Fatalf("elicited %s, confirm %s", out["elicited"], out["confirm"])
	}
	id := reqBlockedRe.FindStringSubmatch(string(out["confirm"]))[1]
	var rec map[string]any
	for _, line := range strings.Split(g.stderr.String(), "\n") {
		if strings.Contains(line, id) && strings.Contains(line, `"event_id"`) {
			_ = json.Unmarshal([]byte(line), &rec)
		}
	}
	if rec == nil || rec["method"] != "elicitation/create" || rec["via"] != "tools/call" || rec["blocked"] != true {
		t.Errorf("record %s: %v\n%s", id, rec, g.stderr.String())
	}
	if strings.Contains(g.stderr.String(), "cm0gLXJmIH4") {
		t.Errorf("the elicitation's text reached the log")
	}
}

// TestTranslateLegacyRestart: a translated server that exits while the client
// answers its input request: the tool call fails with the restart's error (no
// hang), the late answer goes nowhere, and the restarted server is translated again
// (the supervisor's replayed initialize), so the next call works.
func TestTranslateLegacyRestart(t *testing.T) {
	for _, http := range []bool{false, true} {
		// The server writes marker as it exits; the client answers only then.
		marker := filepath.Join(t.TempDir(), "exited")
		up := append([]string{"--", "env", "MRTR_CRASH_MARKER=" + marker}, mrtrServer(t)...)
		conf := legacyFront(t, http, up...)
		conf["prefix"], conf["crash"], conf["answerDelayMs"], conf["crashMarker"] = "", true, 500, marker
		out := legacyClient(t, conf)
		if string(out["elicited"]) != `["crash"]` || !strings.Contains(string(out["crash"]), "exited while the request was in flight") ||
			!strings.Contains(string(out["echo2"]), `"text":"again"`) {
			t.Errorf("http=%v: elicited %s, crash %s, echo after the restart %s", http, out["elicited"], out["crash"], out["echo2"])
		}
	}
}
