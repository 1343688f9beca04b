// Package vet reviews MCP servers before they run (docs/vet.md): the servers of an
// mcpServers configuration (mcpgate's, Claude Desktop's, Cursor's, VS Code's
// "servers"), MCP registry server.json entries and remote endpoints. It reports
// look-alike names, unpinned or swapped packages, plaintext or unverified
// transport, unproven identities, over-broad OAuth scopes and configuration that got
// weaker than a reviewed baseline. It starts nothing and, except for Lock and an
// endpoint's TLS handshake, reads nothing but its inputs.
//
// Findings carry a rule id, a severity (High is block-level, Medium warn-level, as
// engine.VerdictFor), the server, a message and an RFC 6901 JSON Pointer into the
// input it concerns (docs/decisions.md#vet); a message names packages, hosts and settings, never an
// environment or header value.
package vet

import (
	"cmp"
	"slices"
	"strings"

	"github.com/mcpgate/mcpgate/engine"
)

// Finding is one vet result. File names the input ("" for the configuration),
// Pointer the place in it. Allowed is true when the configuration's
// "mcpgate.vetAllow" accepts this rule for this server: it is reported, but counts
// toward no exit code and keeps no server from starting.
type Finding struct {
	RuleID   string          `json:"rule_id"`
	Severity engine.Severity `json:"severity"`
	Server   string          `json:"server"`
	Message  string          `json:"message"`
	Pointer  string          `json:"pointer"`
	File     string          `json:"file,omitempty"`
	Allowed  bool            `json:"allowed,omitempty"`
}

// Rule ids (docs/vet.md#rules).
const (
	RuleLookalikeName       = "vet_lookalike_name"
	RuleOfficialClaim       = "vet_unverified_official_claim"
	RuleUnpinnedPackage     = "vet_unpinned_package"
	RuleIntegrityMismatch   = "vet_integrity_mismatch"
	RuleNotLocked           = "vet_package_not_locked"
	RulePlaintextTransport  = "vet_plaintext_transport"
	RuleTLSUnverified       = "vet_tls_verification_off"
	RuleIdentityUnproven    = "vet_identity_unproven"
	RuleIdentityChanged     = "vet_identity_changed"
	RuleServerInfoChanged   = "vet_server_info_changed"
	RuleIntegrityUnverified = "vet_integrity_unverified"
	RuleProvenanceInvalid   = "vet_provenance_invalid"
	RuleExcessiveScope      = "vet_excessive_scope"
	RuleDriftWeakened       = "vet_drift_weakened"
	RuleDriftWidened        = "vet_drift_widened"
	RuleDriftServerAdded    = "vet_drift_server_added"
)

// Rules lists the vet rules with their default severities, sorted by id, for
// `mcpgate rules`, config validation and docs. Strict raises the two marked
// "strict: high".
func Rules() []engine.Rule {
	r := []engine.Rule{
		{ID: RuleLookalikeName, Family: Family, Severity: engine.SeverityMedium, Summary: "a server, package or registry name within a small edit distance of, or confusable with, a well-known or allowed name and not itself one (strict: high)"},
		{ID: RuleOfficialClaim, Family: Family, Severity: engine.SeverityMedium, Summary: `a registry entry whose displayName, title or description claims "official" for a name and publisher that are not verified`},
		{ID: RuleUnpinnedPackage, Family: Family, Severity: engine.SeverityMedium, Summary: "npx, uvx, pipx or docker/podman run of a package or image with no exact version or digest"},
		{ID: RuleIntegrityMismatch, Family: Family, Severity: engine.SeverityHigh, Summary: "a package whose resolved integrity (npm dist.integrity, image digest) differs from mcpgate.lock: a swapped artifact"},
		{ID: RuleNotLocked, Family: Family, Severity: engine.SeverityLow, Summary: "a pinned package that mcpgate.lock does not hold (mcpgate vet --lock adds it)"},
		{ID: RulePlaintextTransport, Family: Family, Severity: engine.SeverityMedium, Summary: "a remote MCP server reached over http:// or ws:// to a host that is not loopback (strict: high)"},
		{ID: RuleTLSUnverified, Family: Family, Severity: engine.SeverityHigh, Summary: "TLS certificate verification turned off for a server (NODE_TLS_REJECT_UNAUTHORIZED=0, --insecure, insecureSkipVerify)"},
		{ID: RuleIdentityUnproven, Family: Family, Severity: engine.SeverityHigh, Summary: "an endpoint that claims a registry name whose entry lists no matching remotes[] url"},
		{ID: RuleProvenanceInvalid, Family: Family, Severity: engine.SeverityHigh, Summary: "an npm package whose provenance attestation (Sigstore) does not verify, or names another source repository than mcpgate.lock"},
		{ID: RuleIntegrityUnverified, Family: Family, Severity: engine.SeverityMedium, Summary: "a package held in mcpgate.lock whose integrity could not be resolved now to compare"},
		{ID: RuleIdentityChanged, Family: Family, Severity: engine.SeverityHigh, Summary: "a url server whose TLS public key (SPKI sha256) differs from the one pinned, until mcpgate pins approve"},
		{ID: RuleServerInfoChanged, Family: Family, Severity: engine.SeverityMedium, Summary: "a server whose initialize serverInfo (name, version) differs from the one pinned (--pins); with --pins-mode block (strict) the session is refused until mcpgate pins approve"},
		{ID: RuleExcessiveScope, Family: Family, Severity: engine.SeverityMedium, Summary: "a url server asking for write, delete or admin OAuth scopes when every tool it lists is readOnlyHint"},
		{ID: RuleDriftWeakened, Family: Family, Severity: engine.SeverityMedium, Summary: "against the baseline, a security setting got weaker: https to http, TLS required to optional, --fail-mode closed to open, --filter-output or pins off, --upstream-env minimal to inherit"},
		{ID: RuleDriftWidened, Family: Family, Severity: engine.SeverityMedium, Summary: "against the baseline, a host, root, scope or environment list got wider"},
		{ID: RuleDriftServerAdded, Family: Family, Severity: engine.SeverityMedium, Summary: "against the baseline, a server was added that has no tool pins"},
	}
	slices.SortFunc(r, func(a, b engine.Rule) int { return cmp.Compare(a.ID, b.ID) })
	return r
}

// Family is the family of every vet rule, as engine.Rule.Family.
const Family = "vet"

// Known reports whether id is a vet rule id.
func Known(id string) bool {
	return strings.HasPrefix(id, "vet_") && defaultSeverity(id) != engine.SeverityNone
}

func defaultSeverity(id string) engine.Severity {
	for _, r := range Rules() {
		if r.ID == id {
			return r.Severity
		}
	}
	return engine.SeverityNone
}

// Options tune a review.
type Options struct {
	// Strict raises vet_plaintext_transport and vet_lookalike_name to High, as the
	// strict profile refuses them.
	Strict bool
	// Severities overrides rule severities by id ("mcpgate.rules" of the configuration).
	Severities map[string]engine.Severity
	// Known are more well-known names besides the shipped list.
	Known []string
}

// Highest returns the highest severity among the findings that are not Allowed.
func Highest(fs []Finding) engine.Severity {
	h := engine.SeverityNone
	for _, f := range fs {
		if !f.Allowed && f.Severity > h {
			h = f.Severity
		}
	}
	return h
}

// Blocked returns the servers that have a High finding not Allowed, sorted ("" is
// the unnamed server after gateway run's --, or an --endpoint).
func Blocked(fs []Finding) []string {
	var out []string
	for _, f := range fs {
		if !f.Allowed && f.Severity >= engine.SeverityHigh && !slices.Contains(out, f.Server) {
			out = append(out, f.Server)
		}
	}
	slices.Sort(out)
	return out
}

// finish applies severity overrides, strict, and the configuration's allowances, and
// sorts the findings by file, server, pointer and rule.
func finish(fs []Finding, o Options, allow map[string][]string) []Finding {
	out := fs[:0]
	for _, f := range fs {
		if o.Strict && (f.RuleID == RulePlaintextTransport || f.RuleID == RuleLookalikeName) {
			f.Severity = engine.SeverityHigh
		}
		if s, ok := o.Severities[f.RuleID]; ok {
			f.Severity = s
		}
		if f.Severity == engine.SeverityNone {
			continue
		}
		if slices.Contains(allow[f.Server], f.RuleID) || slices.Contains(allow[f.Server], "*") {
			f.Allowed = true
		}
		out = append(out, f)
	}
	slices.SortStableFunc(out, func(a, b Finding) int {
		return cmp.Or(cmp.Compare(a.File, b.File), cmp.Compare(a.Server, b.Server), cmp.Compare(a.Pointer, b.Pointer), cmp.Compare(a.RuleID, b.RuleID))
	})
	return slices.CompactFunc(out, func(a, b Finding) bool { return a == b })
}

func newFinding(rule, server, pointer, msg string) Finding {
	return Finding{RuleID: rule, Severity: defaultSeverity(rule), Server: server, Pointer: pointer, Message: msg}
}

// escape escapes one JSON Pointer reference token (RFC 6901 §3).
func escape(s string) string {
	return strings.ReplaceAll(strings.ReplaceAll(s, "~", "~0"), "/", "~1")
}
