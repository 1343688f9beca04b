// Tests for redact-email-regex.js, the plain-JS e-mail redaction.
var only = ["redact-email-regex.js"];

function test_redacts_text_but_not_structured_content() {
  var r = mcpgate.call({ tool: "lookup", params: {}, policies: only, result: {
    content: [{ type: "text", text: "mail ada@example.com" }],
    structuredContent: { email: "ada@example.com" } } });
  mcpgate.assertEqual(r.action, "redact");
  mcpgate.assertEqual(r.result.content[0].text, "mail [REDACTED]");
  // the limit this example documents: the shipped redact-email.js covers both copies
  mcpgate.assertEqual(r.result.structuredContent, { email: "ada@example.com" });
}
