package oauth

import (
	"context"
	"testing"
	"time"
)

// BenchmarkValidate: what a request's token check costs once the keys (or the
// introspection answer) are cached — the per-request price of OAuth.
func BenchmarkValidate(b *testing.B) {
	ti := newTestIssuer(b)
	clk := &clock{t: time.Now()}
	good, pub := newEC(b, "k1")
	ti.setKeys(pub)
	v := newValidator(b, ti, clk, nil)
	jwt := good.sign(b, map[string]any{"iss": ti.srv.URL, "aud": testAudience, "sub": "alice", "client_id": "c", "scope": "mcp", "exp": clk.now().Add(time.Hour).Unix()})
	ti.active["opaque"] = map[string]any{"active": true, "sub": "bob", "scope": "mcp", "exp": clk.now().Add(time.Hour).Unix()}
	for _, tc := range []struct{ name, tok, sub string }{{"jwt-es256", jwt, "alice"}, {"introspected-cached", "opaque", "bob"}} {
		b.Run(tc.name, func(b *testing.B) {
			if p, err := v.Validate(context.Background(), tc.tok); err != nil || p.Subject != tc.sub {
				b.Fatalf("%+v %v", p, err)
			}
			b.ReportAllocs()
			b.SetBytes(int64(len(tc.tok)))
			for b.Loop() {
				if _, err := v.Validate(context.Background(), tc.tok); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
