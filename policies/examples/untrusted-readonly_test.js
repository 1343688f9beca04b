// Tests for untrusted-readonly.js.
var only = ["untrusted-readonly.js"];
var untrusted = { userID: "u", callerId: "c", callerClass: "untrusted", roles: [] };

function test_untrusted_callers_may_read() {
  var r = mcpgate.call({ tool: "read_file", toolAccess: "read", params: {}, user: untrusted, policies: only });
  mcpgate.assertEqual(r.action, "pass");
}

function test_untrusted_callers_may_not_write() {
  var r = mcpgate.call({ tool: "write_file", toolAccess: "write", params: {}, user: untrusted, policies: only });
  mcpgate.assertEqual(r.outcome, "rejected");
  mcpgate.assertEqual(r.policy, "untrusted-readonly.js");
}

function test_standard_callers_may_write() {
  var r = mcpgate.call({ tool: "write_file", toolAccess: "write", params: {}, policies: only,
    user: { userID: "u", callerId: "c", callerClass: "standard", roles: [] } });
  mcpgate.assertEqual(r.action, "pass");
}
