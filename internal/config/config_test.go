package config

import (
	"slices"
	"strings"
	"testing"

	"github.com/mcpgate/mcpgate/ctxapi"
	"github.com/mcpgate/mcpgate/engine"
)

func TestParse(t *testing.T) {
	tests := []struct {
		name    string
		in      string
		wantErr string // substring; "" means valid
		check   func(t *testing.T, c *Config)
	}{
		{name: "empty object gets the local standard user", in: `{}`, check: func(t *testing.T, c *Config) {
			if u := c.Gate.User; u.UserID != "local" || u.CallerID != "stdio" || u.CallerClass != "standard" || u.Roles == nil {
				t.Fatalf("user %+v", u)
			}
		}},
		{name: "class from callers map", in: `{"mcpgate":{"user":{"userID":"eve","callerId":"sandbox"},"callers":{"sandbox":"untrusted","cli":"trusted"}}}`,
			check: func(t *testing.T, c *Config) {
				if c.Gate.User.CallerClass != "untrusted" || c.ClassFor("cli") != "trusted" || c.ClassFor("other") != "standard" {
					t.Fatalf("%+v", c.Gate.User)
				}
			}},
		{name: "class on the user wins", in: `{"mcpgate":{"user":{"callerId":"sandbox","callerClass":"trusted"},"callers":{"sandbox":"untrusted"}}}`,
			check: func(t *testing.T, c *Config) {
				if c.Gate.User.CallerClass != "trusted" {
					t.Fatalf("%+v", c.Gate.User)
				}
			}},
		{name: "mcpServers in the Claude Desktop convention", in: `{"mcpServers":{"fs":{"command":"npx","args":["-y","x"],"env":{"A":"b"},"disabled":false}}}`,
			check: func(t *testing.T, c *Config) {
				if s := c.MCPServers["fs"]; s.Command != "npx" || len(s.Args) != 2 || s.Env["A"] != "b" {
					t.Fatalf("%+v", s)
				}
			}},
		{name: "oauth block", in: `{"mcpgate":{"oauth":{"issuer":"https://i.example.org","scopes":["mcp"],"claims":{"roles":"realm_access.roles"}}}}`,
			check: func(t *testing.T, c *Config) {
				if o := c.Gate.OAuth; o == nil || o.Issuer != "https://i.example.org" || o.Claims.Roles != "realm_access.roles" {
					t.Fatalf("%+v", o)
				}
			}},
		{name: "oauth unknown key", in: `{"mcpgate":{"oauth":{"issuer":"https://i.example.org","scope":["mcp"]}}}`, wantErr: "unknown field"},
		{name: "oauth HMAC", in: `{"mcpgate":{"oauth":{"algorithms":["HS256"]}}}`, wantErr: "HMAC"},
		{name: "upstream oauth on a stdio server", in: `{"mcpServers":{"a":{"command":"x","oauth":{"tokenURL":"https://i/t","clientID":"c","clientSecret":"s"}}}}`, wantErr: "only a \"url\" server"},
		{name: "tenants", in: `{"mcpgate":{"tenants":{"acme":{"policies":"/p/acme","callerClasses":["untrusted"]},"b.2":{"policies":"/p/b"}},"tokens":[{"sha256":"` + strings.Repeat("a", 64) + `","userID":"u","tenant":"b.2"}]}}`,
			check: func(t *testing.T, c *Config) {
				if got := c.TenantOf(ctxapi.User{CallerClass: "untrusted"}); got != "acme" {
					t.Fatalf("class → %q", got)
				}
				if got := c.TenantOf(ctxapi.User{CallerClass: "untrusted", Tenant: "b.2"}); got != "b.2" {
					t.Fatalf("own tenant → %q", got)
				}
				if got := c.TenantOf(ctxapi.User{CallerClass: "standard"}); got != "" {
					t.Fatalf("no tenant → %q", got)
				}
			}},
		{name: "tenant name", in: `{"mcpgate":{"tenants":{"../x":{"policies":"/p"}}}}`, wantErr: `"../x" is not a tenant name`},
		{name: "tenant without policies", in: `{"mcpgate":{"tenants":{"acme":{}}}}`, wantErr: `"mcpgate.tenants.acme": needs "policies"`},
		{name: "tenant with policies and a bundle", in: `{"mcpgate":{"tenants":{"acme":{"policies":"/p","bundle":"https://b/x.tar.gz","bundleKey":"/k"}}}}`, wantErr: `give "policies" or "bundle", not both`},
		{name: "tenant bundle without key", in: `{"mcpgate":{"tenants":{"acme":{"bundle":"https://b/x.tar.gz"}}}}`, wantErr: `"bundle" needs "bundleKey"`},
		{name: "tenant class twice", in: `{"mcpgate":{"tenants":{"a":{"policies":"/p","callerClasses":["untrusted"]},"b":{"policies":"/q","callerClasses":["untrusted"]}}}}`, wantErr: `caller class "untrusted" is given to both "a" and "b"`},
		{name: "tenant class unknown", in: `{"mcpgate":{"tenants":{"a":{"policies":"/p","callerClasses":["vip"]}}}}`, wantErr: `caller class "vip" is not one of`},
		{name: "token tenant", in: `{"mcpgate":{"tokens":[{"sha256":"` + strings.Repeat("a", 64) + `","userID":"u","tenant":"a b"}]}}`, wantErr: `tenant "a b" is not a tenant name`},
		{name: "upstream oauth without secret", in: `{"mcpServers":{"a":{"url":"https://u/mcp","oauth":{"tokenURL":"https://i/t","clientID":"c"}}}}`, wantErr: "needs clientID and clientSecret"},
		{name: "upstream token exchange", in: `{"mcpServers":{"a":{"url":"https://u/mcp","oauth":{"grant":"token_exchange","tokenURL":"https://i/t","clientID":"c","clientSecret":"s","audience":"https://u","scopes":["r"]}}}}`,
			check: func(t *testing.T, c *Config) {
				if o := c.MCPServers["a"].OAuth; o.Grant != GrantTokenExchange || o.Audience != "https://u" {
					t.Fatalf("%+v", o)
				}
			}},
		{name: "upstream oauth unknown grant", in: `{"mcpServers":{"a":{"url":"https://u/mcp","oauth":{"grant":"password","tokenURL":"https://i/t","clientID":"c","clientSecret":"s"}}}}`, wantErr: `want "client_credentials" (the default) or "token_exchange"`},
		{name: "upstream oauth audience without exchange", in: `{"mcpServers":{"a":{"url":"https://u/mcp","oauth":{"tokenURL":"https://i/t","clientID":"c","clientSecret":"s","audience":"x"}}}}`, wantErr: `audience" needs "grant": "token_exchange"`},
		{name: "upstream oauth without token URL", in: `{"mcpServers":{"a":{"url":"https://u/mcp","oauth":{"clientID":"c","clientSecret":"s"}}}}`, wantErr: "tokenURL"},
		{name: "rule severities", in: `{"mcpgate":{"rules":{"pii_email":"Medium"}}}`, check: func(t *testing.T, c *Config) {
			if c.Severities()["pii_email"].String() != "MEDIUM" {
				t.Fatalf("%v", c.Severities())
			}
		}},
		{name: "unknown mcpgate key", in: `{"mcpgate":{"usr":{}}}`, wantErr: `unknown field "usr"`},
		{name: "bad class", in: `{"mcpgate":{"callers":{"x":"admin"}}}`, wantErr: `"mcpgate.callers.x": caller class "admin"`},
		{name: "channel-structure rule severities", in: `{"mcpgate":{"rules":{"name_confusable":"medium","pii_email":"low"}}}`, check: func(t *testing.T, c *Config) {
			if s := c.StructureSeverities(); len(s) != 1 || s["name_confusable"].String() != "MEDIUM" {
				t.Errorf("structure severities: %v", s)
			}
			if s := c.Severities(); len(s) != 1 || s["pii_email"].String() != "LOW" {
				t.Errorf("engine severities: %v", s) // engine.New refuses an id it does not know
			}
		}},
		{name: "bad severity", in: `{"mcpgate":{"rules":{"pii_email":"severe"}}}`, wantErr: `"mcpgate.rules.pii_email": engine: unknown severity`},
		{name: "unknown rule id", in: `{"mcpgate":{"rules":{"pii_emial":"high"}}}`, wantErr: `"mcpgate.rules.pii_emial": no such rule id`},
		{name: "server without command or url", in: `{"mcpServers":{"x":{}}}`, wantErr: `needs "command" or "url"`},
		{name: "server with both", in: `{"mcpServers":{"x":{"command":"a","url":"http://b"}}}`, wantErr: "not both"},
		{name: "token without hash", in: `{"mcpgate":{"tokens":[{"sha256":"abc","userID":"u"}]}}`, wantErr: "64 hex digits"},
		{name: "not JSON", in: `{"mcpgate":`, wantErr: "not valid JSON"},
		{name: "passEnv", in: `{"mcpgate":{"passEnv":["AWS_*","GITHUB_TOKEN","*"]}}`, check: func(t *testing.T, c *Config) {
			if len(c.Gate.PassEnv) != 3 {
				t.Fatalf("%v", c.Gate.PassEnv)
			}
		}},
		{name: "passEnv with a value", in: `{"mcpgate":{"passEnv":["A=B"]}}`, wantErr: `"mcpgate.passEnv[0]": "A=B" is not`},
		{name: "passEnv with an inner star", in: `{"mcpgate":{"passEnv":["A*B"]}}`, wantErr: `"mcpgate.passEnv[0]"`},
		{name: "passEnv empty", in: `{"mcpgate":{"passEnv":[""]}}`, wantErr: `"mcpgate.passEnv[0]"`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c, err := Parse([]byte(tc.in))
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("err = %v, want it to contain %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			tc.check(t, c)
		})
	}
}

func TestLoadNamesTheFile(t *testing.T) {
	_, err := Load("/nonexistent/mcpgate.json")
	if err == nil || !strings.Contains(err.Error(), "/nonexistent/mcpgate.json") {
		t.Fatalf("err = %v", err)
	}
}

func FuzzParse(f *testing.F) {
	f.Add([]byte(`{"mcpgate":{"user":{"userID":"a"}},"mcpServers":{"x":{"command":"y"}}}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		c, err := Parse(b)
		if err == nil && (c.Gate.User.UserID == "" || c.Gate.User.CallerClass == "") {
			t.Fatalf("accepted config without a complete user: %+v", c.Gate.User)
		}
	})
}

// TestGateEnvNamesWhatTheGatewayRead: a ${NAME} under "mcpgate" is the gateway's
// own (the command after -- does not inherit it); one under mcpServers is not.
func TestGateEnvNamesWhatTheGatewayRead(t *testing.T) {
	env := map[string]string{"ADMIN_HASH": strings.Repeat("0", 64), "GH": "t", "UID": "eve"}
	c, err := ParseEnv([]byte(`{"mcpServers":{"gh":{"command":"x","env":{"GITHUB_TOKEN":"${GH}"}}},
		"mcpgate":{"admin":{"tokenSHA256":"${ADMIN_HASH}"},"user":{"userID":"${UID}","callerId":"${CID:-stdio}"}}}`),
		func(n string) (string, bool) { v, ok := env[n]; return v, ok })
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(c.GateEnv)
	if got := strings.Join(c.GateEnv, " "); got != "ADMIN_HASH CID UID" {
		t.Errorf("GateEnv %q, want ADMIN_HASH CID UID", got)
	}
}

func TestVetKeys(t *testing.T) {
	c, err := Parse([]byte(`{"mcpgate": {"allowedServers": ["@acme/server-x"], "vetAllow": {"api": ["vet_plaintext_transport"], "b": ["*"]},
		"rules": {"vet_unpinned_package": "high", "pii_email": "high"}}}`))
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := c.Severities()["vet_unpinned_package"]; ok {
		t.Error("a vet rule reached the engine's severities")
	}
	if c.VetSeverities()["vet_unpinned_package"] != engine.SeverityHigh || len(c.VetSeverities()) != 1 {
		t.Errorf("VetSeverities %v", c.VetSeverities())
	}
	if _, err := Parse([]byte(`{"mcpgate": {"vetAllow": {"api": ["vet_nope"]}}}`)); err == nil || !strings.Contains(err.Error(), "vetAllow.api[0]") {
		t.Errorf("bad vetAllow rule: %v", err)
	}
}

// TestGuardrailsConfig: the "guardrails" key is read with ${NAME} expanded, and a bad
// entry is an error naming it.
func TestGuardrailsConfig(t *testing.T) {
	env := func(k string) (string, bool) { return map[string]string{"GUARD_HMAC": "k1"}[k], k == "GUARD_HMAC" }
	c, err := ParseEnv([]byte(`{"mcpgate":{"guardrails":{"injection":{"kind":"generic","url":"http://127.0.0.1:8700/beta/litellm_basic_guardrail_api","failMode":"open","timeout":"1500ms","hmacSecret":"${GUARD_HMAC}"},"authz":{"kind":"authzen","url":"http://127.0.0.1:8181/access/v1/evaluation"}}}}`), env)
	if err != nil {
		t.Fatal(err)
	}
	if g := c.Gate.Guardrails["injection"]; g.HMACSecret != "k1" || g.Timeout != "1500ms" || c.Gate.Guardrails["authz"].Kind != "authzen" {
		t.Fatalf("%+v", c.Gate.Guardrails)
	}
	for _, tc := range []struct{ conf, want string }{
		{`{"mcpgate":{"guardrails":{"x":{"kind":"opa","url":"http://h","methods":["tools/list"]}}}}`, `"mcpgate.guardrails.x": "methods"`},
		{`{"mcpgate":{"guardrails":{"a b":{"kind":"opa","url":"http://h"}}}}`, `name "a b"`},
		{`{"mcpgate":{"guardrails":{"x":{"kind":"opa","url":"http://h","colour":1}}}}`, `unknown field "colour"`},
	} {
		if _, err := ParseEnv([]byte(tc.conf), env); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want %q", tc.conf, err, tc.want)
		}
	}
}

// TestParseGuardrails: a guardrails file (a --shadow candidate's) is the "guardrails"
// object alone, read with ${NAME} expanded and checked as the key is.
func TestParseGuardrails(t *testing.T) {
	t.Setenv("SHADOW_GUARD_HMAC", "k2")
	specs, err := ParseGuardrails([]byte(`{"g":{"kind":"generic","url":"http://127.0.0.1:8700/x","hmacSecret":"${SHADOW_GUARD_HMAC}"}}`))
	if err != nil || specs["g"].HMACSecret != "k2" || specs["g"].Kind != "generic" {
		t.Fatalf("%+v, %v", specs, err)
	}
	if specs, err := ParseGuardrails([]byte(`{}`)); err != nil || len(specs) != 0 {
		t.Fatalf("an empty file: %+v, %v", specs, err)
	}
	for _, tc := range []struct{ file, want string }{
		{`[]`, "want one JSON object"},
		{`null`, "want one JSON object"},
		{`{"g":{"kind":"opa","url":"http://h","methods":["tools/list"]}}`, `"mcpgate.guardrails.g": "methods"`},
		{`{"g":{"kind":"opa","url":"http://h","colour":1}}`, `unknown field "colour"`},
		{`{"g":{"kind":"opa","url":"http://h"}}, "mcpServers": {}`, "want one JSON object"},
	} {
		if _, err := ParseGuardrails([]byte(tc.file)); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want %q", tc.file, err, tc.want)
		}
	}
}

// A tenant a token entry or mcpgate.user names without a layer is reported, once
// each and sorted, so a misspelt name is seen at start-up.
func TestTenantsWithoutLayer(t *testing.T) {
	for _, tc := range []struct{ name, in, want string }{
		{"all have layers", `{"mcpgate": {"tokens": [{"sha256": "` + strings.Repeat("a", 64) + `", "userID": "a", "tenant": "acme"}],
			"tenants": {"acme": {"policies": "/p"}}}}`, ""},
		{"misspelt", `{"mcpgate": {"tokens": [{"sha256": "` + strings.Repeat("a", 64) + `", "userID": "a", "tenant": "acem"},
			{"sha256": "` + strings.Repeat("b", 64) + `", "userID": "b", "tenant": "acem"}], "tenants": {"acme": {"policies": "/p"}}}}`, "acem"},
		{"no tenants at all", `{"mcpgate": {"user": {"userID": "me", "tenant": "zeta"},
			"tokens": [{"sha256": "` + strings.Repeat("a", 64) + `", "userID": "a", "tenant": "beta"}]}}`, "beta,zeta"},
		{"none named", `{"mcpgate": {"tenants": {"acme": {"policies": "/p"}}}}`, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, err := Parse([]byte(tc.in))
			if err != nil {
				t.Fatal(err)
			}
			if got := strings.Join(c.TenantsWithoutLayer(), ","); got != tc.want {
				t.Errorf("TenantsWithoutLayer() = %q, want %q", got, tc.want)
			}
		})
	}
}
