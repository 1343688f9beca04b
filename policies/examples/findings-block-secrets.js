// findings-block-secrets.js — ctx.findings lists what the built-in rules found in this
// phase: [{rule_id, severity, entity, pointer, start, end}]. A finding never carries
// the matched value; pointer is a JSON Pointer ("/content/0/text") and start/end are
// byte offsets in that string. Here: refuse results that contain any secret.
if (ctx.phase === "post") {
  for (var i = 0; i < ctx.findings.length; i++) {
    var f = ctx.findings[i];
    if (f.rule_id.indexOf("secret_") === 0) {
      throw "result withheld: it contains a credential (" + f.rule_id + " at " + f.pointer + ")";
    }
  }
}
