package gate

import (
	"context"

	"github.com/mcpgate/mcpgate/ctxapi"
	"github.com/mcpgate/mcpgate/vocab"
)

// layers is a tenant's stack: the global set, then the tenant's, named for records.
type layers struct {
	global, tenant *Set
	name           string // "tenant:<name>"
}

// Layered returns the set a tenant's calls run on: global's policies first, then
// tenant's, and global's again over whatever the tenant changed, so a tenant layer
// can add warn, redact, mask, reject and hidden entries but never loosen the global
// set (docs/policies.md#layers). Generation, Hash and Revision stay global's; TenantHash and
// TenantRevision are tenant's. With no tenant policies it returns global.
func Layered(global, tenant *Set, name string) *Set {
	if tenant == nil || len(tenant.policies) == 0 {
		return global
	}
	s := &Set{Generation: global.Generation, Hash: global.Hash, Files: global.Files, Revision: global.Revision,
		TenantHash: tenant.Hash, TenantRevision: tenant.Revision}
	s.layers = &layers{global: global, tenant: tenant, name: "tenant:" + name}
	return s
}

// run runs a layered set (Run's contract): the global layer; the tenant layer on the
// global layer's output; then, when the tenant changed anything, the global layer
// again over the tenant's output, so what the global set rewrote or redacted stays
// so. The strongest action and the first rejection win; a tenant's policies are
// named "tenant:<name>/<file>" in Acted and in a Rejection.
func (l *layers) run(ctx context.Context, call *ctxapi.Call) Result {
	res := l.global.Run(ctx, call)
	if res.Reject != nil || !l.tenant.Acts(call.Phase) {
		return res
	}
	tr := l.tenant.Run(ctx, after(call, res))
	res.Elapsed += tr.Elapsed
	res.Action = vocab.Strongest(res.Action, tr.Action)
	res.Warnings = append(res.Warnings, tr.Warnings...)
	for _, p := range tr.Acted {
		res.Acted = append(res.Acted, l.name+"/"+p)
	}
	if tr.Reject != nil {
		tr.Reject.Policy = l.name + "/" + tr.Reject.Policy
		res.Reject = tr.Reject
		return res
	}
	if !tr.Changed {
		return res
	}
	again := l.global.Run(ctx, after(call, tr))
	res.Elapsed += again.Elapsed
	res.Action = vocab.Strongest(res.Action, again.Action)
	if again.Reject != nil {
		res.Acted = append(res.Acted, again.Reject.Policy)
		res.Reject = again.Reject
		return res
	}
	final := tr
	if again.Changed {
		final = again
	}
	res.Params, res.Content, res.StructuredContent, res.Changed = final.Params, final.Content, final.StructuredContent, true
	return res
}

// after is call as the next layer sees it: the arguments, listing or response res
// left (Run leaves a listing's Content nil when nothing changed it).
func after(call *ctxapi.Call, res Result) *ctxapi.Call {
	next := *call
	next.Params = res.Params
	if call.Phase == ctxapi.PhaseList && res.Changed {
		next.Tools = res.Content
	}
	if call.Response != nil {
		r := *call.Response
		r.Content, r.StructuredContent = res.Content, res.StructuredContent
		next.Response = &r
	}
	return &next
}
