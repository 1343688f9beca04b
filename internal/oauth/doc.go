// Package oauth makes mcpgate's HTTP front an OAuth 2.1 protected resource (MCP
// authorization, 2025-11-25 and 2026-07-28): it checks the bearer access tokens an
// authorization server issued and maps their claims to a ctxapi.User.
//
//   - JWT access tokens (RFC 9068) are verified against the issuer's JWKS, found
//     through its metadata (RFC 8414, else OpenID Connect Discovery), with
//     github.com/lestrrat-go/jwx/v3: signature by a key of the set (by kid), an
//     algorithm from the configured list (never "none", never HMAC), iss, aud (the
//     gateway's canonical resource URI, RFC 8707), exp and nbf with a bounded skew.
//     The key set is cached, refetched when it ages, and refetched on an unknown kid
//     at a bounded rate (keys.go).
//   - Any other token is introspected (RFC 7662) when an introspection client is
//     configured; the answer is cached by the token's SHA-256 for at most its
//     lifetime (introspect.go).
//   - The claims become a Principal, and Mapping turns it into ctx.user (claims.go).
//   - Metadata serves the protected resource metadata (RFC 9728) and Challenge the
//     WWW-Authenticate header of a 401 or 403 (RFC 6750 §3, RFC 9728 §5.1).
//
// Every refusal is an *Error with an RFC 6750 error code and a fixed description:
// nothing of the token, nor any claim value, is ever put in an error, a log line or a
// record (docs/http.md#oauth).
package oauth
