package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/mcpgate/mcpgate/gate"
	"github.com/mcpgate/mcpgate/internal/audit"
	"github.com/mcpgate/mcpgate/internal/budget"
	"github.com/mcpgate/mcpgate/internal/config"
	"github.com/mcpgate/mcpgate/internal/gateway"
	"github.com/mcpgate/mcpgate/internal/jsonrpc"
	"github.com/mcpgate/mcpgate/internal/logging"
	"github.com/mcpgate/mcpgate/internal/pins"
	"github.com/mcpgate/mcpgate/internal/pipeline"
)

func init() { subcommands = append(subcommands, newGatewayCmd) }

// gatewayFlags are the flags of `mcpgate gateway run`.
type gatewayFlags struct {
	profile        string // --profile: default or strict ("" reads the config's "profile")
	filterOutput   bool
	refuseMotion   bool
	policies       string
	bundle         gateway.Bundle // --policy-bundle and its flags (docs/deploy.md#fleet)
	failMode       string
	auditFile      string
	configPath     string
	logFormat      string
	logLevel       string
	upstreamStderr string
	callTimeout    time.Duration
	maxCacheTTL    time.Duration
	maxMessage     int
	debugConsole   bool
	inflightCalls  int    // the in-flight budget (internal/budget)
	inflightBytes  int64  // the in-flight budget (internal/budget)
	shadow         string // --shadow DIR (docs/policies.md#shadow)
	capture        string // --capture FILE (docs/policies.md#replay)
	captureRotate  int
	captureKeep    int
	pins           string         // tool pins file (docs/channels.md#pinning)
	pinsMode       string         // what a changed tool does: warn, block or off
	passEnv        []string       // more of our environment for the upstreams (--pass-env)
	roots          []string       // the roots the server after -- may see (--root)
	upstreamEnv    string         // the command after --'s environment: inherit or minimal
	pinsName       string         // the pin identity of the server after -- (--pins-name)
	vetMode        string         // start-up vet: report, enforce or off (docs/vet.md#startup)
	telemetry      telemetryFlags // sinks and the admin listener (telemetry.go)
	http           httpFlags      // the Streamable HTTP front (gateway_http.go)
	shared         sharedFlags    // state several replicas share (shared.go)
	// changed reports whether the user gave the named flag, which then wins over the
	// profile; nil means none was given.
	changed func(name string) bool
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
		// "gateway start" and "gateway serve" are what people type first.
		SuggestFor: []string{"start", "serve"},
		Long: `Speak MCP to the client over stdio (or Streamable HTTP with --listen) and start
CMD ARGS as the upstream MCP server (or the servers of --config's mcpServers).
A tools/call's arguments go through the built-in input rules and the pre-phase
policies, and its result through the output rules and the post-phase policies. What
else the server sends toward the agent or the user goes through the same rules:
listings (a tool that blocks is hidden, and calls to it rejected), resources/read,
prompts/get, completion/complete, tasks/result, sampling and elicitation requests,
log and progress notifications (docs/channels.md). Each tools/call and each filtered
message writes one JSON audit record to stderr (or --audit-file); the rest of the
protocol is relayed with its ids and unknown fields intact.

Revisions (docs/http.md#revisions): the client may speak MCP 2025-11-25 or
2026-07-28, on stdio and with --listen. Each server hop negotiates its own; where a
server speaks only the other revision the gateway translates, elicitation, sampling
and roots included (a 2025-11-25 server's requests become a 2026-07-28 client's
input_required rounds, and the other way round). A log line at the first request
says when a hop translates. The upstream may itself be an mcpgate (docs/servers.md).

Tool pins (--pins, --pins-mode) remember each tool's first definition; a changed one
is the finding tool_definition_changed, and with --pins-mode block it is hidden until
mcpgate pins approve.

Without --filter-output the rules still run and their findings reach ctx.findings
and the audit record, but nothing is blocked or rewritten by them; policies still act.

Trying a new policy set (docs/policies.md#life-cycle): --shadow DIR runs it beside
the live set on every call and records what it would have done (shadow.differs),
changing nothing; --capture FILE keeps each call's arguments and result (values, mode
0600) for mcpgate replay --capture FILE --policies DIR.

The command after -- inherits the gateway's environment, less MCPGATE_*, what the
gateway itself read, and every variable whose name (TOKEN, SECRET, KEY, PASSWORD,
AWS_…) or value (a URL with user:password@, an API key) looks like a credential;
--upstream-env minimal gives it PATH, HOME, the locale and the like only, as the
servers of --config always get (plus their env). Name what a server needs with
--pass-env, e.g. --pass-env GITHUB_PERSONAL_ACCESS_TOKEN; the names left out are
logged at start-up (docs/servers.md#environment).

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
  }

  # over Streamable HTTP at http://127.0.0.1:8080/mcp; the server sees only the
  # client's roots under /home/me/projects
  mcpgate gateway run --listen 127.0.0.1:8080 --filter-output --policies /etc/mcpgate/policies \
      --root file:///home/me/projects -- npx -y @modelcontextprotocol/server-filesystem /home/me/projects

  # several servers from --config (tools become <server>_<tool>, resource URIs <server>+<uri>):
  #   {"mcpServers": {"fs": {"command": "npx", "args": ["-y", "@modelcontextprotocol/server-filesystem", "/home/me"],
  #                          "roots": ["file:///home/me"]},
  #                   "notes": {"url": "http://127.0.0.1:9000/mcp"}}}
  mcpgate gateway run --filter-output --policies /etc/mcpgate/policies --config /etc/mcpgate/gateway.json

  # a fleet replica: the policies come from a signed bundle (mcpgate bundle build), fetched
  # every minute; a new revision is taken only when it verifies (docs/deploy.md#fleet)
  mcpgate gateway run --listen 10.0.0.11:8081 --config /etc/mcpgate/gateway.json --filter-output \
      --policy-bundle https://policies.example/mcpgate/bundle.tar.gz --bundle-key /etc/mcpgate/bundle.pub

  # two teams, each with a bearer token and a policy layer of its own that runs after the
  # global set and can only narrow it (docs/policies.md#layers):
  #   {"mcpgate": {"tokens": [{"sha256": "<sha256 hex>", "userID": "alice", "tenant": "acme"},
  #                           {"sha256": "<sha256 hex>", "userID": "bob", "tenant": "globex"}],
  #                "tenants": {"acme": {"policies": "/etc/mcpgate/tenants/acme"},
  #                            "globex": {"policies": "/etc/mcpgate/tenants/globex"}}}}
  mcpgate gateway run --listen 127.0.0.1:8080 --config /etc/mcpgate/gateway.json --policies /etc/mcpgate/policies -- CMD`,
		Args: cobra.ArbitraryArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if cmd.ArgsLenAtDash() < 0 && len(args) > 0 {
				return fmt.Errorf("put the upstream command after --, as in:\n  mcpgate gateway run%s -- %s", setFlags(cmd), strings.Join(args, " "))
			}
			f.changed = cmd.Flags().Changed
			return runGateway(cmd.Context(), f, args, cmd.InOrStdin(), cmd.OutOrStdout(), cmd.ErrOrStderr())
		},
	}
	fl := run.Flags()
	// Stop at the first non-flag word: "run --policies p npx -y server" then fails
	// with the "put it after --" hint instead of "unknown shorthand flag: 'y'".
	fl.SetInterspersed(false)
	fl.StringVar(&f.profile, "profile", "", `default or strict: strict turns on the output filter, blocks changed tools, runs the shipped redaction policies built in and refuses calls whose arguments break the tool's schema or leave the roots (mcpgate rules --profile strict lists each change); a flag given explicitly wins over the profile (default: the config's "profile", else default)`)
	fl.BoolVar(&f.filterOutput, "filter-output", false, "apply the output filter: block, warn or allow each tool result (off: rules only report)")
	fl.BoolVar(&f.refuseMotion, "refuse-secrets-in-motion", false, "refuse a tools/call whose arguments carry a secret or PII value an earlier result showed the same session (off: such a call is recorded, reason secret_in_motion)")
	fl.StringVar(&f.policies, "policies", "./policies", "directory of *.js policies (top level only, lexical order); must exist")
	fl.StringVar(&f.bundle.Source, "policy-bundle", "", "take the policies from a signed policy bundle instead of --policies: an https:// URL, an http:// URL of a loopback host, an OCI artifact (oci://REGISTRY/REPOSITORY:TAG, pulled anonymously), or a file path; fetched every --bundle-poll, each new revision activated only when it verifies, chains to the running one, compiles and passes its own tests (docs/deploy.md#fleet)")
	fl.StringVar(&f.bundle.Key, "bundle-key", "", "the PEM public key --policy-bundle's bundles must be signed with (openssl pkey -in bundle.key -pubout; its private half signs with mcpgate bundle build --signing-key)")
	fl.StringVar(&f.bundle.StateDir, "bundle-state", "", "where the last good policy bundle is kept, so a restart without the server still enforces it, and a tenant layer's under tenants/NAME (default: $STATE_DIRECTORY/policy-bundle under systemd, else $XDG_STATE_HOME/mcpgate/policy-bundle or ~/.local/state/mcpgate/policy-bundle)")
	fl.DurationVar(&f.bundle.Poll, "bundle-poll", gateway.DefaultBundlePoll, "how often --policy-bundle is fetched (with ±20% jitter; ETag and If-None-Match spare an unchanged bundle)")
	fl.DurationVar(&f.bundle.Shadow, "bundle-shadow", 0, "run each new revision of --policy-bundle that passes its checks as the shadow of live calls for this long before it goes live, and refuse it when one of its policies blocks or lets through a call the running set did not, unless its manifest accepts that policy's differences (bundle build --accept-diff); 0: swap at once (docs/deploy.md#fleet)")
	fl.StringVar(&f.failMode, "fail-mode", "open", "what a truncated scan or an undecodable result does: open (pass) or closed (block)")
	fl.StringVar(&f.auditFile, "audit-file", "", "append audit records (JSONL) to this file instead of stderr")
	fl.StringVar(&f.configPath, "config", "", "JSON configuration file (mcpServers + mcpgate key; see README)")
	fl.StringVar(&f.logFormat, "log-format", "auto", "log format: auto (text on a terminal, else JSON), text or json (colours only on a terminal and without NO_COLOR)")
	fl.StringVar(&f.logLevel, "log-level", "info", "log level: debug, info, warn or error")
	fl.StringVar(&f.upstreamStderr, "upstream-stderr", "relay", `the upstream's stderr: relay (prefixed "[upstream] ", escapes removed) or drop`)
	fl.DurationVar(&f.callTimeout, "call-timeout", 10*time.Minute, "longest wait for the upstream to answer a tools/call (0 = no limit)")
	fl.DurationVar(&f.maxCacheTTL, "max-cache-ttl", pipeline.DefaultMaxCacheTTL, "longest ttlMs a 2026-07-28 cacheable result (a listing, resources/read, server/discover) keeps on its way to the client; a server's longer one is clamped and recorded (docs/http.md#cache-hints)")
	fl.IntVar(&f.maxMessage, "max-message-bytes", jsonrpc.DefaultMaxMessageBytes, "largest JSON-RPC message accepted in either direction")
	fl.BoolVar(&f.debugConsole, "debug-policy-console", false, "give policies console.log (it can carry content into logs: debug only)")
	fl.IntVar(&f.inflightCalls, "max-inflight-calls", budget.DefaultMaxCalls, "most tools/call requests in flight across every session; past it a call waits up to 30 s, then gets -32000 before it reaches the upstream (-1: no limit)")
	fl.Int64Var(&f.inflightBytes, "max-inflight-bytes", budget.DefaultMaxBytes, "most bytes of upstream results being filtered at once; past it a result waits its turn (-1: no limit)")
	fl.StringVar(&f.shadow, "shadow", "", "run the policies of this directory (and its guardrails.json as the candidate's guardrails) beside the live set on every call; records gain a shadow field; nothing they do reaches the client or the server")
	fl.StringVar(&f.capture, "capture", "", "write each tools/call with its arguments and the upstream's result to this JSONL file (mode 0600) for mcpgate replay; it holds values")
	fl.IntVar(&f.captureRotate, "capture-rotate-mb", 0, "rotate --capture when it passes N megabytes (0: never)")
	fl.IntVar(&f.captureKeep, "capture-keep", 5, "rotated capture files to keep with --capture-rotate-mb (0: keep all)")
	fl.StringVar(&f.pins, "pins", "", "tool pins file: the first definition of every tool, to catch a changed one (default: "+pins.FileName+" next to --audit-db or --audit-file; without them the pins are kept in memory for this process)")
	fl.StringVar(&f.pinsName, "pins-name", "", "the name the pins of the server after -- are kept under, as mcpgate pins approve NAME TOOL takes it (default: its command line)")
	fl.StringVar(&f.pinsMode, "pins-mode", "warn", "a tool whose definition changed since it was pinned: warn (finding tool_definition_changed), block (hidden until mcpgate pins approve) or off")
	fl.StringVar(&f.vetMode, "vet-mode", "report", "the mcpgate vet checks at start-up (docs/vet.md): report (log each finding), enforce (also leave out a server with a block-level finding; the strict profile's default) or off")
	fl.StringArrayVar(&f.roots, "root", nil, "pin the roots the server after -- may see: a file:// URI of an absolute directory (repeatable); a root of the client's roots/list answer outside every pin is removed and recorded (root_outside_pin). The servers of --config take mcpServers.NAME.roots")
	fl.StringSliceVar(&f.passEnv, "pass-env", nil, "always hand this variable of the gateway's environment to the upstreams (NAME, PREFIX* or *; repeatable, or comma-separated), as a credential the command after -- needs (GITHUB_TOKEN)")
	fl.StringVar(&f.upstreamEnv, "upstream-env", "inherit", "the environment of the command after --: inherit (the gateway's, less MCPGATE_*, what the gateway itself read, and every variable whose name or value looks like a credential) or minimal (PATH, HOME, USER, LOGNAME, SHELL, TERM, TMPDIR, TZ and the locale). The servers of --config always get the minimal one plus their env. Either way --pass-env adds to it, and the names left out are logged at start-up")
	f.telemetry.register(fl)
	f.http.register(fl, "its own upstream processes, about 64 MiB; the default is what half of this host's memory holds", gateway.DefaultMaxSessions())
	f.shared.register(fl)
	gw.AddCommand(run)
	return gw
}

// newLogger builds the log from --log-format and --log-level, over one line writer
// on stderr that the audit stream and the upstreams' stderr share.
func newLogger(format, level string, stderr io.Writer) (*slog.Logger, *logging.LineWriter, error) {
	errw := logging.NewLineWriter(stderr)
	lv, err := parseLevel(level)
	if err != nil {
		return nil, nil, err
	}
	if format != "auto" && format != "text" && format != "json" {
		return nil, nil, fmt.Errorf("--log-format %q: want auto, text or json", format)
	}
	return logging.New(errw, logging.Format(format), lv), errw, nil
}

// config turns the flags into a gateway.Config; every error names the flag at fault.
func (f gatewayFlags) config(argv []string, stderr io.Writer) (gateway.Config, error) {
	log, errw, err := newLogger(f.logFormat, f.logLevel, stderr)
	if err != nil {
		return gateway.Config{}, err
	}
	if f.failMode != "open" && f.failMode != "closed" {
		return gateway.Config{}, fmt.Errorf("--fail-mode %q: want open or closed", f.failMode)
	}
	if f.upstreamStderr != "relay" && f.upstreamStderr != "drop" {
		return gateway.Config{}, fmt.Errorf("--upstream-stderr %q: want relay or drop", f.upstreamStderr)
	}
	file := config.Default()
	if f.configPath != "" {
		if file, err = config.Load(f.configPath); err != nil {
			return gateway.Config{}, err
		}
	}
	profile, err := file.ProfileName(f.profile)
	if err != nil {
		return gateway.Config{}, err
	}
	strict := profile == config.ProfileStrict
	if strict { // the profile's defaults; a flag given explicitly wins
		if !f.given("filter-output") {
			f.filterOutput = true
		}
		if !f.given("pins-mode") {
			f.pinsMode = "block"
		}
		if !f.given("vet-mode") {
			f.vetMode = "enforce"
		}
		if !f.given("refuse-secrets-in-motion") {
			f.refuseMotion = true
		}
	}
	if f.pinsMode != "warn" && f.pinsMode != "block" && f.pinsMode != "off" {
		return gateway.Config{}, fmt.Errorf("--pins-mode %q: want warn, block or off", f.pinsMode)
	}
	servers, err := gateway.Servers(file, argv)
	if err != nil {
		return gateway.Config{}, err
	}
	if len(f.roots) > 0 {
		if len(servers) != 1 || servers[0].Name != "" {
			return gateway.Config{}, errors.New(`--root pins the roots of the server after --; pin a configured server's with "roots" in its mcpServers entry`)
		}
		for _, r := range f.roots {
			if err := pipeline.CheckRoot(r); err != nil {
				return gateway.Config{}, fmt.Errorf("--root: %w", err)
			}
		}
		servers[0].Server.Roots = f.roots
	}
	if f.vetMode == "" {
		f.vetMode = "report"
	}
	if f.vetMode != "report" && f.vetMode != "enforce" && f.vetMode != "off" {
		return gateway.Config{}, fmt.Errorf("--vet-mode %q: want report, enforce or off", f.vetMode)
	}
	var vetted []pipeline.Vetted
	if f.vetMode != "off" {
		if servers, vetted, err = vetAtStartup(context.Background(), file, f.configPath, f.pins, servers, f.vetMode == "enforce", log); err != nil {
			return gateway.Config{}, err
		}
	}
	if f.pinsName != "" && (len(servers) != 1 || servers[0].Name != "") {
		return gateway.Config{}, errors.New("--pins-name names the server after --; the servers of --config keep their pins under their configured names")
	}
	if err := f.http.check(); err != nil {
		return gateway.Config{}, err
	}
	policiesDir := f.policies
	if f.bundle.Source != "" {
		if f.given("policies") {
			return gateway.Config{}, errors.New("--policy-bundle takes the place of --policies: give one of them")
		}
		policiesDir = ""
	} else if f.bundle.Key != "" {
		return gateway.Config{}, errors.New("--bundle-key goes with --policy-bundle")
	} else if f.bundle.Shadow != 0 {
		return gateway.Config{}, errors.New("--bundle-shadow goes with --policy-bundle")
	}
	if f.bundle.Shadow < 0 {
		return gateway.Config{}, errors.New("--bundle-shadow: want a duration such as 10m, or 0 for none")
	}
	if f.bundle.Shadow > 0 && f.shadow != "" {
		return gateway.Config{}, errors.New("--bundle-shadow runs each new revision of --policy-bundle as the shadow: it cannot be combined with --shadow DIR")
	}
	if f.upstreamEnv != "inherit" && f.upstreamEnv != "minimal" {
		return gateway.Config{}, fmt.Errorf("--upstream-env %q: want inherit or minimal", f.upstreamEnv)
	}
	for _, p := range f.passEnv {
		if err := config.CheckPassEnv(p); err != nil {
			return gateway.Config{}, fmt.Errorf("--pass-env: %w", err)
		}
	}
	return gateway.Config{
		Kind:                  audit.KindGateway,
		File:                  file,
		Vetted:                vetted,
		Strict:                strict,
		Version:               buildVersion(),
		PoliciesDir:           policiesDir,
		Bundle:                f.bundle,
		Evaluators:            os.Getenv("GATE_EVALUATORS"),
		PolicyConsole:         f.debugConsole,
		FilterOutput:          f.filterOutput,
		RefuseSecretsInMotion: f.refuseMotion,
		MaxCacheTTL:           f.maxCacheTTL,
		FailClosed:            f.failMode == "closed",
		InputOnly:             strings.EqualFold(os.Getenv("MCPGATE_AUDIT_OUTPUT"), "off"),
		Audit:                 f.telemetry.audit(file.Gate.Audit, f.auditFile),
		Admin:                 f.telemetry.admin(file.Gate.Admin),
		Logger:                log,
		Stderr:                errw,
		RelayUpstreamStderr:   f.upstreamStderr == "relay",
		CallTimeout:           f.callTimeout,
		MaxMessageBytes:       f.maxMessage,
		Servers:               servers,
		PassEnv:               f.passEnv,
		MinimalEnv:            f.upstreamEnv == "minimal",
		HTTP:                  f.http.config(),
		Shared:                f.shared.config(),
		MaxInflightCalls:      f.inflightCalls,
		MaxInflightBytes:      f.inflightBytes,
		ShadowDir:             f.shadow,
		Capture:               gateway.Capture{File: f.capture, RotateMB: f.captureRotate, Keep: f.captureKeep},
		Pins:                  gateway.Pins{File: f.pins, Block: f.pinsMode == "block", Off: f.pinsMode == "off", Name: f.pinsName},
	}, nil
}

// given reports whether the user set the flag name on the command line.
func (f gatewayFlags) given(name string) bool { return f.changed != nil && f.changed(name) }

func runGateway(ctx context.Context, f gatewayFlags, argv []string, stdin io.Reader, stdout, stderr io.Writer) error {
	cfg, err := f.config(argv, stderr)
	if err != nil {
		return err
	}
	g, err := gateway.New(ctx, cfg)
	if err != nil {
		if errors.Is(err, gate.ErrNoDir) && !isDir(cfg.PoliciesDir) && !fileExists(cfg.PoliciesDir) {
			return fmt.Errorf("%w\n%s", err, noPoliciesHint(cfg.PoliciesDir))
		}
		return err
	}
	defer g.Close()
	if f.http.enabled() {
		return g.ServeHTTP(ctx)
	}
	return g.ServeStdio(ctx, stdin, stdout)
}

// noPoliciesHint says how to make the missing --policies directory dir: empty (no
// policies), or with the shipped set, where make install put it next to this binary
// (PREFIX/share/mcpgate/policies) or in the source tree the binary was built in.
func noPoliciesHint(dir string) string {
	if abs, err := filepath.Abs(dir); err == nil {
		dir = abs
	}
	shipped := "/usr/local/share/mcpgate/policies"
	if exe, err := os.Executable(); err == nil {
		for _, d := range []string{"../share/mcpgate/policies", "../policies"} {
			if p := filepath.Join(filepath.Dir(exe), d); isDir(p) {
				shipped = p
				break
			}
		}
	}
	return "  make it: mkdir -p " + dir + " (an empty directory runs no policies), then for the shipped set\n" +
		"  (secret, PII and e-mail redaction): cp -n " + shipped + "/*.js " + dir + "/"
}

func fileExists(p string) bool {
	_, err := os.Stat(p)
	return err == nil
}

func isDir(p string) bool {
	st, err := os.Stat(p)
	return err == nil && st.IsDir()
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
