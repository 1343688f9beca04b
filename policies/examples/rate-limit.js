// rate-limit.js — at most 100 calls per user per sliding hour (docs/decisions.md#rate-limit). Each
// tools/call is counted once, when it arrives, so the 101st call within the hour is
// the first one rejected.
if (ctx.phase === "pre" && ctx.rateLimitExceeded(100)) {
  throw "rate limit exceeded (100 calls/hour)";
}
