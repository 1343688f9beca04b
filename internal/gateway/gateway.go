// Package gateway wires mcpgate together. New builds, from a Config, the analyzer,
// the policy gate, the audit sinks and their emitter, the pipeline and the admin
// listener; ServeStdio and ServeHTTP then serve MCP to a client, and Close flushes
// the records and stops everything. cmd/mcpgate only turns flags into a Config.
package gateway

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"maps"
	"os"
	"os/signal"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/mcpgate/mcpgate/ctxapi"
	"github.com/mcpgate/mcpgate/engine"
	"github.com/mcpgate/mcpgate/gate"
	"github.com/mcpgate/mcpgate/internal/admin"
	"github.com/mcpgate/mcpgate/internal/audit"
	"github.com/mcpgate/mcpgate/internal/budget"
	"github.com/mcpgate/mcpgate/internal/capture"
	"github.com/mcpgate/mcpgate/internal/config"
	"github.com/mcpgate/mcpgate/internal/guardrail"
	"github.com/mcpgate/mcpgate/internal/jsonrpc"
	"github.com/mcpgate/mcpgate/internal/otlplog"
	"github.com/mcpgate/mcpgate/internal/pins"
	"github.com/mcpgate/mcpgate/internal/pipeline"
	"github.com/mcpgate/mcpgate/internal/ratelimit"
	"github.com/mcpgate/mcpgate/internal/relay"
	"github.com/mcpgate/mcpgate/internal/upstream"
	"github.com/mcpgate/mcpgate/policies"
)

// Config is everything a gateway is started with. The zero value of each field is a
// sane default, noted where it matters.
type Config struct {
	// Kind is the records' kind: audit.KindGateway ("" means this) or
	// audit.KindMCPServer (no agent_origin; clientInfo recorded).
	Kind string
	// File is the parsed --config file; nil means config.Default().
	File *config.Config
	// Version is mcpgate's version, reported in serverInfo where the gateway answers
	// initialize itself (several servers); "" reads "dev".
	Version string
	// PoliciesDir is a policies directory to load, watch and reload on SIGHUP. It
	// must exist.
	PoliciesDir string
	// Policies, when PoliciesDir is "", holds the policies; nil means none.
	Policies fs.FS
	// Evaluators is GATE_EVALUATORS; "" means goja.
	Evaluators string
	// PolicyConsole gives policies console.log (debug only: it carries content).
	PolicyConsole bool
	// Strict is the strict profile (internal/config's profile.go,
	// docs/policies.md#profiles): the shipped redaction policies run built in before
	// the policies of PoliciesDir or Policies, and the pipeline enforces where the
	// default records (pipeline.Pipeline.Strict). The flags the profile changes
	// (FilterOutput, Pins.Block) are resolved by the caller, flags first.
	Strict bool
	// FilterOutput and FailClosed are --filter-output and --fail-mode closed
	// (docs/decisions.md#output-filter, #fail-modes).
	FilterOutput bool
	FailClosed   bool
	// RefuseSecretsInMotion is --refuse-secrets-in-motion
	// (docs/decisions.md#secrets-in-motion): refuse, rather than record, a call whose
	// arguments carry a value an earlier result showed the session.
	RefuseSecretsInMotion bool
	// MaxCacheTTL is --max-cache-ttl: the longest ttlMs a 2026-07-28 cacheable
	// result keeps (docs/http.md#cache-hints); pipeline.DefaultMaxCacheTTL when zero.
	MaxCacheTTL time.Duration
	// InputOnly is MCPGATE_AUDIT_OUTPUT=off (docs/decisions.md#audit-output-off).
	InputOnly bool
	// Audit says where records go, flags already merged over File's "audit" key.
	// With neither File nor DB the records go to Stderr as JSONL.
	Audit config.Audit
	// Admin configures the admin listener, flags and MCPGATE_ADMIN_TOKEN already
	// merged over File's "admin" key. Listen "" means no listener.
	Admin config.Admin
	// Logger is the gateway's log; nil means slog.Default().
	Logger *slog.Logger
	// Stderr receives the JSONL records by default and the upstreams' relayed
	// stderr. Give it the writer the Logger writes to, wrapped in one
	// logging.LineWriter, so lines never interleave. Nil means os.Stderr.
	Stderr io.Writer
	// RelayUpstreamStderr relays each stdio upstream's stderr to Stderr, prefixed
	// (docs/decisions.md#upstream-stderr); false drops it.
	RelayUpstreamStderr bool
	// CallTimeout bounds the wait for a tools/call answer; 0 means no limit.
	CallTimeout time.Duration
	// MaxMessageBytes bounds one JSON-RPC message; 0 means
	// jsonrpc.DefaultMaxMessageBytes.
	MaxMessageBytes int
	// Servers are the upstreams (see Servers); ignored when Upstream is set.
	Servers []Server
	// PassEnv names more of the gateway's environment for every stdio upstream,
	// beside File's "passEnv" and upstream.InheritedEnv (docs/servers.md#environment).
	PassEnv []string
	// MinimalEnv gives the command after -- (a Servers entry with no Name) the minimal
	// environment too; without it that command inherits the gateway's environment
	// less its own and credential-like variables. Servers from File always get the
	// minimal one (docs/decisions.md#upstream-environment).
	MinimalEnv bool
	// Upstream, when set, opens one session's upstream instead of Servers, given the
	// gateway's analyzer (the MCP server's in-process tools use it).
	Upstream func(*engine.Analyzer) (upstream.Conn, error)
	// HTTP configures ServeHTTP.
	HTTP HTTP
	// MaxInflightCalls and MaxInflightBytes bound the calls in flight and the result
	// bytes being filtered across every session (docs/http.md#in-flight-budget); 0
	// takes the budget's default, -1 turns the limit off.
	MaxInflightCalls int
	MaxInflightBytes int64
	// ShadowDir, when set, is a candidate policy set run beside the live one on every
	// call, watched and reloaded like it; it only fills the records' shadow field
	// (docs/policies.md#shadow).
	ShadowDir string
	// Capture, when its File is set, writes each tools/call with its arguments and
	// upstream result for mcpgate replay (docs/policies.md#replay).
	Capture Capture
	// Pins configures tool pinning (docs/channels.md#pinning).
	Pins Pins
	// Shared configures the state replicas share (docs/deploy.md).
	Shared Shared
	// Bundle, when its Source is set, takes the policies from a signed policy bundle
	// instead of PoliciesDir or Policies (docs/deploy.md#fleet).
	Bundle Bundle
	// Vetted is what the start-up vet found, one entry per server with findings
	// (docs/vet.md#startup): each is recorded once the audit sinks are open.
	Vetted []pipeline.Vetted
}

// Shared configures what several replicas share: the rate-limit window in Redis and
// the replica's name in every audit record. A PostgreSQL Audit.DB is the shared
// audit store.
type Shared struct {
	// RateLimitStore is redis://HOST:PORT/DB; "" keeps the window in the process.
	RateLimitStore string
	// RateLimitFail is what a count does when Redis does not answer within
	// RateLimitTimeout: ratelimit.FailOpen ("" means this) or ratelimit.FailClosed.
	RateLimitFail    string
	RateLimitTimeout time.Duration
	// Replica names this replica in every record; "" means the host name when
	// Audit.DB is PostgreSQL, else none.
	Replica string
}

// Capture configures --capture: File (mode 0600), rotated past RotateMB megabytes
// (0: never) keeping Keep old files (0: all).
type Capture struct {
	File     string
	RotateMB int
	Keep     int
}

// Pins configures tool pinning. The file defaults to pins.FileName in the directory
// of the SQLite store or else the JSONL audit file; with neither (a PostgreSQL store
// has no directory), pinning is off unless File is given.
type Pins struct {
	File  string // --pins
	Block bool   // --pins-mode block: a changed tool is hidden until approved
	Off   bool   // --pins-mode off
	// Name is --pins-name: the pin identity of the command after -- ("" means its
	// command line).
	Name string
}

// PinServer is the name the pins of the one server after -- are kept under: name
// when given, else its command line, each word quoted when it needs to be
// ("npx -y @modelcontextprotocol/server-filesystem /srv"). Servers of --config keep
// their configured names.
func PinServer(name string, servers []Server) string {
	if len(servers) != 1 || servers[0].Name != "" {
		return "" // no server is named ""
	}
	if name != "" {
		return name
	}
	s := servers[0].Server
	words := make([]string, 0, 1+len(s.Args))
	for _, w := range append([]string{s.Command}, s.Args...) {
		if w == "" || strings.ContainsFunc(w, func(r rune) bool { return r <= ' ' || strings.ContainsRune("\"'\\$`", r) }) {
			w = strconv.Quote(w)
		}
		words = append(words, w)
	}
	return strings.Join(words, " ")
}

// PinsPath is the pin file cfg uses, or "" when there is none: pinning is off, or
// kept in memory.
func PinsPath(p Pins, a config.Audit) string {
	switch {
	case p.Off:
		return ""
	case p.File != "":
		return p.File
	case a.DB != "" && !audit.IsPostgres(a.DB): // a PostgreSQL store has no directory
		return filepath.Join(filepath.Dir(a.DB), pins.FileName)
	case a.File != "":
		return filepath.Join(filepath.Dir(a.File), pins.FileName)
	}
	return ""
}

// Gateway is a started gateway. Its methods are safe for concurrent use.
type Gateway struct {
	cfg     Config
	log     *slog.Logger
	file    *config.Config
	upEnv   []string // the stdio upstreams' part of our environment (upstreamEnv)
	gate    *gate.Gate
	emitter *audit.Emitter
	pipe    *pipeline.Pipeline
	admin   *admin.Server
	shadow  *gate.Gate            // ShadowDir's set; nil without
	tenants map[string]*gate.Gate // mcpgate.tenants' layers by name (docs/policies.md#layers)
	// tenantBundles are the sources of the tenant layers that come from a bundle
	tenantBundles map[string]*bundleSource
	capture       *capture.Writer           // nil without Capture.File
	limiter       *ratelimit.Redis          // nil without Shared.RateLimitStore
	health        *pipeline.Health          // policy errors per file
	bundle        *bundleSource             // nil without Bundle.Source
	pools         map[string]*upstream.Pool // warm processes per stdio server (HTTP only; set before the front serves)
}

// New builds a gateway. Every error is a start-up error with a message that names
// the flag or configuration key at fault; nothing is left running on error.
func New(ctx context.Context, cfg Config) (_ *Gateway, err error) {
	if cfg.Kind == "" {
		cfg.Kind = audit.KindGateway
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.Stderr == nil {
		cfg.Stderr = os.Stderr
	}
	if cfg.MaxMessageBytes <= 0 {
		cfg.MaxMessageBytes = jsonrpc.DefaultMaxMessageBytes
	}
	g := &Gateway{cfg: cfg, log: cfg.Logger, file: cfg.File}
	if g.file == nil {
		g.file = config.Default()
	}
	defer func() {
		if err != nil {
			g.Close()
		}
	}()
	an, err := engine.New(engine.Options{Severities: g.file.SeveritiesIn(cfg.Strict)})
	if err != nil {
		return nil, fmt.Errorf("config: %w", err)
	}
	g.upEnv = g.upstreamEnv(an)
	gopts := gate.Options{Dir: cfg.PoliciesDir, FS: cfg.Policies, Evaluators: cfg.Evaluators,
		Console: cfg.PolicyConsole, Analyzer: an, Logger: g.log}
	if cfg.PoliciesDir == "" && cfg.Policies == nil {
		gopts.FS = noPolicies{}
	}
	if cfg.Strict {
		gopts.Builtin = policies.FS
	}
	if cfg.Bundle.Shadow > 0 && (cfg.Bundle.Source == "" || cfg.ShadowDir != "") {
		return nil, errors.New("--bundle-shadow runs each new revision of --policy-bundle as the shadow: it needs --policy-bundle and cannot be combined with --shadow DIR")
	}
	if cfg.Bundle.Source != "" {
		if g.bundle, err = newBundleSource(cfg.Bundle, cfg.Version, g.log); err != nil {
			return nil, err
		}
		b, err := g.bundle.start(ctx, gopts)
		if err != nil {
			return nil, err
		}
		gopts.Dir, gopts.FS, gopts.Revision = "", b.FS(), b.Manifest.Revision
	}
	if g.gate, err = gate.Load(ctx, gopts); err != nil {
		return nil, err
	}
	sinks, store, err := g.openSinks()
	if err != nil {
		return nil, err
	}
	var metrics *admin.Metrics
	if cfg.Admin.Listen != "" {
		// The console's store and the metrics are ordinary sinks, first in line, so a
		// record is counted before it shows on the JSONL stream.
		metrics = admin.NewMetrics(g.gateStatus, func() audit.Stats { return g.emitter.Stats() })
		front := []audit.Sink{metrics}
		if store == nil {
			ring := audit.NewRing(max(cfg.Audit.Ring, 1))
			front, store = append(front, ring), ring
		}
		sinks = append(front, sinks...)
		if g.bundle != nil {
			metrics.Registry.MustRegister(g.bundle.collectors()...)
		}
	}
	g.emitter = audit.NewEmitter(g.log, 0, sinks...)
	g.emitter.Replica = cfg.Shared.Replica
	if g.emitter.Replica == "" && audit.IsPostgres(cfg.Audit.DB) {
		g.emitter.Replica, _ = os.Hostname()
	}
	var limiter ctxapi.RateLimitStore = ctxapi.NewRateLimiter(time.Hour, nil)
	if sh := cfg.Shared; sh.RateLimitStore != "" {
		if g.limiter, err = ratelimit.Open(ratelimit.Options{URL: sh.RateLimitStore, Timeout: sh.RateLimitTimeout,
			Fail: sh.RateLimitFail, Logger: g.log}); err != nil {
			return nil, fmt.Errorf("--rate-limit-store: %w", err)
		}
		limiter = g.limiter
		if metrics != nil {
			metrics.Registry.MustRegister(prometheus.NewCounterFunc(prometheus.CounterOpts{
				Name: "mcpgate_rate_limit_store_errors_total",
				Help: "Rate-limit counts the shared store (Redis) did not answer in time; each was answered by --rate-limit-fail.",
			}, func() float64 { return float64(g.limiter.Errors()) }))
		}
		g.log.Info("rate-limit window kept in Redis", "fail", cmp.Or(sh.RateLimitFail, ratelimit.FailOpen), "timeout", sh.RateLimitTimeout)
	} else if f := sh.RateLimitFail; f != "" && f != ratelimit.FailOpen && f != ratelimit.FailClosed {
		return nil, fmt.Errorf("--rate-limit-fail %q: want open or closed", f)
	}
	if cfg.InputOnly {
		g.log.Warn("MCPGATE_AUDIT_OUTPUT=off: recording input decisions only; output blocks and redactions are NOT recorded")
	}
	var origin *audit.Origin
	if cfg.Kind == audit.KindGateway {
		origin = &audit.Origin{Kind: "gateway"}
	}
	g.pipe = &pipeline.Pipeline{
		Analyzer:              an,
		Gate:                  g.gate,
		Limiter:               limiter,
		Audit:                 g.emitter,
		Logger:                g.log,
		FilterOutput:          cfg.FilterOutput,
		FailClosed:            cfg.FailClosed,
		Kind:                  cfg.Kind,
		Origin:                origin,
		AuditOutput:           !cfg.InputOnly,
		StructureSeverities:   g.file.StructureSeverities(),
		Budget:                budget.New(budget.Options{MaxCalls: cfg.MaxInflightCalls, MaxBytes: cfg.MaxInflightBytes}),
		Health:                &pipeline.Health{},
		Strict:                cfg.Strict,
		RefuseSecretsInMotion: cfg.RefuseSecretsInMotion,
		MaxCacheTTL:           cfg.MaxCacheTTL,
		// callers told apart by the HTTP front: what one may see is not another's
		PerCaller: cfg.HTTP.Listen != "" && (len(g.file.Gate.Tokens) > 0 || g.file.Gate.OAuth != nil),
	}
	g.health = g.pipe.Health
	if g.bundle != nil {
		g.bundle.pipe = g.pipe // --bundle-shadow runs a new revision as the shadow of live calls
	}
	if err := g.loadTenants(ctx, cfg, an); err != nil {
		return nil, err
	}
	if g.pipe.Guardrails, err = guardrail.New(g.file.Gate.Guardrails); err != nil {
		return nil, fmt.Errorf(`"mcpgate.guardrails": %w`, err)
	}
	if names := g.pipe.Guardrails.Names(); len(names) > 0 {
		g.log.Info("outside guardrails configured (docs/guardrails.md)", "guardrails", names)
	}
	if cfg.ShadowDir != "" {
		if g.shadow, err = gate.Load(ctx, gate.Options{Dir: cfg.ShadowDir, Evaluators: cfg.Evaluators,
			Analyzer: an, Logger: g.log.With("shadow", true)}); err != nil {
			return nil, fmt.Errorf("--shadow: %w", err)
		}
		g.pipe.Shadow, g.pipe.ShadowHealth = g.shadow, &pipeline.Health{}
		if g.pipe.ShadowGuardrails, err = shadowGuardrails(cfg.ShadowDir); err != nil {
			return nil, fmt.Errorf("--shadow: %w", err)
		}
		if g.pipe.ShadowGuardrails != nil {
			g.log.Info("shadow guardrails loaded: called off the live path, recorded in the shadow field only", "guardrails", g.pipe.ShadowGuardrails.Names())
		}
		g.log.Info("shadow policy set loaded: it runs beside the live set and changes nothing", "dir", cfg.ShadowDir, "hash", g.shadow.Current().Hash)
	}
	if c := cfg.Capture; c.File != "" {
		if c.RotateMB < 0 || c.Keep < 0 {
			return nil, errors.New("--capture-rotate-mb and --capture-keep must not be negative")
		}
		if g.capture, err = capture.Open(c.File, c.RotateMB, c.Keep, g.log); err != nil {
			return nil, fmt.Errorf("--capture: %w", err)
		}
		g.pipe.Capture = g.capture
		g.log.Warn("capturing tools/call arguments and results: the capture file holds values", "path", c.File)
	}
	if !cfg.Pins.Off {
		g.pipe.Pins, g.pipe.PinBlock = pins.Memory(), cfg.Pins.Block
		path := PinsPath(cfg.Pins, cfg.Audit)
		if path != "" {
			if g.pipe.Pins, err = pins.Open(path); err != nil {
				return nil, fmt.Errorf("--pins: %w", err)
			}
		}
		g.pipe.PinServer = PinServer(cfg.Pins.Name, cfg.Servers)
		g.log.Info("tool pins", "path", cmp.Or(path, "(in memory, for this process)"), "on_change", map[bool]string{true: "block", false: "warn"}[cfg.Pins.Block])
	}
	for _, v := range cfg.Vetted {
		g.pipe.RecordVetted(v)
	}
	if metrics != nil {
		if err := g.serveAdmin(store, metrics); err != nil {
			return nil, err
		}
	}
	return g, nil
}

// openSinks opens the audit sinks of cfg.Audit: the JSONL stream (a file, a rotating
// file, or Stderr) and the SQLite store, which the console then reads.
func (g *Gateway) openSinks() (sinks []audit.Sink, store audit.Store, err error) {
	a := g.cfg.Audit
	switch {
	case a.RotateMB < 0 || a.Keep < 0 || a.Ring < 0:
		return nil, nil, errors.New("--audit-rotate-mb, --audit-keep and --audit-ring must not be negative")
	case a.RotateMB > 0 && a.File == "":
		return nil, nil, errors.New("--audit-rotate-mb rotates --audit-file: give the file too")
	}
	switch {
	case a.File != "" && a.RotateMB > 0:
		js, err := audit.NewRotatingFile(a.File, a.RotateMB, a.Keep)
		if err != nil {
			return nil, nil, fmt.Errorf("--audit-file: %w", err)
		}
		sinks = append(sinks, js)
	case a.File != "":
		js, err := audit.OpenJSONLFile(a.File)
		if err != nil {
			return nil, nil, fmt.Errorf("--audit-file: %w", err)
		}
		sinks = append(sinks, js)
	default:
		sinks = append(sinks, audit.NewJSONL(g.cfg.Stderr))
	}
	if a.DB != "" {
		var db interface {
			audit.Sink
			audit.Store
		}
		var err error
		if audit.IsPostgres(a.DB) {
			db, err = audit.OpenPostgres(context.Background(), a.DB)
		} else {
			db, err = audit.OpenSQLite(a.DB)
		}
		if err != nil {
			for _, s := range sinks {
				s.Close()
			}
			return nil, nil, fmt.Errorf("--audit-db: %w", err)
		}
		sinks, store = append(sinks, db), db
		if audit.IsPostgres(a.DB) {
			g.log.Info("audit records stored in PostgreSQL, shared by every replica")
		} else {
			g.log.Info("audit records stored in SQLite", "path", a.DB)
		}
	}
	if a.OTLP != "" {
		ot, err := otlplog.New(a.OTLP, "mcpgate", "")
		if err != nil {
			for _, s := range sinks {
				s.Close()
			}
			return nil, nil, fmt.Errorf("--audit-otlp: %w", err)
		}
		sinks = append(sinks, ot)
		g.log.Info("audit records exported as OTLP logs", "endpoint", a.OTLP)
	}
	return sinks, store, nil
}

func (g *Gateway) gateStatus() admin.GateStatus {
	st := g.gate.Status()
	return admin.GateStatus{Generation: st.Generation, LastError: st.LastError, LoadedAt: st.LoadedAt}
}

// serveAdmin starts the admin listener: the console over store, /api/audit, /metrics.
func (g *Gateway) serveAdmin(store audit.Store, metrics *admin.Metrics) error {
	ac := g.cfg.Admin
	srv, err := admin.New(admin.Options{
		Addr: ac.Listen, Token: ac.Token, TokenSHA256: ac.TokenSHA256,
		AllowedHosts: ac.AllowedHosts,
		Store:        store, Metrics: metrics, Logger: g.log,
		Status: func() any {
			st := map[string]any{"policies": policyHealth(g.gate, g.health), "audit": g.emitter.Stats()}
			if g.limiter != nil {
				st["rate_limit"] = map[string]any{"store": "redis", "errors": g.limiter.Errors()}
			}
			if g.shadow != nil {
				st["shadow"] = policyHealth(g.shadow, g.pipe.ShadowHealth)
			}
			if g.bundle != nil {
				st["policy_bundle"] = g.bundle.status()
			}
			if len(g.tenants) > 0 {
				tenants := map[string]any{}
				for name, tg := range g.tenants {
					layer := map[string]any{"policies": policyHealth(tg, nil)}
					if src := g.tenantBundles[name]; src != nil {
						layer["policy_bundle"] = src.status()
					}
					tenants[name] = layer
				}
				st["tenants"] = tenants
			}
			return st
		},
	})
	if err != nil {
		return err
	}
	g.admin = srv
	src := "memory (last records)"
	switch store.(type) {
	case *audit.SQLite:
		src = "sqlite"
	case *audit.Postgres:
		src = "postgres"
	}
	g.log.Info("admin listener started", "admin_addr", srv.Addr(), "console", "http://"+srv.Addr()+"/", "store", src, "token", ac.Token != "" || ac.TokenSHA256 != "")
	return nil
}

// loadTenants loads each mcpgate.tenants layer (docs/policies.md#layers); a layer
// that does not load is a start-up error naming it.
func (g *Gateway) loadTenants(ctx context.Context, cfg Config, an *engine.Analyzer) error {
	g.pipe.TenantOf = g.file.TenantOf
	if missing := g.file.TenantsWithoutLayer(); len(missing) > 0 {
		g.log.Warn("tenant named by a token or mcpgate.user has no mcpgate.tenants entry: its callers run the global set alone (docs/policies.md#layers)", "tenants", missing)
	}
	if len(g.file.Gate.Tenants) == 0 {
		return nil
	}
	g.tenants, g.tenantBundles = map[string]*gate.Gate{}, map[string]*bundleSource{}
	for _, name := range slices.Sorted(maps.Keys(g.file.Gate.Tenants)) {
		t, log := g.file.Gate.Tenants[name], g.log.With("tenant", name)
		opts := gate.Options{Dir: t.Policies, Evaluators: cfg.Evaluators, Console: cfg.PolicyConsole, Analyzer: an, Logger: log}
		if t.Bundle != "" { // its own bundle, kept in a state directory of its own
			state := cmp.Or(cfg.Bundle.StateDir, DefaultBundleState())
			if state != "" {
				state = filepath.Join(state, "tenants", name)
			}
			src, err := newBundleSource(Bundle{Source: t.Bundle, Key: t.BundleKey, StateDir: state, Poll: cfg.Bundle.Poll}, cfg.Version, log)
			if err != nil {
				return fmt.Errorf(`"mcpgate.tenants.%s": %w`, name, err)
			}
			b, err := src.start(ctx, opts)
			if err != nil {
				return fmt.Errorf(`"mcpgate.tenants.%s": %w`, name, err)
			}
			opts.FS, opts.Revision = b.FS(), b.Manifest.Revision
			g.tenantBundles[name] = src
		}
		tg, err := gate.Load(ctx, opts)
		if err != nil {
			return fmt.Errorf(`"mcpgate.tenants.%s": %w`, name, err)
		}
		g.tenants[name] = tg
	}
	g.pipe.Tenants = g.tenants
	g.log.Info("tenant policy layers loaded: each runs after the global set and can only narrow it", "tenants", slices.Sorted(maps.Keys(g.tenants)))
	return nil
}

// watch hot-reloads the policies on file changes and on SIGHUP until ctx ends, and
// polls a policy bundle (SIGHUP then fetches it at once). Only policies directories
// (the live one, --shadow's, the tenants' layers) are watched.
func (g *Gateway) watch(ctx context.Context) {
	if g.bundle != nil {
		go g.bundle.poll(ctx, g.gate)
	}
	var gates []*gate.Gate
	for name, tg := range g.tenants {
		if src := g.tenantBundles[name]; src != nil {
			go src.poll(ctx, tg)
		} else {
			gates = append(gates, tg)
		}
	}
	if g.cfg.PoliciesDir != "" {
		gates = append(gates, g.gate)
	}
	if g.shadow != nil { // always a directory
		gates = append(gates, g.shadow)
	}
	if len(gates) == 0 && g.bundle == nil && len(g.tenantBundles) == 0 {
		return
	}
	for _, gt := range gates {
		go func() {
			if err := gt.Watch(ctx); err != nil && ctx.Err() == nil {
				g.log.Error("policy watcher stopped; SIGHUP still reloads", "err", err)
			}
		}()
	}
	hup := make(chan os.Signal, 1)
	signal.Notify(hup, syscall.SIGHUP)
	defer signal.Stop(hup)
	for {
		select {
		case <-ctx.Done():
			return
		case <-hup:
			if g.bundle != nil {
				g.bundle.fetchNow()
			}
			if g.cfg.PoliciesDir != "" {
				if err := g.gate.Reload(); err != nil {
					g.log.Error("policy reload on SIGHUP failed; keeping the last good set", "err", err)
				}
			}
			if g.shadow != nil {
				_ = g.shadow.Reload() // logged by the gate, marked shadow
			}
			for name, tg := range g.tenants {
				if src := g.tenantBundles[name]; src != nil {
					src.fetchNow()
				} else {
					_ = tg.Reload() // logged by the gate, marked with the tenant
				}
			}
		}
	}
}

// openUpstream opens one session's upstream for who (the zero caller on stdio).
func (g *Gateway) openUpstream(who caller) (upstream.Conn, error) {
	if g.cfg.Upstream != nil {
		return g.cfg.Upstream(g.pipe.Analyzer)
	}
	return openServers(g.cfg.Servers, g.pools, g.upEnv, g.upstreamStderr(), g.cfg.MaxMessageBytes, g.log, g.file.Gate.PrefixNames, g.cfg.Version, who)
}

// upstreamStderr is where the stdio upstreams' stderr is relayed; nil drops it.
func (g *Gateway) upstreamStderr() io.Writer {
	if g.cfg.RelayUpstreamStderr {
		return g.cfg.Stderr
	}
	return nil
}

// upstreamEnv is the part of our environment the stdio upstreams get, and logs once,
// by name only, what it leaves out (docs/servers.md#environment).
func (g *Gateway) upstreamEnv(an *engine.Analyzer) []string {
	if g.cfg.Upstream != nil || !slices.ContainsFunc(g.cfg.Servers, func(s Server) bool { return s.Server.Command != "" }) {
		return nil
	}
	secret := map[string]bool{}
	for _, r := range engine.Rules() {
		secret[r.ID] = r.Family == engine.FamilySecret
	}
	p := upstream.EnvPolicy{
		Inherit: len(g.cfg.Servers) == 1 && g.cfg.Servers[0].Name == "" && !g.cfg.MinimalEnv,
		Pass:    append(slices.Clone(g.file.Gate.PassEnv), g.cfg.PassEnv...),
		Own:     g.file.GateEnv,
		SecretValue: func(v string) bool {
			return slices.ContainsFunc(an.AnalyzeText(v).Findings, func(f engine.Finding) bool { return secret[f.RuleID] })
		},
	}
	kept, dropped := p.Environ(os.Environ())
	if len(dropped) > 0 {
		level, what := slog.LevelDebug, "minimal"
		if p.Inherit {
			level, what = slog.LevelInfo, "inherited, less the gateway's own and credential-like variables"
		}
		g.log.Log(context.Background(), level, "upstream environment: "+what+"; left out (hand one on with --pass-env NAME)", "names", dropped)
	}
	return slices.Clip(kept)
}

// relayOptions are a relay session's options for the caller user.
func (g *Gateway) relayOptions(user ctxapi.User) relay.Options {
	return relay.Options{
		Pipeline:         g.pipe,
		Logger:           g.log,
		User:             user,
		Access:           g.file.Gate.Tools,
		MaxMessageBytes:  g.cfg.MaxMessageBytes,
		CallTimeout:      g.cfg.CallTimeout,
		RecordClientInfo: true,
		Server:           g.soleServer(),
		Version:          g.cfg.Version,
		Roots:            g.pinnedRoots(),
	}
}

// pinnedRoots are the servers' configured roots by name (relay.Options.Roots); a
// server with none is left out.
func (g *Gateway) pinnedRoots() map[string][]string {
	var out map[string][]string
	for _, s := range g.cfg.Servers {
		if s.Server.Roots == nil {
			continue
		}
		if out == nil {
			out = map[string][]string{}
		}
		out[s.Name] = s.Server.Roots
	}
	return out
}

// soleServer is the configured name of the only server (ctx.server), or "" when
// there are several (each call then names its own) or the command came after --.
func (g *Gateway) soleServer() string {
	if g.cfg.Upstream == nil && len(g.cfg.Servers) == 1 && !g.file.Gate.PrefixNames {
		return g.cfg.Servers[0].Name
	}
	return ""
}

// ServeStdio relays one MCP client on stdin/stdout to the upstream until the client
// closes stdin or ctx ends, then closes the upstream.
func (g *Gateway) ServeStdio(ctx context.Context, stdin io.Reader, stdout io.Writer) error {
	reloadCtx, stopReload := context.WithCancel(ctx)
	defer stopReload()
	go g.watch(reloadCtx)
	if name := exchangeServer(g.cfg.Servers); name != "" {
		return fmt.Errorf("mcpServers.%s.oauth.grant %q exchanges the caller's OAuth token, and a stdio client presents none: serve it with gateway run --listen and --oauth-issuer, or use the client credentials grant (docs/http.md#token-exchange)", name, config.GrantTokenExchange)
	}
	up, err := g.openUpstream(caller{})
	if err != nil {
		return err
	}
	g.log.Info("upstream started", "servers", max(len(g.cfg.Servers), 1), "profile", profileName(g.cfg.Strict), "filter_output", g.cfg.FilterOutput, "fail_closed", g.cfg.FailClosed)
	runErr := relay.New(g.relayOptions(g.file.Gate.User), up).Run(ctx, stdin, stdout)
	closeCtx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_ = up.Close(closeCtx, 2*time.Second)
	if runErr != nil && !errors.Is(runErr, context.Canceled) {
		return runErr
	}
	g.log.Info("client closed the session; gateway exiting")
	return nil
}

// profileName is the profile's name for the log.
func profileName(strict bool) string {
	if strict {
		return config.ProfileStrict
	}
	return config.ProfileDefault
}

// Close stops the admin listener, flushes the audit records and stops the gate. It
// is safe on a partly built Gateway.
func (g *Gateway) Close() error {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if g.admin != nil {
		actx, acancel := context.WithTimeout(ctx, 2*time.Second)
		_ = g.admin.Close(actx)
		acancel()
	}
	g.pipe.Wait() // records still completing a --shadow run
	if g.emitter != nil {
		if err := g.emitter.Close(ctx); err != nil {
			g.log.Error("audit flush incomplete", "err", err)
		}
		if st := g.emitter.Stats(); st.Dropped > 0 || st.Errors > 0 {
			g.log.Warn("audit records lost", "dropped", st.Dropped, "sink_errors", st.Errors)
		}
	}
	if g.shadow != nil {
		_ = g.shadow.Close()
	}
	for _, tg := range g.tenants {
		_ = tg.Close()
	}
	if g.limiter != nil {
		if n := g.limiter.Errors(); n > 0 {
			g.log.Warn("rate-limit store failures during the run", "errors_total", n)
		}
		_ = g.limiter.Close()
	}
	if g.capture != nil {
		if err := g.capture.Close(); err != nil {
			g.log.Error("capture file not closed cleanly", "err", err)
		}
		if n := g.capture.Dropped(); n > 0 {
			g.log.Warn("calls missing from the capture file", "dropped", n)
		}
	}
	if g.gate != nil {
		return g.gate.Close()
	}
	return nil
}

// ShadowGuardrailsFile is the file in a --shadow directory that gives the candidate
// set its own guardrails (docs/decisions.md#shadow-guardrails).
const ShadowGuardrailsFile = "guardrails.json"

// shadowGuardrails reads dir's guardrails file, read once at start-up like the live
// guardrails. No file: nil, nil (the candidate shares the live guardrails); a file
// with no guardrails ({}): a set with none.
func shadowGuardrails(dir string) (*guardrail.Set, error) {
	path := filepath.Join(dir, ShadowGuardrailsFile)
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	specs, err := config.ParseGuardrails(b)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	set, err := guardrail.New(specs)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if set == nil {
		set = &guardrail.Set{}
	}
	return set, nil
}

// PolicyStatus is /api/status's policies (and shadow) object: the loaded set, the
// last reload's result, and the policy errors per file since start
// (docs/policies.md#health).
type PolicyStatus struct {
	gate.Status
	LastReload string            `json:"last_reload"` // ok, or failed (the last good set stays; see last_error)
	Errors     map[string]uint64 `json:"errors"`      // runtime errors, limits, timeouts, bad ctx shapes per file
}

func policyHealth(g *gate.Gate, h *pipeline.Health) PolicyStatus {
	st := PolicyStatus{Status: g.Status(), LastReload: "ok", Errors: h.Errors()}
	if st.LastError != "" {
		st.LastReload = "failed"
	}
	return st
}

// noPolicies is an empty policies directory.
type noPolicies struct{}

func (noPolicies) Open(name string) (fs.File, error) {
	return nil, &fs.PathError{Op: "open", Path: name, Err: fs.ErrNotExist}
}

func (noPolicies) ReadDir(string) ([]fs.DirEntry, error) { return nil, nil }
