// Tests for findings-block-secrets.js.
var only = ["findings-block-secrets.js"];

function test_withholds_a_result_holding_a_credential() {
  var r = mcpgate.call({ tool: "read_file", params: { path: ".env" }, policies: only,
    result: { content: [{ type: "text", text: "AWS_ACCESS_KEY_ID=AKIAIOSFODNN7EXAMPLE" }] } });
  mcpgate.assertEqual(r.outcome, "ok"); // the server ran: the result is withheld, not the call rejected
  mcpgate.assertEqual(r.action, "block");
  mcpgate.assertEqual(r.phase, "post");
  mcpgate.assert(r.result.content[0].text.indexOf("[mcpgate: result withheld by policy findings-block-secrets.js: ") === 0,
    r.result.content[0].text);
  mcpgate.assert(r.result.content[0].text.indexOf("AKIA") < 0, "the key must not reach the client");
}

function test_passes_a_clean_result() {
  var r = mcpgate.call({ tool: "read_file", params: { path: "README" }, policies: only,
    result: { content: [{ type: "text", text: "hello" }] } });
  mcpgate.assertEqual(r.action, "pass");
}
