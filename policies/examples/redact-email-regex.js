// redact-email-regex.js — the plain-JS version from docs/decisions.md#policies: replace e-mail addresses in text
// blocks with [REDACTED] (post phase). Mutations of ctx.response.content reach the
// client. Note: it misses structuredContent and runs the regex in JS (~30 MB/s);
// the shipped ../redact-email.js uses the Go-backed ctx.redactAll instead.
if (ctx.phase === "post" && ctx.response && ctx.response.content) {
  for (var i = 0; i < ctx.response.content.length; i++) {
    var block = ctx.response.content[i];
    if (block && block.type === "text" && block.text) {
      block.text = block.text.replace(
        /[\w.-]+@[\w.-]+\.\w+/g,
        "[REDACTED]"
      );
    }
  }
}
