// guardrail-findings.js — an outside content guardrail's findings join ctx.findings
// with source "guardrail:<name>" (docs/guardrails.md). They decide nothing by
// themselves: here a call the "injection" classifier flagged HIGH is rejected, and a
// weaker finding lets it through.
if (ctx.phase === "pre") {
  var hit = ctx.findings.find(function (f) {
    return f.source === "guardrail:injection" && f.severity === "HIGH";
  });
  if (hit) throw "flagged by the injection classifier at " + hit.pointer;
}
