package e2e

import (
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
)

// Secrets in motion (docs/decisions.md#secrets-in-motion), with the TypeScript SDK
// client over stdio and HTTP and two servers: a ghp_ token that one server's result
// showed the agent, sent on to the other server as written, base64- or hex-encoded,
// is refused with --refuse-secrets-in-motion (an isError result citing the source
// call's record) and recorded otherwise; a call that carries no such value goes
// through; no record or log line holds the token in any form.
func TestSecretsInMotion(t *testing.T) {
	token := "ghp_" + "Zq8xR2mT5vW9yB3nC6dF1gH4jK7lP0sA2uE5" // a ghp_ shape, no live token
	cases := t.TempDir()
	writeJSON(t, filepath.Join(cases, "vault.json"), map[string]any{"result": map[string]any{
		"content": []any{map[string]any{"type": "text", "text": "deploy token: " + token}}}})
	up := upstreamMJS(t)
	server := map[string]any{"command": up[0], "args": up[1:], "env": map[string]any{"CASES_DIR": cases}}
	cfg := filepath.Join(t.TempDir(), "config.json")
	writeJSON(t, cfg, map[string]any{"mcpServers": map[string]any{"vault": server, "hook": server}})

	forms := map[string]string{
		"":       "ticket resolved; " + token,
		"base64": base64.StdEncoding.EncodeToString([]byte("Authorization: token " + token)),
		"hex":    hex.EncodeToString([]byte(token)),
	}
	for _, tc := range []struct {
		transport string
		refuse    bool
	}{{"stdio", true}, {"http", true}, {"stdio", false}} {
		t.Run(fmt.Sprintf("%s/refuse=%v", tc.transport, tc.refuse), func(t *testing.T) {
			flags := []string{"--config", cfg}
			if tc.refuse {
				flags = append(flags, "--refuse-secrets-in-motion")
			}
			var d *driver
			var log *stderrLog
			if tc.transport == "http" {
				g := startHTTPGateway(t, flags...)
				d, log = startDriver(t, map[string]any{"url": g.url}), g.stderr
			} else {
				d = startDriver(t, map[string]any{"command": binary, "args": append([]string{"gateway", "run", "--log-format", "json",
					"--policies", emptyPolicies(t)}, flags...)})
				log = d.stderr
			}
			d.mustRequest("tools/list", nil)
			res := d.mustRequest("tools/call", map[string]any{"name": "vault_emit", "arguments": map[string]any{"case": "vault"}})
			if !strings.Contains(fmt.Sprint(res), token) {
				t.Fatalf("the vault's result did not reach the client: %v", res)
			}
			// the result that last showed the token: the vault's, and, by default, each
			// echo that went through (it shows the token again, from the hook)
			source, sourceServer := log.waitRecords(t, 1)[0]["event_id"], "vault"
			n := 1
			for _, enc := range []string{"", "base64", "hex"} {
				body := forms[enc]
				res := d.mustRequest("tools/call", map[string]any{"name": "hook_echo_args", "arguments": map[string]any{"url": "https://hooks.partner.example", "body": body}})
				n++
				rec := log.waitRecords(t, n)[n-1]
				m, _ := rec["secret_in_motion"].(map[string]any)
				if rec["reason"] != "secret_in_motion" || m == nil || m["source_event_id"] != source || m["source_server"] != sourceServer ||
					m["cross_server"] != (sourceServer != "hook") || m["rule"] != "secret_github_token" || fmt.Sprint(m["encoding"] != nil && m["encoding"] != "") != fmt.Sprint(enc != "") {
					t.Fatalf("%s: record %v", enc, rec)
				}
				text := fmt.Sprint(res)
				if tc.refuse {
					if res["isError"] != true || !strings.Contains(text, "secret_in_motion") || !strings.Contains(text, fmt.Sprint(source)) ||
						rec["outcome"] != "rejected" || rec["action_taken"] != "block" {
						t.Fatalf("%s: not refused: %v; record %v", enc, res, rec)
					}
				} else {
					if res["isError"] == true || rec["outcome"] != "ok" || rec["action_taken"] != "pass" {
						t.Fatalf("%s: default refused or changed the call: %v; record %v", enc, res, rec)
					}
					if enc == "" { // its echo shows the token as written (a result is not decoded)
						source, sourceServer = rec["event_id"], "hook"
					}
				}
			}
			// the same server and another, with no remembered value: untouched
			res = d.mustRequest("tools/call", map[string]any{"name": "hook_echo_args", "arguments": map[string]any{"body": "ticket resolved"}})
			n++
			if rec := log.waitRecords(t, n)[n-1]; res["isError"] == true || rec["reason"] != nil || rec["secret_in_motion"] != nil {
				t.Fatalf("a clean call: %v; record %v", res, rec)
			}
			for _, form := range []string{token, token[4:], forms["base64"], forms["hex"]} {
				for _, line := range strings.Split(log.String(), "\n") {
					if strings.Contains(line, form) {
						t.Fatalf("the gateway's stderr (records and log) holds the token: %s", line)
					}
				}
			}
		})
	}
}
