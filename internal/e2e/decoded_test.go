package e2e

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mcpgate/mcpgate/internal/testwait"
)

// TestDecodedValues drives the binary over stdio in front of a TypeScript SDK server
// (v1) that writes raw bytes (docs/decisions.md#decoded-values,
// docs/decisions.md#one-reading):
//   - an input_required result whose resultType is written "input\u005frequired" is
//     one (JSON.parse reads it so): its sampling request goes through the input
//     request channel, where a policy refuses it, so the client gets the refusal and
//     never the request, and the record names sampling/createMessage via tools/call;
//   - a sampling request whose message has an "action" beside its content is not an
//     ElicitResult: its "MimeType" is refused under the one-reading rule, and the
//     request never reaches the client.
func TestDecodedValues(t *testing.T) {
	servers := []foldServer{{name: "ts", sdk: "ts-v1", ran: filepath.Join(t.TempDir(), "ran.txt")}}
	flags := foldGateway(t, servers)
	pol := flags[3] // foldGateway's --policies
	if err := os.WriteFile(filepath.Join(pol, "secrets.js"), []byte(`if (ctx.phase === "server_request" && ctx.method === "sampling/createMessage" && JSON.stringify(ctx.params).includes("id_rsa")) { throw new Error("no sampling over secrets"); }`), 0o600); err != nil {
		t.Fatal(err)
	}
	log := &stderrLog{}
	c := startLineClient(t, log, append([]string{"gateway", "run", "--log-format", "json"}, flags...)...)

	m := c.rpc(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"hostile","arguments":{"kind":"escaped-input"}}}`)
	if text := httpResultText(m); !strings.Contains(text, "call rejected by policy secrets.js") {
		t.Errorf("escaped input_required: the client got %v", m)
	}
	for _, l := range c.seen {
		if strings.Contains(l, "id_rsa") || strings.Contains(l, "inputRequests") {
			t.Errorf("the client saw %s", l)
		}
	}
	// The record is written beside the answer, not before it: wait for it.
	found := testwait.Within(testwait.Timeout, func() bool {
		for _, r := range log.allRecords() {
			if r["method"] == "sampling/createMessage" && r["via"] == "tools/call" && r["reason"] == "policy_throw" {
				return true
			}
		}
		return false
	})
	if !found {
		t.Errorf("no record of the input request: %v", log.allRecords())
	}

	c.seen = nil
	m = c.rpc(`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"hostile","arguments":{"kind":"action-sampling"}}}`)
	if httpResultText(m) != "hostile done" {
		t.Errorf("action-sampling: the client got %v", m)
	}
	for _, l := range c.seen {
		if strings.Contains(l, "sampling/createMessage") || strings.Contains(l, "G101") {
			t.Errorf("the client saw %s", l)
		}
	}
	checkRefusalRecords(t, log, 1)
}
