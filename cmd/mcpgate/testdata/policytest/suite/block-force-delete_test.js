// A suite with one test of each outcome, for the --format json golden file.
function test_rejects_force_delete() {
  const r = mcpgate.call({tool: "delete_repo", params: {force_delete: true},
    result: {content: [{type: "text", text: "deleted"}]}});
  mcpgate.assertEqual(r.outcome, "rejected");
  mcpgate.assertEqual(r.sent, null);
}

function test_deliberately_failing() {
  const r = mcpgate.call({tool: "delete_repo", params: {name: "x"},
    result: {content: [{type: "text", text: "deleted"}]}});
  mcpgate.assertEqual(r.action, "block");
}

function test_runtime_error() {
  let missing;
  return missing.field;
}
