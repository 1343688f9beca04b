package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/mcpgate/mcpgate/ctxapi"
	"github.com/mcpgate/mcpgate/engine"
	"github.com/mcpgate/mcpgate/gate"
	"github.com/mcpgate/mcpgate/internal/audit"
	"github.com/mcpgate/mcpgate/internal/budget"
	"github.com/mcpgate/mcpgate/internal/config"
	"github.com/mcpgate/mcpgate/internal/jsonrpc"
	"github.com/mcpgate/mcpgate/internal/logging"
	"github.com/mcpgate/mcpgate/internal/pipeline"
	"github.com/mcpgate/mcpgate/internal/relay"
)

func init() { subcommands = append(subcommands, newGatewayCmd) }

// gatewayFlags are the flags of `mcpgate gateway run`.
type gatewayFlags struct {
	filterOutput   bool
	policies       string
	failMode       string
	auditFile      string
	configPath     string
	logFormat      string
	logLevel       string
	upstreamStderr string
	callTimeout    time.Duration
	maxMessage     int
	debugConsole   bool
	inflightCalls  int            // the in-flight budget (internal/budget)
	inflightBytes  int64          // the in-flight budget (internal/budget)
	telemetry      telemetryFlags // sinks and the admin listener (telemetry.go)
	http           httpFlags      // the Streamable HTTP front (gateway_http.go)
}

func newGatewayCmd() *cobra.Command {
	gw := &cobra.Command{
		Use:   "gateway",
		Short: "Run mcpgate as a gateway in front of an MCP server",
	}
	var f gatewayFlags
	run := &cobra.Command{
		Use:   "run [flags] -- CMD [ARGS...]",
		Short: "Relay an MCP client on stdio to an MCP server started as CMD ARGS",
		Long: `Speak MCP to the client over stdio (or Streamable HTTP with --listen) and start
CMD ARGS as the upstream MCP server (or the servers of --config's mcpServers).
Every message is relayed unchanged, except tools/call: its arguments go through the
built-in input rules and the pre-phase policies, and its result through the output
rules and the post-phase policies. Each tools/call writes one JSON audit record to
stderr (or --audit-file).

Without --filter-output the rules still run and their findings reach ctx.findings
and the audit record, but nothing is blocked or rewritten by them; policies still act.

Environment:
  GATE_EVALUATORS=goja        policy evaluators (only goja exists; anything else is an error)
  MCPGATE_AUDIT_OUTPUT=off    rollback: record only the input decision (under-reports)`,
		Example: `  # in front of the filesystem server, filtering its output
  mcpgate gateway run --filter-output --policies /etc/mcpgate/policies -- \
      npx -y @modelcontextprotocol/server-filesystem /home/me/projects

  # Claude Desktop / Claude Code mcpServers entry (use absolute paths):
  "filesystem": {
    "command": "/usr/local/bin/mcpgate",
    "args": ["gateway", "run", "--filter-output", "--policies", "/etc/mcpgate/policies",
             "--", "npx", "-y", "@modelcontextprotocol/server-filesystem", "/home/me"]
  }`,
		Args: cobra.ArbitraryArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if cmd.ArgsLenAtDash() < 0 && len(args) > 0 {
				return fmt.Errorf("put the upstream command after --, as in:\n  mcpgate gateway run%s -- %s", setFlags(cmd), strings.Join(args, " "))
			}
			return runGateway(cmd.Context(), f, args, cmd.InOrStdin(), cmd.OutOrStdout(), cmd.ErrOrStderr())
		},
	}
	fl := run.Flags()
	// Stop at the first non-flag word: "run --policies p npx -y server" then fails
	// with the "put it after --" hint instead of "unknown shorthand flag: 'y'".
	fl.SetInterspersed(false)
	fl.BoolVar(&f.filterOutput, "filter-output", false, "apply the output filter: block, warn or allow each tool result (off: rules only report)")
	fl.StringVar(&f.policies, "policies", "./policies", "directory of *.js policies (top level only, lexical order); must exist")
	fl.StringVar(&f.failMode, "fail-mode", "open", "what a truncated scan or an undecodable result does: open (pass) or closed (block)")
	fl.StringVar(&f.auditFile, "audit-file", "", "append audit records (JSONL) to this file instead of stderr")
	fl.StringVar(&f.configPath, "config", "", "JSON configuration file (mcpServers + mcpgate key; see README)")
	fl.StringVar(&f.logFormat, "log-format", "auto", "log format: auto (text on a terminal, else JSON), text or json")
	fl.StringVar(&f.logLevel, "log-level", "info", "log level: debug, info, warn or error")
	fl.StringVar(&f.upstreamStderr, "upstream-stderr", "relay", `the upstream's stderr: relay (prefixed "[upstream] ", escapes removed) or drop`)
	fl.DurationVar(&f.callTimeout, "call-timeout", 10*time.Minute, "longest wait for the upstream to answer a tools/call (0 = no limit)")
	fl.IntVar(&f.maxMessage, "max-message-bytes", jsonrpc.DefaultMaxMessageBytes, "largest JSON-RPC message accepted in either direction")
	fl.BoolVar(&f.debugConsole, "debug-policy-console", false, "give policies console.log (it can carry content into logs: debug only)")
	fl.IntVar(&f.inflightCalls, "max-inflight-calls", budget.DefaultMaxCalls, "most tools/call requests in flight across every session; past it a call waits up to 30 s, then gets -32000 before it reaches the upstream (-1: no limit)")
	fl.Int64Var(&f.inflightBytes, "max-inflight-bytes", budget.DefaultMaxBytes, "most bytes of upstream results being filtered at once; past it a result waits its turn (-1: no limit)")
	f.telemetry.register(fl)
	f.http.register(fl)
	gw.AddCommand(run)
	return gw
}

// gatewayDeps is everything a gateway session needs, built once at start.
type gatewayDeps struct {
	log     *slog.Logger
	stderr  *logging.LineWriter // shared by the logger, the audit sink and the upstream relay
	cfg     *config.Config
	gate    *gate.Gate
	emitter *audit.Emitter
	pipe    *pipeline.Pipeline
}

// setupGateway validates flags and builds the analyzer, the gate, the audit emitter
// and the pipeline. Every error here is a start-up error with a clear message.
func setupGateway(ctx context.Context, f gatewayFlags, stderr io.Writer, kind string) (*gatewayDeps, error) {
	errw := logging.NewLineWriter(stderr)
	level, err := parseLevel(f.logLevel)
	if err != nil {
		return nil, err
	}
	if f.logFormat != "auto" && f.logFormat != "text" && f.logFormat != "json" {
		return nil, fmt.Errorf("--log-format %q: want auto, text or json", f.logFormat)
	}
	log := logging.New(errw, logging.Format(f.logFormat), level)
	if f.failMode != "open" && f.failMode != "closed" {
		return nil, fmt.Errorf("--fail-mode %q: want open or closed", f.failMode)
	}
	if f.upstreamStderr != "relay" && f.upstreamStderr != "drop" {
		return nil, fmt.Errorf("--upstream-stderr %q: want relay or drop", f.upstreamStderr)
	}
	cfg := config.Default()
	if f.configPath != "" {
		if cfg, err = config.Load(f.configPath); err != nil {
			return nil, err
		}
	}
	an, err := engine.New(engine.Options{Severities: cfg.Severities()})
	if err != nil {
		return nil, fmt.Errorf("config: %w", err)
	}
	g, err := gate.Load(ctx, gate.Options{
		Dir:        f.policies,
		Evaluators: os.Getenv("GATE_EVALUATORS"),
		Console:    f.debugConsole,
		Analyzer:   an,
		Logger:     log,
	})
	if err != nil {
		return nil, err
	}
	sinks, err := f.telemetry.sinks(cfg, errw, log)
	if err != nil {
		g.Close()
		return nil, err
	}
	if len(sinks) == 0 {
		var sink audit.Sink = audit.NewJSONL(errw)
		if f.auditFile != "" {
			file, err := os.OpenFile(f.auditFile, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
			if err != nil {
				g.Close()
				return nil, fmt.Errorf("--audit-file: %w", err)
			}
			sink = audit.NewJSONL(file)
		}
		sinks = []audit.Sink{sink}
	}
	em := audit.NewEmitter(log, 0, sinks...)
	auditOutput := !strings.EqualFold(os.Getenv("MCPGATE_AUDIT_OUTPUT"), "off")
	if !auditOutput {
		log.Warn("MCPGATE_AUDIT_OUTPUT=off: recording input decisions only; output blocks and redactions are NOT recorded")
	}
	var origin *audit.Origin
	if kind == audit.KindGateway {
		origin = &audit.Origin{Kind: "gateway"}
	}
	p := &pipeline.Pipeline{
		Analyzer:     an,
		Gate:         g,
		Limiter:      ctxapi.NewRateLimiter(time.Hour, nil),
		Audit:        em,
		Logger:       log,
		FilterOutput: f.filterOutput,
		FailClosed:   f.failMode == "closed",
		Kind:         kind,
		Origin:       origin,
		AuditOutput:  auditOutput,
		Budget:       budget.New(budget.Options{MaxCalls: f.inflightCalls, MaxBytes: f.inflightBytes}),
	}
	return &gatewayDeps{log: log, stderr: errw, cfg: cfg, gate: g, emitter: em, pipe: p}, nil
}

func runGateway(ctx context.Context, f gatewayFlags, argv []string, stdin io.Reader, stdout, stderr io.Writer) error {
	d, err := setupGateway(ctx, f, stderr, audit.KindGateway)
	if err != nil {
		return err
	}
	defer d.close()
	stopAdmin, err := f.telemetry.serve(ctx, d)
	if err != nil {
		return err
	}
	defer stopAdmin()
	reloadCtx, stopReload := context.WithCancel(ctx)
	defer stopReload()
	go d.watch(reloadCtx)
	if f.http.enabled() {
		return runHTTP(ctx, d, f, argv, stderr)
	}
	specs, err := upstreamSpecs(d.cfg, argv)
	if err != nil {
		return err
	}
	var upErr io.Writer // shares the logger's line lock, so lines never interleave
	if f.upstreamStderr == "relay" {
		upErr = d.stderr
	}
	// Each upstream runs under a restart supervisor; several go behind a mux that
	// names their tools <server>_<tool> (docs/decisions.md#tool-names).
	up, err := openUpstreams(specs, upErr, f, d)
	if err != nil {
		return err
	}
	d.log.Info("upstream started", "servers", len(specs), "filter_output", f.filterOutput, "fail_mode", f.failMode)

	sess := relay.New(relay.Options{
		Pipeline:        d.pipe,
		Logger:          d.log,
		User:            d.cfg.Gate.User,
		Access:          d.cfg.Gate.Tools,
		MaxMessageBytes: f.maxMessage,
		CallTimeout:     f.callTimeout,
	}, up)
	runErr := sess.Run(ctx, stdin, stdout)
	closeCtx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_ = up.Close(closeCtx, 2*time.Second)
	if runErr != nil && !errors.Is(runErr, context.Canceled) {
		return runErr
	}
	d.log.Info("client closed the session; gateway exiting")
	return nil
}

// watch hot-reloads the policies on file changes and on SIGHUP.
func (d *gatewayDeps) watch(ctx context.Context) {
	go func() {
		if err := d.gate.Watch(ctx); err != nil && ctx.Err() == nil {
			d.log.Error("policy watcher stopped; SIGHUP still reloads", "err", err)
		}
	}()
	hup := make(chan os.Signal, 1)
	signal.Notify(hup, syscall.SIGHUP)
	defer signal.Stop(hup)
	for {
		select {
		case <-ctx.Done():
			return
		case <-hup:
			if err := d.gate.Reload(); err != nil {
				d.log.Error("policy reload on SIGHUP failed; keeping the last good set", "err", err)
			}
		}
	}
}

// close flushes the audit records and stops the gate.
func (d *gatewayDeps) close() {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := d.emitter.Close(ctx); err != nil {
		d.log.Error("audit flush incomplete", "err", err)
	}
	st := d.emitter.Stats()
	if st.Dropped > 0 || st.Errors > 0 {
		d.log.Warn("audit records lost", "dropped", st.Dropped, "sink_errors", st.Errors)
	}
	_ = d.gate.Close()
}

func parseLevel(s string) (slog.Level, error) {
	var l slog.Level
	if err := l.UnmarshalText([]byte(s)); err != nil {
		return 0, fmt.Errorf("--log-level %q: want debug, info, warn or error", s)
	}
	return l, nil
}

// setFlags renders the flags the user set, for a corrected command line.
func setFlags(cmd *cobra.Command) string {
	var b strings.Builder
	cmd.Flags().Visit(func(f *pflag.Flag) {
		if f.Value.Type() == "bool" {
			fmt.Fprintf(&b, " --%s", f.Name)
			return
		}
		fmt.Fprintf(&b, " --%s %s", f.Name, f.Value.String())
	})
	return b.String()
}
