// untrusted-readonly.js — callers of class "untrusted" may only call tools whose DADL
// access tag is "read" (pre phase). Caller classes come from the config.
if (ctx.phase === "pre" &&
    ctx.user.callerClass === "untrusted" &&
    ctx.toolAccess !== "read") {
  throw "caller class 'untrusted' may only call tools with access tag 'read'";
}
