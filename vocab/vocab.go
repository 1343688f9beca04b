// Package vocab holds the words the gate's API, the pipeline, the audit record and
// the CLI share: the actions on the ladder, the reason codes and the policy
// Rejection that carries one, the pipeline's stages and the outcomes of the upstream
// leg, each a typed string whose value is what a record holds. It is public so that
// a program embedding gate can name what gate.Result holds. See
// docs/decisions.md#ladder and docs/telemetry.md.
package vocab

import "strings"

// Action is the final disposition of a call's output, a record's action_taken.
type Action string

// Actions on the ladder pass < warn < redact = mask < block (docs/decisions.md#ladder).
const (
	Pass   Action = "pass"
	Warn   Action = "warn"
	Redact Action = "redact"
	Mask   Action = "mask"
	Block  Action = "block"
)

// Actions lists every action, weakest first (redact before mask on their shared rung).
var Actions = []Action{Pass, Warn, Redact, Mask, Block}

// Rank is a's rung on the ladder: 0 pass, 1 warn, 2 redact or mask, 3 block. The
// empty action and unknown actions rank as pass.
func (a Action) Rank() int {
	switch a {
	case Warn:
		return 1
	case Redact, Mask:
		return 2
	case Block:
		return 3
	}
	return 0
}

// Strongest returns the stronger of a and b on the ladder. Redact and mask share a
// rung; between the two, redact wins, so the answer does not depend on the order
// (docs/decisions.md#ladder). The empty action reads as pass.
func Strongest(a, b Action) Action {
	switch ra, rb := a.Rank(), b.Rank(); {
	case rb > ra, rb == ra && b == Redact:
		a = b
	}
	if a == "" {
		return Pass
	}
	return a
}

// Label is the status a reader shows: PASS, WARN, REDACTED, MASKED or BLOCKED. A
// redaction never reads as a pass. Unknown actions are upper-cased.
func (a Action) Label() string {
	switch a {
	case Pass, "":
		return "PASS"
	case Warn:
		return "WARN"
	case Redact:
		return "REDACTED"
	case Mask:
		return "MASKED"
	case Block:
		return "BLOCKED"
	}
	return strings.ToUpper(string(a))
}

// ParseAction reads an action as a user types it: the action ("redact") or the label
// a table shows ("REDACTED"), in any case. ok is false for anything else.
func ParseAction(s string) (a Action, ok bool) {
	s = strings.ToLower(strings.TrimSpace(s))
	for _, a := range Actions {
		if s == string(a) || s == strings.ToLower(a.Label()) {
			return a, true
		}
	}
	return "", false
}

// Outcome is what became of the upstream leg of a call, a record's outcome
// (docs/decisions.md#fail-modes).
type Outcome string

// Outcomes.
const (
	OutcomeOK            Outcome = "ok"
	OutcomeUpstreamError Outcome = "upstream_error"
	OutcomeTimeout       Outcome = "timeout"
	OutcomeCancelled     Outcome = "cancelled"
	OutcomeRejected      Outcome = "rejected" // a pre-phase rejection: the upstream was never called
	// OutcomeUnknownTool: no configured server offers the tool, so none was called.
	OutcomeUnknownTool Outcome = "unknown_tool"
	// OutcomeInputRequired: the server answered a 2026-07-28 input_required round
	// (MCP 2026-07-28, Multi Round-Trip Requests); the call goes on in the client's
	// retry, which gets a record of its own.
	OutcomeInputRequired Outcome = "input_required"
)

// Stage names one timed step of the tools/call path, a key of a record's stage_ms.
type Stage string

// Stages in the order a call meets them. StageGateway is derived: elapsed minus
// upstream.
const (
	StageToolAccess     Stage = "tool_access"
	StageInputRules     Stage = "input_rules"
	StageArguments      Stage = "arguments"      // the argument checks against the listed schema (internal/argcheck)
	StageGuardrailsPre  Stage = "guardrails_pre" // the outside guardrails over the arguments, and authorization (docs/guardrails.md); each also under "guardrail:<name>"
	StagePrePolicies    Stage = "pre_policies"
	StageUpstream       Stage = "upstream"
	StageOutputRules    Stage = "output_rules"
	StageGuardrailsPost Stage = "guardrails_post" // the outside content guardrails over the result
	StagePostPolicies   Stage = "post_policies"
	StageMerge          Stage = "merge"
	StageGateway        Stage = "gateway"
	StageShadowPre      Stage = "shadow_pre"  // the --shadow candidate set, pre phase
	StageShadowPost     Stage = "shadow_post" // the --shadow candidate set, post phase

	// The policy phases of the other channels (docs/channels.md#phases).
	StageListPolicies          Stage = "list_policies"
	StageResourcePolicies      Stage = "resource_policies"
	StagePromptPolicies        Stage = "prompt_policies"
	StageServerRequestPolicies Stage = "server_request_policies"
	StageInstructionsPolicies  Stage = "instructions_policies"
	StageRootsPolicies         Stage = "roots_policies"
)

// MethodVet is the method of the record gateway run writes for one server's start-up
// vet findings (docs/vet.md#startup): a record of the gateway's own, for no MCP
// message, under the gateway's own "mcpgate/" prefix that no MCP method uses.
const MethodVet = "mcpgate/vet"

// Filter states, a record's filter field.
const (
	FilterOn      = "on"
	FilterOff     = "off"     // --filter-output not given: findings recorded, nothing changed
	FilterSkipped = "skipped" // the call never reached the output rules
)
