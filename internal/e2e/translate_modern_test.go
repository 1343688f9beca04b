package e2e

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"
)

// TestTranslateModernClient: a v2 client pinned to 2026-07-28, and one in auto mode,
// in front of the v1 SDK server (2025-11-25 only): the gateway initializes the
// server itself, answers server/discover from its InitializeResult and makes every
// result valid in 2026-07-28, so the client negotiates 2026-07-28, lists, calls,
// gets a prompt and reads; on stdio and on the HTTP front, with one server and with
// two (one server/discover answer merged from two translated hops).
func TestTranslateModernClient(t *testing.T) {
	up := upstreamMJS(t)
	cfg := filepath.Join(t.TempDir(), "config.json")
	s := map[string]any{"command": up[0], "args": up[1:]}
	writeJSON(t, cfg, map[string]any{"mcpServers": map[string]any{"a": s, "b": s}})
	one := append([]string{binary, "gateway", "run", "--policies", emptyPolicies(t), "--"}, up...)
	several := []string{binary, "gateway", "run", "--config", cfg, "--policies", emptyPolicies(t)}
	h1 := startHTTPGateway(t, append([]string{"--"}, up...)...)
	h2 := startHTTPGateway(t, "--config", cfg)
	for _, c := range []struct {
		front, mode string
		several     bool
	}{
		{"stdio", "pin", false}, {"stdio", "auto", false}, {"stdio", "pin", true},
		{"http", "pin", false}, {"http", "auto", false}, {"http", "pin", true},
	} {
		name := fmt.Sprintf("%s %s several=%v", c.front, c.mode, c.several)
		conf := map[string]any{"mode": c.mode, "list": true, "prefix": "", "discover": true}
		if c.several {
			conf["prefix"] = "a_"
		}
		switch {
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
	}
}
