package oauth

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"
)

// FuzzValidate: no input panics the token checks, none but the one signed token is
// accepted, and no error holds the token.
func FuzzValidate(f *testing.F) {
	ti := newTestIssuer(f)
	clk := &clock{t: time.Now()}
	good, pub := newEC(f, "k1")
	ti.setKeys(pub)
	v := newValidator(f, ti, clk, func(c *Config) { c.Introspection = nil })
	valid := good.sign(f, map[string]any{"iss": ti.srv.URL, "aud": testAudience, "sub": "alice", "scope": "mcp", "exp": clk.now().Add(time.Hour).Unix()})
	f.Add(valid)
	f.Add(b64(map[string]string{"alg": "none"}) + "." + b64(map[string]string{"sub": "x"}) + ".")
	f.Add(b64(map[string]any{"alg": "ES256", "kid": "k1", "crit": []string{"b64"}}) + ".e30.")
	f.Add(b64(map[string]string{"alg": "HS256", "kid": "k1"}) + ".e30.c2ln")
	f.Add("a.b.c")
	f.Add("")
	f.Fuzz(func(t *testing.T, tok string) {
		p, err := v.Validate(context.Background(), tok)
		if err == nil {
			if tok != valid || p.Subject != "alice" {
				t.Fatalf("accepted %q as %+v", tok, p)
			}
			return
		}
		e, ok := err.(*Error)
		if !ok || e.Reason == "" || (e.Code != CodeInvalidToken && e.Code != CodeInsufficientScope) {
			t.Fatalf("error %#v", err)
		}
		if len(tok) >= 24 && strings.Contains(err.Error()+v.Challenge(e), tok) {
			t.Fatalf("the error holds the token")
		}
	})
}

// FuzzIntrospectionAnswer: any introspection answer is judged without a panic, and
// an answer that is not active is never accepted.
func FuzzIntrospectionAnswer(f *testing.F) {
	ti := newTestIssuer(f)
	clk := &clock{t: time.Now()}
	v := newValidator(f, ti, clk, nil)
	f.Add(`{"active":true,"sub":"a","scope":"mcp","exp":99999999999}`)
	f.Add(`{"active":"true","sub":"a"}`)
	f.Add(`{"active":true,"aud":["x",1],"iss":7,"exp":"soon","nbf":1e400}`)
	f.Add(`{"active":true,"sub":"a","scope":["mcp",null],"realm_access":{"roles":[1,"r"]}}`)
	f.Fuzz(func(t *testing.T, body string) {
		var c map[string]any
		d := json.NewDecoder(strings.NewReader(body))
		d.UseNumber()
		if d.Decode(&c) != nil || c == nil {
			return
		}
		e := v.intro.judge(c)
		if active, _ := c["active"].(bool); !active && e.err == nil {
			t.Fatalf("an inactive answer was accepted: %s", body)
		}
		if e.err == nil {
			_, _ = v.principal(e.claims)
		}
	})
}

// FuzzCanonicalResource: canonicalResource never panics, is idempotent, and two
// strings it makes equal are URIs with one scheme and one host, case aside.
func FuzzCanonicalResource(f *testing.F) {
	for _, s := range []string{"https://mcp.example.org/mcp", "HTTP://[::1]:80/x?y", "web", "", "https://a:443", "http://u@h/"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		c := canonicalResource(s)
		if canonicalResource(c) != c {
			t.Fatalf("not idempotent: %q → %q → %q", s, c, canonicalResource(c))
		}
		if audience(map[string]any{"aud": s}, s) != audienceConfirmed {
			t.Fatalf("%q does not name itself", s)
		}
	})
}
