// Tests for redact-email.js: run them with `mcpgate test policies`.

var user = { userID: "u1", callerId: "claude-code", callerClass: "standard", roles: [] };

function test_redacts_email_in_text_and_structured_content() {
  var r = mcpgate.call({
    tool: "lookup_customer", params: { id: "C1002" }, toolAccess: "read", user: user,
    result: {
      content: [{ type: "text", text: "Contact: ada@example.com, thanks" }],
      structuredContent: { email: "ada@example.com", id: "C1002" },
    },
  });
  mcpgate.assertEqual(r.outcome, "ok");
  mcpgate.assertEqual(r.action, "redact");
  mcpgate.assertEqual(r.policy, "");
  mcpgate.assertEqual(r.result.content[0].text, "Contact: [REDACTED:EMAIL], thanks");
  mcpgate.assertEqual(r.result.structuredContent, { email: "[REDACTED:EMAIL]", id: "C1002" });
}

function test_passes_a_result_without_addresses_unchanged() {
  var result = { content: [{ type: "text", text: "build ok" }] };
  var r = mcpgate.call({ tool: "build", params: {}, user: user, result: result });
  mcpgate.assertEqual(r.action, "pass");
  mcpgate.assertEqual(r.result, result);
}

function test_arguments_reach_the_server_unchanged() {
  var r = mcpgate.call({ tool: "send_mail", params: { to: "ada@example.com" }, user: user,
    result: { content: [{ type: "text", text: "sent" }] } });
  mcpgate.assertEqual(r.sent, { to: "ada@example.com" });
}

function test_redacts_internationalized_and_quoted_addresses_whole() {
  var text = "o'connor@example.ie, jörg.müller@example.de, françois.núñez@exemple.fr, zoë@example.com, \"jane doe\"@example.org";
  var r = mcpgate.call({
    tool: "lookup_customer", params: {}, user: user,
    result: { content: [{ type: "text", text: text }], structuredContent: { to: ["zoë@example.com"] } },
  });
  mcpgate.assertEqual(r.result.content[0].text,
    "[REDACTED:EMAIL], [REDACTED:EMAIL], [REDACTED:EMAIL], [REDACTED:EMAIL], [REDACTED:EMAIL]");
  mcpgate.assertEqual(r.result.structuredContent, { to: ["[REDACTED:EMAIL]"] });
}
