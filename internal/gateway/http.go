package gateway

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"net"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/mcpgate/mcpgate/ctxapi"
	"github.com/mcpgate/mcpgate/internal/config"
	"github.com/mcpgate/mcpgate/internal/connlimit"
	"github.com/mcpgate/mcpgate/internal/httpfront"
	"github.com/mcpgate/mcpgate/internal/jsonrpc"
	"github.com/mcpgate/mcpgate/internal/multi"
	"github.com/mcpgate/mcpgate/internal/pipeline"
	"github.com/mcpgate/mcpgate/internal/relay"
	"github.com/mcpgate/mcpgate/internal/remote"
	"github.com/mcpgate/mcpgate/internal/translate"
	"github.com/mcpgate/mcpgate/internal/upstream"
	"github.com/mcpgate/mcpgate/internal/vet"
)

// HTTP configures the Streamable HTTP front (docs/http.md). Zero values take the
// httpfront defaults.
type HTTP struct {
	Listen       string        // host:port to serve http://Listen/mcp on
	AllowHosts   []string      // further Host/Origin names besides loopback and the listen host
	DrainTimeout time.Duration // on shutdown, how long requests in flight may take
	MaxSessions  int
	// MaxSessionsPerCaller bounds one caller identity's sessions when callers are
	// told apart (tokens, OAuth, client certificates); with the one local user
	// MaxSessions alone applies (docs/http.md#sessions).
	MaxSessionsPerCaller int
	IdleTimeout          time.Duration
	MaxDepth             int
	// What one caller can hold open (docs/http.md#held-open): request-body bytes in
	// flight in all and per caller, how long a body may take to arrive, how long an
	// idle keep-alive connection stays, and connections per remote address and in
	// all. Zero takes the default; -1 turns a bound off.
	MaxBodyBytesInFlight  int64
	MaxBodyBytesPerCaller int64
	BodyReadTimeout       time.Duration
	ConnIdleTimeout       time.Duration
	MaxConnsPerAddr       int
	MaxConns              int
	// WarmPool is how many started, not yet initialized processes of each stdio
	// server wait for the next session (--warm-pool, docs/http.md#warm-pool); 0 starts
	// each session's process when the session begins. At most upstream.MaxPoolSize.
	WarmPool int
	OAuth    OAuth // --oauth-issuer, --oauth-audience (auth.go)
	TLS      TLS   // --tls-cert, --tls-key, --tls-client-ca (auth.go)
}

// Server is one upstream: a name ("" for the single unprefixed upstream) and its
// mcpServers entry.
type Server struct {
	Name   string
	Server config.Server
	// TLSKey is the TLS public key (vet.SPKI) an https url server presented at
	// start-up, compared on every later connection (docs/vet.md#identity); "" for none.
	// With TLSKeyEnforce another key fails the handshake; without, it is logged.
	TLSKey        string
	TLSKeyEnforce bool
}

// Servers lists the upstreams: the command argv (one, unprefixed), or the
// configuration's mcpServers in name order (prefixed <server>_<tool> when there are
// several or prefixNames is set, docs/decisions.md#tool-names, docs/servers.md). A
// command together with mcpServers is an error: one would silently win.
func Servers(file *config.Config, argv []string) ([]Server, error) {
	if len(argv) > 0 {
		if file != nil && len(file.MCPServers) > 0 {
			names := slices.Sorted(maps.Keys(file.MCPServers))
			return nil, fmt.Errorf("a command after -- and mcpServers in --config (%s) both name upstreams: drop the command to front the configured servers, or drop mcpServers from the file", strings.Join(names, ", "))
		}
		if file != nil && file.Gate.PrefixNames {
			return nil, errors.New("mcpgate.prefixNames needs named servers: list the server under mcpServers in --config instead of after --")
		}
		return []Server{{Server: config.Server{Command: argv[0], Args: argv[1:]}}}, nil
	}
	if file == nil || len(file.MCPServers) == 0 {
		return nil, errors.New("no upstream: put the MCP server command after --, or list servers under mcpServers in --config")
	}
	names := slices.Sorted(maps.Keys(file.MCPServers))
	out := make([]Server, 0, len(names))
	for _, n := range names {
		if len(names) > 1 || file.Gate.PrefixNames {
			if err := multi.ValidName(n); err != nil {
				return nil, fmt.Errorf("mcpServers.%s: %w", n, err)
			}
		}
		for i, r := range file.MCPServers[n].Roots {
			if err := pipeline.CheckRoot(r); err != nil {
				return nil, fmt.Errorf("mcpServers.%s.roots[%d]: %w", n, i, err)
			}
		}
		out = append(out, Server{Name: n, Server: file.MCPServers[n]})
	}
	return out, nil
}

// openServers opens one session's upstreams, each under a restart supervisor, and
// puts a multiplexer in front when there are several (or prefix is set). With
// several, a server that cannot start is left out, logged with its name and retried
// with backoff (docs/servers.md#restarts); with one, its start error is returned.
// A stdio server with a pool in pools takes its process from it.
func openServers(servers []Server, pools map[string]*upstream.Pool, inherited []string, upErr io.Writer, maxMessage int, log *slog.Logger, prefix bool, version string, who caller) (upstream.Conn, error) {
	if len(servers) == 0 {
		return nil, errors.New("no upstream configured")
	}
	conns := make([]multi.Server, 0, len(servers))
	for _, sp := range servers {
		l := log
		if sp.Name != "" {
			l = log.With("upstream", sp.Name)
		}
		startOne := func() (upstream.Conn, error) {
			c, err := dialOne(sp, pools[sp.Name], inherited, upErr, maxMessage, l, who)
			if err != nil {
				return nil, err
			}
			// Each hop negotiates its own revision (docs/http.md#revisions).
			return translate.Wrap(c, translate.Options{Logger: l, ClientInfo: map[string]string{"name": "mcpgate", "version": version}}), nil
		}
		sup, err := upstream.NewSupervisor(upstream.SupervisorOptions{Start: startOne, Logger: l, StartDown: len(servers) > 1})
		if err != nil {
			for _, c := range conns {
				_ = c.Conn.Close(context.Background(), time.Second)
			}
			return nil, err
		}
		conns = append(conns, multi.Server{Name: sp.Name, Conn: sup})
	}
	if len(conns) == 1 && !prefix {
		return conns[0].Conn, nil
	}
	return multi.New(conns, multi.Options{Logger: log, Version: version}), nil
}

// dialOne opens one server's connection: a remote client for a url server, else its
// process, taken from pool when there is one.
func dialOne(sp Server, pool *upstream.Pool, inherited []string, upErr io.Writer, maxMessage int, l *slog.Logger, who caller) (upstream.Conn, error) {
	if sp.Server.URL != "" {
		return remote.Dial(remote.Options{URL: sp.Server.URL, Headers: sp.Server.Headers, MaxMessageBytes: maxMessage, Logger: l,
			Client: upstreamClient(sp.Server, keyTransport(sp, l), who)})
	}
	if pool != nil {
		return pool.Take()
	}
	return upstream.Start(processOptions(sp, inherited, upErr, maxMessage))
}

// processOptions are a stdio server's upstream.Start options.
func processOptions(sp Server, inherited []string, upErr io.Writer, maxMessage int) upstream.Options {
	env := make([]string, 0, len(sp.Server.Env))
	for _, k := range slices.Sorted(maps.Keys(sp.Server.Env)) {
		env = append(env, k+"="+sp.Server.Env[k])
	}
	return upstream.Options{
		Argv: append([]string{sp.Server.Command}, sp.Server.Args...), Env: env, Inherited: inherited,
		Stderr: upErr, MaxMessageBytes: maxMessage, Name: sp.Name,
	}
}

// startPools starts a warm pool of size processes for each stdio server
// (docs/decisions.md#warm-pool); nil when size is 0 or the upstream is not configured
// servers. Close them with closePools.
func (g *Gateway) startPools(size int) map[string]*upstream.Pool {
	if size <= 0 || g.cfg.Upstream != nil {
		return nil
	}
	pools := map[string]*upstream.Pool{}
	for _, sp := range g.cfg.Servers {
		if sp.Server.URL != "" {
			continue
		}
		l := g.log
		if sp.Name != "" {
			l = l.With("upstream", sp.Name)
		}
		opts := processOptions(sp, g.upEnv, g.upstreamStderr(), g.cfg.MaxMessageBytes)
		pools[sp.Name] = upstream.NewPool(size, func() (*upstream.Process, error) { return upstream.Start(opts) }, l)
	}
	if len(pools) > 0 {
		g.log.Info("warm pool: started processes wait for new sessions", "per_server", size, "servers", len(pools))
	}
	return pools
}

// closePools ends the processes still waiting in pools.
func closePools(pools map[string]*upstream.Pool) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for _, p := range pools {
		p.Close(ctx, 2*time.Second)
	}
}

// ServeHTTP serves MCP over Streamable HTTP at /mcp until ctx ends (SIGINT/SIGTERM).
// Each session gets its own upstream (one process per stdio server,
// docs/decisions.md#http-sessions) and its own relay session, whose ctx.user is the
// caller the bearer token names. On ctx's end it drains: the listener stays open and
// every new request gets 503 with Connection: close (no refused connections, no
// resets) while the requests in flight get up to DrainTimeout to finish; then the
// listener closes and every session and its upstream is closed.
func (g *Gateway) ServeHTTP(ctx context.Context) error {
	h := g.cfg.HTTP
	if _, _, err := net.SplitHostPort(h.Listen); err != nil {
		return fmt.Errorf("--listen %q: want HOST:PORT, e.g. 127.0.0.1:8080 (%v)", h.Listen, err)
	}
	tlsCfg, err := tlsConfig(h.TLS, g.log)
	if err != nil {
		return err
	}
	raw, err := net.Listen("tcp", h.Listen)
	if err != nil {
		return fmt.Errorf("--listen: %w", err)
	}
	ln := connlimit.Wrap(raw, connlimit.Options{PerAddr: h.MaxConnsPerAddr, Total: h.MaxConns, HTTP: tlsCfg == nil, Logger: g.log, What: "MCP"})
	defer ln.Close()
	ha := h
	if _, port, _ := net.SplitHostPort(h.Listen); port == "0" { // the default resource URI names the port bound
		ha.Listen = ln.Addr().String()
	}
	auth, validator, err := httpAuth(g.file, ha, g.log)
	if err != nil {
		return err
	}
	if name := exchangeServer(g.cfg.Servers); name != "" && validator == nil {
		return fmt.Errorf("mcpServers.%s.oauth.grant %q exchanges the caller's OAuth token: give --oauth-issuer (or mcpgate.oauth) so callers present one (docs/http.md#token-exchange)", name, config.GrantTokenExchange)
	}
	if g.cfg.Upstream == nil && len(g.cfg.Servers) == 0 {
		return errors.New("no upstream: put the MCP server command after --, or list servers under mcpServers in --config")
	}
	if h.WarmPool > upstream.MaxPoolSize {
		return fmt.Errorf("--warm-pool %d: at most %d processes per server", h.WarmPool, upstream.MaxPoolSize)
	}
	g.pools = g.startPools(h.WarmPool)
	defer closePools(g.pools)
	reloadCtx, stopReload := context.WithCancel(ctx)
	defer stopReload()
	go g.watch(reloadCtx)
	front := httpfront.New(httpfront.Options{
		Start: func(ctx context.Context, user ctxapi.User) (httpfront.Backend, error) {
			up, err := g.openUpstream(callerOf(ctx, user))
			if err != nil {
				return nil, err
			}
			return &relayBackend{up: up, opts: g.relayOptions(user)}, nil
		},
		Auth:                  auth,
		Hosts:                 httpfront.NewHostAllowlist(h.Listen, allowHosts(h, validator)...),
		Logger:                g.log,
		MaxMessageBytes:       g.cfg.MaxMessageBytes,
		MaxDepth:              h.MaxDepth,
		MaxSessions:           h.MaxSessions,
		MaxSessionsPerCaller:  sessionsPerCaller(g.file, h, validator != nil),
		IdleTimeout:           h.IdleTimeout,
		MaxBodyBytesInFlight:  h.MaxBodyBytesInFlight,
		MaxBodyBytesPerCaller: h.MaxBodyBytesPerCaller,
		BodyReadTimeout:       h.BodyReadTimeout,
		Refused: func(user ctxapi.User, a *jsonrpc.AmbiguousError) string {
			return g.pipe.Refused(pipeline.Channel{Method: a.Method, User: user, Server: g.soleServer()}, a.Reason, false)
		},
	})
	mux := http.NewServeMux()
	mux.Handle("/mcp", front)
	if validator != nil { // RFC 9728 protected resource metadata
		for _, p := range validator.MetadataPaths() {
			mux.Handle(p, validator.MetadataHandler())
		}
	}
	// Header values are bounded too: 64 KiB for all of a request's headers.
	// No ReadTimeout or WriteTimeout: a request's SSE stream lasts as long as its call.
	// The body has its own deadline (BodyReadTimeout), an idle keep-alive connection
	// IdleTimeout, and connlimit bounds how many connections are held.
	idle := h.ConnIdleTimeout
	switch {
	case idle == 0:
		idle = DefaultConnIdleTimeout
	case idle < 0:
		idle = 0
	}
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second, IdleTimeout: idle, MaxHeaderBytes: 64 << 10, TLSConfig: tlsCfg,
		ErrorLog: slog.NewLogLogger(g.log.Handler(), slog.LevelWarn)}
	perAddr, total := ln.Limits()
	g.log.Info("HTTP connection bounds", "max_conns", total, "max_conns_per_addr", perAddr, "conn_idle_timeout", idle.String())
	served := make(chan error, 1)
	scheme := "http"
	if tlsCfg != nil {
		scheme = "https"
		go func() { served <- srv.ServeTLS(ln, "", "") }()
	} else {
		go func() { served <- srv.Serve(ln) }()
	}
	g.log.Info("serving MCP over Streamable HTTP", "url", scheme+"://"+ln.Addr().String()+"/mcp")
	select {
	case err := <-served:
		_ = front.Close(context.Background())
		return fmt.Errorf("--listen: %w", err)
	case <-ctx.Done():
	}
	g.log.Info("shutting down: draining in-flight requests", "sessions", front.Sessions(), "in_flight", front.InFlight(), "drain_timeout", h.DrainTimeout)
	// Not srv.SetKeepAlivesEnabled(false): it closes idle connections at once, and a
	// client about to reuse one gets a reset instead of the 503.
	front.Drain()
	drainCtx, cancel := context.WithTimeout(context.Background(), h.DrainTimeout)
	defer cancel()
	select {
	case <-front.Idle():
	case <-drainCtx.Done():
		g.log.Warn("drain timeout: closing the requests still in flight", "in_flight", front.InFlight())
	}
	if err := srv.Shutdown(drainCtx); err != nil {
		_ = srv.Close()
	}
	closeCtx, cancel2 := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel2()
	if err := front.Close(closeCtx); err != nil {
		g.log.Warn("some sessions did not close in time", "err", err)
	}
	g.log.Info("gateway stopped")
	return nil
}

// DefaultWarmPool is --warm-pool's default: one started process of each stdio server
// waits for the next HTTP session (docs/decisions.md#warm-pool).
const DefaultWarmPool = 1

// DefaultConnIdleTimeout is how long an idle keep-alive connection of the HTTP
// front stays open (--conn-idle-timeout).
const DefaultConnIdleTimeout = 2 * time.Minute

// relayBackend runs one relay session over an upstream for an HTTP session.
type relayBackend struct {
	up   upstream.Conn
	opts relay.Options
}

func (b *relayBackend) Run(ctx context.Context, conn jsonrpc.Conn) error {
	return relay.New(b.opts, b.up).Serve(ctx, conn)
}

func (b *relayBackend) Close() error {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	return b.up.Close(ctx, 2*time.Second)
}

// sessionsPerCaller is the front's per-caller session cap: h's, where callers are
// told apart (tokens, OAuth, client certificates); 0 (MaxSessions alone) for the one
// local user httpAuth serves otherwise (docs/http.md#sessions).
func sessionsPerCaller(file *config.Config, h HTTP, oauth bool) int {
	if len(file.Gate.Tokens) == 0 && !oauth && h.TLS.ClientCA == "" {
		return 0
	}
	return h.MaxSessionsPerCaller
}

// keyTransport is the transport of a url server's connections: http.DefaultTransport,
// or, when start-up saw its TLS key (sp.TLSKey), one transport per server (its
// connections are pooled across sessions) that compares every handshake's key with
// that one: another key fails the handshake under sp.TLSKeyEnforce (the strict
// profile's --vet-mode enforce), else it is logged as the vet finding
// vet_identity_changed once per key, for at most maxLoggedKeys keys.
func keyTransport(sp Server, log *slog.Logger) http.RoundTripper {
	if sp.TLSKey == "" {
		return http.DefaultTransport
	}
	id := fmt.Sprintf("%s\x00%s\x00%t", sp.Name, sp.TLSKey, sp.TLSKeyEnforce)
	if t, ok := keyTransports.Load(id); ok {
		return t.(http.RoundTripper)
	}
	t := keyBase.Clone()
	if t.TLSClientConfig == nil {
		t.TLSClientConfig = &tls.Config{}
	}
	var mu sync.Mutex
	logged := map[string]bool{}
	t.TLSClientConfig.VerifyConnection = func(cs tls.ConnectionState) error {
		if len(cs.PeerCertificates) == 0 {
			return errors.New("mcpgate: the server presented no certificate")
		}
		now := vet.SPKI(cs.PeerCertificates[0])
		if now == sp.TLSKey {
			return nil
		}
		approve := "mcpgate pins approve '" + vet.IdentityServer(sp.Name) + "' " + vet.IdentityTool
		if sp.TLSKeyEnforce {
			return fmt.Errorf("mcpgate: vet_identity_changed: the server's TLS key is not the one it presented at start-up; after review, %s and restart", approve)
		}
		mu.Lock()
		defer mu.Unlock()
		if !logged[now] && len(logged) < maxLoggedKeys { // a key a server rotates per handshake is not kept forever
			logged[now] = true
			log.Warn("vet finding", "rule_id", vet.RuleIdentityChanged, "severity", "HIGH", "server", sp.Name,
				"detail", "the server's TLS key is not the one it presented at start-up", "approve", approve)
		}
		return nil
	}
	got, _ := keyTransports.LoadOrStore(id, t)
	return got.(http.RoundTripper)
}

// maxLoggedKeys bounds the other keys one server's transport logs (and remembers).
const maxLoggedKeys = 64

var (
	// keyBase is what keyTransport clones (tests trust their own server with it).
	keyBase = http.DefaultTransport.(*http.Transport)
	// keyTransports holds keyTransport's transports, by server, key and mode.
	keyTransports sync.Map
)
