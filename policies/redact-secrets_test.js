// Tests for redact-secrets.js: run them with `mcpgate test policies`.

var user = { userID: "u1", callerId: "claude-code", callerClass: "standard", roles: [] };

// a file an agent reads: an AWS key pair, a GitHub token and an ordinary setting
var credentials = "[default]\naws_access_key_id = AKIAQYLPMN5HFIQR7XB2\n" +
  "aws_secret_access_key = 9drTJvcXLB89EXAMPLEoJ3e9fMtaSTxwYgPqdaQz\n" +
  "github_token = ghp_R8mXk2pLqW9sT4vN7bY3cJ6hF1dG5aZ0eQ2u\nregion = eu-west-1\n";

function test_redacts_an_aws_key_pair_and_a_github_token_in_text_and_structured_content() {
  var r = mcpgate.call({
    tool: "read_text_file", params: { path: "/home/u/.aws/credentials" }, user: user,
    policies: ["redact-secrets.js"],
    result: { content: [{ type: "text", text: credentials }], structuredContent: { content: credentials } },
  });
  mcpgate.assertEqual(r.action, "redact");
  var want = "[default]\naws_access_key_id = [REDACTED:AWS_ACCESS_KEY]\n" +
    "aws_secret_access_key = [REDACTED:AWS_SECRET_ACCESS_KEY]\n" +
    "github_token = [REDACTED:GITHUB_TOKEN]\nregion = eu-west-1\n";
  mcpgate.assertEqual(r.result.content[0].text, want);
  mcpgate.assertEqual(r.result.structuredContent, { content: want });
}

function test_redacts_a_catalogue_secret() {
  // SendGrid keys come from gitleaks' catalogue, not from a hand-written rule
  var key = "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";
  var r = mcpgate.call({ tool: "env", params: {}, user: user, policies: ["redact-secrets.js"],
    result: { content: [{ type: "text", text: "SENDGRID_API_KEY=" + key + "\n" }] } });
  mcpgate.assert(r.result.content[0].text.indexOf(key) < 0, "the SendGrid key reached the client: " + r.result.content[0].text);
  mcpgate.assert(r.result.content[0].text.indexOf("[REDACTED:") >= 0, "no placeholder");
}

function test_redacts_ssn_card_and_iban() {
  var r = mcpgate.call({ tool: "lookup_customer", params: {}, user: user, policies: ["redact-secrets.js"],
    result: { content: [{ type: "text", text: "SSN 321-54-9876, card 4111 1111 1111 1111, IBAN DE89 3704 0044 0532 0130 00." }],
      structuredContent: { note: "SSN: 321549876" } } });
  mcpgate.assertEqual(r.result.content[0].text, "SSN [REDACTED:SSN], card [REDACTED:CARD], IBAN [REDACTED:IBAN].");
  mcpgate.assertEqual(r.result.structuredContent, { note: "SSN: [REDACTED:SSN]" });
}

function test_leaves_e_mail_addresses_and_ordinary_ids_alone() {
  // e-mail addresses are redact-email.js's; ids, hashes and versions are not secrets
  var result = { content: [{ type: "text", text: "owner ops@example.com, commit 037cc07e4b1f9a2d, build 550e8400-e29b-41d4-a716-446655440000, v1.2.3" }] };
  var r = mcpgate.call({ tool: "status", params: {}, user: user, policies: ["redact-secrets.js"], result: result });
  mcpgate.assertEqual(r.action, "pass");
  mcpgate.assertEqual(r.result, result);
}

function test_arguments_reach_the_server_unchanged() {
  var r = mcpgate.call({ tool: "put_secret", params: { value: "ghp_R8mXk2pLqW9sT4vN7bY3cJ6hF1dG5aZ0eQ2u" }, user: user,
    policies: ["redact-secrets.js"], result: { content: [{ type: "text", text: "stored" }] } });
  mcpgate.assertEqual(r.sent, { value: "ghp_R8mXk2pLqW9sT4vN7bY3cJ6hF1dG5aZ0eQ2u" });
}

function test_the_shipped_set_redacts_both_secrets_and_addresses() {
  var r = mcpgate.call({ tool: "read_text_file", params: {}, user: user,
    result: { content: [{ type: "text", text: "contact ada@example.com, token ghp_R8mXk2pLqW9sT4vN7bY3cJ6hF1dG5aZ0eQ2u" }] } });
  mcpgate.assertEqual(r.result.content[0].text, "contact [REDACTED:EMAIL], token [REDACTED:GITHUB_TOKEN]");
}

function test_redacts_an_ssn_named_only_by_its_member() {
  // a bare nine-digit number is an SSN under an ssn-like member, wherever it sits;
  // the same number under any other member is left alone
  var r = mcpgate.call({ tool: "lookup_customer", params: {}, user: user, policies: ["redact-secrets.js"],
    result: { content: [{ type: "text", text: "{\"social_security_number\":\"321549876\"}" },
      { type: "resource", resource: { uri: "crm://c/1", mimeType: "application/json", text: "{\"ssn\": \"412345678\"}" } }],
      structuredContent: { customer: { id: "321549876", SSN: "321549876", ssn: ["412345678"] }, orders: [{ id: "321549877" }] } } });
  mcpgate.assertEqual(r.action, "redact");
  mcpgate.assertEqual(r.result.content[0].text, "{\"social_security_number\":\"[REDACTED:SSN]\"}");
  mcpgate.assertEqual(r.result.content[1].resource.text, "{\"ssn\": \"[REDACTED:SSN]\"}");
  mcpgate.assertEqual(r.result.structuredContent,
    { customer: { id: "321549876", SSN: "[REDACTED:SSN]", ssn: ["[REDACTED:SSN]"] }, orders: [{ id: "321549877" }] });
}

function test_a_secret_store_tools_answer_keeps_its_secret_and_loses_its_pii() {
  var text = "AKIAQYLPMN5HFIQR7XB2 (owner SSN 321-54-9876)";
  ["read_secret", "vault_read_secret", "get_secret_value", "getSecretValue", "createAccessToken", "generate_api_key",
   "op.get-password", "rotate_db_credentials"].forEach(function (tool) {
    var r = mcpgate.call({ tool: tool, params: { key: "db_password" }, user: user, policies: ["redact-secrets.js"],
      result: { content: [{ type: "text", text: text }] } });
    mcpgate.assertEqual(r.result.content[0].text, "AKIAQYLPMN5HFIQR7XB2 (owner SSN [REDACTED:SSN])", tool);
  });
}

function test_other_tools_still_lose_the_secret() {
  // a name that mentions a secret without reading one, and tools that read files or settings
  ["list_secrets", "read_text_file", "get_env", "secret_santa_draw", "get_weather", "tokenize_text", "vault_status"].forEach(function (tool) {
    var r = mcpgate.call({ tool: tool, params: {}, user: user, policies: ["redact-secrets.js"],
      result: { content: [{ type: "text", text: "key AKIAQYLPMN5HFIQR7XB2" }] } });
    mcpgate.assertEqual(r.result.content[0].text, "key [REDACTED:AWS_ACCESS_KEY]", tool);
  });
}
