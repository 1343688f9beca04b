package main

import (
	"os"
	"slices"

	"github.com/spf13/pflag"

	"github.com/mcpgate/mcpgate/internal/config"
)

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
	otlp       string
}

func (t *telemetryFlags) register(fl *pflag.FlagSet) {
	t.st = &telemetryState{fl: fl}
	s := t.st
	fl.StringVar(&s.admin, "admin", "", "serve the audit console, /api/audit and /metrics on ADDR (e.g. 127.0.0.1:9464); off loopback it needs MCPGATE_ADMIN_TOKEN")
	fl.StringSliceVar(&s.allowHosts, "admin-allow-host", nil, "extra host name the admin listener accepts in Host/Origin (besides localhost, 127.0.0.1, ::1)")
	fl.StringVar(&s.db, "audit-db", "", "also store audit records in this SQLite file, or in PostgreSQL shared by replicas (postgres://USER:PASS@HOST:PORT/DB); read it with mcpgate audit --db")
	fl.StringVar(&s.otlp, "audit-otlp", "", "also export audit records as OpenTelemetry logs over OTLP/HTTP to this collector (e.g. http://127.0.0.1:4318)")
	fl.IntVar(&s.rotateMB, "audit-rotate-mb", 0, "rotate --audit-file when it passes N megabytes (0: never)")
	fl.IntVar(&s.keep, "audit-keep", 5, "rotated audit files to keep with --audit-rotate-mb (0: keep all)")
	fl.IntVar(&s.ring, "audit-ring", 1000, "records the admin console keeps in memory when there is no --audit-db")
}

// audit merges the audit flags over the configuration's "audit" key: a flag the
// user set wins, and a key left unset takes the flag's default.
func (t *telemetryFlags) audit(a config.Audit, auditFile string) config.Audit {
	s := t.st
	if s.fl.Changed("audit-file") || a.File == "" {
		a.File = auditFile
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
	if s.fl.Changed("audit-otlp") || a.OTLP == "" {
		a.OTLP = s.otlp
	}
	return a
}

// admin merges the admin flags and MCPGATE_ADMIN_TOKEN over the configuration's
// "admin" key.
func (t *telemetryFlags) admin(a config.Admin) config.Admin {
	s := t.st
	if s.admin != "" {
		a.Listen = s.admin
	}
	if env := os.Getenv("MCPGATE_ADMIN_TOKEN"); env != "" {
		a.Token, a.TokenSHA256 = env, ""
	}
	a.AllowedHosts = append(slices.Clone(a.AllowedHosts), s.allowHosts...)
	return a
}
