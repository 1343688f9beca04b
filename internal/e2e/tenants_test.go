package e2e

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestTenantLayers runs the real binary with a tenant layer (docs/policies.md#layers):
// a caller whose token entry names tenant "acme" runs the global set, then acme's
// layer, which rejects echo and cannot undo the global rewrite; a caller without a
// tenant runs the global set alone. Records name the tenant and both layers' hashes.
func TestTenantLayers(t *testing.T) {
	_, fake := httpBinaries(t)
	dir := t.TempDir()
	global, acme := filepath.Join(dir, "global"), filepath.Join(dir, "acme")
	for d, src := range map[string]string{
		global: `if (ctx.phase === "pre" && ctx.params.text === "unlock") ctx.params.text = "locked";`,
		acme:   `if (ctx.phase === "pre") { if (ctx.params.text === "x") throw new Error("acme refuses x"); ctx.params.text = "unlock"; }`,
	} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			t.Fatal(err)
		}
		httpWriteFile(t, filepath.Join(d, "p.js"), src)
	}
	entry := func(tok, user, tenant string) string {
		sum := sha256.Sum256([]byte(tok))
		return fmt.Sprintf(`{"sha256":%q,"userID":%q,"tenant":%q}`, hex.EncodeToString(sum[:]), user, tenant)
	}
	cfg := filepath.Join(dir, "config.json")
	httpWriteFile(t, cfg, fmt.Sprintf(`{"mcpgate":{"tokens":[%s,%s],"tenants":{"acme":{"policies":%q}}}}`,
		entry("acme-token", "ann", "acme"), entry("plain-token", "bob", ""), acme))
	g := startHTTPGateway(t, "--config", cfg, "--policies", global, "--", fake)

	a := newHTTPClient(g.url)
	a.token = "acme-token"
	a.initialize(t)
	if got := httpResultText(a.call(t, 1, "echo", map[string]any{"text": "hello"})); got != "fakeup: locked" {
		t.Fatalf("acme's rewrite back got through: %q", got)
	}
	refused := a.call(t, 2, "echo", map[string]any{"text": "x"})
	if _, msg := httpErrorOf(refused); !strings.Contains(msg+httpResultText(refused), "acme refuses x") {
		t.Fatalf("acme's rejection: %v", refused)
	}
	b := newHTTPClient(g.url)
	b.token = "plain-token"
	b.initialize(t)
	if got := httpResultText(b.call(t, 1, "echo", map[string]any{"text": "x"})); got != "fakeup: x" {
		t.Fatalf("a caller without a tenant ran acme's layer: %q", got)
	}
	log := g.stderr.String()
	if !strings.Contains(log, `"tenant":"acme"`) || !strings.Contains(log, `"tenant_policy_set_hash":"`) || !strings.Contains(log, `"policy":"tenant:acme/p.js"`) {
		t.Fatalf("records do not name the tenant, its layer's hash and its policy:\n%s", log)
	}
}
