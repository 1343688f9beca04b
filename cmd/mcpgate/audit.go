package main

import (
	"cmp"
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
	method, caller             string
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

--caller NAME keeps the calls of one caller: its user id or its caller id (the
CALLER column shows both, as "user (caller)"). mcpgate audit show ID prints the one
record a notice cites ("see audit log entry ID") with every field.

The gateway's admin listener (--admin ADDR) answers the same filters at
GET /api/audit?status=redact&tool=NAME&method=METHOD&caller=NAME&since=1h&limit=100.

Exit status: 0 when the store was read (even with no match), 1 on a usage or I/O error.`,
		Example: `  # what did mcpgate redact in the last day?
  mcpgate audit --db /var/lib/mcpgate/audit.db --status redact --since 24h
  mcpgate audit --db postgres://mcpgate:PASS@db.internal:5432/mcpgate --since 7d --status redact

  # the last 20 blocks of one tool, as JSON
  mcpgate audit --db audit.db --status block --tool read_file --limit 20 --format json

  # what reached the agent outside tool calls: resources, prompts, sampling
  mcpgate audit --db audit.db --method resources/read --status block

  # what did one agent do today? and the record a notice cited
  mcpgate audit --db audit.db --caller ci-bot --since 24h
  mcpgate audit show --db audit.db 0b6c2f1e-…

  # a JSONL file, or stderr piped in
  mcpgate audit --file /var/log/mcpgate/audit.jsonl --status mask
  mcpgate gateway run -- node server.mjs 2>&1 >/dev/null | mcpgate audit --file -`,
		// An argument can only be a mistyped subcommand ("audit shwo ID").
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) > 0 {
				return &unknownCommandError{cmd: cmd, name: args[0]}
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runAudit(cmd, f, cmd.InOrStdin(), cmd.OutOrStdout())
		},
	}
	// The store flags are persistent: audit show reads them too.
	pf := cmd.PersistentFlags()
	pf.StringVar(&f.db, "db", "", "audit store written by gateway run --audit-db: a SQLite file or postgres://USER:PASS@HOST:PORT/DB")
	pf.StringVar(&f.db, "audit-db", "", "the same as --db, as gateway run spells it")
	pf.StringVar(&f.file, "file", "", `JSONL audit file written by gateway run --audit-file ("-" reads stdin)`)
	pf.StringVar(&f.file, "audit-file", "", "the same as --file, as gateway run spells it")
	fl := cmd.Flags()
	fl.StringVar(&f.status, "status", "", "only this final action: pass, warn, redact, mask or block (or the table's label: REDACTED, MASKED, …)")
	fl.StringVar(&f.tool, "tool", "", "only this tool (exact name, as the client sees it)")
	fl.StringVar(&f.caller, "caller", "", "only this caller: its user id or its caller id, exactly (the CALLER column)")
	fl.StringVar(&f.method, "method", "", "only this JSON-RPC method (tools/call, tools/list, resources/read, prompts/get, sampling/createMessage, notifications/message, …)")
	fl.StringVar(&f.since, "since", "", "only records newer than this duration ago (e.g. 90m, 24h, 7d)")
	fl.StringVar(&f.limit, "limit", "100", fmt.Sprintf("newest N records (1..%d)", audit.MaxLimit))
	fl.BoolVar(&f.shadowDiffers, "shadow-differs", false, "only calls where the --shadow candidate set decided otherwise (shadow.differs)")
	fl.StringVar(&f.format, "format", "table", "output: table or json (the /api/audit body: records and counts)")
	cmd.MarkFlagsMutuallyExclusive("db", "file")
	cmd.AddCommand(newAuditShowCmd(&f))
	return cmd
}

func newAuditShowCmd(f *auditFlags) *cobra.Command {
	var format string
	cmd := &cobra.Command{
		Use:   "show (--db PATH | --file PATH) EVENT_ID",
		Short: "Print the one audit record a notice cites, with every field",
		Long: `Every text mcpgate puts in front of the agent ends with "see audit log entry
EVENT_ID". show finds that record in the store (--db) or the JSONL file (--file) and
prints each of its fields, one per line: what was decided, why (reason, policy,
rules), for whom (caller), where (server, tool, method) and how long each stage took.
Like every record, it holds no argument value and no text of a result.

Exit status: 0 when the record was found, 1 when it was not or the store cannot be read.`,
		Example: `  mcpgate audit show --db /var/lib/mcpgate/audit.db 0b6c2f1e-4d0a-4c1e-9a52-6f0e2b8d9c11
  mcpgate audit show --file /var/log/mcpgate/audit.jsonl --format json 0b6c2f1e-4d0a-4c1e-9a52-6f0e2b8d9c11`,
		Args: func(_ *cobra.Command, args []string) error {
			if len(args) != 1 {
				return fmt.Errorf("audit show: want one EVENT_ID (the id in \"see audit log entry …\"), got %d arguments", len(args))
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			if format != "text" && format != "json" {
				return fmt.Errorf("audit show: --format %q: want text or json", format)
			}
			var filter audit.Filter
			if err := filter.SetCaller("", args[0]); err != nil {
				return fmt.Errorf("audit show: %w", err)
			}
			filter.Limit = 1
			res, err := readAudit(cmd, *f, filter, cmd.InOrStdin())
			if err != nil {
				return err
			}
			if len(res.Records) == 0 {
				return fmt.Errorf("audit show: no record %q in %s", args[0], cmp.Or(f.db, f.file))
			}
			if format == "json" {
				enc := json.NewEncoder(cmd.OutOrStdout())
				enc.SetIndent("", "  ")
				return enc.Encode(res.Records[0])
			}
			return audit.WriteRecord(cmd.OutOrStdout(), &res.Records[0])
		},
	}
	cmd.Flags().StringVar(&format, "format", "text", "output: text (one field a line) or json (the record as stored)")
	return cmd
}

func runAudit(cmd *cobra.Command, f auditFlags, stdin io.Reader, stdout io.Writer) error {
	if f.format != "table" && f.format != "json" {
		return fmt.Errorf("audit: --format %q: want table or json", f.format)
	}
	filter, err := audit.ParseFilter(f.status, f.tool, f.since, f.limit, time.Now())
	if err != nil {
		return fmt.Errorf("audit: %w", err)
	}
	filter.ShadowDiffers = f.shadowDiffers
	filter.Method = f.method
	if err := filter.SetCaller(f.caller, ""); err != nil {
		return fmt.Errorf("audit: %w", err)
	}
	res, err := readAudit(cmd, f, filter, stdin)
	if err != nil {
		return err
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

// readAudit runs filter over the store of --db or the JSONL of --file.
func readAudit(cmd *cobra.Command, f auditFlags, filter audit.Filter, stdin io.Reader) (admin.AuditResponse, error) {
	var res admin.AuditResponse
	var err error
	if f.db == "" && f.file == "" {
		return res, errors.New("audit: give --db PATH or --file PATH")
	}
	if f.db != "" && f.file != "" {
		return res, errors.New("audit: give --db or --file, not both")
	}
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
			return res, err
		}
		defer st.Close()
		if res.Records, err = st.Query(cmd.Context(), filter); err != nil {
			return res, err
		}
		if res.Counts, err = st.Count(cmd.Context(), filter); err != nil {
			return res, err
		}
	} else {
		r := stdin
		if f.file != "-" {
			file, err := os.Open(f.file)
			if err != nil {
				return res, fmt.Errorf("audit: %w", err)
			}
			defer file.Close()
			r = file
		}
		if res.Records, res.Counts, err = audit.ReadJSONL(r, filter); err != nil {
			return res, err
		}
	}
	return res, nil
}
