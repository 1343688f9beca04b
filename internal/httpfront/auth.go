package httpfront

import (
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"

	"github.com/mcpgate/mcpgate/ctxapi"
	"github.com/mcpgate/mcpgate/internal/config"
	"github.com/mcpgate/mcpgate/internal/methods"
	"github.com/mcpgate/mcpgate/internal/oauth"
)

// ErrUnauthorized is returned by an Authenticator for a missing or unknown token; the
// front answers HTTP 401 and never falls back to a weaker identity.
var ErrUnauthorized = errors.New("a valid bearer token is required (Authorization: Bearer …)")

// Identity is the caller of one HTTP request: the user the policies see as ctx.user
// and a key that names the caller (a subject, a token entry, a certificate name: never
// the token), by which the per-caller caps count. A session and a 2026-07-28 backend
// are bound to the key and to the whole User, so a later token of the same caller
// that grants other scopes, another client or other roles never runs with the first
// token's (docs/decisions.md#principal-per-token).
type Identity struct {
	User ctxapi.User
	Key  string
	// token is the OAuth access token the caller presented (validated); "" for a
	// static token, a client certificate or a local caller. Never logged.
	token string
}

// grant is the digest of everything a token grants: the whole ctx.user (subject,
// client id, caller class, roles, scopes, in their order). Two requests share a
// backend only when their grants are equal.
func grant(u ctxapi.User) string {
	b, _ := json.Marshal(u)
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:16])
}

// Authenticator identifies the caller of a request, or returns ErrUnauthorized.
type Authenticator func(r *http.Request) (Identity, error)

// LocalAuth accepts every request as the configured local user. The gateway uses it
// only on a loopback listener with no tokens configured.
func LocalAuth(u ctxapi.User) Authenticator {
	return func(*http.Request) (Identity, error) { return Identity{User: u, Key: "local"}, nil }
}

type tokenEntry struct {
	hash [sha256.Size]byte
	user ctxapi.User
}

// TokenAuth checks "Authorization: Bearer TOKEN" against the configured tokens, which
// are stored as the sha256 hex of the token. The hash of the presented token is
// compared with every entry in constant time. classFor resolves the caller class of
// an entry that names none.
func TokenAuth(tokens []config.Token, classFor func(callerID string) string) (Authenticator, error) {
	if len(tokens) == 0 {
		return nil, errors.New("httpfront: TokenAuth needs at least one token")
	}
	entries := make([]tokenEntry, len(tokens))
	for i, t := range tokens {
		b, err := hex.DecodeString(strings.TrimSpace(t.SHA256))
		if err != nil || len(b) != sha256.Size {
			return nil, fmt.Errorf(`"mcpgate.tokens[%d].sha256": want 64 hex digits (sha256 of the token)`, i)
		}
		copy(entries[i].hash[:], b)
		u := ctxapi.User{UserID: t.UserID, CallerID: t.CallerID, CallerClass: t.CallerClass, Roles: t.Roles, Tenant: t.Tenant}
		if u.CallerID == "" {
			u.CallerID = t.UserID
		}
		if u.CallerClass == "" {
			u.CallerClass = "standard"
			if classFor != nil {
				u.CallerClass = classFor(u.CallerID)
			}
		}
		if u.Roles == nil {
			u.Roles = []string{}
		}
		entries[i].user = u
	}
	return func(r *http.Request) (Identity, error) {
		tok, ok := bearer(r.Header.Get("Authorization"))
		if !ok {
			return Identity{}, ErrUnauthorized
		}
		sum := sha256.Sum256([]byte(tok))
		match := -1
		for i := range entries { // no early exit: the time does not depend on which entry matched
			if subtle.ConstantTimeCompare(sum[:], entries[i].hash[:]) == 1 && match < 0 {
				match = i
			}
		}
		if match < 0 {
			return Identity{}, ErrUnauthorized
		}
		u := entries[match].user
		u.Roles = append([]string(nil), u.Roles...)
		return Identity{User: u, Key: fmt.Sprintf("token#%d", match)}, nil
	}, nil
}

// AuthConfig lists the kinds of caller a front accepts; any may be combined.
type AuthConfig struct {
	Tokens   []config.Token   // static bearer tokens (sha256)
	OAuth    *oauth.Validator // OAuth access tokens (docs/http.md#oauth)
	Certs    bool             // verified TLS client certificates (mTLS)
	ClassFor func(callerID string) string
}

// NewAuth returns the Authenticator for c. A bearer token is tried against the
// static tokens first (in constant time), then as an OAuth access token; without a
// bearer token a verified client certificate names the caller. A refusal with OAuth
// configured is an *AuthError carrying the RFC 6750 / RFC 9728 challenge: 401 with
// resource_metadata and scope (and error="invalid_token" for a bad token), 403
// insufficient_scope for a valid token lacking a needed scope.
func NewAuth(c AuthConfig) (Authenticator, error) {
	var static Authenticator
	if len(c.Tokens) > 0 {
		var err error
		if static, err = TokenAuth(c.Tokens, c.ClassFor); err != nil {
			return nil, err
		}
	}
	if static == nil && c.OAuth == nil && !c.Certs {
		return nil, errors.New("httpfront: NewAuth needs tokens, an OAuth validator or client certificates")
	}
	refuse := func(e *oauth.Error) error {
		if c.OAuth == nil {
			return ErrUnauthorized
		}
		ae := &AuthError{Status: http.StatusUnauthorized, Challenge: c.OAuth.Challenge(e), Reason: "no_token",
			Message: "a valid bearer token is required (Authorization: Bearer …): the authorization server is named in the protected resource metadata (" + oauth.MetadataURL(c.OAuth.Config().Audience) + ")"}
		if e != nil {
			ae.Reason, ae.Message = e.Reason, e.Code+": "+e.Description
			if e.Code == oauth.CodeInsufficientScope {
				ae.Status = http.StatusForbidden
			}
		}
		return ae
	}
	return func(r *http.Request) (Identity, error) {
		tok, ok := bearer(r.Header.Get("Authorization"))
		if !ok {
			if c.Certs {
				if id, ok := certIdentity(r, c.ClassFor); ok {
					return id, nil
				}
			}
			return Identity{}, refuse(nil)
		}
		if static != nil {
			if id, err := static(r); err == nil {
				return id, nil
			}
		}
		if c.OAuth == nil {
			return Identity{}, ErrUnauthorized
		}
		p, err := c.OAuth.Validate(r.Context(), tok)
		if err != nil {
			var e *oauth.Error
			if !errors.As(err, &e) {
				e = &oauth.Error{Code: oauth.CodeInvalidToken, Reason: "invalid_token", Description: "the token is not valid"}
			}
			return Identity{}, refuse(e)
		}
		sum := sha256.Sum256([]byte(p.Subject))
		return Identity{User: c.OAuth.User(p, c.ClassFor), Key: "oauth:" + hex.EncodeToString(sum[:16]), token: tok}, nil
	}, nil
}

// certIdentity names the caller of a request by its verified TLS client certificate:
// userID and callerId the subject's common name (else its first email or DNS name),
// roles its organizational units, callerClass classFor of the name.
func certIdentity(r *http.Request, classFor func(string) string) (Identity, bool) {
	if r.TLS == nil || len(r.TLS.VerifiedChains) == 0 || len(r.TLS.VerifiedChains[0]) == 0 {
		return Identity{}, false
	}
	leaf := r.TLS.VerifiedChains[0][0]
	name := leaf.Subject.CommonName
	if name == "" && len(leaf.EmailAddresses) > 0 {
		name = leaf.EmailAddresses[0]
	}
	if name == "" && len(leaf.DNSNames) > 0 {
		name = leaf.DNSNames[0]
	}
	if name == "" || len(name) > oauth.MaxIDBytes {
		return Identity{}, false
	}
	u := ctxapi.User{UserID: name, CallerID: name, CallerClass: "standard", Roles: []string{}, Scopes: []string{}}
	if classFor != nil {
		u.CallerClass = classFor(name)
	}
	for _, ou := range leaf.Subject.OrganizationalUnit {
		if len(u.Roles) < oauth.MaxListItems && ou != "" && len(ou) <= oauth.MaxItemBytes {
			u.Roles = append(u.Roles, ou)
		}
	}
	sum := sha256.Sum256([]byte(name)) // the name, so a renewed certificate keeps its sessions
	return Identity{User: u, Key: "mtls:" + hex.EncodeToString(sum[:16])}, true
}

func bearer(h string) (string, bool) {
	const p = "bearer "
	if len(h) <= len(p) || !strings.EqualFold(h[:len(p)], p) {
		return "", false
	}
	tok := strings.TrimSpace(h[len(p):])
	return tok, tok != ""
}

// AuthError is an Authenticator's refusal with its own answer: the HTTP status (401,
// or 403 for insufficient_scope, RFC 6750 §3.1), the WWW-Authenticate value, the
// message of the JSON-RPC error body and a reason code for the log line. None of them
// may hold anything of the token.
type AuthError struct {
	Status    int
	Challenge string
	Message   string
	Reason    string
}

func (e *AuthError) Error() string { return e.Message }

// refuse answers a request the Authenticator refused: an *AuthError as it says,
// anything else 401 with a bare Bearer challenge. The token itself is never logged;
// that one was sent is.
func (f *Front) refuse(w http.ResponseWriter, r *http.Request, err error) {
	status, challenge, reason := http.StatusUnauthorized, `Bearer realm="mcpgate"`, "no_valid_token"
	var ae *AuthError
	if errors.As(err, &ae) {
		status, challenge, reason = ae.Status, ae.Challenge, ae.Reason
	}
	f.log.Warn(fmt.Sprintf("request rejected: %s (%d)", reason, status), "method", r.Method,
		"remote", r.RemoteAddr, "reason", reason, "authorization_sent", r.Header.Get("Authorization") != "")
	w.Header().Set("WWW-Authenticate", challenge)
	httpError(w, status, nil, methods.CodeInvalidRequest, "mcpgate: "+err.Error())
}
