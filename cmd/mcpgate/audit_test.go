package main

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/spf13/pflag"

	"github.com/mcpgate/mcpgate/internal/audit"
	"github.com/mcpgate/mcpgate/internal/config"
	"github.com/mcpgate/mcpgate/internal/vocab"
)

var update = flag.Bool("update", false, "rewrite cmd/mcpgate/testdata/*.golden")

// auditStores writes the same six records to a SQLite store and a JSONL file (with a
// log line mixed in, as on a captured stderr).
func auditStores(t *testing.T) (db, file string) {
	t.Helper()
	dir := t.TempDir()
	db, file = filepath.Join(dir, "audit.db"), filepath.Join(dir, "audit.jsonl")
	st, err := audit.OpenSQLite(db)
	if err != nil {
		t.Fatal(err)
	}
	var jsonl bytes.Buffer
	jsonl.WriteString(`{"time":"2026-11-29T10:00:00Z","level":"INFO","msg":"policies loaded"}` + "\n")
	js := audit.NewJSONL(&jsonl)
	for i, a := range []vocab.Action{"pass", "warn", "redact", "mask", "block", "redact"} {
		tool := []string{"get_forecast", "customer_profile_get", "read_build_log"}[i%3]
		r := &audit.Record{
			TS: time.Date(2026, 11, 29, 10, i, 0, 0, time.UTC).Format(audit.TSLayout), Kind: audit.KindGateway,
			EventID: fmt.Sprintf("00000000-0000-4000-8000-%012d", i), ActionTaken: a, Blocked: a == "block",
			Tool: tool, Outcome: "ok", ElapsedMS: float64(i) + 0.25, RuleIDs: []string{}, GuardrailsTriggered: []string{},
		}
		if a != "pass" {
			r.GuardrailsTriggered = []string{"tool_output_sanitization"}
		}
		st.Write(r)
		js.Write(r)
	}
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(file, jsonl.Bytes(), 0o600)
	return db, file
}

// TestAuditCommand pins `mcpgate audit` output against golden files for both stores
// (they must print the same), and its usage errors.
func TestAuditCommand(t *testing.T) {
	db, file := auditStores(t)
	for _, tc := range []struct {
		name   string
		args   []string
		golden string
		code   int
		errHas string
	}{
		{"table", []string{"--limit", "10"}, "audit-table.golden", 0, ""},
		{"redact", []string{"--status", "redact"}, "audit-redact.golden", 0, ""},
		{"tool json", []string{"--tool", "customer_profile_get", "--status", "block", "--format", "json"}, "audit-tool.json.golden", 0, ""},
		{"bad status", []string{"--status", "allow"}, "", 1, "status \"allow\""},
		{"bad format", []string{"--format", "yaml"}, "", 1, "--format"},
		{"bad since", []string{"--since", "tomorrow"}, "", 1, "since"},
	} {
		for _, src := range [][]string{{"--db", db}, {"--file", file}} {
			t.Run(tc.name+src[0], func(t *testing.T) {
				var out, errb bytes.Buffer
				code := run(context.Background(), append(append([]string{"audit"}, src...), tc.args...), nil, &out, &errb)
				if code != tc.code || !strings.Contains(errb.String(), tc.errHas) {
					t.Fatalf("exit %d, stderr %q; want %d with %q", code, errb.String(), tc.code, tc.errHas)
				}
				if tc.golden != "" {
					auditGolden(t, tc.golden, out.Bytes())
				}
			})
		}
	}
	var out, errb bytes.Buffer
	if code := run(context.Background(), []string{"audit"}, nil, &out, &errb); code != 1 || !strings.Contains(errb.String(), "--db PATH or --file PATH") {
		t.Errorf("no source: exit %d %q", code, errb.String())
	}
	if code := run(context.Background(), []string{"audit", "--db", db, "--file", file}, nil, &out, &errb); code != 1 {
		t.Errorf("both sources: exit %d", code)
	}
	if code := run(context.Background(), []string{"audit", "--db", file}, nil, &out, &errb); code != 1 {
		t.Errorf("a JSONL file as --db: exit %d", code)
	}
}

func auditGolden(t *testing.T, name string, got []byte) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *update {
		os.WriteFile(path, got, 0o644)
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (refresh with: make golden)", err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("%s differs:\ngot:\n%s\nwant:\n%s", name, got, want)
	}
}

// TestTelemetrySinks proves how flags and "mcpgate.audit" choose the sinks: nothing
// set keeps the gateway's default, unknown config keys and a rotation without a file
// are errors, and a DB adds a SQLite sink beside the JSONL stream.
func TestTelemetrySinks(t *testing.T) {
	dir := t.TempDir()
	for _, tc := range []struct {
		name   string
		flags  []string
		audit  string
		sinks  int
		sqlite bool
		errHas string
	}{
		{name: "default", sinks: 0},
		{name: "db flag", flags: []string{"--audit-db", filepath.Join(dir, "a.db")}, sinks: 2, sqlite: true},
		{name: "db config", audit: `{"db": "` + filepath.Join(dir, "b.db") + `"}`, sinks: 2, sqlite: true},
		{name: "rotating file", flags: []string{"--audit-file", filepath.Join(dir, "a.jsonl"), "--audit-rotate-mb", "10"}, sinks: 1},
		{name: "config file", audit: `{"file": "` + filepath.Join(dir, "c.jsonl") + `", "rotateMB": 5, "keep": 2}`, sinks: 1},
		{name: "unknown key", audit: `{"path": "x"}`, errHas: `unknown field "path"`},
		{name: "rotate without file", flags: []string{"--audit-rotate-mb", "10"}, errHas: "give the file too"},
		{name: "bad db dir", flags: []string{"--audit-db", filepath.Join(dir, "no", "a.db")}, errHas: "--audit-db"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fl := pflag.NewFlagSet("t", pflag.ContinueOnError)
			var auditFile string
			fl.StringVar(&auditFile, "audit-file", "", "")
			var tf telemetryFlags
			tf.register(fl)
			if err := fl.Parse(tc.flags); err != nil {
				t.Fatal(err)
			}
			cfg := config.Default()
			cfg.Gate.Audit = []byte(tc.audit)
			sinks, err := tf.sinks(cfg, &bytes.Buffer{}, slog.New(slog.DiscardHandler))
			for _, s := range sinks {
				defer s.Close()
			}
			if tc.errHas != "" {
				if err == nil || !strings.Contains(err.Error(), tc.errHas) {
					t.Fatalf("err = %v, want %q", err, tc.errHas)
				}
				return
			}
			if err != nil || len(sinks) != tc.sinks || (tf.st.sqlite != nil) != tc.sqlite {
				t.Fatalf("%d sinks (sqlite %v), %v; want %d", len(sinks), tf.st.sqlite != nil, err, tc.sinks)
			}
		})
	}
}
