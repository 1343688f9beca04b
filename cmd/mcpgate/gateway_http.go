package main

import (
	"fmt"
	"time"

	"github.com/spf13/pflag"

	"github.com/mcpgate/mcpgate/internal/gateway"
	"github.com/mcpgate/mcpgate/internal/httpfront"
	"github.com/mcpgate/mcpgate/internal/upstream"
)

// httpFlags are the Streamable HTTP front's flags of gateway run (docs/http.md).
type httpFlags struct {
	listen       string
	allowHosts   []string
	drainTimeout time.Duration
	maxSessions  int
	perCaller    int
	idleTimeout  time.Duration
	maxDepth     int
	warmPool     int
	heldOpen     gateway.HTTP // the bounds of what a caller holds open (docs/http.md#held-open)
	oauth        gateway.OAuth
	tls          gateway.TLS
}

// register adds the flags; session says what each HTTP session gets of its own, for
// the help text, and sessions is --max-sessions's default.
func (h *httpFlags) register(fl *pflag.FlagSet, session string, sessions int) {
	fl.StringVar(&h.listen, "listen", "", "serve MCP over Streamable HTTP at http://ADDR/mcp instead of stdio (e.g. 127.0.0.1:8080)")
	fl.StringSliceVar(&h.allowHosts, "allow-host", nil, "with --listen: a further Host/Origin name to accept besides loopback names and the listen host (DNS rebinding protection)")
	fl.DurationVar(&h.drainTimeout, "drain-timeout", 30*time.Second, "with --listen: on SIGTERM, how long in-flight requests may take to finish")
	fl.IntVar(&h.maxSessions, "max-sessions", sessions, "with --listen: most concurrent MCP sessions (each has "+session+"); past it an initialize gets 503")
	fl.IntVar(&h.perCaller, "max-sessions-per-caller", gateway.DefaultMaxSessionsPerCaller, "with --listen and callers told apart by token: most concurrent sessions of one caller; past it an initialize gets 429 (without tokens there is one caller, and --max-sessions alone applies)")
	fl.DurationVar(&h.idleTimeout, "session-idle-timeout", 30*time.Minute, "with --listen: end a session after this long without traffic")
	fl.IntVar(&h.warmPool, "warm-pool", gateway.DefaultWarmPool, fmt.Sprintf("with --listen: started, not yet initialized processes of each stdio server kept waiting for new sessions; a session takes one and never shares it (0: start each session's process when it begins; at most %d)", upstream.MaxPoolSize))
	fl.IntVar(&h.maxDepth, "max-json-depth", httpfront.DefaultMaxDepth, "with --listen: deepest JSON nesting accepted in a client message")
	fl.Int64Var(&h.heldOpen.MaxBodyBytesInFlight, "max-body-bytes-in-flight", httpfront.DefaultMaxBodyBytesInFlight, "with --listen: most request-body bytes being read or held by the POSTs in flight, all callers together; past it a POST gets 503 (-1: no limit)")
	fl.Int64Var(&h.heldOpen.MaxBodyBytesPerCaller, "max-body-bytes-per-caller", httpfront.DefaultMaxBodyBytesPerCaller, "with --listen: most request-body bytes in flight of one caller (never below --max-message-bytes); past it a POST gets 429 (-1: no limit)")
	fl.DurationVar(&h.heldOpen.BodyReadTimeout, "body-read-timeout", httpfront.DefaultBodyReadTimeout, "with --listen: how long a POST body may take to arrive; past it 408 and the connection closes (-1s: no limit)")
	fl.DurationVar(&h.heldOpen.ConnIdleTimeout, "conn-idle-timeout", gateway.DefaultConnIdleTimeout, "with --listen: close a keep-alive connection idle this long (-1s: never)")
	fl.IntVar(&h.heldOpen.MaxConnsPerAddr, "max-conns-per-addr", 0, "with --listen: most connections one remote IP holds open; past it a connection gets 429 and is closed (0: 256, or a quarter of --max-conns when smaller; -1: no limit)")
	fl.IntVar(&h.heldOpen.MaxConns, "max-conns", 0, "with --listen: most connections held open in all; past it a connection gets 503 and is closed (0: half the file-descriptor limit, at most 16384; -1: no limit)")
	fl.StringVar(&h.oauth.Issuer, "oauth-issuer", "", "with --listen: accept OAuth access tokens from this authorization server (its issuer URL; scopes, claims and introspection in mcpgate.oauth of --config, docs/http.md#oauth)")
	fl.StringVar(&h.oauth.Audience, "oauth-audience", "", "with --oauth-issuer: the resource URI a token's aud must hold (default: the front's public URL of /mcp, http(s)://LISTEN/mcp)")
	fl.BoolVar(&h.oauth.AcceptMissingAudience, "oauth-accept-missing-audience", false, "with --oauth-issuer: accept an introspected token whose answer names no audience (aud) as meant for this gateway (mcpgate.oauth.acceptMissingAudience); any resource that introspects as the same client then accepts it too (docs/http.md#audience)")
	fl.StringVar(&h.tls.Cert, "tls-cert", "", "with --listen: serve HTTPS with this PEM certificate chain (reloaded when the file changes)")
	fl.StringVar(&h.tls.Key, "tls-key", "", "with --tls-cert: its PEM private key (reloaded when the file changes)")
	fl.StringVar(&h.tls.ClientCA, "tls-client-ca", "", "with --tls-cert: accept client certificates signed by these PEM CAs; a verified one names the caller (mTLS)")
}

// check refuses the HTTP front's security flags without --listen: on stdio they would
// be silently ignored.
func (h *httpFlags) check() error {
	for _, f := range []struct{ name, v string }{{"--oauth-issuer", h.oauth.Issuer}, {"--oauth-audience", h.oauth.Audience},
		{"--tls-cert", h.tls.Cert}, {"--tls-key", h.tls.Key}, {"--tls-client-ca", h.tls.ClientCA}} {
		if f.v != "" && !h.enabled() {
			return fmt.Errorf("%s needs --listen: OAuth and TLS are for the Streamable HTTP front (stdio has one local caller)", f.name)
		}
	}
	if h.warmPool < 0 || h.warmPool > upstream.MaxPoolSize {
		return fmt.Errorf("--warm-pool %d: want 0 (off) to %d processes per stdio server", h.warmPool, upstream.MaxPoolSize)
	}
	if h.oauth.AcceptMissingAudience && !h.enabled() {
		return fmt.Errorf("--oauth-accept-missing-audience needs --listen: OAuth and TLS are for the Streamable HTTP front (stdio has one local caller)")
	}
	return nil
}

// enabled reports whether gateway run serves HTTP instead of stdio.
func (h *httpFlags) enabled() bool { return h.listen != "" }

// config is the flags as a gateway.HTTP.
func (h *httpFlags) config() gateway.HTTP {
	return gateway.HTTP{
		Listen: h.listen, AllowHosts: h.allowHosts, DrainTimeout: h.drainTimeout,
		MaxSessions: h.maxSessions, MaxSessionsPerCaller: h.perCaller, IdleTimeout: h.idleTimeout, MaxDepth: h.maxDepth, WarmPool: h.warmPool,
		OAuth: h.oauth, TLS: h.tls,
		MaxBodyBytesInFlight: h.heldOpen.MaxBodyBytesInFlight, MaxBodyBytesPerCaller: h.heldOpen.MaxBodyBytesPerCaller,
		BodyReadTimeout: h.heldOpen.BodyReadTimeout, ConnIdleTimeout: h.heldOpen.ConnIdleTimeout,
		MaxConnsPerAddr: h.heldOpen.MaxConnsPerAddr, MaxConns: h.heldOpen.MaxConns,
	}
}
