package gateway

import (
	"strings"
	"testing"

	"github.com/mcpgate/mcpgate/internal/config"
)

func TestHTTPAuthPolicy(t *testing.T) {
	cfgTokens := `{"mcpgate":{"tokens":[{"sha256":"` + strings.Repeat("ab", 32) + `","userID":"u"}]}}`
	tests := []struct {
		name, cfg, listen, wantErr string
	}{
		{"loopback without tokens", `{}`, "127.0.0.1:0", ""},
		{"localhost without tokens", `{}`, "localhost:8080", ""},
		{"wildcard without tokens", `{}`, "0.0.0.0:8080", "not a loopback address"},
		{"lan without tokens", `{}`, "192.168.1.2:8080", "not a loopback address"},
		{"wildcard with tokens", cfgTokens, ":8080", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg, err := parseConfigForTest(tt.cfg)
			if err != nil {
				t.Fatal(err)
			}
			_, err = httpAuth(cfg, tt.listen)
			if (tt.wantErr == "") != (err == nil) || (err != nil && !strings.Contains(err.Error(), tt.wantErr)) {
				t.Fatalf("err = %v, want %q", err, tt.wantErr)
			}
		})
	}
}

func parseConfigForTest(s string) (*config.Config, error) { return config.Parse([]byte(s)) }
