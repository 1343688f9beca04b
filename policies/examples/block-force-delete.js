// block-force-delete.js — reject any call that asks for force_delete (pre phase).
// The classic pre-phase example (docs/decisions.md#policies). A throw rejects the call; the message goes to the client only.
if (ctx.phase === "pre" && ctx.params.force_delete === true) {
  throw "force_delete is blocked by policy";
}
