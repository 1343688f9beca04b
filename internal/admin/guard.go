package admin

import (
	"crypto/sha256"
	"crypto/subtle"
	"net/http"
	"strings"

	"github.com/mcpgate/mcpgate/internal/loopback"
)

// Guard checks a request's Host, Origin and bearer token before any handler runs.
type Guard struct {
	hosts *loopback.Hosts
	token [32]byte // sha256 of the token; both sides are hashed so lengths match
	need  bool     // a token is required
}

// newGuard allows localhost and the loopback IPs plus hosts (host names or IPs, no
// port); with digest, the sha256 of a token, that token is required on every API and
// metrics request (nil: no token).
func newGuard(hosts []string, digest []byte) *Guard {
	g := &Guard{hosts: loopback.NewHosts(hosts...)}
	if digest != nil {
		g.need = true
		copy(g.token[:], digest)
	}
	return g
}

// tokenOK compares the request's bearer token with the configured one in constant
// time.
func (g *Guard) tokenOK(r *http.Request) bool {
	if !g.need {
		return true
	}
	auth := r.Header.Get("Authorization")
	const prefix = "Bearer "
	if len(auth) < len(prefix) || !strings.EqualFold(auth[:len(prefix)], prefix) {
		return false
	}
	got := sha256.Sum256([]byte(auth[len(prefix):]))
	return subtle.ConstantTimeCompare(got[:], g.token[:]) == 1
}

// Wrap returns h behind the host and origin checks, and the token check when
// needToken is true. Refusals are plain text with no detail about the token.
func (g *Guard) Wrap(h http.Handler, needToken bool) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch {
		case !g.hosts.Host(r.Host):
			http.Error(w, "forbidden host", http.StatusForbidden)
		case !g.hosts.Origin(r.Header.Get("Origin")):
			http.Error(w, "forbidden origin", http.StatusForbidden)
		case needToken && !g.tokenOK(r):
			w.Header().Set("WWW-Authenticate", `Bearer realm="mcpgate"`)
			http.Error(w, "unauthorized", http.StatusUnauthorized)
		default:
			h.ServeHTTP(w, r)
		}
	})
}
