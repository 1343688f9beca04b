package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/spf13/cobra"

	"github.com/mcpgate/mcpgate/internal/admin"
	"github.com/mcpgate/mcpgate/internal/audit"
)

func init() { subcommands = append(subcommands, newAuditCmd) }

// auditFlags are the flags of `mcpgate audit`.
type auditFlags struct {
	db, file                   string
	status, tool, since, limit string
	method                     string
	format                     string
	shadowDiffers              bool
}

func newAuditCmd() *cobra.Command {
	var f auditFlags
	cmd := &cobra.Command{
		Use:   "audit (--db PATH | --file PATH) [flags]",
		Short: "Read stored audit records, newest first",
		Long: `Read the audit records a gateway stored: a SQLite or PostgreSQL store (gateway run
--audit-db; PostgreSQL holds every replica's records, each naming its replica) or a
JSONL stream (gateway run --audit-file, or a captured stderr; log lines are skipped).
Records are listed newest first. The status is the call's final action on the ladder
pass < warn < redact = mask < block, so a redacted call reads REDACTED, never PASS, and an output block reads BLOCKED.

Records hold tool names, actions, rule ids, reasons and timings: never an argument
or any text of a result.

The gateway's admin listener (--admin ADDR) answers the same filters at
GET /api/audit?status=redact&tool=NAME&method=METHOD&since=1h&limit=100.

Exit status: 0 when the store was read (even with no match), 1 on a usage or I/O error.`,
		Example: `  # what did mcpgate redact in the last day?
  mcpgate audit --db /var/lib/mcpgate/audit.db --status redact --since 24h
  mcpgate audit --db postgres://mcpgate:PASS@db.internal:5432/mcpgate --since 7d --status redact

  # the last 20 blocks of one tool, as JSON
  mcpgate audit --db audit.db --status block --tool read_file --limit 20 --format json

  # what reached the agent outside tool calls: resources, prompts, sampling
  mcpgate audit --db audit.db --method resources/read --status block

  # a JSONL file, or stderr piped in
  mcpgate audit --file /var/log/mcpgate/audit.jsonl --status mask
  mcpgate gateway run -- node server.mjs 2>&1 >/dev/null | mcpgate audit --file -`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runAudit(cmd, f, cmd.InOrStdin(), cmd.OutOrStdout())
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&f.db, "db", "", "audit store written by gateway run --audit-db: a SQLite file or postgres://USER:PASS@HOST:PORT/DB")
	fl.StringVar(&f.db, "audit-db", "", "the same as --db, as gateway run spells it")
	fl.StringVar(&f.file, "file", "", `JSONL audit file written by gateway run --audit-file ("-" reads stdin)`)
	fl.StringVar(&f.file, "audit-file", "", "the same as --file, as gateway run spells it")
	fl.StringVar(&f.status, "status", "", "only this final action: pass, warn, redact, mask or block (or the table's label: REDACTED, MASKED, …)")
	fl.StringVar(&f.tool, "tool", "", "only this tool (exact name, as the client sees it)")
	fl.StringVar(&f.method, "method", "", "only this JSON-RPC method (tools/call, tools/list, resources/read, prompts/get, sampling/createMessage, notifications/message, …)")
	fl.StringVar(&f.since, "since", "", "only records newer than this duration ago (e.g. 90m, 24h, 7d)")
	fl.StringVar(&f.limit, "limit", "100", fmt.Sprintf("newest N records (1..%d)", audit.MaxLimit))
	fl.BoolVar(&f.shadowDiffers, "shadow-differs", false, "only calls where the --shadow candidate set decided otherwise (shadow.differs)")
	fl.StringVar(&f.format, "format", "table", "output: table or json (the /api/audit body: records and counts)")
	cmd.MarkFlagsMutuallyExclusive("db", "file")
	return cmd
}

func runAudit(cmd *cobra.Command, f auditFlags, stdin io.Reader, stdout io.Writer) error {
	if f.db == "" && f.file == "" {
		return errors.New("audit: give --db PATH or --file PATH")
	}
	if f.format != "table" && f.format != "json" {
		return fmt.Errorf("audit: --format %q: want table or json", f.format)
	}
	filter, err := audit.ParseFilter(f.status, f.tool, f.since, f.limit, time.Now())
	if err != nil {
		return fmt.Errorf("audit: %w", err)
	}
	filter.ShadowDiffers = f.shadowDiffers
	filter.Method = f.method
	var res admin.AuditResponse
	if f.db != "" {
		var st interface {
			audit.Store
			Close() error
		}
		if audit.IsPostgres(f.db) {
			st, err = audit.OpenPostgresReader(cmd.Context(), f.db)
		} else {
			st, err = audit.OpenSQLiteReader(f.db)
		}
		if err != nil {
			return err
		}
		defer st.Close()
		if res.Records, err = st.Query(cmd.Context(), filter); err != nil {
			return err
		}
		if res.Counts, err = st.Count(cmd.Context(), filter); err != nil {
			return err
		}
	} else {
		r := stdin
		if f.file != "-" {
			file, err := os.Open(f.file)
			if err != nil {
				return fmt.Errorf("audit: %w", err)
			}
			defer file.Close()
			r = file
		}
		if res.Records, res.Counts, err = audit.ReadJSONL(r, filter); err != nil {
			return err
		}
	}
	if f.format == "json" {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(res)
	}
	if err := audit.WriteTable(stdout, res.Records); err != nil {
		return err
	}
	c := res.Counts
	_, err = fmt.Fprintf(stdout, "\n%d shown; in scope %d: %d pass, %d warn, %d redacted, %d masked, %d blocked\n",
		len(res.Records), c.Total, c.Pass, c.Warn, c.Redact, c.Mask, c.Block)
	return err
}
