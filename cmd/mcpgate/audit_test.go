package main

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/spf13/pflag"

	"github.com/mcpgate/mcpgate/internal/audit"
	"github.com/mcpgate/mcpgate/internal/config"
	"github.com/mcpgate/mcpgate/internal/gateway"
	"github.com/mcpgate/mcpgate/vocab"
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
		if i%2 == 1 {
			r.Caller = &audit.Caller{UserID: "alice", CallerID: "claude-code", CallerClass: "trusted"}
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
		{"redacted label", []string{"--status", "redacted"}, "audit-redact.golden", 0, ""},
		{"tool json", []string{"--tool", "customer_profile_get", "--status", "block", "--format", "json"}, "audit-tool.json.golden", 0, ""},
		{"caller", []string{"--caller", "claude-code"}, "audit-caller.golden", 0, ""},
		{"caller by user", []string{"--caller", "alice"}, "audit-caller.golden", 0, ""},
		{"caller too long", []string{"--caller", strings.Repeat("a", 300)}, "", 1, "caller is 300 bytes long"},
		{"bad status", []string{"--status", "allow"}, "", 1, "status \"allow\""},
		{"bad format", []string{"--format", "yaml"}, "", 1, "--format"},
		{"bad since", []string{"--since", "tomorrow"}, "", 1, "since"},
	} {
		for _, src := range [][]string{{"--db", db}, {"--file", file}, {"--audit-db", db}, {"--audit-file", file}} {
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
// are errors, a flag wins over the key, and a DB adds a SQLite store.
func TestTelemetrySinks(t *testing.T) {
	dir := t.TempDir()
	for _, tc := range []struct {
		name   string
		flags  []string
		audit  string
		want   config.Audit
		sqlite string // the store file New must create
		errHas string
	}{
		{name: "default", want: config.Audit{Keep: 5, Ring: 1000}},
		{name: "db flag", flags: []string{"--audit-db", filepath.Join(dir, "a.db")}, want: config.Audit{DB: filepath.Join(dir, "a.db"), Keep: 5, Ring: 1000}, sqlite: filepath.Join(dir, "a.db")},
		{name: "db config", audit: `{"db": "` + filepath.Join(dir, "b.db") + `"}`, want: config.Audit{DB: filepath.Join(dir, "b.db"), Keep: 5, Ring: 1000}, sqlite: filepath.Join(dir, "b.db")},
		{name: "flag wins", flags: []string{"--audit-keep", "9"}, audit: `{"keep": 2, "ring": 7}`, want: config.Audit{Keep: 9, Ring: 7}},
		{name: "rotating file", flags: []string{"--audit-file", filepath.Join(dir, "a.jsonl"), "--audit-rotate-mb", "10"}, want: config.Audit{File: filepath.Join(dir, "a.jsonl"), RotateMB: 10, Keep: 5, Ring: 1000}},
		{name: "config file", audit: `{"file": "` + filepath.Join(dir, "c.jsonl") + `", "rotateMB": 5, "keep": 2}`, want: config.Audit{File: filepath.Join(dir, "c.jsonl"), RotateMB: 5, Keep: 2, Ring: 1000}},
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
			check := func(err error) bool {
				t.Helper()
				if tc.errHas != "" {
					if err == nil || !strings.Contains(err.Error(), tc.errHas) {
						t.Fatalf("err = %v, want %q", err, tc.errHas)
					}
					return false
				}
				if err != nil {
					t.Fatal(err)
				}
				return true
			}
			cfg, err := config.Parse([]byte(`{"mcpgate": {"audit": ` + cmp.Or(tc.audit, "{}") + `}}`))
			if err != nil {
				check(err)
				return
			}
			a := tf.audit(cfg.Gate.Audit, auditFile)
			if tc.errHas == "" && !reflect.DeepEqual(a, tc.want) {
				t.Fatalf("audit %+v, want %+v", a, tc.want)
			}
			g, err := gateway.New(context.Background(), gateway.Config{File: cfg, Audit: a, Stderr: &bytes.Buffer{}, Logger: slog.New(slog.DiscardHandler)})
			if !check(err) {
				return
			}
			g.Close()
			if tc.sqlite != "" {
				if _, err := os.Stat(tc.sqlite); err != nil {
					t.Fatalf("no SQLite store: %v", err)
				}
			}
		})
	}
}

// TestAuditShow: audit show finds the record a notice cites in either store, with
// the store flags before or after "show", as text (golden) or JSON; an id with no
// record, or no id, is exit 1 with a message saying which.
func TestAuditShow(t *testing.T) {
	db, file := auditStores(t)
	const id = "00000000-0000-4000-8000-000000000003"
	for _, argv := range [][]string{
		{"audit", "show", "--db", db, id}, {"audit", "--db", db, "show", id},
		{"audit", "show", "--file", file, id}, {"audit", "--audit-file", file, "show", id},
	} {
		var out, errb bytes.Buffer
		if code := run(context.Background(), argv, nil, &out, &errb); code != 0 {
			t.Fatalf("%q: exit %d: %s", argv, code, errb.String())
		}
		auditGolden(t, "audit-show.golden", out.Bytes())
	}
	var out, errb bytes.Buffer
	if code := run(context.Background(), []string{"audit", "show", "--db", db, "--format", "json", id}, nil, &out, &errb); code != 0 {
		t.Fatalf("json: exit %d: %s", code, errb.String())
	}
	var r audit.Record
	if err := json.Unmarshal(out.Bytes(), &r); err != nil || r.EventID != id || r.Caller == nil || r.Caller.UserID != "alice" {
		t.Fatalf("json: %v %+v", err, r)
	}
	for _, tc := range []struct {
		argv   []string
		errHas string
	}{
		{[]string{"audit", "show", "--db", db, "00000000-0000-4000-8000-000000000099"}, `no record "00000000-0000-4000-8000-000000000099" in ` + db},
		{[]string{"audit", "show", "--file", file, "nope"}, `no record "nope"`},
		{[]string{"audit", "show", "--db", db}, "want one EVENT_ID"},
		{[]string{"audit", "show", id}, "--db PATH or --file PATH"},
	} {
		out.Reset()
		errb.Reset()
		if code := run(context.Background(), tc.argv, nil, &out, &errb); code != exitError || !strings.Contains(errb.String(), tc.errHas) {
			t.Errorf("%q: exit %d, stderr %q; want 1 with %q", tc.argv, code, errb.String(), tc.errHas)
		}
	}
}
