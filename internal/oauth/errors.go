package oauth

import "fmt"

// RFC 6750 §3.1 error codes of a WWW-Authenticate challenge.
const (
	CodeInvalidRequest    = "invalid_request"    // 400: a malformed Authorization header
	CodeInvalidToken      = "invalid_token"      // 401: expired, revoked, malformed or not for us
	CodeInsufficientScope = "insufficient_scope" // 403: valid, but lacks a scope the request needs
)

// Error is why a token was refused: an RFC 6750 code, a fixed description that holds
// nothing of the token, and for insufficient_scope the scopes needed. Reason is a
// short snake_case code for log lines (token_expired, bad_signature, …).
type Error struct {
	Code        string
	Reason      string
	Description string
	Scope       string // the scopes the request needs (insufficient_scope)
}

func (e *Error) Error() string { return fmt.Sprintf("%s: %s", e.Code, e.Description) }

func invalid(reason, description string) *Error {
	return &Error{Code: CodeInvalidToken, Reason: reason, Description: description}
}

// The audience refusals (docs/http.md#audience): aud names only other resources, or
// the token's claims or its introspection answer name none at all.
var (
	errWrongAudience        = invalid("wrong_audience", "the token is not for this resource (aud)")
	errAudienceNotConfirmed = invalid("audience_not_confirmed", "audience not confirmed: the token names no audience (aud), so it cannot be shown to be for this resource")
)
