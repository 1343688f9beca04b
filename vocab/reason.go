package vocab

import "fmt"

// Reason is a code that says why a call was blocked or rejected, a record's reason.
// It is snake_case and safe to log; the message that may come with it is not
// (docs/decisions.md#reasons-without-values). A Reason is an error, so that
// errors.Is(err, vocab.ReasonPolicyTimeout) matches a *Rejection with that code.
type Reason string

// Reason codes. README "Audit records" lists them for users.
const (
	// Policy rejections.
	ReasonPolicyThrow       Reason = "policy_throw"        // the policy threw (a string, an Error, a JS error)
	ReasonPolicyTimeout     Reason = "policy_timeout"      // the policy ran past its time limit, or the call was cancelled meanwhile
	ReasonPolicyStackLimit  Reason = "policy_stack_limit"  // JS or native recursion too deep
	ReasonPolicyMemoryLimit Reason = "policy_memory_limit" // an allocation guard or the heap watchdog fired
	ReasonBadCtxShape       Reason = "bad_ctx_shape"       // ctx.params or ctx.response read back with the wrong shape
	ReasonPolicyError       Reason = "policy_error"        // a host-side failure while running the policy

	// Output filter and fail mode.
	ReasonFilterBlock       Reason = "filter_block"       // a block-severity finding
	ReasonScanTruncated     Reason = "scan_truncated"     // --fail-mode closed and the result passed the scan cap
	ReasonUndecodableResult Reason = "undecodable_result" // the result is not a JSON object
	ReasonSanitizeFailed    Reason = "sanitize_failed"    // the Warn sanitizer could not rewrite the result: blocked
	ReasonInvalidParams     Reason = "invalid_params"     // tools/call params without a name (or one over 128 characters) or an arguments object; a prompts/get name or resources/read uri an authorization guardrail is asked about that is not a string
	ReasonInflightLimit     Reason = "inflight_limit"     // --max-inflight-calls calls were in flight and none ended in time: the upstream was never called
	ReasonInternalError     Reason = "internal_error"     // a bug inside the pipeline: the call is blocked

	// Channels other than tools/call (docs/channels.md).
	ReasonToolHidden            Reason = "tool_hidden"               // a tools/call to a tool withheld from the caller's listing
	ReasonListingUnavailable    Reason = "listing_unavailable"       // a tools/call rejected because no tools listing could be read to tell whether the tool is withheld
	ReasonEntryHidden           Reason = "entry_hidden"              // a prompts/get or resources/read of a prompt or resource withheld from the caller's listing
	ReasonPolicyHidden          Reason = "policy_hidden"             // a list policy removed the tool from the listing
	ReasonToolDefinitionChanged Reason = "tool_definition_changed"   // the tool differs from its pin and pins block
	ReasonServerInfoChanged     Reason = "server_info_changed"       // the initialize serverInfo differs from its pin and pins block
	ReasonTaskUnknown           Reason = "task_unknown"              // a tasks/result for a task the session does not hold (expired, forgotten, or not created through it): refused, never relayed
	ReasonRootOutsidePin        Reason = "root_outside_pin"          // a client's roots/list answer named a root outside the server's pinned roots: removed
	ReasonMissingCapability     Reason = "missing_client_capability" // an input_required result asked for input the request's clientCapabilities do not declare: answered -32021
	ReasonHeaderMismatch        Reason = "header_mismatch"           // a 2026-07-28 tools/call whose Mcp-Param-* headers disagree with its x-mcp-header arguments: answered -32020, never forwarded
	ReasonRetryMismatch         Reason = "retry_mismatch"            // a translated 2026-07-28 retry whose params (arguments, name, uri) differ from the request its requestState was issued for: answered -32602, never forwarded
	ReasonRequestStateInvalid   Reason = "request_state_invalid"     // a Multi Round-Trip retry whose requestState the gateway did not issue to this caller, session and request, or that expired or was used: answered -32602, never forwarded
	ReasonTaskNotOwned          Reason = "task_not_owned"            // a tasks/get, tasks/result, tasks/update or tasks/cancel for a task another session's call created: answered -32602 as for an unknown task, never relayed
	ReasonSecretInMotion        Reason = "secret_in_motion"          // a tools/call whose arguments carry a secret or PII value an earlier result showed the caller: recorded, or refused with --refuse-secrets-in-motion

	// The start-up vet of gateway run (docs/vet.md#startup): one record per server
	// with findings, method MethodVet.
	ReasonVetFindings      Reason = "vet_findings"        // the server has vet findings and was started (--vet-mode report, or none of its findings is block-level and not allowed)
	ReasonVetServerLeftOut Reason = "vet_server_left_out" // --vet-mode enforce (strict) did not start the server: it has a block-level finding not allowed by vetAllow

	// Outside guardrails (docs/guardrails.md): the policy field names the service as
	// "guardrail:<name>".
	ReasonGuardrailBlock   Reason = "guardrail_block"   // a content guardrail answered BLOCKED: the call rejected (pre) or its result blocked (post)
	ReasonGuardrailDeny    Reason = "guardrail_deny"    // an authorization service denied the call: rejected before the upstream
	ReasonGuardrailTimeout Reason = "guardrail_timeout" // a guardrail with failMode closed did not answer in time
	ReasonGuardrailError   Reason = "guardrail_error"   // a guardrail with failMode closed failed: 5xx, malformed or oversized answer, open breaker, texts past maxBytes

	// The strict profile's argument checks (docs/engine.md#argument-checks): answered
	// -32602, never forwarded.
	ReasonArgumentSchema Reason = "argument_schema" // arguments that break the listed inputSchema (or a prompt's declared arguments), or an undeclared argument
	ReasonArgumentShell  Reason = "argument_shell"  // command chaining, substitution or redirection in a command, host or URL argument
	ReasonArgumentPath   Reason = "argument_path"   // a path outside the roots, a ".." that climbs above its start, a UNC or URL path
	ReasonArgumentURL    Reason = "argument_url"    // a URL argument aimed at cloud metadata or a link-local address

	// Messages with more than one reading (docs/decisions.md#one-reading): refused in
	// either direction, never forwarded.
	ReasonDuplicateMember   Reason = "duplicate_member"    // two members of one object equal, or equal under Unicode simple case folding
	ReasonCaseVariantMember Reason = "case_variant_member" // a member named like a JSON-RPC or MCP member only under case folding ("METHOD", "Arguments")
	ReasonInvalidMemberName Reason = "invalid_member_name" // a member name with invalid UTF-8 or a lone surrogate
	ReasonInexactID         Reason = "inexact_id"          // an id that is neither an integer within ±(2^53−1) nor a string of Unicode text: peers reading ids as doubles (or truncating them), or a string's invalid UTF-8 or lone surrogate as U+FFFD, read it as another id

	// Client messages refused whole as they arrive, never forwarded.
	ReasonBatchRefused     Reason = "batch_refused"     // a JSON-RPC batch (a JSON array): MCP has none
	ReasonMessageTooLarge  Reason = "message_too_large" // a message over --max-message-bytes
	ReasonIDInUse          Reason = "id_in_use"         // a request under an id equal (as a value: 70, 7e1) to one in flight
	ReasonMalformedMessage Reason = "malformed_message" // not one JSON-RPC 2.0 message: bad JSON, a BOM, a comment, a wrong "jsonrpc"
)

// Reasons lists every reason code.
var Reasons = []Reason{
	ReasonPolicyThrow, ReasonPolicyTimeout, ReasonPolicyStackLimit, ReasonPolicyMemoryLimit,
	ReasonBadCtxShape, ReasonPolicyError, ReasonFilterBlock, ReasonScanTruncated,
	ReasonUndecodableResult, ReasonSanitizeFailed, ReasonInvalidParams, ReasonInflightLimit, ReasonInternalError,
	ReasonToolHidden, ReasonListingUnavailable, ReasonEntryHidden, ReasonPolicyHidden, ReasonToolDefinitionChanged, ReasonServerInfoChanged, ReasonTaskUnknown, ReasonRootOutsidePin,
	ReasonMissingCapability, ReasonHeaderMismatch, ReasonRetryMismatch, ReasonRequestStateInvalid,
	ReasonArgumentSchema, ReasonArgumentShell, ReasonArgumentPath, ReasonArgumentURL, ReasonSecretInMotion, ReasonTaskNotOwned,
	ReasonVetFindings, ReasonVetServerLeftOut,
	ReasonGuardrailBlock, ReasonGuardrailDeny, ReasonGuardrailTimeout, ReasonGuardrailError,
	ReasonDuplicateMember, ReasonCaseVariantMember, ReasonInvalidMemberName, ReasonInexactID,
	ReasonBatchRefused, ReasonMessageTooLarge, ReasonIDInUse, ReasonMalformedMessage,
}

// Error returns the code, so that a Reason can be the target of errors.Is.
func (r Reason) Error() string { return string(r) }

// Rejection is a call a policy refused: the code and the policy file are safe to
// record; Message goes to the client only, because a policy may quote argument
// values in it. It matches its Code with errors.Is, as OPA's topdown.Error does.
type Rejection struct {
	Code    Reason
	Policy  string // file name, e.g. "block-force-delete.js"; "" when no one policy is to blame
	Message string
	// ErrorClass names the native error class (TypeError, ReferenceError, …) of a
	// runtime error the policy raised, with its 1-based Line and Column in the file
	// (0 when unknown); "" for a deliberate throw. Safe to log: no message, no value.
	ErrorClass   string
	Line, Column int
}

// IsError reports whether the rejection is a policy fault (a runtime error, a limit,
// a timeout, a bad ctx shape) rather than a decision the policy made by throwing.
func (e *Rejection) IsError() bool {
	return e != nil && (e.Code != ReasonPolicyThrow || e.ErrorClass != "")
}

// Error names the policy and the code, never the Message, so that logging a
// Rejection cannot leak what a policy quoted.
func (e *Rejection) Error() string {
	if e.Policy == "" {
		return fmt.Sprintf("call rejected: %s", e.Code)
	}
	return fmt.Sprintf("call rejected by policy %s: %s", e.Policy, e.Code)
}

// Is reports whether target is e's Code.
func (e *Rejection) Is(target error) bool {
	r, ok := target.(Reason)
	return ok && r == e.Code
}
