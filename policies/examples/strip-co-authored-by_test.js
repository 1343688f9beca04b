// Tests for strip-co-authored-by.js.
var only = ["strip-co-authored-by.js"];

function test_strips_the_trailer_from_a_pull_request_body() {
  var r = mcpgate.call({ tool: "github_create_pull", policies: only,
    params: { title: "Fix", body: "Fixes the bug.\n\nCo-Authored-By: Bot <bot@example.com>\n" } });
  mcpgate.assertEqual(r.sent, { title: "Fix", body: "Fixes the bug.\n" });
  mcpgate.assertEqual(r.action, "pass"); // a rewrite has no rung on the ladder
}

function test_leaves_other_tools_alone() {
  var params = { body: "Co-Authored-By: Bot <bot@example.com>" };
  var r = mcpgate.call({ tool: "github_comment", params: params, policies: only });
  mcpgate.assertEqual(r.sent, params);
}
