package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"os"
	"time"

	"github.com/spf13/pflag"

	"github.com/mcpgate/mcpgate/internal/admin"
	"github.com/mcpgate/mcpgate/internal/audit"
	"github.com/mcpgate/mcpgate/internal/config"
)

// auditConfig is "mcpgate": {"audit": {...}} in --config. Flags win over it.
type auditConfig struct {
	File     string `json:"file,omitempty"`     // JSONL file instead of stderr (--audit-file)
	RotateMB int    `json:"rotateMB,omitempty"` // rotate File past this many MB (--audit-rotate-mb)
	Keep     int    `json:"keep,omitempty"`     // rotated files kept (--audit-keep)
	DB       string `json:"db,omitempty"`       // SQLite store, in addition to the JSONL stream (--audit-db)
	Ring     int    `json:"ring,omitempty"`     // records the console keeps in memory without a DB (--audit-ring)
}

// adminConfig is "mcpgate": {"admin": {...}} in --config.
type adminConfig struct {
	Listen       string   `json:"listen,omitempty"`       // --admin
	Token        string   `json:"token,omitempty"`        // bearer token; MCPGATE_ADMIN_TOKEN wins
	TokenSHA256  string   `json:"tokenSHA256,omitempty"`  // or its sha256 hex, so the file holds no secret
	AllowedHosts []string `json:"allowedHosts,omitempty"` // extra Host/Origin names (--admin-allow-host)
}

// telemetryFlags are the audit-sink and admin-listener flags of gateway run (docs/telemetry.md).
// gatewayFlags is copied by value, so the state lives behind a pointer that
// register allocates.
type telemetryFlags struct{ st *telemetryState }

type telemetryState struct {
	fl         *pflag.FlagSet
	admin      string
	allowHosts []string
	db         string
	rotateMB   int
	keep       int
	ring       int

	audit  auditConfig   // merged flags over config, set by sinks
	sqlite *audit.SQLite // the SQLite sink, when configured: the console reads it
}

func (t *telemetryFlags) register(fl *pflag.FlagSet) {
	t.st = &telemetryState{fl: fl}
	s := t.st
	fl.StringVar(&s.admin, "admin", "", "serve the audit console, /api/audit and /metrics on ADDR (e.g. 127.0.0.1:9464); off loopback it needs MCPGATE_ADMIN_TOKEN")
	fl.StringSliceVar(&s.allowHosts, "admin-allow-host", nil, "extra host name the admin listener accepts in Host/Origin (besides localhost, 127.0.0.1, ::1)")
	fl.StringVar(&s.db, "audit-db", "", "also store audit records in this SQLite file (read it with mcpgate audit --db)")
	fl.IntVar(&s.rotateMB, "audit-rotate-mb", 0, "rotate --audit-file when it passes N megabytes (0: never)")
	fl.IntVar(&s.keep, "audit-keep", 5, "rotated audit files to keep with --audit-rotate-mb (0: keep all)")
	fl.IntVar(&s.ring, "audit-ring", 1000, "records the admin console keeps in memory when there is no --audit-db")
}

// decodeStrict decodes a "mcpgate.<key>" object, refusing unknown fields.
func decodeStrict(raw json.RawMessage, key string, v any) error {
	if len(raw) == 0 || string(raw) == "null" {
		return nil
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return fmt.Errorf(`config "mcpgate.%s": %w`, key, err)
	}
	return nil
}

// sinks returns the audit sinks chosen by flags or configuration; nil means the
// default JSONL on stderr (or --audit-file).
func (t *telemetryFlags) sinks(cfg *config.Config, stderr io.Writer, log *slog.Logger) ([]audit.Sink, error) {
	s := t.st
	a := &s.audit
	if err := decodeStrict(cfg.Gate.Audit, "audit", a); err != nil {
		return nil, err
	}
	if f := s.fl.Lookup("audit-file"); f != nil && f.Changed {
		a.File = f.Value.String()
	}
	if s.fl.Changed("audit-db") || a.DB == "" {
		a.DB = s.db
	}
	if s.fl.Changed("audit-rotate-mb") || a.RotateMB == 0 {
		a.RotateMB = s.rotateMB
	}
	if s.fl.Changed("audit-keep") || a.Keep == 0 {
		a.Keep = s.keep
	}
	if s.fl.Changed("audit-ring") || a.Ring == 0 {
		a.Ring = s.ring
	}
	switch {
	case a.RotateMB < 0 || a.Keep < 0 || a.Ring < 1:
		return nil, fmt.Errorf("--audit-rotate-mb, --audit-keep and --audit-ring must not be negative (ring ≥ 1)")
	case a.RotateMB > 0 && a.File == "":
		return nil, fmt.Errorf("--audit-rotate-mb rotates --audit-file: give the file too")
	}
	if a.File == "" && a.DB == "" {
		return nil, nil // the gateway's default: JSONL on stderr
	}

	var out []audit.Sink
	switch {
	case a.File != "" && a.RotateMB > 0:
		js, err := audit.NewRotatingFile(a.File, a.RotateMB, a.Keep)
		if err != nil {
			return nil, fmt.Errorf("--audit-file: %w", err)
		}
		out = append(out, js)
	case a.File != "":
		f, err := os.OpenFile(a.File, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
		if err != nil {
			return nil, fmt.Errorf("--audit-file: %w", err)
		}
		out = append(out, audit.NewJSONL(f))
	default:
		out = append(out, audit.NewJSONL(stderr))
	}
	if a.DB != "" {
		db, err := audit.OpenSQLite(a.DB)
		if err != nil {
			for _, o := range out {
				o.Close()
			}
			return nil, fmt.Errorf("--audit-db: %w", err)
		}
		s.sqlite = db
		out = append(out, db)
		log.Info("audit records stored in SQLite", "path", a.DB)
	}
	return out, nil
}

// serve starts the admin listener when one is configured; stop shuts it down.
func (t *telemetryFlags) serve(ctx context.Context, d *gatewayDeps) (stop func(), err error) {
	s := t.st
	var ac adminConfig
	if err := decodeStrict(d.cfg.Gate.Admin, "admin", &ac); err != nil {
		return nil, err
	}
	addr := ac.Listen
	if s.admin != "" {
		addr = s.admin
	}
	if addr == "" {
		return func() {}, nil
	}
	tok, tokHash := ac.Token, ac.TokenSHA256
	if env := os.Getenv("MCPGATE_ADMIN_TOKEN"); env != "" {
		tok, tokHash = env, ""
	}
	var store audit.Store
	var ring *audit.Ring
	if s.sqlite != nil {
		store = s.sqlite
	} else {
		ring = audit.NewRing(max(s.audit.Ring, s.ring, 1))
		store = ring
	}
	gateStatus := func() admin.GateStatus {
		st := d.gate.Status()
		return admin.GateStatus{Generation: st.Generation, LastError: st.LastError, LoadedAt: st.LoadedAt}
	}
	metrics := admin.NewMetrics(gateStatus, d.emitter.Stats)
	prev := d.pipe.Observe
	d.pipe.Observe = func(r *audit.Record) {
		if ring != nil {
			ring.Add(r)
		}
		metrics.Observe(r)
		if prev != nil {
			prev(r)
		}
	}
	srv, err := admin.New(admin.Options{
		Addr: addr, Token: tok, TokenSHA256: tokHash,
		AllowedHosts: append(ac.AllowedHosts, s.allowHosts...),
		Store:        store, Metrics: metrics, Logger: d.log,
		Status: func() any {
			return map[string]any{"policies": d.gate.Status(), "audit": d.emitter.Stats()}
		},
	})
	if err != nil {
		d.pipe.Observe = prev
		return nil, err
	}
	src := "memory (last records)"
	if s.sqlite != nil {
		src = "sqlite"
	}
	d.log.Info("admin listener started", "admin_addr", srv.Addr(), "console", "http://"+srv.Addr()+"/", "store", src, "token", tok != "" || tokHash != "")
	return func() {
		cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 2*time.Second)
		defer cancel()
		_ = srv.Close(cctx)
	}, nil
}
