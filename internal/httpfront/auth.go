package httpfront

import (
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"errors"
	"fmt"
	"net/http"
	"strings"

	"github.com/mcpgate/mcpgate/ctxapi"
	"github.com/mcpgate/mcpgate/internal/config"
)

// ErrUnauthorized is returned by an Authenticator for a missing or unknown token; the
// front answers HTTP 401 and never falls back to a weaker identity.
var ErrUnauthorized = errors.New("a valid bearer token is required (Authorization: Bearer …)")

// Identity is the caller of one HTTP request: the user the policies see as ctx.user
// and a key that binds a session to the caller that created it. The key names the
// token entry, never the token.
type Identity struct {
	User ctxapi.User
	Key  string
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
		u := ctxapi.User{UserID: t.UserID, CallerID: t.CallerID, CallerClass: t.CallerClass, Roles: t.Roles}
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

func bearer(h string) (string, bool) {
	const p = "bearer "
	if len(h) <= len(p) || !strings.EqualFold(h[:len(p)], p) {
		return "", false
	}
	tok := strings.TrimSpace(h[len(p):])
	return tok, tok != ""
}
