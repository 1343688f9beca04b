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
if (ctx.phase === "post" || ctx.phase === "resource" || ctx.phase === "prompt") {
  ctx.redactAll({ kinds: ["secret", "pii_us_ssn", "pii_payment_card", "pii_iban"], strategy: "redact" });
}
