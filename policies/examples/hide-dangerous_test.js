// Tests for hide-dangerous.js.
var only = ["hide-dangerous.js"];
var listing = { tools: [
  { name: "read_file", inputSchema: { type: "object" }, annotations: { readOnlyHint: true } },
  { name: "delete_repo", inputSchema: { type: "object" }, annotations: { destructiveHint: true } },
] };

function test_untrusted_callers_do_not_see_destructive_tools() {
  var r = mcpgate.channel({ method: "tools/list", result: listing, policies: only,
    user: { userID: "u", callerId: "c", callerClass: "untrusted", roles: [] } });
  mcpgate.assertEqual(r.hidden, ["delete_repo"]);
  mcpgate.assertEqual(r.result.tools.length, 1);
  mcpgate.assertEqual(r.result.tools[0].name, "read_file");
}

function test_trusted_callers_see_every_tool() {
  var r = mcpgate.channel({ method: "tools/list", result: listing, policies: only,
    user: { userID: "u", callerId: "c", callerClass: "trusted", roles: [] } });
  mcpgate.assertEqual(r.hidden, []);
  mcpgate.assertEqual(r.result.tools.length, 2);
}

function test_tool_calls_are_not_this_policys_business() {
  var r = mcpgate.call({ tool: "delete_repo", params: {}, policies: only,
    user: { userID: "u", callerId: "c", callerClass: "untrusted", roles: [] } });
  mcpgate.assertEqual(r.action, "pass");
}

function test_an_untrusted_caller_cannot_call_a_hidden_tool() {
  var untrusted = { userID: "u", callerId: "c", callerClass: "untrusted", roles: [] };
  var r = mcpgate.call({ tool: "delete_repo", params: {}, policies: only, tools: listing.tools, user: untrusted });
  mcpgate.assertEqual(r.outcome, "rejected");
  mcpgate.assertEqual(r.reason, "tool_hidden");
  mcpgate.assertEqual(r.sent, null);
  var ok = mcpgate.call({ tool: "read_file", params: {}, policies: only, tools: listing.tools, user: untrusted });
  mcpgate.assertEqual(ok.outcome, "ok");
}
