// With --config raising pii_email to block, an address in a result blocks the call.
function test_email_blocks_under_the_config() {
  var r = mcpgate.call({ tool: "lookup", result: { content: [{ type: "text", text: "ada@example.com" }] } });
  mcpgate.assertEqual(r.action, "block");
  mcpgate.assertEqual(r.reason, "filter_block");
}
