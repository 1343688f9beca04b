// mask-by-caller-class.js — graded PII handling by caller class (docs/policies.md):
// trusted callers see everything but credentials, standard callers get high-risk PII
// masked (keep last 4), untrusted callers get every PII and secret kind redacted.
// ctx.redactAll(opts) edits ctx.response (post) or ctx.params (pre) in place and
// returns how many values it replaced.
if (ctx.phase === "post") {
  var cls = ctx.user.callerClass;
  if (cls === "trusted") {
    ctx.redactAll({ kinds: ["secret_aws_access_key", "secret_github_token", "secret_slack_token",
                            "secret_stripe_key", "secret_google_api_key", "secret_jwt", "secret_private_key"] });
  } else if (cls === "untrusted") {
    ctx.redactAll({ strategy: "redact" }); // no kinds: every PII and secret kind
  } else {
    ctx.redactAll({ kinds: ["pii_payment_card", "pii_iban", "pii_us_ssn"], strategy: "mask" });
  }
}
