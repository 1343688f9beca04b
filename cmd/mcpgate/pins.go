package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/mcpgate/mcpgate/internal/config"
	"github.com/mcpgate/mcpgate/internal/gateway"
	"github.com/mcpgate/mcpgate/internal/pins"
)

func init() { subcommands = append(subcommands, newPinsCmd) }

// pinsFlags locate the pin file as gateway run does.
type pinsFlags struct {
	file, auditDB, auditFile, format string
}

func (f *pinsFlags) open() (*pins.Store, error) {
	path := gateway.PinsPath(gateway.Pins{File: f.file}, config.Audit{DB: f.auditDB, File: f.auditFile})
	if path == "" {
		return nil, errors.New("pins: give --file PATH (or the gateway's --audit-db / --audit-file)")
	}
	return pins.Open(path)
}

func newPinsCmd() *cobra.Command {
	var f pinsFlags
	cmd := &cobra.Command{
		Use:   "pins (list | approve SERVER TOOL | reset [SERVER [TOOL]])",
		Short: "List, approve or reset the tool pins that catch a changed tool",
		Long: `The gateway remembers the first definition it sees of every tool (name, title,
description, schemas, annotations), per server. A later listing with a different
definition is the finding tool_definition_changed: a warning by default, or, with
gateway run --pins-mode block, the tool is hidden from the listing and calls to it
are rejected until you approve the new definition here. A tool that appears while a
pinned tool with a similar schema is gone from the whole listing is the same finding
(a rename): list shows the old pin as RENAMED, and approving either name moves the
pin to the new one.

The pin file is --file, or ` + pins.FileName + ` next to the gateway's --audit-db or
--audit-file. A running gateway re-reads it at every listing, so an approval takes
effect at the client's next tools/list. SERVER is the server's configured name; for
the one upstream given after --, its gateway run --pins-name, else its command line
as one word (quote it); "" with several servers, whose TOOL is <server>_<tool>.

Exit status: 0 on success, 1 on a usage or I/O error or when no pin matches.`,
		Example: `  mcpgate pins list --audit-db /var/lib/mcpgate/audit.db
  mcpgate pins approve --file pins.json github create_issue
  mcpgate pins approve --file pins.json "npx -y @modelcontextprotocol/server-filesystem /srv" read_file
  mcpgate pins reset --file pins.json github            # re-pin every github tool`,
	}
	cmd.PersistentFlags().StringVar(&f.file, "file", "", "the pin file (gateway run --pins)")
	cmd.PersistentFlags().StringVar(&f.auditDB, "audit-db", "", "the gateway's --audit-db: the pin file is next to it")
	cmd.PersistentFlags().StringVar(&f.auditFile, "audit-file", "", "the gateway's --audit-file: the pin file is next to it")
	list := &cobra.Command{
		Use:   "list",
		Short: "List the pins; CHANGED marks a tool waiting for approval",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			st, err := f.open()
			if err != nil {
				return err
			}
			ps, err := st.List()
			if err != nil {
				return err
			}
			if _, err := os.Stat(st.Path()); errors.Is(err, fs.ErrNotExist) {
				// An empty table alone would hide a mistyped path.
				fmt.Fprintf(cmd.ErrOrStderr(), "mcpgate: pins: no pin file at %s yet (the gateway writes it at its first tools/list)\n", st.Path())
			}
			return writePins(cmd.OutOrStdout(), ps, f.format)
		},
	}
	list.Flags().StringVar(&f.format, "format", "table", "output: table or json")
	approve := &cobra.Command{
		Use:   "approve SERVER TOOL",
		Short: "Pin the changed definition of a tool, so it is listed again",
		Args: func(_ *cobra.Command, args []string) error {
			if len(args) != 2 {
				return fmt.Errorf(`pins approve: want SERVER TOOL, got %d argument(s); SERVER is "" for the one upstream given after --`, len(args))
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			st, err := f.open()
			if err != nil {
				return err
			}
			if err := st.Approve(args[0], args[1]); err != nil {
				return fmt.Errorf("pins approve %q %q: %w", args[0], args[1], err)
			}
			fmt.Fprintf(cmd.OutOrStdout(), "approved %s %s\n", serverName(args[0]), args[1])
			return nil
		},
	}
	reset := &cobra.Command{
		Use:   "reset [SERVER [TOOL]]",
		Short: "Forget pins (all, a server's, or one tool's); the next listing pins again",
		Args:  cobra.MaximumNArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			st, err := f.open()
			if err != nil {
				return err
			}
			server, tool := "", ""
			all := len(args) == 0
			if len(args) > 0 {
				server = args[0]
			}
			if len(args) > 1 {
				tool = args[1]
			}
			var n int
			if all {
				n, err = st.ResetAll()
			} else {
				n, err = st.Reset(server, tool)
			}
			if err != nil {
				return err
			}
			if n == 0 && !all { // a mistyped name must not look like success
				what := fmt.Sprintf("server %q", server)
				if tool != "" {
					what += fmt.Sprintf(" tool %q", tool)
				}
				return fmt.Errorf("pins reset: no pin matches %s (see mcpgate pins list)", what)
			}
			fmt.Fprintf(cmd.OutOrStdout(), "%s removed\n", plural(n, "pin", "pins"))
			return nil
		},
	}
	cmd.AddCommand(list, approve, reset)
	return cmd
}

func serverName(s string) string {
	if s == "" {
		return `""`
	}
	return s
}

func writePins(w io.Writer, ps []pins.Pin, format string) error {
	switch format {
	case "json":
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		return enc.Encode(ps)
	case "table":
	default:
		return fmt.Errorf("pins list: --format %q: want table or json", format)
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "SERVER\tTOOL\tSTATE\tPINNED\tSHA256")
	for _, p := range ps {
		state, hash := "pinned", p.Hash
		if p.Pending != nil {
			state, hash = "CHANGED "+p.Pending.Seen, p.Hash[:12]+" → "+p.Pending.Hash[:12]
			if p.Pending.Tool != "" { // a rename (docs/channels.md#pinning)
				state = "RENAMED to " + p.Pending.Tool + " " + p.Pending.Seen
			}
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", serverName(p.Server), p.Tool, state, p.FirstSeen, hash)
	}
	return tw.Flush()
}
