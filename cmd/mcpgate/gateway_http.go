package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"sort"
	"time"

	"github.com/spf13/pflag"

	"github.com/mcpgate/mcpgate/ctxapi"
	"github.com/mcpgate/mcpgate/internal/config"
	"github.com/mcpgate/mcpgate/internal/httpfront"
	"github.com/mcpgate/mcpgate/internal/loopback"
	"github.com/mcpgate/mcpgate/internal/multi"
	"github.com/mcpgate/mcpgate/internal/relay"
	"github.com/mcpgate/mcpgate/internal/remote"
	"github.com/mcpgate/mcpgate/internal/upstream"
)

// httpFlags are the Streamable HTTP front's flags of gateway run (docs/http.md).
type httpFlags struct {
	listen       string
	allowHosts   []string
	drainTimeout time.Duration
	maxSessions  int
	idleTimeout  time.Duration
	maxDepth     int
}

func (h *httpFlags) register(fl *pflag.FlagSet) {
	fl.StringVar(&h.listen, "listen", "", "serve MCP over Streamable HTTP at http://ADDR/mcp instead of stdio (e.g. 127.0.0.1:8080)")
	fl.StringSliceVar(&h.allowHosts, "allow-host", nil, "with --listen: a further Host/Origin name to accept besides loopback names and the listen host (DNS rebinding protection)")
	fl.DurationVar(&h.drainTimeout, "drain-timeout", 30*time.Second, "with --listen: on SIGTERM, how long in-flight requests may take to finish")
	fl.IntVar(&h.maxSessions, "max-sessions", httpfront.DefaultMaxSessions, "with --listen: most concurrent MCP sessions (each has its own upstream process)")
	fl.DurationVar(&h.idleTimeout, "session-idle-timeout", 30*time.Minute, "with --listen: end a session after this long without traffic")
	fl.IntVar(&h.maxDepth, "max-json-depth", httpfront.DefaultMaxDepth, "with --listen: deepest JSON nesting accepted in a client message")
}

// enabled reports whether gateway run serves HTTP instead of stdio.
func (h *httpFlags) enabled() bool { return h.listen != "" }

// runHTTP serves MCP over Streamable HTTP at /mcp (docs/http.md). Each session gets its own
// upstream (one process per stdio server, docs/decisions.md#http-sessions) and its own relay
// session, whose ctx.user is the caller the bearer token names.
func runHTTP(ctx context.Context, d *gatewayDeps, f gatewayFlags, argv []string, stderr io.Writer) error {
	auth, err := httpAuth(d.cfg, f.http.listen)
	if err != nil {
		return err
	}
	specs, err := upstreamSpecs(d.cfg, argv)
	if err != nil {
		return err
	}
	var upErr io.Writer
	if f.upstreamStderr == "relay" {
		upErr = d.stderr
	}
	start := func(_ context.Context, user ctxapi.User) (httpfront.Backend, error) {
		up, err := openUpstreams(specs, upErr, f, d)
		if err != nil {
			return nil, err
		}
		return &relayBackend{up: up, opts: relay.Options{
			Pipeline:        d.pipe,
			Logger:          d.log,
			User:            user,
			Access:          d.cfg.Gate.Tools,
			MaxMessageBytes: f.maxMessage,
			CallTimeout:     f.callTimeout,
		}}, nil
	}
	front := httpfront.New(httpfront.Options{
		Start:           start,
		Auth:            auth,
		Hosts:           httpfront.NewHostAllowlist(f.http.listen, f.http.allowHosts...),
		Logger:          d.log,
		MaxMessageBytes: f.maxMessage,
		MaxDepth:        f.http.maxDepth,
		MaxSessions:     f.http.maxSessions,
		IdleTimeout:     f.http.idleTimeout,
	})
	return serveFront(ctx, d, front, f.http)
}

// serveFront listens, serves /mcp until ctx ends (SIGINT/SIGTERM), then drains: the
// listener stays open and every new request gets 503 with Connection: close (no
// refused connections, no resets) while the requests in flight get up to
// --drain-timeout to finish; then the listener closes and every session and its
// upstream is closed.
func serveFront(ctx context.Context, d *gatewayDeps, front *httpfront.Front, h httpFlags) error {
	ln, err := net.Listen("tcp", h.listen)
	if err != nil {
		return fmt.Errorf("--listen: %w", err)
	}
	mux := http.NewServeMux()
	mux.Handle("/mcp", front)
	// Header values are bounded too: 64 KiB for all of a request's headers.
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second, MaxHeaderBytes: 64 << 10}
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()
	d.log.Info("serving MCP over Streamable HTTP", "url", "http://"+ln.Addr().String()+"/mcp")
	select {
	case err := <-served:
		_ = front.Close(context.Background())
		return fmt.Errorf("--listen: %w", err)
	case <-ctx.Done():
	}
	d.log.Info("shutting down: draining in-flight requests", "sessions", front.Sessions(), "in_flight", front.InFlight(), "drain_timeout", h.drainTimeout)
	// Not srv.SetKeepAlivesEnabled(false): it closes idle connections at once, and a
	// client about to reuse one gets a reset instead of the 503.
	front.Drain()
	drainCtx, cancel := context.WithTimeout(context.Background(), h.drainTimeout)
	defer cancel()
	select {
	case <-front.Idle():
	case <-drainCtx.Done():
		d.log.Warn("drain timeout: closing the requests still in flight", "in_flight", front.InFlight())
	}
	if err := srv.Shutdown(drainCtx); err != nil {
		_ = srv.Close()
	}
	closeCtx, cancel2 := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel2()
	if err := front.Close(closeCtx); err != nil {
		d.log.Warn("some sessions did not close in time", "err", err)
	}
	d.log.Info("gateway stopped")
	return nil
}

// httpAuth picks the caller identification: bearer tokens when configured; without
// tokens the configured local user, on a loopback listener only.
func httpAuth(cfg *config.Config, listen string) (httpfront.Authenticator, error) {
	if len(cfg.Gate.Tokens) > 0 {
		return httpfront.TokenAuth(cfg.Gate.Tokens, cfg.ClassFor)
	}
	if !loopback.Addr(listen) {
		return nil, fmt.Errorf("--listen %s is not a loopback address and no bearer tokens are configured (mcpgate.tokens in --config): refusing to serve unauthenticated callers; listen on 127.0.0.1 or configure tokens", listen)
	}
	return httpfront.LocalAuth(cfg.Gate.User), nil
}

// upstreamSpec is one configured upstream.
type upstreamSpec struct {
	name   string
	server config.Server
}

// upstreamSpecs lists the upstreams: the command after -- (one, unprefixed), or the
// configuration's mcpServers (prefixed when there are several).
func upstreamSpecs(cfg *config.Config, argv []string) ([]upstreamSpec, error) {
	if len(argv) > 0 {
		return []upstreamSpec{{server: config.Server{Command: argv[0], Args: argv[1:]}}}, nil
	}
	if len(cfg.MCPServers) == 0 {
		return nil, errors.New("no upstream: put the MCP server command after --, or list servers under mcpServers in --config")
	}
	names := make([]string, 0, len(cfg.MCPServers))
	for n := range cfg.MCPServers {
		names = append(names, n)
	}
	sort.Strings(names)
	specs := make([]upstreamSpec, 0, len(names))
	for _, n := range names {
		if len(names) > 1 {
			if err := multi.ValidName(n); err != nil {
				return nil, fmt.Errorf("mcpServers.%s: %w", n, err)
			}
		}
		specs = append(specs, upstreamSpec{name: n, server: cfg.MCPServers[n]})
	}
	return specs, nil
}

// openUpstreams opens one session's upstreams, each under a restart supervisor, and
// puts a multiplexer in front when there are several.
func openUpstreams(specs []upstreamSpec, upErr io.Writer, f gatewayFlags, d *gatewayDeps) (upstream.Conn, error) {
	conns := make([]multi.Server, 0, len(specs))
	closeAll := func() {
		for _, c := range conns {
			_ = c.Conn.Close(context.Background(), time.Second)
		}
	}
	for _, sp := range specs {
		sp := sp
		log := d.log
		if sp.name != "" {
			log = d.log.With("upstream", sp.name)
		}
		startOne := func() (upstream.Conn, error) {
			if sp.server.URL != "" {
				return remote.Dial(remote.Options{URL: sp.server.URL, Headers: sp.server.Headers, MaxMessageBytes: f.maxMessage, Logger: log})
			}
			env := make([]string, 0, len(sp.server.Env))
			for k, v := range sp.server.Env {
				env = append(env, k+"="+v)
			}
			sort.Strings(env)
			return upstream.Start(upstream.Options{
				Argv: append([]string{sp.server.Command}, sp.server.Args...), Env: env,
				Stderr: upErr, MaxMessageBytes: f.maxMessage,
			})
		}
		sup, err := upstream.NewSupervisor(upstream.SupervisorOptions{Start: startOne, Logger: log})
		if err != nil {
			closeAll()
			return nil, err
		}
		conns = append(conns, multi.Server{Name: sp.name, Conn: sup})
	}
	if len(conns) == 1 {
		return conns[0].Conn, nil
	}
	return multi.New(conns, d.log), nil
}

// relayBackend runs one relay session over an upstream for an HTTP session.
type relayBackend struct {
	up   upstream.Conn
	opts relay.Options
}

func (b *relayBackend) Run(ctx context.Context, in io.Reader, out io.Writer) error {
	return relay.New(b.opts, b.up).Run(ctx, in, out)
}

func (b *relayBackend) Close() error {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	return b.up.Close(ctx, 2*time.Second)
}
