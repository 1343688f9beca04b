// Rejects a delete that asks to skip confirmation.
if (ctx.phase === "pre" && ctx.params.force_delete === true) {
  throw "force_delete is blocked by policy";
}
