package e2e

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/mcpgate/mcpgate/internal/testwait"
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
	testwait.For(t, "records naming the tenant, its layer's hash and its policy", func() bool { // records follow the reply
		log := g.stderr.String()
		return strings.Contains(log, `"tenant":"acme"`) && strings.Contains(log, `"tenant_policy_set_hash":"`) && strings.Contains(log, `"policy":"tenant:acme/p.js"`)
	})
}

// TestTenantLayerBundle: a tenant's layer comes from a signed bundle of its own
// (mcpgate.tenants.<name>.bundle): its revision is in the records beside the global
// set's hash, a next revision is live within the poll interval, and a bundle signed
// with another key is refused with the running revision kept.
func TestTenantLayerBundle(t *testing.T) {
	gw, fake := httpBinaries(t)
	dir := t.TempDir()
	keys, _ := filepath.Abs("../bundle/testdata")
	src := filepath.Join(dir, "acme.tar.gz")
	build := func(rev, policy, key string, previous ...string) {
		t.Helper()
		pol := filepath.Join(dir, "src-"+rev)
		if err := os.MkdirAll(pol, 0o700); err != nil {
			t.Fatal(err)
		}
		httpWriteFile(t, filepath.Join(pol, "acme.js"), policy)
		out := filepath.Join(dir, "build-"+rev+".tar.gz")
		args := append([]string{"bundle", "build", pol, "-o", out, "--signing-key", filepath.Join(keys, key), "--revision", rev}, previous...)
		if o, err := httpExec(gw, args...); err != nil {
			t.Fatalf("bundle build: %v\n%s", err, o)
		}
		if err := os.Rename(out, src); err != nil {
			t.Fatal(err)
		}
	}
	build("7", `if (ctx.phase === "pre" && ctx.params.text === "x") throw new Error("acme r7 refuses x");`, "ed25519.key")
	first := filepath.Join(dir, "r7.tar.gz")
	if data, err := os.ReadFile(src); err != nil || os.WriteFile(first, data, 0o600) != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256([]byte("acme-token"))
	cfg := filepath.Join(dir, "config.json")
	httpWriteFile(t, cfg, fmt.Sprintf(`{"mcpgate":{"tokens":[{"sha256":%q,"userID":"ann","tenant":"acme"}],
  "tenants":{"acme":{"bundle":%q,"bundleKey":%q}}}}`, hex.EncodeToString(sum[:]), src, filepath.Join(keys, "ed25519.pub")))
	g := startHTTPGateway(t, "--config", cfg, "--bundle-state", filepath.Join(dir, "state"), "--bundle-poll", "300ms", "--", fake)
	c := newHTTPClient(g.url)
	c.token = "acme-token"
	c.initialize(t)
	refusedBy := func(id int, want string) bool {
		r := c.call(t, id, "echo", map[string]any{"text": "x"})
		_, msg := httpErrorOf(r)
		return strings.Contains(msg+httpResultText(r), want)
	}
	if !refusedBy(1, "acme r7 refuses x") {
		t.Fatal("revision 7 of acme's layer is not enforced")
	}
	testwait.For(t, "a record naming acme's revision", func() bool { // records follow the reply
		log := g.stderr.String()
		return strings.Contains(log, `"tenant_policy_revision":"7"`) && strings.Contains(log, `"tenant":"acme"`)
	})
	// Another key's bundle is refused; revision 7 stays.
	build("8", `if (ctx.phase === "pre" && ctx.params.text === "x") throw new Error("acme r8 refuses x");`, "other.key", "--previous", first)
	testwait.For(t, "the wrongly signed revision refused", func() bool { return strings.Contains(g.stderr.String(), "does not verify") })
	if !refusedBy(2, "acme r7 refuses x") {
		t.Fatal("a wrongly signed bundle replaced revision 7")
	}
	// The next revision, rightly signed, is live within the poll interval.
	build("8", `if (ctx.phase === "pre" && ctx.params.text === "x") throw new Error("acme r8 refuses x");`, "ed25519.key", "--previous", first)
	id := 3
	testwait.For(t, "revision 8 live", func() bool { id++; return refusedBy(id, "acme r8 refuses x") })
}

// TestTenantLayerCannotUnhide: the global set hides "wipe" (destructiveHint) from an
// untrusted caller; the caller's tenant layer lists it again without the annotation.
// Through the real binary and the TypeScript SDK client the caller neither sees nor
// calls it: the call is refused as to a tool not listed, citing the global policy
// (docs/policies.md#layers).
func TestTenantLayerCannotUnhide(t *testing.T) {
	server := hostileServer(t)
	dir := t.TempDir()
	global, acme := filepath.Join(dir, "global"), filepath.Join(dir, "acme")
	for d, src := range map[string]string{
		global: `if (ctx.phase === "list" && ctx.user.callerClass !== "trusted") {
  ctx.tools = ctx.tools.filter((t) => !(t.annotations && t.annotations.destructiveHint));
}`,
		acme: `if (ctx.phase === "list") ctx.tools.push({name: "wipe", description: "harmless", inputSchema: {type: "object"}});`,
	} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			t.Fatal(err)
		}
		httpWriteFile(t, filepath.Join(d, "hide-dangerous.js"), src)
	}
	sum := sha256.Sum256([]byte("acme-token"))
	cfg := filepath.Join(dir, "config.json")
	httpWriteFile(t, cfg, fmt.Sprintf(`{"mcpgate":{"tokens":[{"sha256":%q,"userID":"ann","callerClass":"untrusted","tenant":"acme"}],"tenants":{"acme":{"policies":%q}}}}`,
		hex.EncodeToString(sum[:]), acme))
	g := startHTTPGateway(t, append([]string{"--config", cfg, "--policies", global, "--"}, server...)...)
	r := httpTools(t, g.url, "acme-token", "wipe")
	if slices.Contains(r.Tools, "wipe") || !r.Call.IsError || len(r.Call.Content) == 0 {
		t.Fatalf("the tenant un-hid wipe: tools %v, call %+v", r.Tools, r.Call)
	}
	// refused as hidden by the global policy that dropped it, not the tenant's that
	// acted last (docs/channels.md#hidden)
	if m := rejectRe.FindStringSubmatch(r.Call.Content[0].Text); m == nil || m[1] != "hide-dangerous.js" || m[2] != "the tool is not listed for this caller" {
		t.Fatalf("the call to wipe: %+v", r.Call)
	}
}
