package gateway

import (
	"log/slog"
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
		{"no port", `{}`, "localhost", "want HOST:PORT"},
		{"no port with tokens", cfgTokens, "127.0.0.1", "want HOST:PORT"},
		{"wildcard with OAuth", `{"mcpgate":{"oauth":{"issuer":"https://idp.example.org","audience":"https://mcp.example.org/mcp"}}}`, "0.0.0.0:8080", ""},
		{"OAuth guesses no audience on a wildcard", `{"mcpgate":{"oauth":{"issuer":"https://idp.example.org"}}}`, "0.0.0.0:8080", "give --oauth-audience"},
		{"OAuth without issuer", `{"mcpgate":{"oauth":{"audience":"https://mcp.example.org/mcp"}}}`, "127.0.0.1:8080", "without an issuer"},
		{"OAuth with alg none", `{"mcpgate":{"oauth":{"issuer":"https://i.example.org","algorithms":["none"]}}}`, "127.0.0.1:8080", "never accepted"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg, err := parseConfigForTest(tt.cfg)
			if err == nil {
				_, _, err = httpAuth(cfg, HTTP{Listen: tt.listen}, slog.New(slog.DiscardHandler))
			}
			if (tt.wantErr == "") != (err == nil) || (err != nil && !strings.Contains(err.Error(), tt.wantErr)) {
				t.Fatalf("err = %v, want %q", err, tt.wantErr)
			}
		})
	}
}

func parseConfigForTest(s string) (*config.Config, error) { return config.Parse([]byte(s)) }

func TestServers(t *testing.T) {
	two := `{"mcpServers":{"b":{"command":"y"},"a":{"command":"x"}}}`
	tests := []struct {
		name, cfg string
		argv      []string
		want      string // names in order, or the error's text
		wantErr   bool
	}{
		{"command after --", `{}`, []string{"srv", "-x"}, "", false},
		{"several in name order", two, nil, "a,b", false},
		{"one", `{"mcpServers":{"fs":{"command":"x"}}}`, nil, "fs", false},
		{"command and mcpServers", two, []string{"srv"}, "both name upstreams", true},
		{"none", `{}`, nil, "no upstream", true},
		{"bad name with several", `{"mcpServers":{"a_b":{"command":"x"},"c":{"command":"y"}}}`, nil, "a_b", true},
		{"bad name with prefixNames", `{"mcpServers":{"a_b":{"command":"x"}},"mcpgate":{"prefixNames":true}}`, nil, "a_b", true},
		{"prefixNames with a command", `{"mcpgate":{"prefixNames":true}}`, []string{"srv"}, "needs named servers", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg, err := parseConfigForTest(tt.cfg)
			if err != nil {
				t.Fatal(err)
			}
			got, err := Servers(cfg, tt.argv)
			if tt.wantErr {
				if err == nil || !strings.Contains(err.Error(), tt.want) {
					t.Fatalf("err = %v, want %q", err, tt.want)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			var names []string
			for _, s := range got {
				names = append(names, s.Name)
			}
			if strings.Join(names, ",") != tt.want {
				t.Fatalf("servers %q, want %q", names, tt.want)
			}
		})
	}
}

// TestDefaultMaxSessions: the default session cap is what half the host's memory
// holds at SessionCost a session, never the 1,024 that would cost a 64 GiB host's
// worth of upstream processes on a small one.
func TestDefaultMaxSessions(t *testing.T) {
	const gib = 1 << 30
	for mem, want := range map[uint64]int{0: 256, 512 << 20: 16, 4 * gib: 32, 24 * gib: 192, 256 * gib: 1024} {
		if got := sessionsFor(mem); got != want {
			t.Errorf("sessionsFor(%d GiB) = %d, want %d", mem/gib, got, want)
		}
	}
	if n := DefaultMaxSessions(); n < minDefaultSessions || n > maxDefaultSessions {
		t.Errorf("DefaultMaxSessions() = %d on this host", n)
	}
	if m := hostMemory(); m != 0 && uint64(DefaultMaxSessions())*SessionCost > m/2+SessionCost*minDefaultSessions {
		t.Errorf("the default %d sessions cost more than half of this host's %d MiB", DefaultMaxSessions(), m>>20)
	}
}

// TestSessionsPerCaller: the per-caller cap applies where callers are told apart; the
// one local user of a gateway without tokens may use every session.
func TestSessionsPerCaller(t *testing.T) {
	local, _ := parseConfigForTest(`{}`)
	tokens, _ := parseConfigForTest(`{"mcpgate":{"tokens":[{"sha256":"` + strings.Repeat("ab", 32) + `","userID":"u"}]}}`)
	h := HTTP{MaxSessionsPerCaller: 32}
	mtls := h
	mtls.TLS.ClientCA = "ca.pem"
	for _, tc := range []struct {
		name  string
		file  *config.Config
		h     HTTP
		oauth bool
		want  int
	}{
		{"local user", local, h, false, 0},
		{"tokens", tokens, h, false, 32},
		{"oauth", local, h, true, 32},
		{"client certificates", local, mtls, false, 32},
	} {
		if got := sessionsPerCaller(tc.file, tc.h, tc.oauth); got != tc.want {
			t.Errorf("%s: %d, want %d", tc.name, got, tc.want)
		}
	}
}
