// redact-one-field.js — the copy-returning helpers: ctx.redact(value, opts),
// ctx.mask(value, opts) and ctx.hash(value, opts) return a redacted copy of a string,
// array or object (string leaves only; keys and numbers are kept) and never touch ctx
// themselves. Assign the copy where you want it.
if (ctx.phase === "post" && ctx.response.structuredContent) {
  var sc = ctx.response.structuredContent;
  if (sc.customer) {
    sc.customer = ctx.mask(sc.customer, { kinds: ["pii_email", "pii_phone"] });
  }
}
if (ctx.phase === "pre" && typeof ctx.params.note === "string") {
  ctx.params.note = ctx.hash(ctx.params.note, { kinds: ["pii_email"] });
}
