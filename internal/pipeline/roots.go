package pipeline

import (
	"context"
	"encoding/json"
	"fmt"
	"net/url"
	"path"
	"strings"
	"time"

	"github.com/mcpgate/mcpgate/ctxapi"
	"github.com/mcpgate/mcpgate/internal/audit"
	"github.com/mcpgate/mcpgate/internal/methods"
	"github.com/mcpgate/mcpgate/vocab"
)

// CheckRoot checks one pinned root (mcpServers.X.roots, --root): a file:// URI of an
// absolute, clean directory path (MCP 2025-11-25, client/roots: Root.uri is file://).
func CheckRoot(uri string) error {
	p, ok := rootPath(uri)
	if !ok {
		return fmt.Errorf("%q is not a file:// URI of an absolute path", uri)
	}
	if u, _ := url.Parse(uri); p != u.Path && p+"/" != u.Path {
		return fmt.Errorf("%q is not a clean path (want %q)", uri, "file://"+p)
	}
	return nil
}

// rootPath is the cleaned absolute path of a file:// URI on this host, or false.
func rootPath(uri string) (string, bool) {
	u, err := url.Parse(uri)
	if err != nil || !strings.EqualFold(u.Scheme, "file") || u.Opaque != "" || u.User != nil ||
		(u.Host != "" && !strings.EqualFold(u.Host, "localhost")) || u.RawQuery != "" || u.Fragment != "" ||
		!strings.HasPrefix(u.Path, "/") || strings.ContainsRune(u.Path, 0) {
		return "", false
	}
	return path.Clean(u.Path), true
}

// within reports whether uri names a pinned root or a directory under one.
func within(uri string, pins []string) bool {
	p, ok := rootPath(uri)
	if !ok {
		return false
	}
	for _, pin := range pins {
		q, ok := rootPath(pin)
		if ok && (p == q || q == "/" || strings.HasPrefix(p, q+"/")) {
			return true
		}
	}
	return false
}

// Roots runs a client's roots/list result (ListRootsResult: {roots: [{uri, name?}]},
// MCP 2025-11-25 client/roots) on its way to the server: a root outside the server's
// pins is removed (nil pins: none), the input rules read what is left, and the roots
// phase may change it (a throw leaves no roots); pins hold again after the phase. It
// returns the result to send and whether it changed. A change, a finding or a policy
// that acted leaves one record, which holds no URI or name (docs/channels.md#roots).
func (p *Pipeline) Roots(c Channel, result json.RawMessage, pins []string) (out json.RawMessage, changed bool) {
	c.Method = methods.RootsList
	r := p.arriveChannel(context.Background(), c)
	out, removed := pinRoots(result, pins)
	if removed {
		r.rec.setReason(vocab.ReasonRootOutsidePin)
		r.rec.escalate(vocab.Redact)
		r.rec.guardrail(audit.GuardrailOutputSanitization)
	}
	start := time.Now()
	rep, _ := p.Analyzer.AnalyzeArguments(out)
	r.rec.stage(vocab.StageInputRules, start)
	r.rec.setInputRules(rep)
	acted := len(rep.Findings) > 0
	if r.set.Acts(ctxapi.PhaseRoots) {
		pol := r.phase(vocab.StageRootsPolicies, &ctxapi.Call{Phase: ctxapi.PhaseRoots, Params: out, Findings: rep.Findings})
		acted = acted || len(pol.Acted) > 0
		switch {
		case pol.Reject != nil:
			r.rec.setReason(pol.Reject.Code)
			r.rec.setPolicy(pol.Reject.Policy)
			r.rec.guardrail(pol.Reject.Policy)
			r.rec.setOutcome(vocab.OutcomeRejected)
			r.rec.escalate(vocab.Block)
			out, removed = []byte(`{"roots":[]}`), true
		case pol.Changed:
			var v struct {
				Roots []json.RawMessage `json:"roots"`
			}
			if json.Unmarshal(pol.Params, &v) != nil || v.Roots == nil {
				r.rec.setReason(vocab.ReasonBadCtxShape)
				r.rec.setPolicy(lastOf(pol.Acted))
				r.rec.escalate(vocab.Block)
				out, removed = []byte(`{"roots":[]}`), true
				break
			}
			r.rec.escalate(policyAction(pol.Action))
			r.rec.setParamsRewritten()
			out, _ = pinRoots(pol.Params, pins)
			removed = true
		}
	}
	if removed || acted {
		r.rec.emit(p)
	}
	if !removed {
		return result, false
	}
	return out, true
}

// pinRoots removes from a ListRootsResult every root outside pins (nil: none); an
// unreadable result reads as no roots. It reports whether anything changed.
func pinRoots(result json.RawMessage, pins []string) (json.RawMessage, bool) {
	if pins == nil {
		return result, false
	}
	var doc map[string]json.RawMessage
	var roots []json.RawMessage
	if json.Unmarshal(result, &doc) != nil || json.Unmarshal(doc["roots"], &roots) != nil || doc == nil {
		doc, roots = map[string]json.RawMessage{}, nil // unreadable: nothing the server could rely on
	}
	kept := make([]json.RawMessage, 0, len(roots))
	for _, r := range roots {
		var root struct {
			URI string `json:"uri"`
		}
		if json.Unmarshal(r, &root) == nil && within(root.URI, pins) {
			kept = append(kept, r)
		}
	}
	if len(kept) == len(roots) && doc["roots"] != nil {
		return result, false
	}
	doc["roots"], _ = json.Marshal(kept)
	out, _ := json.Marshal(doc)
	return out, true
}
