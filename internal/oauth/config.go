package oauth

import (
	"errors"
	"fmt"
	"net/url"
	"slices"
	"strings"
	"time"
)

// Config is the "mcpgate.oauth" block of the configuration file (docs/http.md#oauth).
// Issuer and Audience may also come from --oauth-issuer and --oauth-audience.
type Config struct {
	// Issuer is the authorization server's issuer identifier (RFC 8414 §2), compared
	// exactly with the metadata's issuer and the token's iss.
	Issuer string `json:"issuer,omitempty"`
	// Audience is the gateway's canonical resource URI (RFC 8707 §2), e.g.
	// https://mcp.example.org/mcp: a token's aud must hold it. Default: the front's
	// public URL of /mcp.
	Audience string `json:"audience,omitempty"`
	// Scopes are needed by every request (a token without one of them gets 403
	// insufficient_scope) and are advertised as scopes_supported.
	Scopes []string `json:"scopes,omitempty"`
	// Algorithms are the JWS algorithms accepted (default RS256, ES256). HMAC and
	// "none" are refused at load.
	Algorithms []string `json:"algorithms,omitempty"`
	// ClockSkew is the leeway on exp and nbf (default 60s, at most 5m).
	ClockSkew string `json:"clockSkew,omitempty"`
	// JWKSURL overrides the jwks_uri of the issuer's metadata.
	JWKSURL string `json:"jwksURL,omitempty"`
	// Claims names the claims the Principal is read from.
	Claims Claims `json:"claims,omitempty"`
	// ScopeClasses gives the caller class a scope grants; ScopeRoles the roles.
	ScopeClasses map[string]string   `json:"scopeClasses,omitempty"`
	ScopeRoles   map[string][]string `json:"scopeRoles,omitempty"`
	// Introspection checks tokens that are not JWTs with the issuer (RFC 7662).
	Introspection *Introspection `json:"introspection,omitempty"`
	// AcceptMissingAudience accepts an introspection answer that names no audience
	// (no aud, no resource) as meant for this gateway. Off by default: without it
	// such a token is refused, 401 invalid_token "audience not confirmed". Any other
	// resource that introspects as the same client then accepts the same tokens
	// (docs/http.md#audience). A JWT access token needs aud whatever this says.
	AcceptMissingAudience bool `json:"acceptMissingAudience,omitempty"`
}

// Claims names the claims read from a token or an introspection answer. A name with
// dots is a path into nested objects (realm_access.roles). Defaults in comments.
type Claims struct {
	UserID   string `json:"userID,omitempty"`   // sub
	ClientID string `json:"clientID,omitempty"` // client_id, else azp, else appid
	Roles    string `json:"roles,omitempty"`    // roles
	Scopes   string `json:"scopes,omitempty"`   // scope, else scp (a space-separated string or an array)
	// Tenant names the claim (a dotted path, e.g. "org.id") whose string value is
	// ctx.user.tenant (docs/policies.md#layers); unset, no claim names a tenant.
	Tenant string `json:"tenant,omitempty"`
}

// Introspection is the gateway's client at the issuer's introspection endpoint
// (RFC 7662 §2.1, client_secret_basic).
type Introspection struct {
	Endpoint     string `json:"endpoint,omitempty"` // default: the metadata's introspection_endpoint
	ClientID     string `json:"clientID"`
	ClientSecret string `json:"clientSecret"`
	// CacheTTL bounds how long an answer is reused (default 5m; never past the token's exp).
	CacheTTL string `json:"cacheTTL,omitempty"`
}

// Defaults.
const (
	DefaultClockSkew     = 60 * time.Second
	MaxClockSkew         = 5 * time.Minute
	DefaultIntrospectTTL = 5 * time.Minute
	// MaxTokenBytes is the longest token looked at; a longer one is invalid_token
	// before it is decoded or sent anywhere.
	MaxTokenBytes = 16 << 10
)

// DefaultAlgorithms are accepted when Config.Algorithms is empty.
var DefaultAlgorithms = []string{"RS256", "ES256"}

var knownAlgorithms = []string{"RS256", "RS384", "RS512", "PS256", "PS384", "PS512", "ES256", "ES384", "ES512", "EdDSA"}

// Validate checks the block; Issuer and Audience are checked by New, since flags may
// give them.
func (c *Config) Validate() error {
	var errs []error
	for _, a := range c.Algorithms {
		switch {
		case strings.EqualFold(a, "none"):
			errs = append(errs, errors.New(`"mcpgate.oauth.algorithms": "none" is never accepted`))
		case strings.HasPrefix(strings.ToUpper(a), "HS"):
			errs = append(errs, fmt.Errorf(`"mcpgate.oauth.algorithms": %q is HMAC, a shared secret: an access token from an authorization server is signed with a private key (RS256, ES256, …)`, a))
		case !slices.Contains(knownAlgorithms, a):
			errs = append(errs, fmt.Errorf(`"mcpgate.oauth.algorithms": %q is not one of %s`, a, strings.Join(knownAlgorithms, ", ")))
		}
	}
	if _, err := c.skew(); err != nil {
		errs = append(errs, err)
	}
	for s, cl := range c.ScopeClasses {
		if cl != "trusted" && cl != "standard" && cl != "untrusted" {
			errs = append(errs, fmt.Errorf(`"mcpgate.oauth.scopeClasses.%s": caller class %q is not one of trusted, standard, untrusted`, s, cl))
		}
	}
	if c.JWKSURL != "" {
		if err := checkURL("mcpgate.oauth.jwksURL", c.JWKSURL); err != nil {
			errs = append(errs, err)
		}
	}
	if in := c.Introspection; in != nil {
		if in.ClientID == "" || in.ClientSecret == "" {
			errs = append(errs, errors.New(`"mcpgate.oauth.introspection": needs clientID and clientSecret`))
		}
		if in.Endpoint != "" {
			if err := checkURL("mcpgate.oauth.introspection.endpoint", in.Endpoint); err != nil {
				errs = append(errs, err)
			}
		}
		if _, err := in.ttl(); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

func (c *Config) skew() (time.Duration, error) {
	if c.ClockSkew == "" {
		return DefaultClockSkew, nil
	}
	d, err := time.ParseDuration(c.ClockSkew)
	if err != nil || d < 0 || d > MaxClockSkew {
		return 0, fmt.Errorf(`"mcpgate.oauth.clockSkew": want a duration from 0s to %s, e.g. "60s"`, MaxClockSkew)
	}
	return d, nil
}

func (in *Introspection) ttl() (time.Duration, error) {
	if in.CacheTTL == "" {
		return DefaultIntrospectTTL, nil
	}
	d, err := time.ParseDuration(in.CacheTTL)
	if err != nil || d < 0 || d > time.Hour {
		return 0, errors.New(`"mcpgate.oauth.introspection.cacheTTL": want a duration from 0s to 1h, e.g. "5m"`)
	}
	return d, nil
}

func (c *Config) algorithms() []string {
	if len(c.Algorithms) == 0 {
		return DefaultAlgorithms
	}
	return c.Algorithms
}

// checkURL accepts an absolute http(s) URL without a fragment.
func checkURL(what, s string) error {
	u, err := url.Parse(s)
	if err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" || u.Fragment != "" {
		return fmt.Errorf("%s %q: want an absolute http(s) URL without a fragment", what, s)
	}
	return nil
}
