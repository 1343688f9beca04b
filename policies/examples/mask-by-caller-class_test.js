// Tests for mask-by-caller-class.js.
var only = ["mask-by-caller-class.js"];
var card = { content: [{ type: "text", text: "card 4111 1111 1111 1111 on file" }] };

function call(cls) {
  return mcpgate.call({ tool: "billing", params: {}, policies: only, result: card,
    user: { userID: "u1", callerId: "c", callerClass: cls, roles: [] } });
}

function test_standard_callers_get_the_card_masked() {
  var r = call("standard");
  mcpgate.assertEqual(r.action, "mask");
  mcpgate.assert(r.result.content[0].text.indexOf("4111 1111 1111 1111") < 0, r.result.content[0].text);
  mcpgate.assert(r.result.content[0].text.indexOf("1111") >= 0, "mask keeps the last 4");
}

function test_untrusted_callers_get_it_redacted() {
  var r = call("untrusted");
  mcpgate.assertEqual(r.action, "redact");
  mcpgate.assert(r.result.content[0].text.indexOf("1111") < 0, r.result.content[0].text);
}

function test_trusted_callers_see_it() {
  var r = call("trusted");
  mcpgate.assertEqual(r.action, "pass");
  mcpgate.assertEqual(r.result, card);
}
