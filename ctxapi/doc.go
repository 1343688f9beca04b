// Package ctxapi defines what a gate policy sees as its global ctx (docs/decisions.md#ctx,
// docs/policies.md): the phases (Phase: pre and post of a tools/call, and one per
// other channel), the method, the server, the tool and its DADL access tag, the
// arguments or params, the response or listing of the phase, the configured caller
// (User), the built-in findings and the per-user rate limit behind
// ctx.rateLimitExceeded(n).
//
// The JavaScript binding itself lives in package gate, which also checks the shape of
// what it reads back; this package holds the plain Go values the pipeline fills in
// (Call, Response), the sliding-window RateLimiter and its RateLimitStore, and
// RewriteMembersAppend, a streaming rewriter of the strings of raw JSON that the Go-backed
// redaction helpers use when a policy has not materialised a value.
package ctxapi
