// Tests for redact-one-field.js.
var only = ["redact-one-field.js"];

function test_masks_the_customer_field_only() {
  var r = mcpgate.call({ tool: "crm", params: {}, policies: only, result: {
    content: [{ type: "text", text: "ok" }],
    structuredContent: { customer: { email: "ada@example.com" }, note: "ada@example.com" } } });
  mcpgate.assertEqual(r.action, "mask");
  mcpgate.assert(r.result.structuredContent.customer.email !== "ada@example.com", JSON.stringify(r.result.structuredContent));
  mcpgate.assertEqual(r.result.structuredContent.note, "ada@example.com");
}

function test_hashes_an_address_in_the_note_argument() {
  var r = mcpgate.call({ tool: "crm", params: { note: "call ada@example.com" }, policies: only });
  mcpgate.assert(r.sent.note.indexOf("ada@example.com") < 0, r.sent.note);
  mcpgate.assert(r.sent.note.indexOf("call ") === 0, r.sent.note);
}
