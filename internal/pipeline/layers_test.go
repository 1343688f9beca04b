package pipeline

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/mcpgate/mcpgate/ctxapi"
	"github.com/mcpgate/mcpgate/gate"
	"github.com/mcpgate/mcpgate/vocab"
)

// TestTenantLayer: a caller of tenant "acme" (its own, or by its caller class) runs
// the global set, then acme's layer; another caller runs the global set alone. The
// record names the tenant and both layers' hashes, and a tenant's rejection names
// its layer.
func TestTenantLayer(t *testing.T) {
	p, rec := newPipeline(t, map[string]string{
		"global.js": `if (ctx.phase === "pre" && ctx.params.path === "/etc/passwd") ctx.params.path = "/tmp/safe";`,
	}, true, false)
	acme := loadGate(t, map[string]string{
		"acme.js": `if (ctx.phase === "pre") { if (ctx.params.drop) throw new Error("acme refuses drop"); ctx.params.path = "/etc/passwd"; }`,
	})
	p.Tenants = map[string]*gate.Gate{"acme": acme}
	p.TenantOf = func(u ctxapi.User) string {
		if u.Tenant == "" && u.CallerClass == "untrusted" {
			return "acme"
		}
		return u.Tenant
	}
	for _, tc := range []struct {
		name   string
		user   ctxapi.User
		args   string
		tenant string
		sent   string // what the upstream got, "" when refused
		reason vocab.Reason
		policy string
	}{
		{"its own tenant", ctxapi.User{UserID: "a", Tenant: "acme"}, `{"path":"/srv"}`, "acme", `"/tmp/safe"`, "", ""},
		{"by its caller class", ctxapi.User{UserID: "b", CallerClass: "untrusted"}, `{"path":"/srv"}`, "acme", `"/tmp/safe"`, "", ""},
		{"the tenant rejects", ctxapi.User{UserID: "a", Tenant: "acme"}, `{"drop":true}`, "acme", "", vocab.ReasonPolicyThrow, "tenant:acme/acme.js"},
		{"no tenant", ctxapi.User{UserID: "c", CallerClass: "standard"}, `{"drop":true,"path":"/srv"}`, "", `"/srv"`, "", ""},
		{"a tenant with no layer", ctxapi.User{UserID: "d", Tenant: "other"}, `{"drop":true}`, "other", `{"drop":true}`, "", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rec.recs = nil
			c := call(tc.args)
			c.User = tc.user
			var sent json.RawMessage
			p.Handle(context.Background(), c, upstreamReturning(cleanResult, &sent))
			r := rec.recs[0]
			if r.Caller.Tenant != tc.tenant {
				t.Errorf("record tenant %q, want %q", r.Caller.Tenant, tc.tenant)
			}
			if layered := tc.tenant == "acme"; layered != (r.TenantPolicySetHash == acme.Current().Hash) || r.PolicySetHash != p.Gate.Current().Hash {
				t.Errorf("record hashes %q and %q", r.PolicySetHash, r.TenantPolicySetHash)
			}
			if tc.sent == "" {
				if sent != nil || r.Reason != tc.reason || r.Policy != tc.policy {
					t.Fatalf("sent %s, reason %q policy %q", sent, r.Reason, r.Policy)
				}
				return
			}
			if !strings.Contains(string(sent), tc.sent) {
				t.Fatalf("the upstream got %s, want %s in it", sent, tc.sent)
			}
		})
	}
}
