// Package config reads mcpgate's one JSON configuration file: an "mcpServers" block
// in the Claude Desktop convention plus an "mcpgate" key (docs/decisions.md#configuration).
//
// The profile (default or strict, profile.go) is resolved here once, from --profile
// or "mcpgate": {"profile": ...}, into the Strict bool that gateway.Config and the
// pipeline carry; StrictChanges lists what strict changes.
package config

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"os"
	"regexp"
	"slices"
	"strings"

	"github.com/mcpgate/mcpgate/ctxapi"
	"github.com/mcpgate/mcpgate/engine"
	"github.com/mcpgate/mcpgate/internal/argcheck"
	"github.com/mcpgate/mcpgate/internal/channelcheck"
	"github.com/mcpgate/mcpgate/internal/guardrail"
	"github.com/mcpgate/mcpgate/internal/oauth"
	"github.com/mcpgate/mcpgate/internal/vet"
)

// Config is the whole file.
type Config struct {
	MCPServers map[string]Server `json:"mcpServers"`
	Gate       Gate              `json:"mcpgate"`
	// GateEnv are the environment variables a ${NAME} in the "mcpgate" key read: the
	// gateway's own, which the command after -- does not inherit (docs/servers.md#environment).
	GateEnv []string `json:"-"`
	// callerIDDefault and callerClassDefault say the config named no user.callerId
	// (the local user's is the front's: "stdio", or "http" from HTTPLocalUser) and no
	// user.callerClass (resolved from the callerId).
	callerIDDefault, callerClassDefault bool
}

// Server is one upstream in the mcpServers convention: a stdio command, or a remote
// Streamable HTTP url with headers.
type Server struct {
	Command string            `json:"command,omitempty"`
	Args    []string          `json:"args,omitempty"`
	Env     map[string]string `json:"env,omitempty"`
	URL     string            `json:"url,omitempty"`
	Headers map[string]string `json:"headers,omitempty"`
	// OAuth gets the url server its own access token (docs/http.md#upstream-tokens).
	OAuth *UpstreamOAuth `json:"oauth,omitempty"`
	// Roots pins the roots the server may see: file:// URIs of absolute directories. A
	// root of the client's roots/list answer that is none of them nor under one is
	// removed (docs/channels.md#roots); unset, the server sees the client's roots.
	Roots []string `json:"roots,omitempty"`
}

// UpstreamOAuth is a url server's own OAuth client: the gateway gets it a token by
// the client credentials grant (RFC 6749 §4.4), or by exchanging the caller's token
// (RFC 8693, Grant "token_exchange"), and sends it as its Authorization.
type UpstreamOAuth struct {
	// Grant is "client_credentials" (the default) or "token_exchange"
	// (docs/http.md#token-exchange).
	Grant        string   `json:"grant,omitempty"`
	TokenURL     string   `json:"tokenURL"`
	ClientID     string   `json:"clientID"`
	ClientSecret string   `json:"clientSecret"`
	Scopes       []string `json:"scopes,omitempty"`
	Resource     string   `json:"resource,omitempty"` // RFC 8707 resource indicator: the server's URL by default
	Audience     string   `json:"audience,omitempty"` // RFC 8693 §2.1 audience of an exchanged token
}

// Upstream OAuth grants (UpstreamOAuth.Grant).
const (
	GrantClientCredentials = "client_credentials"
	GrantTokenExchange     = "token_exchange"
)

// Gate is the "mcpgate" key.
type Gate struct {
	// Profile is "default" or "strict" (profile.go); --profile wins over it.
	Profile string `json:"profile,omitempty"`
	// User is the local caller on stdio: ctx.user for every call.
	User ctxapi.User `json:"user"`
	// Callers maps a callerId to a caller class; an exact-match lookup, so resolution
	// is deterministic. A class set on the user wins over this map.
	Callers map[string]string `json:"callers,omitempty"`
	// Tools maps a tool name (as the client sees it) to a DADL access tag: read,
	// write, admin, dangerous, or a custom string.
	Tools map[string]string `json:"tools,omitempty"`
	// Rules overrides rule severities by rule id: none, info, low, medium or high.
	Rules map[string]string `json:"rules,omitempty"`
	// Tokens maps bearer tokens (stored as sha256 hex) to callers, for HTTP.
	Tokens []Token `json:"tokens,omitempty"`
	// OAuth makes the HTTP front an OAuth 2.1 protected resource (docs/http.md#oauth).
	OAuth *oauth.Config `json:"oauth,omitempty"`
	// Audit chooses where records are kept; the gateway's flags win over it.
	Audit Audit `json:"audit"`
	// Admin configures the admin listener (console, /api/audit, /metrics).
	Admin Admin `json:"admin"`
	// PrefixNames keeps the "<server>_" tool and prompt prefix and the
	// "<server>+" resource prefix even with one server in mcpServers, so names stay
	// stable when servers are added or removed (docs/servers.md#naming).
	PrefixNames bool `json:"prefixNames,omitempty"`
	// PassEnv names more of the gateway's environment to hand every stdio upstream
	// (NAME, or PREFIX* for every name it begins; "*" for all) beside the minimal set
	// they always get; --pass-env adds to it (docs/servers.md#environment).
	PassEnv []string `json:"passEnv,omitempty"`
	// AllowedServers are names mcpgate vet and start-up accept as well-known besides
	// the shipped list: never a look-alike (docs/vet.md#lookalike).
	AllowedServers []string `json:"allowedServers,omitempty"`
	// VetAllow maps a server name to the vet rule ids ("*" for all) whose findings
	// are reported but keep it from nothing (docs/vet.md#allow).
	VetAllow map[string][]string `json:"vetAllow,omitempty"`
	// Guardrails are the outside content guardrails and authorization services by
	// name (docs/guardrails.md#config).
	Guardrails map[string]guardrail.Spec `json:"guardrails,omitempty"`
	// Tenants are the tenant policy layers by name: each runs after the global set
	// and can only narrow it (docs/policies.md#layers).
	Tenants map[string]Tenant `json:"tenants,omitempty"`
}

// Tenant is one "mcpgate.tenants" entry.
type Tenant struct {
	// Policies is the layer's policy directory, watched and reloaded like --policies.
	Policies string `json:"policies,omitempty"`
	// Bundle, in place of Policies, is the layer's signed policy bundle source (as
	// --policy-bundle takes), checked with BundleKey (docs/deploy.md#fleet).
	Bundle    string `json:"bundle,omitempty"`
	BundleKey string `json:"bundleKey,omitempty"`
	// CallerClasses gives this tenant to callers of these classes that name no
	// tenant of their own (by OAuth claim, token entry or mcpgate.user.tenant).
	CallerClasses []string `json:"callerClasses,omitempty"`
}

// TenantOf is the tenant of u: its own, else the one its caller class is given to,
// else "" (docs/policies.md#layers).
func (c *Config) TenantOf(u ctxapi.User) string {
	if u.Tenant != "" {
		return u.Tenant
	}
	for _, name := range sortedKeys(c.Gate.Tenants) {
		if slices.Contains(c.Gate.Tenants[name].CallerClasses, u.CallerClass) {
			return name
		}
	}
	return ""
}

// TenantsWithoutLayer names, sorted, the tenants a token entry or mcpgate.user
// gives that no mcpgate.tenants entry has: their callers run the global set alone,
// which is allowed but is what a misspelt name looks like (docs/policies.md#layers).
func (c *Config) TenantsWithoutLayer() []string {
	var out []string
	add := func(t string) {
		if _, ok := c.Gate.Tenants[t]; t != "" && !ok && !slices.Contains(out, t) {
			out = append(out, t)
		}
	}
	add(c.Gate.User.Tenant)
	for _, tok := range c.Gate.Tokens {
		add(tok.Tenant)
	}
	slices.Sort(out)
	return out
}

// Audit is "mcpgate": {"audit": {...}}. Zero values mean "not set": the flag's
// default applies.
type Audit struct {
	File     string `json:"file,omitempty"`     // JSONL file instead of stderr (--audit-file)
	RotateMB int    `json:"rotateMB,omitempty"` // rotate File past this many MB (--audit-rotate-mb)
	Keep     int    `json:"keep,omitempty"`     // rotated files kept (--audit-keep)
	DB       string `json:"db,omitempty"`       // SQLite file or postgres:// store, in addition to the JSONL stream (--audit-db)
	Ring     int    `json:"ring,omitempty"`     // records the console keeps in memory without a DB (--audit-ring)
	OTLP     string `json:"otlp,omitempty"`     // also export records as OTLP logs to this collector URL (--audit-otlp)
}

// Admin is "mcpgate": {"admin": {...}}.
type Admin struct {
	Listen       string   `json:"listen,omitempty"`       // --admin
	Token        string   `json:"token,omitempty"`        // bearer token; MCPGATE_ADMIN_TOKEN wins
	TokenSHA256  string   `json:"tokenSHA256,omitempty"`  // or its sha256 hex, so the file holds no secret
	AllowedHosts []string `json:"allowedHosts,omitempty"` // extra Host/Origin names (--admin-allow-host)
}

// Token is one HTTP caller: the sha256 hex of its bearer token and who it is.
type Token struct {
	SHA256      string   `json:"sha256"`
	UserID      string   `json:"userID"`
	CallerID    string   `json:"callerId,omitempty"`
	CallerClass string   `json:"callerClass,omitempty"`
	Roles       []string `json:"roles,omitempty"`
	Tenant      string   `json:"tenant,omitempty"` // ctx.user.tenant (docs/policies.md#layers)
}

// CallerClasses are the caller classes a policy sees as ctx.user.callerClass.
var CallerClasses = []string{"trusted", "standard", "untrusted"}

// Default is the configuration used without --config: a local "standard" user.
func Default() *Config {
	c := &Config{}
	c.fill()
	return c
}

// Load reads and validates the file at path. Errors name the file and the problem.
func Load(path string) (*Config, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("config: %w", err)
	}
	c, err := Parse(b)
	if err != nil {
		return nil, fmt.Errorf("config %s: %w", path, err)
	}
	return c, nil
}

// ParseGuardrails decodes a guardrails file: one JSON object of guardrails by name,
// the shape of the "guardrails" key (docs/guardrails.md#config), with ${NAME}
// expanded from the process environment. Errors name the guardrail and the problem.
func ParseGuardrails(b []byte) (map[string]guardrail.Spec, error) {
	var probe map[string]json.RawMessage
	if err := json.Unmarshal(b, &probe); err != nil || probe == nil {
		return nil, errors.New("want one JSON object of guardrails by name")
	}
	c, err := Parse(append(append([]byte(`{"mcpgate": {"guardrails": `), b...), '}', '}'))
	if err != nil {
		return nil, err
	}
	return c.Gate.Guardrails, nil
}

// Parse decodes and validates a configuration; unknown keys under "mcpgate" are
// errors. ${NAME} and ${NAME:-default} in string values are expanded from the
// process environment first (ParseEnv).
func Parse(b []byte) (*Config, error) { return ParseEnv(b, os.LookupEnv) }

// ParseEnv is Parse with the environment read through lookup.
func ParseEnv(b []byte, lookup LookupFunc) (*Config, error) {
	var gateEnv []string
	b, err := expandJSON(b, lookup, &gateEnv)
	if err != nil {
		return nil, err
	}
	var top struct {
		MCPServers map[string]Server `json:"mcpServers"`
		Gate       json.RawMessage   `json:"mcpgate"`
	}
	if err := json.Unmarshal(b, &top); err != nil {
		return nil, fmt.Errorf("not valid JSON: %w", err)
	}
	c := &Config{MCPServers: top.MCPServers, GateEnv: gateEnv}
	if len(top.Gate) > 0 {
		dec := json.NewDecoder(bytes.NewReader(top.Gate))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&c.Gate); err != nil {
			return nil, fmt.Errorf(`"mcpgate": %w`, err)
		}
	}
	if err := c.validate(); err != nil {
		return nil, err
	}
	c.fill()
	return c, nil
}

func (c *Config) fill() {
	u := &c.Gate.User
	if u.UserID == "" {
		u.UserID = "local"
	}
	if u.CallerID == "" {
		u.CallerID = "stdio"
		c.callerIDDefault = true
	}
	if u.CallerClass == "" {
		u.CallerClass = c.ClassFor(u.CallerID)
		c.callerClassDefault = true
	}
	if u.Roles == nil {
		u.Roles = []string{}
	}
}

// HTTPLocalUser is the local user an HTTP front on loopback serves without tokens:
// Gate.User, whose callerId is "http" unless the config names one, so records tell
// it from the stdio client.
func (c *Config) HTTPLocalUser() ctxapi.User {
	u := c.Gate.User
	if c.callerIDDefault {
		u.CallerID = "http"
		if c.callerClassDefault {
			u.CallerClass = c.ClassFor("http")
		}
	}
	return u
}

// ClassFor resolves a callerId to a class: the exact entry in Callers, else "standard".
func (c *Config) ClassFor(callerID string) string {
	if cl, ok := c.Gate.Callers[callerID]; ok {
		return cl
	}
	return "standard"
}

// validTenant reports whether name is a tenant name: 1 to 64 of A-Z a-z 0-9 . _ -,
// starting with a letter or digit.
func validTenant(name string) bool { return oauth.ValidTenant(name) }

func (c *Config) validate() error {
	var errs []error
	checkClass := func(where, cl string) {
		if cl != "" && !validClass(cl) {
			errs = append(errs, fmt.Errorf("%s: caller class %q is not one of %s", where, cl, strings.Join(CallerClasses, ", ")))
		}
	}
	classTenant := map[string]string{}
	for _, name := range sortedKeys(c.Gate.Tenants) {
		t := c.Gate.Tenants[name]
		if !validTenant(name) {
			errs = append(errs, fmt.Errorf(`"mcpgate.tenants": %q is not a tenant name (1 to 64 of A-Z a-z 0-9 . _ -, starting with a letter or digit)`, name))
		}
		switch {
		case t.Policies == "" && t.Bundle == "":
			errs = append(errs, fmt.Errorf(`"mcpgate.tenants.%s": needs "policies", the layer's policy directory, or "bundle", its signed policy bundle`, name))
		case t.Policies != "" && t.Bundle != "":
			errs = append(errs, fmt.Errorf(`"mcpgate.tenants.%s": give "policies" or "bundle", not both`, name))
		case t.Bundle != "" && t.BundleKey == "":
			errs = append(errs, fmt.Errorf(`"mcpgate.tenants.%s": "bundle" needs "bundleKey", the public key its bundles are signed with`, name))
		}
		for _, cl := range t.CallerClasses {
			checkClass(fmt.Sprintf(`"mcpgate.tenants.%s.callerClasses"`, name), cl)
			if other, ok := classTenant[cl]; ok {
				errs = append(errs, fmt.Errorf(`"mcpgate.tenants": caller class %q is given to both %q and %q`, cl, other, name))
			}
			classTenant[cl] = name
		}
	}
	for _, tok := range c.Gate.Tokens {
		if tok.Tenant != "" && !validTenant(tok.Tenant) {
			errs = append(errs, fmt.Errorf(`"mcpgate.tokens": tenant %q is not a tenant name`, tok.Tenant))
		}
	}
	if u := c.Gate.User.Tenant; u != "" && !validTenant(u) {
		errs = append(errs, fmt.Errorf(`"mcpgate.user.tenant": %q is not a tenant name`, u))
	}
	if _, err := ParseProfile(c.Gate.Profile); err != nil {
		errs = append(errs, fmt.Errorf(`"mcpgate.profile": %w`, err))
	}
	checkClass(`"mcpgate.user.callerClass"`, c.Gate.User.CallerClass)
	for _, id := range sortedKeys(c.Gate.Callers) {
		checkClass(fmt.Sprintf(`"mcpgate.callers.%s"`, id), c.Gate.Callers[id])
	}
	known := map[string]bool{}
	for _, r := range engine.Rules() {
		known[r.ID] = true
	}
	for _, r := range channelcheck.Rules() {
		known[r.ID] = true
	}
	for _, r := range vet.Rules() {
		known[r.ID] = true
	}
	for _, name := range sortedKeys(c.Gate.VetAllow) {
		for i, id := range c.Gate.VetAllow[name] {
			if id != "*" && !vet.Known(id) {
				errs = append(errs, fmt.Errorf(`"mcpgate.vetAllow.%s[%d]": %q is no vet rule id (mcpgate rules lists them)`, name, i, id))
			}
		}
	}
	for _, id := range sortedKeys(c.Gate.Rules) {
		if argcheck.Known(id) {
			errs = append(errs, fmt.Errorf(`"mcpgate.rules.%s": the argument checks' severities are fixed; the profile decides what they refuse (docs/engine.md#argument-checks)`, id))
		} else if !known[id] {
			errs = append(errs, fmt.Errorf(`"mcpgate.rules.%s": no such rule id (mcpgate rules lists them)`, id))
		} else if _, err := engine.ParseSeverity(c.Gate.Rules[id]); err != nil {
			errs = append(errs, fmt.Errorf(`"mcpgate.rules.%s": %w`, id, err))
		}
	}
	for i, t := range c.Gate.Tokens {
		if len(t.SHA256) != 64 {
			errs = append(errs, fmt.Errorf(`"mcpgate.tokens[%d].sha256": want 64 hex digits (sha256 of the token)`, i))
		}
		if t.UserID == "" {
			errs = append(errs, fmt.Errorf(`"mcpgate.tokens[%d].userID" is required`, i))
		}
		checkClass(fmt.Sprintf(`"mcpgate.tokens[%d].callerClass"`, i), t.CallerClass)
	}
	if c.Gate.OAuth != nil {
		if err := c.Gate.OAuth.Validate(); err != nil {
			errs = append(errs, err)
		}
	}
	if a := c.Gate.Audit; a.RotateMB < 0 || a.Keep < 0 || a.Ring < 0 {
		errs = append(errs, errors.New(`"mcpgate.audit": rotateMB, keep and ring must not be negative`))
	}
	if h := c.Gate.Admin.TokenSHA256; h != "" && len(h) != 64 {
		errs = append(errs, errors.New(`"mcpgate.admin.tokenSHA256": want 64 hex digits (sha256 of the token)`))
	}
	for i, p := range c.Gate.PassEnv {
		if err := CheckPassEnv(p); err != nil {
			errs = append(errs, fmt.Errorf(`"mcpgate.passEnv[%d]": %w`, i, err))
		}
	}
	for _, name := range sortedKeys(c.Gate.Guardrails) {
		if !guardrailName.MatchString(name) {
			errs = append(errs, fmt.Errorf(`"mcpgate.guardrails": name %q: want 1 to 64 letters, digits, '_', '-' or '.'`, name))
		} else if err := c.Gate.Guardrails[name].Validate(); err != nil {
			errs = append(errs, fmt.Errorf(`"mcpgate.guardrails.%s": %w`, name, err))
		}
	}
	for _, name := range sortedKeys(c.MCPServers) {
		s := c.MCPServers[name]
		switch {
		case s.Command == "" && s.URL == "":
			errs = append(errs, fmt.Errorf(`"mcpServers.%s": needs "command" or "url"`, name))
		case s.Command != "" && s.URL != "":
			errs = append(errs, fmt.Errorf(`"mcpServers.%s": give "command" or "url", not both`, name))
		}
		if o := s.OAuth; o != nil {
			switch {
			case s.URL == "":
				errs = append(errs, fmt.Errorf(`"mcpServers.%s.oauth": only a "url" server takes a token`, name))
			case !strings.HasPrefix(o.TokenURL, "https://") && !strings.HasPrefix(o.TokenURL, "http://"):
				errs = append(errs, fmt.Errorf(`"mcpServers.%s.oauth.tokenURL": want the authorization server's http(s) token endpoint`, name))
			case o.ClientID == "" || o.ClientSecret == "":
				errs = append(errs, fmt.Errorf(`"mcpServers.%s.oauth": needs clientID and clientSecret`, name))
			case o.Grant != "" && o.Grant != GrantClientCredentials && o.Grant != GrantTokenExchange:
				errs = append(errs, fmt.Errorf(`"mcpServers.%s.oauth.grant" is %q: want %q (the default) or %q`, name, o.Grant, GrantClientCredentials, GrantTokenExchange))
			case o.Audience != "" && o.Grant != GrantTokenExchange:
				errs = append(errs, fmt.Errorf(`"mcpServers.%s.oauth.audience" needs "grant": %q (the client credentials grant asks by resource)`, name, GrantTokenExchange))
			}
		}
	}
	return errors.Join(errs...)
}

// CheckPassEnv checks one passEnv entry (or --pass-env value): an environment
// variable name, PREFIX*, or "*" alone; never '=', NUL or a '*' before the end.
func CheckPassEnv(p string) error {
	name := strings.TrimSuffix(p, "*")
	if (name == "" && p != "*") || strings.ContainsAny(name, "=*\x00") {
		return fmt.Errorf("%q is not an environment variable name, PREFIX* or *", p)
	}
	return nil
}

// VetSeverities returns the overrides of the vet rules (internal/vet).
func (c *Config) VetSeverities() map[string]engine.Severity {
	m := map[string]engine.Severity{}
	for id, name := range c.Gate.Rules {
		if vet.Known(id) {
			m[id], _ = engine.ParseSeverity(name)
		}
	}
	return m
}

// Severities returns the overrides of the engine's rules (engine.Options.Severities).
func (c *Config) Severities() map[string]engine.Severity { return c.severities(false) }

// SeveritiesIn is Severities under a profile: with strict, StrictSeverities first,
// then the configuration's own overrides, which win.
func (c *Config) SeveritiesIn(strict bool) map[string]engine.Severity {
	m := c.Severities()
	if !strict {
		return m
	}
	out := maps.Clone(StrictSeverities)
	maps.Copy(out, m)
	return out
}

// StructureSeverities returns the overrides of the channel-structure rules
// (internal/channelcheck; pipeline.Pipeline.StructureSeverities).
func (c *Config) StructureSeverities() map[string]engine.Severity { return c.severities(true) }

func (c *Config) severities(structure bool) map[string]engine.Severity {
	var m map[string]engine.Severity
	for id, name := range c.Gate.Rules {
		if channelcheck.Known(id) != structure || vet.Known(id) {
			continue
		}
		if m == nil {
			m = map[string]engine.Severity{}
		}
		m[id], _ = engine.ParseSeverity(name)
	}
	return m
}

// guardrailName is what a guardrail may be called: it names the service in records
// ("guardrail:<name>") and in stage_ms.
var guardrailName = regexp.MustCompile(`^[A-Za-z0-9_.-]{1,64}$`)

func validClass(cl string) bool { return slices.Contains(CallerClasses, cl) }

func sortedKeys[V any](m map[string]V) []string { return slices.Sorted(maps.Keys(m)) }
