package channelcheck

import "github.com/mcpgate/mcpgate/engine"

// Rule ids of this package, with their default severities (docs/decisions.md#channel-structure).
const (
	// RuleNameCharset: a tool or prompt name outside the MCP tool-name set
	// ([A-Za-z0-9_.-], 1-128 characters). Medium: the entry is listed, sanitized.
	RuleNameCharset = "name_outside_charset"
	// RuleNameConfusable: a name whose UTS #39 skeleton equals another listed name's.
	// High: the entry is removed and hidden.
	RuleNameConfusable = "name_confusable"
	// RuleNameInvisible: a name that begins or ends in characters a reader cannot see
	// (default-ignorable, format, control, white space). High.
	RuleNameInvisible = "name_invisible"
	// RuleCrossServerReference: with several servers, a tool's text names another
	// server's tool or tells the model to call one. Medium.
	RuleCrossServerReference = "tool_cross_server_reference"
	// RuleElicitationCredential: a form elicitation whose schema or message asks for a
	// credential (password, token, API key, secret, card number, one-time code) or an
	// identity or account number (SSN, national id, passport, IBAN). High: refused.
	RuleElicitationCredential = "elicitation_credential_request"
	// RuleElicitationStandingGrant: a form elicitation asking for a standing grant
	// ("always allow", "don't ask again") of a broad permission ("all files", "full
	// access"). Medium: relayed and recorded (a Warn).
	RuleElicitationStandingGrant = "elicitation_standing_grant"
	// RuleElicitationInsecureURL: a URL-mode elicitation whose URL is not https (or
	// does not parse). High: refused.
	RuleElicitationInsecureURL = "elicitation_url_insecure"
	// RuleElicitationPrivateHost: a URL-mode elicitation to a loopback, private,
	// link-local or internal-only host. High: refused.
	RuleElicitationPrivateHost = "elicitation_url_private_host"
	// RuleElicitationLookalikeHost: a URL-mode elicitation to a host that imitates
	// another (a mixed-script or ASCII-confusable IDN label, bad punycode, or user
	// info before the host, another site's domain or a brand as a subdomain). High:
	// refused.
	RuleElicitationLookalikeHost = "elicitation_url_lookalike_host"
	// RuleSplitOrders: one server's tool descriptions that, read as a whole, hold an
	// order none holds alone, or a payload cut into shares. High: the entries are
	// withheld where the filter is on (the strict profile).
	RuleSplitOrders = "tool_split_orders"
	// RuleSamplingContextNarrowed: a sampling request's includeContext other than
	// "none" to a client that did not declare sampling.context; it is narrowed to
	// "none". Low: recorded, nothing else changes.
	RuleSamplingContextNarrowed = "sampling_context_narrowed"
	// RuleToolShadowing: with several servers, a tool that claims another server's
	// tool: the same or a confusable name, with words that claim precedence. High
	// (withheld) with a claim or a confusable name, Medium for the same name alone.
	RuleToolShadowing = "tool_shadowing"
	// RuleIconUnsafeSrc: a listed entry's icon whose src is neither https nor a
	// data: image. High: the entry is withheld.
	RuleIconUnsafeSrc = "icon_unsafe_src"
	// RuleXMCPHeaderInvalid: a tool whose x-mcp-header annotations break the rules
	// (the specification tells the client to drop it). High: withheld.
	RuleXMCPHeaderInvalid = "x_mcp_header_invalid"
	// RuleInstructionsCrossServer: with several servers, one server's instructions
	// name another server's tool. Medium.
	RuleInstructionsCrossServer = "instructions_cross_server_reference"
	// RuleAppEgress: an MCP App (a ui:// HTML resource) that posts a form to, loads
	// from or sends to an origin its csp does not declare. Medium; High (withheld) in
	// the strict profile.
	RuleAppEgress = "ui_app_egress"
	// RuleAppPostMessageAny: an MCP App that calls postMessage with target origin
	// "*". Medium; High (withheld) in the strict profile.
	RuleAppPostMessageAny = "ui_app_postmessage_any"
	// RuleCacheTTLClamped: a 2026-07-28 cacheable result whose ttlMs was over the
	// gateway's maximum (--max-cache-ttl) and was clamped to it. Low: recorded.
	RuleCacheTTLClamped = "cache_ttl_clamped"
	// RuleCacheScopeAuthorized: a 2026-07-28 listing marked cacheScope "public" that
	// holds a tool an authorization decides (AuthorizedTool), relayed as "private".
	// Low: recorded.
	RuleCacheScopeAuthorized = "cache_scope_authorized_listing"
)

// Rules lists this package's rules in the engine's shape, sorted by id, for
// `mcpgate rules` and docs.
func Rules() []engine.Rule {
	return []engine.Rule{
		{ID: RuleElicitationCredential, Family: Family, Severity: engine.SeverityHigh, Summary: "a form elicitation whose field or message asks for a credential: password, token, API key, secret, card number, one-time code, in English or another language (contraseña, mot de passe, Passwort, 密码, ...), or an identity or account number (SSN, national id, passport or tax id, IBAN)"},
		{ID: RuleElicitationStandingGrant, Family: Family, Severity: engine.SeverityMedium, Summary: `a form elicitation asking for a standing ("always allow", "don't ask again") grant of a broad permission ("all files", "full access")`},
		{ID: RuleElicitationInsecureURL, Family: Family, Severity: engine.SeverityHigh, Summary: "a URL-mode elicitation whose URL is not https"},
		{ID: RuleElicitationLookalikeHost, Family: Family, Severity: engine.SeverityHigh, Summary: "a URL-mode elicitation to a look-alike host: a mixed-script or ASCII-confusable IDN label, bad punycode, user info before the host, another site's domain as labels (github.com.<domain>) or a brand as a label under a lure domain"},
		{ID: RuleElicitationPrivateHost, Family: Family, Severity: engine.SeverityHigh, Summary: "a URL-mode elicitation to a loopback, private, link-local or internal-only host"},
		{ID: RuleNameConfusable, Family: Family, Severity: engine.SeverityHigh, Summary: "a tool or prompt name confusable (UTS #39 skeleton) with another listed name"},
		{ID: RuleNameInvisible, Family: Family, Severity: engine.SeverityHigh, Summary: "a tool or prompt name that begins or ends in invisible characters"},
		{ID: RuleNameCharset, Family: Family, Severity: engine.SeverityMedium, Summary: "a tool or prompt name outside [A-Za-z0-9_.-] or longer than 128 characters"},
		{ID: RuleSamplingContextNarrowed, Family: Family, Severity: engine.SeverityLow, Summary: "a sampling request's includeContext, narrowed to none for a client that did not declare sampling.context"},
		{ID: RuleSplitOrders, Family: Family, Severity: engine.SeverityHigh, Summary: "one server's tool descriptions that, read one after another, hold an order to the model none holds alone, or carry a payload cut into shares (share=, part=, chunk= with differing values)"},
		{ID: RuleCrossServerReference, Family: Family, Severity: engine.SeverityMedium, Summary: "with several servers, a tool whose text names another server's tool or tells the model to call one"},
		{ID: RuleToolShadowing, Family: Family, Severity: engine.SeverityHigh, Summary: "with several servers, a tool that claims another server's tool: a confusable name, or the same name with words that claim precedence (Medium for the same name alone)"},
		{ID: RuleIconUnsafeSrc, Family: Family, Severity: engine.SeverityHigh, Summary: "a listed entry's icon whose src is neither an https URL nor a data: image (javascript:, file:, http:)"},
		{ID: RuleXMCPHeaderInvalid, Family: Family, Severity: engine.SeverityHigh, Summary: "a tool whose x-mcp-header annotations break the rules (CR/LF or other non-token characters, duplicates, unreachable); clients must drop it"},
		{ID: RuleInstructionsCrossServer, Family: Family, Severity: engine.SeverityMedium, Summary: "with several servers, one server's instructions name another server's tool"},
		{ID: RuleCacheTTLClamped, Family: Family, Severity: engine.SeverityLow, Summary: "a 2026-07-28 cacheable result whose ttlMs was over --max-cache-ttl, clamped to it"},
		{ID: RuleCacheScopeAuthorized, Family: Family, Severity: engine.SeverityLow, Summary: `a 2026-07-28 tools listing marked cacheScope "public" that holds a tool an authorization decides (an administrator's tool, one that grants or revokes roles or access, one with securitySchemes), relayed as "private"`},
		{ID: RuleAppEgress, Family: Family, Severity: engine.SeverityMedium, Summary: "an MCP App (ui:// HTML) that posts a form to, loads from or sends to (fetch, XMLHttpRequest, WebSocket, img) an origin its csp does not declare; High in the strict profile"},
		{ID: RuleAppPostMessageAny, Family: Family, Severity: engine.SeverityMedium, Summary: "an MCP App (ui:// HTML) that calls postMessage with target origin \"*\"; High in the strict profile"},
	}
}

// Known reports whether id is one of this package's rule ids.
func Known(id string) bool {
	for _, r := range Rules() {
		if r.ID == id {
			return true
		}
	}
	return false
}

// Family is the family of every rule here, as reported in engine.Rule.Family.
const Family = "channel_structure"

func finding(rule string, sev engine.Severity, pointer string) engine.Finding {
	return engine.Finding{RuleID: rule, Severity: sev, Pointer: pointer}
}
