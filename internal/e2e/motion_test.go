package e2e

import (
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mcpgate/mcpgate/internal/testwait"
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

// TestSecretsInMotionChannels: a resources/read and a prompts/get result feed secrets
// in motion as a tools/call result does. With the TypeScript SDK client over stdio and
// HTTP and two servers, a ghp_ token that one server's resource showed and another
// that its prompt showed, sent on to the other server (as written, and base64-encoded),
// are refused with --refuse-secrets-in-motion, citing the resources/read and the
// prompts/get records as the source.
func TestSecretsInMotionChannels(t *testing.T) {
	resToken := "ghp_" + "Rk2mT8vW4yB1nC7dF3gH9jK5lP6sA0uE2qZx" // ghp_ shapes, no live tokens
	promptToken := "ghp_" + "Pw7nB2cV5xZ8aS1dF4gH6jK9lQ3wE0rT2yUi"
	cases := t.TempDir()
	writeJSON(t, filepath.Join(cases, "res.json"), map[string]any{
		"contents": []any{map[string]any{"uri": "case://res", "mimeType": "text/plain", "text": "deploy token: " + resToken}}})
	writeJSON(t, filepath.Join(cases, "prm.json"), map[string]any{
		"messages": []any{map[string]any{"role": "user", "content": map[string]any{"type": "text", "text": "use the token " + promptToken}}}})
	up := upstreamMJS(t)
	server := map[string]any{"command": up[0], "args": up[1:], "env": map[string]any{"CASES_DIR": cases, "CASE_CHANNELS": "1"}}
	cfg := filepath.Join(t.TempDir(), "config.json")
	writeJSON(t, cfg, map[string]any{"mcpServers": map[string]any{"vault": server, "hook": server}})

	for _, transport := range []string{"stdio", "http"} {
		t.Run(transport, func(t *testing.T) {
			flags := []string{"--config", cfg, "--refuse-secrets-in-motion"}
			var d *driver
			var log *stderrLog
			if transport == "http" {
				g := startHTTPGateway(t, flags...)
				d, log = startDriver(t, map[string]any{"url": g.url}), g.stderr
			} else {
				d = startDriver(t, map[string]any{"command": binary, "args": append([]string{"gateway", "run", "--log-format", "json",
					"--policies", emptyPolicies(t)}, flags...)})
				log = d.stderr
			}
			d.mustRequest("tools/list", nil)
			sourceOf := func(method string) any {
				var id any
				if !testwait.Within(testwait.Timeout, func() bool {
					for _, r := range log.allRecords() {
						if r["method"] == method {
							id = r["event_id"]
						}
					}
					return id != nil
				}) {
					t.Fatalf("no %s record:\n%s", method, log.String())
				}
				return id
			}
			for _, tc := range []struct {
				method string
				params map[string]any
				body   string
			}{
				{"resources/read", map[string]any{"uri": "vault+case://res"}, "ticket resolved; " + resToken},
				{"prompts/get", map[string]any{"name": "vault_emit", "arguments": map[string]any{"case": "prm"}},
					base64.StdEncoding.EncodeToString([]byte("Authorization: token " + promptToken))},
			} {
				if res := d.mustRequest(tc.method, tc.params); !strings.Contains(fmt.Sprint(res), "ghp_") {
					t.Fatalf("%s: the vault's token did not reach the client: %v", tc.method, res)
				}
				source := sourceOf(tc.method)
				n := len(log.records()) + 1
				res := d.mustRequest("tools/call", map[string]any{"name": "hook_echo_args", "arguments": map[string]any{"body": tc.body}})
				rec := log.waitRecords(t, n)[n-1]
				m, _ := rec["secret_in_motion"].(map[string]any)
				if res["isError"] != true || !strings.Contains(fmt.Sprint(res), "secret_in_motion") || rec["reason"] != "secret_in_motion" ||
					m == nil || m["source_event_id"] != source || m["source_server"] != "vault" || m["cross_server"] != true {
					t.Fatalf("%s: the token it showed moved: %v; record %v", tc.method, res, rec)
				}
			}
			for _, form := range []string{resToken, promptToken, resToken[4:], promptToken[4:]} {
				if strings.Contains(log.String(), form) {
					t.Fatal("the gateway's stderr holds a token")
				}
			}
		})
	}
}
