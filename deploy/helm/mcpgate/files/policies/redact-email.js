// redact-email.js — replace e-mail addresses in results with [REDACTED:EMAIL] (post).
//
// ctx.redactAll runs the Go-backed detector in place over every text of
// ctx.response.content AND over ctx.response.structuredContent: many servers return
// the same text in both (server-filesystem's read_text_file does), and redacting only
// one copy would leak the other. Use strategy "mask" to keep the last 4 characters or
// "hash" for a stable short hash. See policies/examples/ for the plain-JS version.
if (ctx.phase === "post") {
  ctx.redactAll({ kinds: ["pii_email"], strategy: "redact" });
}
