// warn-on-write.js — ctx.warn(reason) flags the call without changing or blocking it:
// the audit record says decision "allow" (the built-in filter's verdict) and
// action_taken "warn", and names this policy in policies_acted. The agent sees the
// warning notice; the reason is never logged, so it may quote the call.
if (ctx.phase === "pre" && (ctx.toolAccess === "admin" || ctx.toolAccess === "dangerous")) {
  ctx.warn("tool " + ctx.tool + " is tagged " + ctx.toolAccess);
}
