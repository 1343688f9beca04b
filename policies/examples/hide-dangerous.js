// hide-dangerous.js — tools a server marks destructive (annotations.destructiveHint)
// are listed to "trusted" callers only (list phase). A tool removed here is hidden
// from that caller: a tools/call to it is rejected, so hiding is enforcement.
if (ctx.phase === "list" && ctx.user.callerClass !== "trusted") {
  ctx.tools = ctx.tools.filter(function (t) {
    return !(t.annotations && t.annotations.destructiveHint === true);
  });
}
