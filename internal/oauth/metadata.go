package oauth

import (
	"encoding/json"
	"net/http"
	"net/url"
	"strings"
)

// WellKnownPath is the protected resource metadata's well-known path (RFC 9728 §3).
const WellKnownPath = "/.well-known/oauth-protected-resource"

// MetadataURL is where the metadata of the resource is served: the well-known path
// inserted before the resource's path (RFC 9728 §3.1), e.g.
// https://h/.well-known/oauth-protected-resource/mcp for https://h/mcp.
func MetadataURL(resource string) string {
	u, err := url.Parse(resource)
	if err != nil {
		return ""
	}
	u.Path = WellKnownPath + strings.TrimSuffix(u.Path, "/")
	u.RawQuery = ""
	return u.String()
}

// ResourceHost is the host name of the resource URI: the name clients use, so the
// front's DNS rebinding check accepts it.
func (v *Validator) ResourceHost() string {
	u, err := url.Parse(v.cfg.Audience)
	if err != nil {
		return ""
	}
	return u.Hostname()
}

// MetadataPaths are the paths the metadata is served at: the path-suffix form and the
// bare well-known path (which MCP clients try next).
func (v *Validator) MetadataPaths() []string {
	u, _ := url.Parse(MetadataURL(v.cfg.Audience))
	if u.Path == WellKnownPath {
		return []string{WellKnownPath}
	}
	return []string{u.Path, WellKnownPath}
}

// Metadata is the protected resource metadata document (RFC 9728 §2).
type Metadata struct {
	Resource               string   `json:"resource"`
	AuthorizationServers   []string `json:"authorization_servers"`
	ScopesSupported        []string `json:"scopes_supported,omitempty"`
	BearerMethodsSupported []string `json:"bearer_methods_supported"`
	ResourceName           string   `json:"resource_name,omitempty"`
}

// MetadataHandler serves the document (GET or HEAD; CORS open, as it is public).
func (v *Validator) MetadataHandler() http.Handler {
	doc, _ := json.Marshal(Metadata{
		Resource: v.cfg.Audience, AuthorizationServers: []string{v.cfg.Issuer},
		ScopesSupported: v.cfg.Scopes, BearerMethodsSupported: []string{"header"}, ResourceName: "mcpgate",
	})
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Access-Control-Allow-Origin", "*")
		switch r.Method {
		case http.MethodGet, http.MethodHead:
		case http.MethodOptions:
			w.Header().Set("Access-Control-Allow-Methods", "GET")
			w.WriteHeader(http.StatusNoContent)
			return
		default:
			w.Header().Set("Allow", "GET, HEAD")
			http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Cache-Control", "max-age=3600")
		_, _ = w.Write(doc)
	})
}

// Challenge is the WWW-Authenticate value for a refusal (RFC 6750 §3, RFC 9728
// §5.1): resource_metadata and scope always, error and error_description when err
// is an *Error (a request without a token gets neither, RFC 6750 §3.1).
func (v *Validator) Challenge(err *Error) string {
	var b strings.Builder
	b.WriteString("Bearer ")
	if err != nil {
		b.WriteString(`error="` + err.Code + `", error_description="` + quoteSafe(err.Description) + `", `)
	}
	b.WriteString(`resource_metadata="` + MetadataURL(v.cfg.Audience) + `"`)
	scope := strings.Join(v.cfg.Scopes, " ")
	if err != nil && err.Scope != "" {
		scope = err.Scope
	}
	if scope != "" {
		b.WriteString(`, scope="` + quoteSafe(scope) + `"`)
	}
	return b.String()
}

// quoteSafe drops what may not appear in a quoted-string of an auth-param.
func quoteSafe(s string) string {
	return strings.Map(func(r rune) rune {
		if r == '"' || r == '\\' || r < 0x20 || r > 0x7e {
			return -1
		}
		return r
	}, s)
}
