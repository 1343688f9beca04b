// Tests for strip-trailers.js.
var only = ["strip-trailers.js"];

function test_strips_the_trailers_from_a_pull_request_body() {
  var r = mcpgate.call({ tool: "github_create_pull", policies: only,
    params: { title: "Fix", body: "Fixes the bug.\n\nCo-Authored-By: Bot <bot@example.com>\nco-authored-by: Ada <ada@example.com>\n" } });
  mcpgate.assertEqual(r.sent, { title: "Fix", body: "Fixes the bug.\n" });
  mcpgate.assertEqual(r.action, "pass"); // a rewrite has no rung on the ladder
}

function test_keeps_the_paragraphs_around_a_trailer() {
  var r = mcpgate.call({ tool: "github_create_git_commit", policies: only,
    params: { message: "Fix.\n\nCo-Authored-By: Bot <bot@example.com>\n\nMore.\n" } });
  mcpgate.assertEqual(r.sent, { message: "Fix.\n\nMore.\n" });
}

function test_a_call_without_the_field_is_unchanged() {
  var params = { title: "Fix" };
  var r = mcpgate.call({ tool: "github_update_pull", params: params, policies: only });
  mcpgate.assertEqual(r.sent, params);
}

function test_leaves_other_tools_alone() {
  var params = { body: "Co-Authored-By: Bot <bot@example.com>" };
  var r = mcpgate.call({ tool: "github_comment", params: params, policies: only });
  mcpgate.assertEqual(r.sent, params);
}
