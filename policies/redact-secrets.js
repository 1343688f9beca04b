// redact-secrets.js — replace credentials and high-risk personal data in what a
// server sends back (post, resource, prompt) with a typed placeholder.
//
// "secret" is the whole secret family: the hand-written provider rules (AWS, GitHub,
// GitLab, Slack, Stripe, Google, OpenAI, Anthropic, npm, PyPI, ...), credentials by
// position (Authorization, Cookie, a URL's password, aws_secret_access_key), private
// keys, JWTs, and gitleaks' catalogue (docs/engine.md#the-catalogue). The PII kinds
// are the ones that open an account or a payment: US SSNs, payment cards, IBANs.
// E-mail addresses are redact-email.js's. ctx.redactAll covers content and
// structuredContent alike, so a value a server returns twice is redacted twice.
//
// A secret store's own answer is left alone (docs/decisions.md#secret-store-tools): a
// tool whose name reads, creates or rotates a secret ("read_secret",
// "get_secret_value", "createAccessToken", "vault_get_password") returns a secret by
// design, and redacting it would break the tool. Its PII is still redacted, and the
// secret it showed is remembered in motion: sent on in a later call, it is recorded
// (refused in --profile strict) as secret_in_motion.
var SECRET_STORE_TOOL = /(^|_)(read|get|fetch|retrieve|reveal|show|lookup|view|access|export|create|generate|issue|rotate|new)(_[a-z0-9]+){0,2}_(secrets?|passwords?|passphrases?|credentials?|tokens?|api_?keys?|(access|secret|private|ssh|signing)_keys?)($|_)/;

if (ctx.phase === "post" || ctx.phase === "resource" || ctx.phase === "prompt") {
  var words = ctx.tool.replace(/([a-z0-9])([A-Z])/g, "$1_$2").toLowerCase().replace(/[^a-z0-9]+/g, "_");
  var pii = ["pii_us_ssn", "pii_payment_card", "pii_iban"];
  ctx.redactAll({ kinds: ctx.phase === "post" && SECRET_STORE_TOOL.test(words) ? pii : ["secret"].concat(pii), strategy: "redact" });
}
