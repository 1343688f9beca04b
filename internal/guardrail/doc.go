// Package guardrail calls the outside services an operator configures under
// "mcpgate": {"guardrails": {...}} and turns their answers into verdicts the
// pipeline applies (docs/guardrails.md).
//
// Two kinds of callout exist:
//   - content (kind "generic"): LiteLLM's Generic Guardrail API, unchanged: the string
//     leaves the built-in rules read go out as texts; the answer is NONE, BLOCKED or
//     GUARDRAIL_INTERVENED with replacement texts, index by index;
//   - authorization (kind "authzen", AuthZEN 1.0 Access Evaluation API §6; kind "opa",
//     OPA's data API with {"input": ...}): subject, action, resource and context of a
//     call; the answer allows or denies.
//
// A Set runs the guardrails of one phase in parallel within one shared deadline;
// each guardrail has a fail mode, a timeout, a byte cap on what it is sent, an
// optional HMAC-SHA256 signature over the body, and a circuit breaker. A callout can
// only narrow (docs/decisions.md#callouts-narrow): it never renames a tool or
// changes a method, and it is never sent the caller's token, cookies or the
// gateway's own credentials, since every request is built from nothing but the facts
// listed in docs/guardrails.md.
package guardrail
