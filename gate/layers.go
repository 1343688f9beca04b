package gate

import (
	"context"
	"encoding/json"
	"slices"

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
	in := after(call, res)
	tr := l.tenant.Run(ctx, in)
	res.Elapsed += tr.Elapsed
	res.Action = vocab.Strongest(res.Action, tr.Action)
	res.Warnings = append(res.Warnings, tr.Warnings...)
	for _, p := range tr.Acted {
		res.Acted = append(res.Acted, l.name+"/"+p)
	}
	res.Removed = mergeRemoved(res.Removed, tr.Removed, l.name+"/")
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
	for _, w := range again.Warnings { // what the tenant's output made the global set warn of
		if !slices.Contains(res.Warnings, w) {
			res.Warnings = append(res.Warnings, w)
		}
	}
	for _, p := range again.Acted {
		if !slices.Contains(res.Acted, p) {
			res.Acted = append(res.Acted, p)
		}
	}
	res.Removed = mergeRemoved(res.Removed, again.Removed, "")
	if again.Reject != nil {
		res.Reject = again.Reject
		return res
	}
	final := tr
	if again.Changed {
		final = again
	}
	res.Params, res.Content, res.StructuredContent, res.Changed = final.Params, final.Content, final.StructuredContent, true
	keepEntries(in, &res)
	return res
}

// keepEntries drops from a list or roots phase's output every entry the tenant's
// input did not hold: a tool by its name, a root by its uri. The caller's listing
// decides which tools are hidden by name, and its roots which paths are within
// them, so an entry a tenant made up or renamed (a tool the global set hid, listed
// again without what the global set hid it for; a root wider than the client's)
// would undo the global decision the second global run cannot see
// (docs/policies.md#layers).
func keepEntries(in *ctxapi.Call, res *Result) {
	switch in.Phase {
	case ctxapi.PhaseList:
		if out, ok := keepByKey(in.Tools, res.Content, "name"); ok {
			res.Content = out
		}
	case ctxapi.PhaseRoots:
		var inDoc, outDoc map[string]json.RawMessage
		if json.Unmarshal(in.Params, &inDoc) != nil || json.Unmarshal(res.Params, &outDoc) != nil || outDoc == nil {
			return // not a ListRootsResult: the pipeline refuses its shape
		}
		if out, ok := keepByKey(inDoc["roots"], outDoc["roots"], "uri"); ok {
			outDoc["roots"] = out
			if b, err := json.Marshal(outDoc); err == nil {
				res.Params = b
			}
		}
	}
}

// keepByKey returns the entries of the JSON array out whose string member key is
// that of an entry of in, each as it was, and whether it dropped any. Entries
// without a string key are dropped; an unreadable out is returned as it is (the
// caller refuses it).
func keepByKey(in, out json.RawMessage, key string) (json.RawMessage, bool) {
	var before, got []json.RawMessage
	_ = json.Unmarshal(in, &before)
	if json.Unmarshal(out, &got) != nil {
		return out, false
	}
	had := make(map[string]bool, len(before))
	for _, e := range before {
		if n, ok := memberString(e, key); ok {
			had[n] = true
		}
	}
	kept := append(json.RawMessage(nil), '[')
	dropped := false
	for _, e := range got {
		if n, ok := memberString(e, key); !ok || !had[n] {
			dropped = true
			continue
		}
		if len(kept) > 1 {
			kept = append(kept, ',')
		}
		kept = append(kept, e...)
	}
	if !dropped {
		return out, false
	}
	return append(kept, ']'), true
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

// memberString is the string member key of the JSON object e; ok is false when e
// has none.
func memberString(e json.RawMessage, key string) (s string, ok bool) {
	var v map[string]json.RawMessage
	if json.Unmarshal(e, &v) != nil || v[key] == nil || json.Unmarshal(v[key], &s) != nil {
		return "", false
	}
	return s, true
}

// mergeRemoved adds a later run's Removed to by, its policies named with prefix: a
// later drop of a name is the one that counts.
func mergeRemoved(by, later map[string]string, prefix string) map[string]string {
	for n, p := range later {
		if by == nil {
			by = map[string]string{}
		}
		by[n] = prefix + p
	}
	return by
}
