package oauth

import (
	"net/url"
	"strings"
)

// Audience outcomes of a token's claims or an introspection answer.
const (
	audienceConfirmed = iota // aud (or resource) names the gateway's resource URI
	audienceOther            // it names only other resources
	audienceMissing          // it names none at all
)

// audience judges the audiences a token's claims or an introspection answer name:
// aud (RFC 7519 §4.1.3, RFC 7662 §2.2; a string or an array of strings) and, where
// the provider answers with the RFC 8707 resource indicators it issued the token for,
// resource (a string or an array). Each is compared with want as a canonical resource
// URI (canonicalResource). A member of another type names nothing.
func audience(c map[string]any, want string) int { return audienceIn(c, want, "aud", "resource") }

// jwtAudience judges a JWT access token's aud alone (RFC 9068 §4): its resource
// claim, which the token's issuer never checked against a request, confirms nothing.
func jwtAudience(c map[string]any, want string) int { return audienceIn(c, want, "aud") }

// audienceIn judges the members of c named by members, as audience describes.
func audienceIn(c map[string]any, want string, members ...string) int {
	w := canonicalResource(want)
	out := audienceMissing
	for _, member := range members {
		v, ok := c[member]
		if !ok || v == nil {
			continue
		}
		var names []string
		switch x := v.(type) {
		case string:
			names = []string{x}
		case []any:
			for _, e := range x {
				if s, ok := e.(string); ok {
					names = append(names, s)
				}
			}
		}
		for _, n := range names {
			if canonicalResource(n) == w {
				return audienceConfirmed
			}
			out = audienceOther
		}
	}
	return out
}

// canonicalResource is the form a resource URI is compared in (RFC 8707 §2, RFC 3986
// §6.2.2-3 syntax- and scheme-based normalisation): scheme and host lower-cased, the
// scheme's default port dropped, an empty path written "/"; the path, query and
// everything else compared as written. A string that is not an absolute URI comes
// back unchanged, so it equals only itself.
func canonicalResource(s string) string {
	u, err := url.Parse(s)
	if err != nil || u.Scheme == "" || u.Host == "" || u.Opaque != "" || u.User != nil {
		return s
	}
	scheme := strings.ToLower(u.Scheme)
	host, port := strings.ToLower(u.Hostname()), u.Port()
	if (scheme == "https" && port == "443") || (scheme == "http" && port == "80") {
		port = ""
	}
	if strings.Contains(host, ":") {
		host = "[" + host + "]"
	}
	if port != "" {
		host += ":" + port
	}
	path := u.EscapedPath()
	if path == "" {
		path = "/"
	}
	out := scheme + "://" + host + path
	if u.ForceQuery || u.RawQuery != "" {
		out += "?" + u.RawQuery
	}
	return out
}
