package audit

import "github.com/mcpgate/mcpgate/vocab"

// Kinds of record (docs/decisions.md#record-fields).
const (
	KindGateway   = "gateway_output_filter" // every call through the gateway
	KindMCPServer = "mcp_output_filter"     // mcpgate's own MCP server
)

// GuardrailOutputSanitization is named in guardrails_triggered whenever the output
// stage changed or withheld data (docs/decisions.md#truthful-telemetry).
const GuardrailOutputSanitization = "tool_output_sanitization"

// Origin is the record's agent_origin: {"kind": "gateway"}.
type Origin struct {
	Kind string `json:"kind"`
}

// RBAC is tool_calls[].rbac: the final action, so the per-tool row agrees with the top line.
type RBAC struct {
	Action vocab.Action `json:"action"`
}

// ToolCall is the record's tool_calls[] entry. Arguments is always empty: values never
// reach a record.
type ToolCall struct {
	Name      string         `json:"name"`
	Arguments map[string]any `json:"arguments"`
	RBAC      RBAC           `json:"rbac"`
}

// Caller is who made the call, from configuration or an OAuth access token's claims
// (user_id from sub, caller_id the OAuth client id): never a token, never a value.
type Caller struct {
	UserID      string `json:"user_id,omitempty"`
	CallerID    string `json:"caller_id,omitempty"`
	CallerClass string `json:"caller_class,omitempty"`
	// Scopes are the OAuth access token's scopes (bounded: 64 of up to 256 bytes).
	Scopes []string `json:"scopes,omitempty"`
	// Tenant is the caller's tenant, whose policy layer ran after the global set
	// (docs/policies.md#layers).
	Tenant string `json:"tenant,omitempty"`
}

// Record is one audit line. It holds names, codes, counts and timings only — never an
// argument value or any text of a result (docs/decisions.md#reasons-without-values).
type Record struct {
	// The output filter's fields (docs/decisions.md#record-fields).
	TS                string   `json:"ts"` // RFC 3339, UTC, milliseconds
	Kind              string   `json:"kind"`
	Decision          string   `json:"decision"` // the filter's verdict: allow, warn or block
	EventID           string   `json:"event_id"` // UUIDv4, cited to the agent
	RuleIDs           []string `json:"rule_ids"`
	FindingsCount     int      `json:"findings_count"`
	HighestSeverity   string   `json:"highest_severity"`
	ElapsedMS         float64  `json:"elapsed_ms"`
	Truncated         bool     `json:"truncated"`
	FailModeTriggered bool     `json:"fail_mode_triggered"`
	AgentOrigin       *Origin  `json:"agent_origin,omitempty"`

	// The final disposition (docs/decisions.md#truthful-telemetry).
	ActionTaken         vocab.Action `json:"action_taken"`
	Blocked             bool         `json:"blocked"`
	GuardrailsTriggered []string     `json:"guardrails_triggered"`
	ToolCalls           []ToolCall   `json:"tool_calls"`

	// mcpgate fields.
	Filter string `json:"filter"` // on, off or skipped
	// Method is the JSON-RPC method of the filtered message: tools/call, a listing,
	// resources/read, a server-to-client request or a notification
	// (docs/channels.md). Tool is empty where no tool is involved.
	Method          string         `json:"method"`
	Tool            string         `json:"tool"`
	Server          string         `json:"server"` // configured server name, or ""
	ToolAccess      string         `json:"tool_access"`
	Outcome         vocab.Outcome  `json:"outcome"`
	Reason          vocab.Reason   `json:"reason,omitempty"` // a code such as policy_throw or filter_block
	Policy          string         `json:"policy,omitempty"` // the policy file behind Reason
	ParamsRewritten bool           `json:"params_rewritten"`
	InputRuleIDs    []string       `json:"input_rule_ids,omitempty"`
	ArgumentCheck   *ArgumentCheck `json:"argument_check,omitempty"` // the arguments against the listed schema, shell and path checks
	Policies        []string       `json:"policies_acted,omitempty"`
	PolicyGen       uint64         `json:"policy_generation"`
	PolicySetHash   string         `json:"policy_set_hash"`
	PolicyRevision  string         `json:"policy_revision,omitempty"` // the policy bundle's revision (gateway run --policy-bundle)
	// TenantPolicySetHash is the tenant layer's policy_set_hash when one ran
	// (docs/policies.md#layers).
	TenantPolicySetHash  string                  `json:"tenant_policy_set_hash,omitempty"`
	TenantPolicyRevision string                  `json:"tenant_policy_revision,omitempty"` // the tenant layer's bundle revision
	Caller               *Caller                 `json:"caller,omitempty"`
	ClientInfo           map[string]string       `json:"client_info,omitempty"`      // the client's name and version: initialize's clientInfo, or the request's _meta one
	ProtocolVersion      string                  `json:"protocol_version,omitempty"` // the MCP revision of the exchange: initialize's, or the request's _meta one
	StageMS              map[vocab.Stage]float64 `json:"stage_ms,omitempty"`         // input_rules, pre_policies, upstream, output_rules, post_policies, merge
	AuditOutput          string                  `json:"audit_output,omitempty"`     // "off" when MCPGATE_AUDIT_OUTPUT=off

	Replica string `json:"replica,omitempty"` // the gateway replica that wrote the record (--replica)

	// Listed says the upstream listed Tool in tools/list (or the configuration tags
	// it): /metrics labels only such names. Not stored.
	Listed bool `json:"-"`
	// Phase is the phase of the policy behind Reason: "pre" (the call was rejected and
	// never reached the server) or "post" (the server ran; its result was withheld).
	Phase string `json:"phase,omitempty"`
	// Shadow is what the candidate set of --shadow would have done; nil without one.
	Shadow *Shadow `json:"shadow,omitempty"`
	// Via is, for an input request of a 2026-07-28 input_required result (Method is
	// its own method: elicitation/create, sampling/createMessage, roots/list), the
	// method whose result carried it; for a server request sent in relation to a
	// client request (translated from one, or on its HTTP stream), that request's;
	// empty when MCP does not define that method (a made-up name may carry values).
	Via string `json:"via,omitempty"`
	// SecretInMotion, when set, says that the call's arguments carried a value an
	// earlier result showed this session's caller (docs/decisions.md#secrets-in-motion):
	// which result, never the value.
	SecretInMotion *Motion `json:"secret_in_motion,omitempty"`
	// Guardrails are the outside guardrails the message was sent to, one entry per
	// callout (docs/guardrails.md#record): never a text, a reason or a value.
	Guardrails []GuardrailCall `json:"guardrails,omitempty"`
}

// GuardrailCall is one callout to an outside guardrail.
type GuardrailCall struct {
	Name    string `json:"name"`
	Kind    string `json:"kind"`              // generic, authzen or opa
	Phase   string `json:"phase"`             // pre, post, or pre_rewritten (authorization of a pre policy's arguments)
	Verdict string `json:"verdict,omitempty"` // none, block, intervene, allow or deny; "" when Error is set
	// Error is guardrail_timeout or guardrail_error when no verdict came; Detail says
	// which failure (timeout, status_503, malformed, oversized, transport,
	// circuit_open, truncated), and FailMode what it decided.
	Error    string `json:"error,omitempty"`
	Detail   string `json:"detail,omitempty"`
	FailMode string `json:"fail_mode"`
	Findings int    `json:"findings,omitempty"` // findings the answer reported (ctx.findings)
	Replaced int    `json:"replaced,omitempty"` // texts an intervention changed
	// Cached says the verdict came from the verdict cache, without a call.
	Cached bool    `json:"cached,omitempty"`
	MS     float64 `json:"ms"`
}

// Motion is a record's secret_in_motion field: the record of the result that showed
// the value (its event id, server and tool), the rule that found the value there
// (a rule id, or sensitive_file for a line of a credential file), how the arguments
// carried it ("" as written, base64, hex or url), and whether the call goes to another
// server than the one that showed it.
type Motion struct {
	SourceEventID string `json:"source_event_id"`
	SourceServer  string `json:"source_server"`
	SourceTool    string `json:"source_tool"`
	Rule          string `json:"rule"`
	Encoding      string `json:"encoding,omitempty"`
	CrossServer   bool   `json:"cross_server"`
}

// ArgumentCheck is what the argument checks found in a tools/call's or prompts/get's
// arguments (docs/engine.md#argument-checks): Schema is checked, schema_unknown (no
// listing of the tool was seen) or schema_invalid (the listed schema does not
// compile); each finding names a rule, the JSON pointer of the member and the schema
// keyword, never a value.
type ArgumentCheck struct {
	Schema   string            `json:"schema"`
	Findings []ArgumentFinding `json:"findings,omitempty"`
}

// ArgumentFinding is one finding of ArgumentCheck.
type ArgumentFinding struct {
	Rule    string `json:"rule"`
	Pointer string `json:"pointer"`
	Keyword string `json:"keyword,omitempty"`
}

// Shadow is a record's shadow field: the decision a candidate policy set (gateway run
// --shadow) reached on the same call, which changed nothing the client or the server
// saw. Differs is true when ActionTaken is not the record's action_taken
// (docs/policies.md#shadow).
type Shadow struct {
	ActionTaken   vocab.Action `json:"action_taken"`
	Reason        vocab.Reason `json:"reason,omitempty"`
	Policy        string       `json:"policy,omitempty"`
	PolicySetHash string       `json:"policy_set_hash"`
	Differs       bool         `json:"differs"`
	// Guardrails are the candidate's own guardrail callouts (DIR/guardrails.json,
	// docs/decisions.md#shadow-guardrails), in the shape of the record's guardrails.
	Guardrails []GuardrailCall `json:"guardrails,omitempty"`
}
