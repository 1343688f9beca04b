// Tests for block-force-delete.js (`mcpgate test policies/examples`). Each example's
// test names its own file in `policies`, so it holds wherever the example is copied.
var only = ["block-force-delete.js"];
var done = { content: [{ type: "text", text: "deleted" }] };

function test_rejects_force_delete_before_the_server_sees_it() {
  var r = mcpgate.call({ tool: "delete_repo", params: { repo: "x", force_delete: true }, result: done, policies: only });
  mcpgate.assertEqual(r.outcome, "rejected");
  mcpgate.assertEqual(r.action, "block");
  mcpgate.assertEqual(r.reason, "policy_throw");
  mcpgate.assertEqual(r.policy, "block-force-delete.js");
  mcpgate.assertEqual(r.phase, "pre");
  mcpgate.assertEqual(r.sent, null);
  mcpgate.assert(r.result.content[0].text.indexOf("[mcpgate: call rejected by policy block-force-delete.js: force_delete is blocked by policy") === 0,
    r.result.content[0].text);
}

function test_lets_an_ordinary_delete_through() {
  var r = mcpgate.call({ tool: "delete_repo", params: { repo: "x" }, result: done, policies: only });
  mcpgate.assertEqual(r.action, "pass");
  mcpgate.assertEqual(r.sent, { repo: "x" });
  mcpgate.assertEqual(r.result, done);
}
