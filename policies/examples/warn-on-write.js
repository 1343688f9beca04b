// warn-on-write.js — ctx.warn(reason) flags the call without changing or blocking it:
// the audit record gets decision "warn" and names this policy. The reason is shown to
// operators in debug views only and is never logged, so it may quote the call.
if (ctx.phase === "pre" && (ctx.toolAccess === "admin" || ctx.toolAccess === "dangerous")) {
  ctx.warn("tool " + ctx.tool + " is tagged " + ctx.toolAccess);
}
