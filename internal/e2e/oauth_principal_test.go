package e2e

import (
	"encoding/json"
	"fmt"
	"net/http"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mcpgate/mcpgate/internal/oauth/oauthtest"
	"github.com/mcpgate/mcpgate/internal/testwait"
)

// modernCallBody is a 2026-07-28 tools/call (the _meta envelope, no session).
func modernCallBody(id int, tool string, args map[string]any) string {
	b, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": map[string]any{
		"name": tool, "arguments": args, "_meta": map[string]any{
			"io.modelcontextprotocol/protocolVersion": "2026-07-28", "io.modelcontextprotocol/clientCapabilities": map[string]any{}}}})
	return string(b)
}

// modernCall posts a 2026-07-28 tools/call with the standard headers.
func (c *httpClient) modernCall(t testing.TB, id int, tool string, args map[string]any) httpReply {
	t.Helper()
	sid := c.sid
	c.sid = ""
	defer func() { c.sid = sid }()
	r, err := c.do(t.Context(), http.MethodPost, modernCallBody(id, tool, args),
		map[string]string{"Mcp-Protocol-Version": "2026-07-28", "Mcp-Method": "tools/call", "Mcp-Name": tool})
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// TestOAuthTokenPerRequest: two access tokens of one subject, the first granting
// scope admin to client console, the second only mcp to client agent. Every request is
// judged by the token it carries: the second token gets 403 in the first one's
// 2025-11-25 session, and in a session of its own, as in 2026-07-28 requests after
// the first token's, its call runs as client agent with scope mcp (a policy that
// needs admin refuses it) and the record names client agent and scope mcp.
func TestOAuthTokenPerRequest(t *testing.T) {
	is := oauthtest.New(t)
	_, fake := httpBinaries(t)
	pol := t.TempDir()
	httpWriteFile(t, filepath.Join(pol, "admin.js"), `if (ctx.phase === "pre" && ctx.tool === "echo" && ctx.user.scopes.indexOf("admin") < 0) {
  throw "needs admin: client=" + ctx.user.callerId + " scopes=" + ctx.user.scopes.join(",") + " roles=" + ctx.user.roles.join(",");
}
`)
	cfg := filepath.Join(t.TempDir(), "config.json")
	httpWriteFile(t, cfg, `{"mcpgate":{"oauth":{"scopes":["mcp"],"scopeRoles":{"admin":["ops"]}}}}`)
	g := startHTTPGateway(t, "--config", cfg, "--policies", pol, "--oauth-issuer", is.URL, "--", fake)
	admin := is.Token(is.Claims("alice", g.url, map[string]any{"scope": "mcp admin", "client_id": "console"}))
	narrow := is.Token(is.Claims("alice", g.url, map[string]any{"scope": "mcp", "client_id": "agent"}))
	const refused = "needs admin: client=agent scopes=mcp roles="

	// 2025-11-25: the session is the admin token's.
	c := newHTTPClient(g.url)
	c.token = admin
	c.initialize(t)
	c.mustEcho(t, 1)
	c.token = narrow
	if r := c.post(t, httpCallBody(2, "echo", map[string]any{"text": "x"})); r.status != http.StatusForbidden {
		t.Fatalf("the narrow token in the admin token's session: %d %v", r.status, r.msgs)
	}
	// A refreshed admin token (same grants) keeps the session.
	c.token = is.Token(is.Claims("alice", g.url, map[string]any{"scope": "mcp admin", "client_id": "console"}))
	c.mustEcho(t, 3)
	n := newHTTPClient(g.url)
	n.token = narrow
	n.initialize(t)
	if got := httpResultText(n.call(t, 1, "echo", map[string]any{"text": "x"})); !strings.Contains(got, refused) {
		t.Fatalf("the narrow token's own session: %q", got)
	}

	// 2026-07-28: the admin token's requests first, then the narrow token's.
	m := newHTTPClient(g.url)
	m.token = admin
	if r := m.modernCall(t, 1, "echo", map[string]any{"text": "modern"}); r.status != http.StatusOK || httpResultText(r.last()) != "fakeup: modern" {
		t.Fatalf("admin token, 2026-07-28: %d %v", r.status, r.msgs)
	}
	m.token = narrow
	if r := m.modernCall(t, 2, "echo", map[string]any{"text": "modern"}); !strings.Contains(httpResultText(r.last()), refused) {
		t.Fatalf("narrow token, 2026-07-28, after the admin token's: %d %v", r.status, r.msgs)
	}

	// Every record of a refused call names the narrow token's client and scopes.
	var refusedRecs int
	testwait.Within(testwait.Timeout, func() bool { // records are written beside the answers
		refusedRecs = 0
		for _, rec := range g.stderr.records() {
			if rec["tool"] != "echo" || rec["outcome"] == "ok" && rec["decision"] != "reject" {
				continue
			}
			caller, _ := rec["caller"].(map[string]any)
			if caller["caller_id"] == "agent" && fmt.Sprint(caller["scopes"]) == "[mcp]" {
				refusedRecs++
			}
		}
		return refusedRecs >= 2
	})
	if refusedRecs < 2 {
		t.Fatalf("%d records name the narrow token's client and scopes, want 2:\n%s", refusedRecs, g.stderr.String())
	}
}
