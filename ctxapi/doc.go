// Package ctxapi defines what a gate policy sees as its global ctx (docs/decisions.md#ctx,
// docs/policies.md): the phase, the tool and its DADL access tag, the arguments, the
// response in the post phase, the configured caller, the built-in findings and the
// per-user rate limit behind ctx.rateLimitExceeded(n).
//
// The JavaScript binding itself lives in package gate; this package holds the plain Go
// values the pipeline fills in, the sliding-window RateLimiter, the shape checks the
// gate applies when it reads ctx back, and a streaming redactor over raw JSON strings
// that the Go-backed redaction helpers use when a policy has not materialised a value.
package ctxapi
