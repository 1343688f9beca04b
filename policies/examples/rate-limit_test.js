// Tests for rate-limit.js: the calls of one test share the rate limiter.
var only = ["rate-limit.js"];
var user = { userID: "busy", callerId: "c", callerClass: "standard", roles: [] };

function test_the_101st_call_in_an_hour_is_rejected() {
  for (var i = 1; i <= 100; i++) {
    var r = mcpgate.call({ tool: "t", params: {}, user: user, policies: only });
    mcpgate.assertEqual(r.action, "pass");
  }
  var last = mcpgate.call({ tool: "t", params: {}, user: user, policies: only });
  mcpgate.assertEqual(last.outcome, "rejected");
  mcpgate.assertEqual(last.policy, "rate-limit.js");
}
