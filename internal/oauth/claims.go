package oauth

import (
	"slices"
	"strings"

	"github.com/mcpgate/mcpgate/ctxapi"
)

// Bounds on what a token puts in ctx.user and a record.
const (
	MaxIDBytes   = 256 // sub and client id: a longer one refuses the token
	MaxListItems = 64  // scopes and roles kept
	MaxItemBytes = 256 // a longer scope or role is dropped
)

// principal reads the claims named by the configuration.
func (v *Validator) principal(c map[string]any) (Principal, error) {
	names := v.cfg.Claims
	sub, _ := lookup(c, or(names.UserID, "sub")).(string)
	if sub == "" {
		return Principal{}, invalid("missing_claim", "the token names no subject")
	}
	if len(sub) > MaxIDBytes {
		return Principal{}, invalid("claim_too_long", "the token's subject is longer than 256 bytes")
	}
	var client string
	for _, n := range orList(names.ClientID, "client_id", "azp", "appid") {
		if s, ok := lookup(c, n).(string); ok && s != "" {
			client = s
			break
		}
	}
	if len(client) > MaxIDBytes {
		return Principal{}, invalid("claim_too_long", "the token's client id is longer than 256 bytes")
	}
	var scopes []string
	for _, n := range orList(names.Scopes, "scope", "scp") {
		if s := stringList(lookup(c, n)); s != nil {
			scopes = s
			break
		}
	}
	p := Principal{Subject: sub, ClientID: client, Scopes: scopes, Roles: bounded(stringList(lookup(c, or(names.Roles, "roles"))))}
	if names.Tenant != "" {
		if t, ok := lookup(c, names.Tenant).(string); ok {
			if len(t) > MaxIDBytes {
				return Principal{}, invalid("claim_too_long", "the token's tenant claim is longer than 256 bytes")
			}
			if ValidTenant(t) { // any other string names no tenant: no layer has such a name
				p.Tenant = t
			}
		}
	}
	if exp, ok := numericDate(c["exp"]); ok {
		p.Expiry = exp
	}
	return p, nil
}

// User maps a Principal to ctx.user: userID from sub, callerId the OAuth client id,
// scopes as given (bounded), roles from the roles claim and scopeRoles, callerClass
// the least trusted class any of its scopes grants (scopeClasses), else classFor of
// the client id (mcpgate.callers), else "standard".
func (v *Validator) User(p Principal, classFor func(callerID string) string) ctxapi.User {
	u := ctxapi.User{UserID: p.Subject, CallerID: p.ClientID, Scopes: bounded(p.Scopes), Roles: append([]string{}, p.Roles...), Tenant: p.Tenant}
	if u.CallerID == "" {
		u.CallerID = "oauth"
	}
	rank := map[string]int{"untrusted": 0, "standard": 1, "trusted": 2}
	for _, s := range p.Scopes {
		if cl, ok := v.cfg.ScopeClasses[s]; ok && (u.CallerClass == "" || rank[cl] < rank[u.CallerClass]) {
			u.CallerClass = cl
		}
		for _, r := range v.cfg.ScopeRoles[s] {
			if !slices.Contains(u.Roles, r) {
				u.Roles = append(u.Roles, r)
			}
		}
	}
	if u.CallerClass == "" && classFor != nil {
		u.CallerClass = classFor(u.CallerID)
	}
	if u.CallerClass == "" {
		u.CallerClass = "standard"
	}
	u.Roles = bounded(u.Roles)
	if u.Scopes == nil {
		u.Scopes = []string{}
	}
	return u
}

func or(s, def string) string {
	if s != "" {
		return s
	}
	return def
}

func orList(s string, defs ...string) []string {
	if s != "" {
		return []string{s}
	}
	return defs
}

// lookup follows a dotted path into nested objects; an exact member wins.
func lookup(c map[string]any, path string) any {
	if v, ok := c[path]; ok {
		return v
	}
	cur := any(c)
	for _, part := range strings.Split(path, ".") {
		m, ok := cur.(map[string]any)
		if !ok {
			return nil
		}
		if cur, ok = m[part]; !ok {
			return nil
		}
	}
	return cur
}

// stringList reads a space-separated string or an array of strings.
func stringList(v any) []string {
	switch x := v.(type) {
	case string:
		return strings.Fields(x)
	case []any:
		out := make([]string, 0, len(x))
		for _, e := range x {
			if s, ok := e.(string); ok && s != "" {
				out = append(out, s)
			}
		}
		return out
	}
	return nil
}

// bounded keeps at most MaxListItems items of at most MaxItemBytes each.
func bounded(in []string) []string {
	out := make([]string, 0, min(len(in), MaxListItems))
	for _, s := range in {
		if len(out) == MaxListItems {
			break
		}
		if len(s) <= MaxItemBytes {
			out = append(out, s)
		}
	}
	return out
}

// ValidTenant reports whether name is a tenant name (docs/policies.md#layers): 1 to 64
// of A-Z a-z 0-9 . _ -, starting with a letter or digit. A tenant claim of any other
// shape names no tenant, so control characters, paths and lookalikes never reach
// ctx.user.tenant or a record.
func ValidTenant(name string) bool {
	if name == "" || len(name) > 64 {
		return false
	}
	for i := 0; i < len(name); i++ {
		c := name[i]
		alnum := c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9'
		if !alnum && (i == 0 || c != '.' && c != '_' && c != '-') {
			return false
		}
	}
	return true
}
