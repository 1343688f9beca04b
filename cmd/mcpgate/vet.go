package main

import (
	"bytes"
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/mcpgate/mcpgate/engine"
	"github.com/mcpgate/mcpgate/internal/config"
	"github.com/mcpgate/mcpgate/internal/gateway"
	"github.com/mcpgate/mcpgate/internal/pins"
	"github.com/mcpgate/mcpgate/internal/pipeline"
	"github.com/mcpgate/mcpgate/internal/vet"
)

func init() { subcommands = append(subcommands, newVetCmd) }

// vetFlags are the flags of mcpgate vet.
type vetFlags struct {
	format, config, baseline, endpoint, pins, lockFile, profile, sigstoreRoot string
	entries                                                                   []string
	lock                                                                      bool
}

func newVetCmd() *cobra.Command {
	var f vetFlags
	cmd := &cobra.Command{
		Use:   "vet [--format text|json] [--config FILE] [--entry FILE ...] [--baseline FILE] [--endpoint URL] [--lock]",
		Short: "Review MCP servers before they run: look-alike names, unpinned packages, transport, scopes, drift",
		Long: `vet reviews servers without starting them (docs/vet.md) and reports:

  vet_lookalike_name             a package or registry name one or two edits from, or
                                 confusable with, a well-known server's (or one in
                                 "mcpgate.allowedServers") and not itself one
  vet_unverified_official_claim  a registry entry calling itself official, unverified
  vet_unpinned_package           npx / uvx / pipx / docker run with no exact version or digest
  vet_integrity_mismatch         a package whose integrity differs from mcpgate.lock
  vet_provenance_invalid         an npm provenance attestation that does not verify, or
                                 names another repository than mcpgate.lock
  vet_plaintext_transport        http:// or ws:// to a host that is not loopback
  vet_tls_verification_off       NODE_TLS_REJECT_UNAUTHORIZED=0, --insecure, insecureSkipVerify
  vet_identity_unproven          --endpoint claims an --entry's name but is none of its remotes[]
  vet_identity_changed           a url server's TLS public key differs from its pin (--pins)
  vet_excessive_scope            write/delete OAuth scopes for a server whose tools (from
                                 --pins) are all readOnlyHint
  vet_drift_*                    against --baseline: TLS, fail mode, filtering, pins or
                                 environment weakened; hosts, roots or scopes widened; a
                                 server added with no pins

Inputs (any mix):
  --config FILE    an mcpServers file: mcpgate's --config, Claude Desktop's or Cursor's
                   config, VS Code's mcp.json ("servers") or settings.json ("mcp.servers")
  --entry FILE     an MCP registry server.json entry (repeatable)
  --baseline FILE  a reviewed earlier version of --config to compare against
  --endpoint URL   a remote MCP server's URL (with --entry: the name it claims)
  --pins FILE      a tool pin file (mcpgate gateway run --pins): the tools each server listed,
                   and the TLS key pinned for each url server (gateway run --pins pins it)

--lock resolves each pinned npm package's dist.integrity (from $npm_config_registry
or registry.npmjs.org), each pinned PyPI release's file hashes (uvx, pipx; from
$UV_DEFAULT_INDEX, $UV_INDEX_URL, $PIP_INDEX_URL or pypi.org/simple) and each image
digest, and writes mcpgate.lock next to --config. Where the npm registry offers a
provenance attestation it is verified (Sigstore, against the public-good trusted
root built in, or --sigstore-root) and its source repository locked. Later runs, and gateway run at start-up, resolve them again and report a
package whose integrity differs.

Findings name the rule, severity, server, a JSON Pointer into the input and a
message; never an environment or header value. A finding the configuration allows
("mcpgate": {"vetAllow": {"SERVER": ["RULE_ID"]}}) is printed as allowed and counts
for nothing. --profile strict raises vet_plaintext_transport and vet_lookalike_name
to high, as gateway run in the strict profile does.

Exit status: 0 nothing found (or only low and allowed findings), 3 a warn-level
(medium) finding, 4 a block-level (high) one, 1 a usage or I/O error.`,
		Example: `  mcpgate vet --config ~/Library/Application\ Support/Claude/claude_desktop_config.json
  mcpgate vet --config .vscode/mcp.json --format json | jq -r '.rule_id'
  mcpgate vet --entry server.json
  mcpgate vet --entry server.json --endpoint https://mcp.example.com/mcp
  mcpgate vet --config gateway.json --baseline gateway.reviewed.json
  mcpgate vet --config gateway.json --pins /var/lib/mcpgate/mcpgate-pins.json
  mcpgate vet --config gateway.json --lock && git add mcpgate.lock
  mcpgate vet --config gateway.json || echo "vet: exit $?"`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runVet(cmd.Context(), f, cmd.OutOrStdout())
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&f.format, "format", "text", "output format: text, or json (one object per finding, a line each)")
	fl.StringVar(&f.config, "config", "", "mcpServers configuration to review (mcpgate, Claude Desktop, Cursor, VS Code)")
	fl.StringArrayVar(&f.entries, "entry", nil, "MCP registry server.json entry to review (repeatable)")
	fl.StringVar(&f.baseline, "baseline", "", "reviewed earlier configuration: settings weaker than it are findings")
	fl.StringVar(&f.endpoint, "endpoint", "", "remote MCP server URL to review")
	fl.StringVar(&f.pins, "pins", "", "tool pin file: the tools each server listed (scope check, servers added)")
	fl.BoolVar(&f.lock, "lock", false, "write "+vet.LockFileName+" with each pinned package's resolved version and integrity")
	fl.StringVar(&f.lockFile, "lock-file", "", "the lock file (default: "+vet.LockFileName+" next to --config)")
	fl.StringVar(&f.sigstoreRoot, "sigstore-root", "", "Sigstore trusted_root.json to verify npm provenance with (default: the public-good root built in)")
	fl.StringVar(&f.profile, "profile", "", `default, or strict: plaintext transport and look-alike names are high (default: the config's "mcpgate.profile", else default)`)
	return cmd
}

func runVet(ctx context.Context, f vetFlags, w io.Writer) error {
	if f.format != "text" && f.format != "json" {
		return fmt.Errorf("vet: --format must be text or json, not %q", f.format)
	}
	if _, err := config.ParseProfile(f.profile); err != nil {
		return fmt.Errorf("vet: --%w", err)
	}
	if f.config == "" && len(f.entries) == 0 && f.endpoint == "" {
		return errors.New("vet: nothing to review: give --config, --entry or --endpoint")
	}
	if (f.baseline != "" || f.lock) && f.config == "" {
		return errors.New("vet: --baseline and --lock need --config")
	}
	in := vet.Input{ConfigFile: f.config, Endpoint: f.endpoint}
	opts := vet.Options{Strict: f.profile == config.ProfileStrict}
	if f.config != "" {
		c, err := readVetConfig(f.config)
		if err != nil {
			return err
		}
		in.Config = c
		if f.profile == "" && c.Profile == config.ProfileStrict {
			opts.Strict = true
		}
		if opts.Severities, err = vetSeverities(c); err != nil {
			return fmt.Errorf("vet: %s: %w", f.config, err)
		}
	}
	if f.baseline != "" {
		b, err := readVetConfig(f.baseline)
		if err != nil {
			return err
		}
		in.Baseline = b
	}
	for _, name := range f.entries {
		b, err := os.ReadFile(name)
		if err != nil {
			return fmt.Errorf("vet: %w", err)
		}
		e, err := vet.ParseEntry(b)
		if err != nil {
			return fmt.Errorf("vet: %s: %w", name, err)
		}
		in.Entries = append(in.Entries, e)
		in.EntryFiles = append(in.EntryFiles, name)
	}
	if f.pins != "" {
		tools, err := pinnedTools(f.pins)
		if err != nil {
			return fmt.Errorf("vet: %w", err)
		}
		in.Tools = tools
		if in.Config != nil {
			if in.Identity, err = pinnedIdentities(ctx, f.pins, in.Config.Servers); err != nil {
				return fmt.Errorf("vet: %w", err)
			}
		}
	}
	if in.Config != nil {
		res, err := vetResolver(f.sigstoreRoot)
		if err != nil {
			return err
		}
		lockPath := f.lockFile
		if lockPath == "" {
			lockPath = filepath.Join(filepath.Dir(f.config), vet.LockFileName)
		}
		if f.lock {
			refs := vet.Lockable(in.Config)
			l, errs := vet.NewLock(refs, res.Resolve(ctx, refs))
			if len(errs) > 0 {
				return fmt.Errorf("vet --lock: %w", errors.Join(errs...))
			}
			if err := vet.WriteLock(lockPath, l); err != nil {
				return fmt.Errorf("vet --lock: %w", err)
			}
			fmt.Fprintf(w, "wrote %s: %s\n", lockPath, plural(len(l.Packages), "package", "packages"))
		}
		l, err := vet.ReadLock(lockPath)
		if err != nil {
			return fmt.Errorf("vet: %w", err)
		}
		if l != nil {
			in.Lock = l
			in.Resolved = res.Resolve(ctx, vet.Lockable(in.Config))
		}
	}
	fs := vet.Run(in, opts)
	if f.format == "json" {
		enc := json.NewEncoder(w)
		for _, fd := range fs {
			if err := enc.Encode(fd); err != nil {
				return err
			}
		}
	} else if err := writeVetText(w, fs); err != nil {
		return err
	}
	switch engine.VerdictFor(vet.Highest(fs)) {
	case engine.Block:
		return exitStatus(exitBlock)
	case engine.Warn:
		return exitStatus(exitWarn)
	}
	return nil
}

// vetResolver is the package resolver of vet and of start-up: the registries from
// the environment, and npm provenance verified against the Sigstore trusted root
// in file ("" for the public-good root built in).
func vetResolver(file string) (vet.Resolver, error) {
	if file == "" {
		tr, err := vet.PublicGoodRoot()
		return vet.Resolver{Trusted: tr}, err
	}
	b, err := os.ReadFile(file)
	if err != nil {
		return vet.Resolver{}, fmt.Errorf("vet: %w", err)
	}
	tr, err := vet.ReadTrustedRoot(b)
	if err != nil {
		return vet.Resolver{}, fmt.Errorf("vet: --sigstore-root %s: %w", file, err)
	}
	return vet.Resolver{Trusted: tr}, nil
}

func readVetConfig(name string) (*vet.Config, error) {
	b, err := os.ReadFile(name)
	if err != nil {
		return nil, fmt.Errorf("vet: %w", err)
	}
	c, err := vet.ParseConfig(b)
	if err != nil {
		return nil, fmt.Errorf("vet: %s: %w", name, err)
	}
	return c, nil
}

// vetSeverities reads the vet rules' overrides from "mcpgate.rules".
func vetSeverities(c *vet.Config) (map[string]engine.Severity, error) {
	m := map[string]engine.Severity{}
	for id, name := range c.Rules {
		if !vet.Known(id) {
			continue
		}
		s, err := engine.ParseSeverity(name)
		if err != nil {
			return nil, fmt.Errorf(`"mcpgate.rules.%s": %w`, id, err)
		}
		m[id] = s
	}
	return m, nil
}

// pinnedTools reads the tool definitions of a pin file, by server.
func pinnedTools(path string) (map[string][]vet.Tool, error) {
	if _, err := os.Stat(path); err != nil {
		return nil, err
	}
	st, err := pins.Open(path)
	if err != nil {
		return nil, err
	}
	ps, err := st.List()
	if err != nil {
		return nil, err
	}
	defs := map[string][]json.RawMessage{}
	for _, p := range ps {
		defs[p.Server] = append(defs[p.Server], p.Definition)
	}
	out := map[string][]vet.Tool{}
	for s, d := range defs {
		out[s] = vet.ToolsFromDefinitions(d)
	}
	return out, nil
}

// identityTLS verifies the certificates of the identity handshakes; nil is the
// system roots (tests trust their own server).
var identityTLS *tls.Config

// pinnedIdentities compares each https url server's TLS key with its pin in the pin
// file at path, read only: a server with no identity pin is left out.
func pinnedIdentities(ctx context.Context, path string, servers []vet.Server) (map[string]vet.IdentityCheck, error) {
	st, err := pins.Open(path)
	if err != nil {
		return nil, err
	}
	ps, err := st.List()
	if err != nil {
		return nil, err
	}
	out := map[string]vet.IdentityCheck{}
	for _, s := range servers {
		if !strings.HasPrefix(strings.ToLower(s.URL), "https://") {
			continue
		}
		for _, p := range ps {
			if p.Server == vet.IdentityServer(s.Name) && p.Tool == vet.IdentityTool {
				out[s.Name] = fetchIdentity(ctx, s.URL, vet.SPKIOf(p.Definition))
			}
		}
	}
	return out, nil
}

func fetchIdentity(ctx context.Context, url, pinned string) vet.IdentityCheck {
	hctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	now, err := vet.FetchSPKI(hctx, url, identityTLS)
	return vet.IdentityCheck{Pinned: pinned, Now: now, Err: err}
}

// identitiesAtStartup pins each https url server's TLS key in the pin store on first
// sight, and on a later change keeps the new key pending (mcpgate pins approve
// 'NAME#identity' tls) and returns both for the finding; seen is the key each server
// presented, which every later connection is compared with (gateway.Server.TLSKey).
func identitiesAtStartup(ctx context.Context, st *pins.Store, servers []vet.Server, log *slog.Logger) (out map[string]vet.IdentityCheck, seen map[string]string) {
	out, seen = map[string]vet.IdentityCheck{}, map[string]string{}
	for _, s := range servers {
		if !strings.HasPrefix(strings.ToLower(s.URL), "https://") {
			continue
		}
		c := fetchIdentity(ctx, s.URL, "")
		if c.Err != nil {
			log.Warn("vet: the server's TLS key could not be read to compare with its pin", "server", s.Name, "error", c.Err.Error())
			continue
		}
		seen[s.Name] = c.Now
		changes, err := st.Check(vet.IdentityServer(s.Name), []json.RawMessage{vet.IdentityDefinition(c.Now)})
		if err != nil {
			log.Warn("vet: identity pin", "server", s.Name, "error", err.Error())
			continue
		}
		if len(changes) == 0 {
			continue
		}
		ps, _ := st.List()
		for _, p := range ps {
			if p.Server == vet.IdentityServer(s.Name) && p.Tool == vet.IdentityTool {
				c.Pinned = vet.SPKIOf(p.Definition)
			}
		}
		out[s.Name] = c
	}
	return out, seen
}

func writeVetText(w io.Writer, fs []vet.Finding) error {
	var b bytes.Buffer
	block, warn := 0, 0
	for _, f := range fs {
		switch {
		case f.Allowed:
		case f.Severity >= engine.SeverityHigh:
			block++
		case f.Severity >= engine.SeverityMedium:
			warn++
		}
	}
	fmt.Fprintf(&b, "vet: %s (%d block-level, %d warn-level)\n", plural(len(fs), "finding", "findings"), block, warn)
	for _, f := range fs {
		where := f.Pointer
		if f.File != "" {
			where = f.File + "#" + f.Pointer
		}
		server := f.Server
		if server == "" {
			server = "-"
		}
		allowed := ""
		if f.Allowed {
			allowed = " (allowed)"
		}
		fmt.Fprintf(&b, "  %-6s %-30s %s  %s%s\n         %s\n", f.Severity, f.RuleID, server, where, allowed, f.Message)
	}
	_, err := w.Write(b.Bytes())
	return err
}

// vetAtStartup runs the vet checks on the servers gateway run is about to start
// (docs/vet.md#startup): each finding is logged with its rule, severity, server and
// pointer, and vetted holds them by server, for one audit record each. With enforce (the strict profile), a server with a block-level finding
// not allowed by "mcpgate.vetAllow" is left out, and the log says how to allow it;
// the others start, under the names they would have had. Leaving out every server
// is an error. A lock next to --config is checked against the npm registry; with a
// pin file (--pins), each https url server's TLS key is pinned and compared, and the
// tools pinned for a server feed the scope check.
func vetAtStartup(ctx context.Context, file *config.Config, configPath, pinsPath string, servers []gateway.Server, enforce bool, log *slog.Logger) (_ []gateway.Server, vetted []pipeline.Vetted, err error) {
	c := &vet.Config{AllowedServers: file.Gate.AllowedServers, Allow: file.Gate.VetAllow, PassEnv: file.Gate.PassEnv}
	for _, s := range servers {
		vs := vet.Server{Name: s.Name, Command: s.Server.Command, Args: s.Server.Args, Env: s.Server.Env, URL: s.Server.URL,
			Headers: s.Server.Headers, Roots: s.Server.Roots}
		if s.Name != "" {
			vs.Pointer = "/mcpServers/" + strings.NewReplacer("~", "~0", "/", "~1").Replace(s.Name)
		}
		if s.Server.OAuth != nil {
			vs.Scopes = s.Server.OAuth.Scopes
		}
		c.Servers = append(c.Servers, vs)
	}
	in := vet.Input{Config: c, ConfigFile: configPath}
	if configPath != "" {
		l, err := vet.ReadLock(filepath.Join(filepath.Dir(configPath), vet.LockFileName))
		if err != nil {
			return nil, nil, err
		}
		if l != nil {
			rctx, cancel := context.WithTimeout(ctx, 30*time.Second)
			res, err := vetResolver("")
			if err != nil {
				cancel()
				return nil, nil, err
			}
			in.Lock, in.Resolved = l, res.Resolve(rctx, vet.Lockable(c))
			cancel()
		}
	}
	if pinsPath != "" {
		st, err := pins.Open(pinsPath)
		if err != nil {
			return nil, nil, err
		}
		var seen map[string]string
		in.Identity, seen = identitiesAtStartup(ctx, st, c.Servers, log)
		for i := range servers { // every later connection is compared with this key
			name := servers[i].Name
			servers[i].TLSKey = seen[name]
			allow := file.Gate.VetAllow[name]
			servers[i].TLSKeyEnforce = enforce && !slices.Contains(allow, vet.RuleIdentityChanged) && !slices.Contains(allow, "*")
		}
		if in.Tools, err = pinnedTools(pinsPath); err != nil && !errors.Is(err, os.ErrNotExist) {
			return nil, nil, err
		}
	}
	fs := vet.Run(in, vet.Options{Strict: enforce, Severities: file.VetSeverities()})
	for _, f := range fs {
		lv := slog.LevelInfo
		if f.Severity >= engine.SeverityMedium && !f.Allowed {
			lv = slog.LevelWarn
		}
		log.Log(ctx, lv, "vet finding", "rule_id", f.RuleID, "severity", f.Severity.String(), "server", f.Server,
			"pointer", f.Pointer, "allowed", f.Allowed, "detail", f.Message)
	}
	var blocked []string
	if enforce {
		blocked = vet.Blocked(fs)
	}
	vetted = vettedByServer(fs, blocked)
	if len(blocked) == 0 {
		return servers, vetted, nil
	}
	var keep []gateway.Server
	for _, s := range servers {
		if !containsString(blocked, s.Name) {
			keep = append(keep, s)
			continue
		}
		var rules []string
		for _, f := range fs {
			if f.Server == s.Name && !f.Allowed && f.Severity >= engine.SeverityHigh && !containsString(rules, f.RuleID) {
				rules = append(rules, f.RuleID)
			}
		}
		allow := fmt.Sprintf(`after review, allow it with "mcpgate": {"vetAllow": {%q: [%q]}} in --config, or fix the finding (mcpgate vet --config FILE shows it)`, s.Name, strings.Join(rules, `", "`))
		if s.Name == "" {
			allow = "after review, start it with --vet-mode report, or fix the finding"
		}
		log.Error("vet: server not started: it has block-level findings", "server", s.Name, "rule_ids", rules, "allow", allow)
	}
	if len(keep) == 0 {
		if configPath == "" {
			return nil, nil, errors.New(`vet: the server after -- has block-level findings (logged above) and was not started; fix them, or after review start it with --vet-mode report`)
		}
		return nil, nil, fmt.Errorf("vet: every server has block-level findings and none was started (%s); mcpgate vet --config %s shows them", strings.Join(blocked, ", "), configPath)
	}
	if len(keep) < len(servers) && len(servers) > 1 {
		file.Gate.PrefixNames = true // the servers left keep their <server>_ prefix
	}
	return keep, vetted, nil
}

// vettedByServer groups findings by server, in the order each server first appears;
// a server named in blocked was left out.
func vettedByServer(fs []vet.Finding, blocked []string) []pipeline.Vetted {
	var out []pipeline.Vetted
	at := map[string]int{}
	for _, f := range fs {
		i, ok := at[f.Server]
		if !ok {
			i = len(out)
			at[f.Server] = i
			out = append(out, pipeline.Vetted{Server: f.Server, LeftOut: containsString(blocked, f.Server)})
		}
		out[i].Findings = append(out[i].Findings, f)
	}
	return out
}

func containsString(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}
