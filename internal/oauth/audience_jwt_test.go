package oauth

import "testing"

// A JWT's resource claim confirms nothing: only aud names the resource it is for.
func TestJWTAudienceReadsAudOnly(t *testing.T) {
	const want = "https://gw.example/mcp"
	for _, tc := range []struct {
		claims map[string]any
		want   int
	}{
		{map[string]any{"aud": want}, audienceConfirmed},
		{map[string]any{"resource": want}, audienceMissing},
		{map[string]any{"aud": "https://other.example/mcp", "resource": want}, audienceOther},
	} {
		if got := jwtAudience(tc.claims, want); got != tc.want {
			t.Errorf("jwtAudience(%v) = %d, want %d", tc.claims, got, tc.want)
		}
	}
	if audience(map[string]any{"resource": want}, want) != audienceConfirmed {
		t.Error("an introspection answer's resource no longer confirms")
	}
}
