package e2e

import (
	"bufio"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestGatewaysInARow: two mcpgate binaries in a row in front of the v2 server
// (modern.mjs, HOSTILE), the outer one's upstream the inner one over stdio (`--`, and
// one of two mcpServers) and over HTTP (a `url` server, one of two, to the inner one's
// --listen), with a v2 client on
// 2026-07-28 and one on 2025-11-25: the listing has the tools (the inner gateway
// serves the outer one's own requests, whose ids are another process's), a call
// works, a blocked result is blocked once, by the inner gateway, under the inner
// gateway's record, and the outer one records it as it saw it (a pass: the
// placeholder is a notice, not a forged one), and a warned result carries the inner
// gateway's one notice and is not blocked or warned again by the outer one
// (docs/decisions.md#gateway-chain).
func TestGatewaysInARow(t *testing.T) {
	t.Setenv("HOSTILE", "1")
	up := modernServer(t, "serve")
	for _, hop := range []string{"stdio", "stdio-several", "http-several"} {
		for _, mode := range []string{"pin", "legacy"} {
			t.Run(hop+"/"+mode, func(t *testing.T) {
				dir := t.TempDir()
				outerAudit, innerAudit := filepath.Join(dir, "outer.jsonl"), filepath.Join(dir, "inner.jsonl")
				inner := []string{"--filter-output", "--audit-file", innerAudit, "--"}
				outer := []string{binary, "gateway", "run", "--filter-output", "--audit-file", outerAudit, "--policies", emptyPolicies(t)}
				conf := map[string]any{"mode": mode, "list": true, "warn": true, "prefix": ""}
				switch hop {
				case "stdio": // the inner gateway is the command after --
					outer = append(append(append(outer, "--", binary, "gateway", "run", "--policies", emptyPolicies(t)), inner...), up...)
				default: // the inner gateway is one of two mcpServers: the multiplexer's own requests go to it
					server := map[string]any{"command": binary, "args": append(append([]string{"gateway", "run", "--policies", emptyPolicies(t)}, inner...), up...), "env": map[string]string{"HOSTILE": "1"}}
					if hop == "http-several" {
						g := startHTTPGateway(t, append(inner, up...)...)
						server = map[string]any{"url": g.url}
					}
					cfg := filepath.Join(dir, "config.json")
					writeJSON(t, cfg, map[string]any{"mcpServers": map[string]any{"inner": server,
						"other": map[string]any{"command": up[0], "args": up[1:]}}})
					outer = append(outer, "--config", cfg)
					conf["prefix"], conf["uri"] = "inner_", "inner+res:///a"
				}
				conf["cmd"] = outer
				out := revisionClientCfg(t, conf)
				want := map[string]string{"pin": `"2026-07-28"`, "legacy": `"2025-11-25"`}[mode]
				if string(out["version"]) != want || out["connect"] != nil {
					t.Fatalf("negotiated %s, want %s: %v", out["version"], want, out)
				}
				for _, tool := range []string{`echo"`, `evil"`, `warn"`} {
					tool = `"` + conf["prefix"].(string) + tool
					if !strings.Contains(string(out["tools"]), tool) {
						t.Errorf("listing %s lacks %s", out["tools"], tool)
					}
				}
				if !strings.Contains(string(out["echo"]), `"text":"hi"`) {
					t.Errorf("echo: %s", out["echo"])
				}
				evil, warn := string(out["evil"]), string(out["warn"])
				if strings.Count(evil, "[mcpgate: ") != 1 || !strings.Contains(evil, "[mcpgate: tool output blocked") {
					t.Errorf("evil: want the one block placeholder, got %s", evil)
				}
				if strings.Count(warn, "[mcpgate: ") != 1 || !strings.Contains(warn, "[mcpgate: WARNING — 1 findings") || !strings.Contains(warn, `"x hidden y"`) {
					t.Errorf("warn: want the inner notice and the sanitized text, got %s", warn)
				}
				innerRecs, outerRecs := callRecords(t, innerAudit, ""), callRecords(t, outerAudit, conf["prefix"].(string))
				if r := innerRecs["evil"]; r == nil || r["decision"] != "block" || !strings.Contains(evil, r["event_id"].(string)) {
					t.Errorf("inner record of evil %v, the client saw %s", r, evil)
				}
				if r := innerRecs["warn"]; r == nil || r["decision"] != "warn" || !strings.Contains(warn, r["event_id"].(string)) {
					t.Errorf("inner record of warn %v, the client saw %s", r, warn)
				}
				for _, tool := range []string{"evil", "warn"} {
					if r := outerRecs[tool]; r == nil || r["decision"] != "allow" || r["findings_count"] != 0.0 {
						t.Errorf("outer record of %s: %v", tool, r)
					}
				}
			})
		}
	}
}

// callRecords reads an audit file's tools/call records, by tool; a second record of
// one tool fails the test.
func callRecords(t *testing.T, path, prefix string) map[string]map[string]any {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	recs := map[string]map[string]any{}
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var m map[string]any
		if json.Unmarshal(sc.Bytes(), &m) != nil || m["method"] != "tools/call" {
			continue
		}
		tool, _ := m["tool"].(string)
		tool = strings.TrimPrefix(tool, prefix)
		if recs[tool] != nil {
			t.Errorf("%s: two records of %s", filepath.Base(path), tool)
		}
		recs[tool] = m
	}
	return recs
}
