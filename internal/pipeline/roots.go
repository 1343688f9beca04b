package pipeline

import (
	"context"
	"encoding/json"
	"fmt"
	"net/url"
	"path"
	"strings"

	"github.com/mcpgate/mcpgate/internal/audit"
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

// Roots filters a client's roots/list result (ListRootsResult: {roots: [{uri, name?}]},
// MCP 2025-11-25 client/roots) to the server's pinned roots: a root that is not a pin
// or under one is removed. Nil pins leave the result as it is. It returns the result
// to send and whether it changed; a change leaves one record (reason
// root_outside_pin) that holds no URI or name (docs/channels.md#roots).
func (p *Pipeline) Roots(c Channel, result json.RawMessage, pins []string) (json.RawMessage, bool) {
	if pins == nil {
		return result, false
	}
	var doc map[string]json.RawMessage
	var roots []json.RawMessage
	if json.Unmarshal(result, &doc) != nil || json.Unmarshal(doc["roots"], &roots) != nil {
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
	c.Method = "roots/list"
	r := p.arriveChannel(context.Background(), c)
	r.rec.setReason(vocab.ReasonRootOutsidePin)
	r.rec.escalate(vocab.Redact)
	r.rec.guardrail(audit.GuardrailOutputSanitization)
	r.rec.emit(p)
	return out, true
}
