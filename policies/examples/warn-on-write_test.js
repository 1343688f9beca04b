// Tests for warn-on-write.js.
var only = ["warn-on-write.js"];

function test_an_admin_tool_is_flagged_not_blocked() {
  var r = mcpgate.call({ tool: "drop_table", toolAccess: "admin", params: {}, policies: only,
    result: { content: [{ type: "text", text: "dropped" }] } });
  mcpgate.assertEqual(r.outcome, "ok");
  // as the policy's comment says: the filter's decision stays "allow", the action is "warn"
  mcpgate.assertEqual(r.decision, "allow");
  mcpgate.assertEqual(r.action, "warn");
  mcpgate.assert(r.result.content[0].text.indexOf("[mcpgate: WARNING — 1 findings") === 0, r.result.content[0].text);
  mcpgate.assertEqual(r.result.content[1].text, "dropped");
}

function test_a_read_tool_is_not_flagged() {
  var r = mcpgate.call({ tool: "select", toolAccess: "read", params: {}, policies: only });
  mcpgate.assertEqual(r.action, "pass");
}
