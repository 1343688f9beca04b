package main

import (
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"strings"
	"text/tabwriter"
	"time"
	"unicode/utf8"

	"github.com/spf13/cobra"

	"github.com/mcpgate/mcpgate/internal/audit"
	"github.com/mcpgate/mcpgate/internal/bound"
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
	var dryRun bool
	approve := &cobra.Command{
		Use:   "approve SERVER TOOL",
		Short: "Show what changed in a tool's definition and pin the new one, so it is listed again",
		Long: `approve prints the difference between the pinned definition of TOOL and the
changed one the gateway saw (the definitions as JSON with sorted keys, one member a
line: "-" pinned, "+" changed; controls shown as \uXXXX), then pins the changed one.
If the definition changes again between the two, nothing is approved. --dry-run
prints the difference only.`,
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
			ps, err := st.List()
			if err != nil {
				return err
			}
			// Show what is being approved, then approve exactly that: ApproveHash
			// refuses a definition that changed again since it was shown.
			var hash string
			if p := findPin(ps, args[0], args[1]); p != nil && p.Pending != nil {
				if err := writeApprovalDiff(cmd.OutOrStdout(), p); err != nil {
					return err
				}
				hash = p.Pending.Hash
			}
			if dryRun {
				if hash == "" {
					return fmt.Errorf("pins approve %q %q: %w", args[0], args[1], cmp.Or(pinErr(ps, args[0], args[1]), pins.ErrNothingPending))
				}
				fmt.Fprintln(cmd.OutOrStdout(), "not approved (--dry-run)")
				return nil
			}
			if err := st.ApproveHash(args[0], args[1], hash); err != nil {
				return fmt.Errorf("pins approve %q %q: %w", args[0], args[1], err)
			}
			fmt.Fprintf(cmd.OutOrStdout(), "approved %s %s\n", displayName(serverName(args[0])), displayName(args[1]))
			return nil
		},
	}
	approve.Flags().BoolVar(&dryRun, "dry-run", false, "print what would be approved and approve nothing")
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

// pinCell bounds a server or tool name in the pins table, in bytes: a long name
// would push the other columns off the terminal. --format json has them whole.
const pinCell = 40

// pinName is s for the table: a name longer than pinCell keeps its first and its
// last bytes around "…", because servers started from one directory
// (".../node_modules/.bin/...") differ at the end, not at the start.
func pinName(s string) string {
	if len(s) <= pinCell {
		return audit.TableCell(s)
	}
	const ellipsis, head = "…", 14
	tail := pinCell - head - len(ellipsis)
	h, t := head, len(s)-tail
	for h > 0 && !utf8.RuneStart(s[h]) {
		h--
	}
	for t < len(s) && !utf8.RuneStart(s[t]) {
		t++
	}
	return audit.TableCell(s[:h] + ellipsis + s[t:])
}

// shortTime is a pin's RFC 3339 time to the minute, "2026-11-29 10:05Z"; s itself
// when it does not parse.
func shortTime(s string) string {
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		return audit.TableCell(bound.Truncate(s, 32))
	}
	return t.UTC().Format("2006-01-02 15:04Z")
}

func shortHash(h string) string { return h[:min(len(h), 12)] }

// writePins writes the pins as a table (SERVER, TOOL, STATE, PINNED, CHANGED,
// SHA256: names cut at pinCell bytes and escaped, times to the minute, hashes to 12
// digits, so a row fits a terminal) or as JSON (everything, whole).
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
	fmt.Fprintln(tw, "SERVER\tTOOL\tSTATE\tPINNED\tCHANGED\tSHA256")
	for _, p := range ps {
		state, changed, hash := "pinned", "-", shortHash(p.Hash)
		if p.Pending != nil {
			state, changed, hash = "CHANGED", shortTime(p.Pending.Seen), shortHash(p.Hash)+" → "+shortHash(p.Pending.Hash)
			if p.Pending.Tool != "" { // a rename (docs/channels.md#pinning)
				state = "RENAMED to " + pinName(p.Pending.Tool)
			}
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", pinName(serverName(p.Server)), pinName(p.Tool), state, shortTime(p.FirstSeen), changed, hash)
	}
	return tw.Flush()
}

// findPin is the pin Approve would take for (server, tool): by its name, or by the
// new name of a rename.
func findPin(ps []pins.Pin, server, tool string) *pins.Pin {
	for i := range ps {
		p := &ps[i]
		if p.Server == server && (p.Tool == tool || p.Pending != nil && p.Pending.Tool == tool) {
			return p
		}
	}
	return nil
}

// pinErr is why (server, tool) has nothing to approve: no such pin, or nil.
func pinErr(ps []pins.Pin, server, tool string) error {
	if findPin(ps, server, tool) == nil {
		return pins.ErrNoPin
	}
	return nil
}

// maxDiffLines bounds each side of the approval diff; a longer definition is cut
// with a note (the whole is in pins list --format json).
const maxDiffLines = 2000

// writeApprovalDiff prints what approving p changes: a header naming the tool, the
// hashes and a rename, then a line diff of the two definitions, each as indented
// JSON with sorted keys, every line escaped for the terminal.
func writeApprovalDiff(w io.Writer, p *pins.Pin) error {
	old, err := defLines(p.Definition)
	if err != nil {
		return fmt.Errorf("pins approve: the pinned definition: %w", err)
	}
	cur, err := defLines(p.Pending.Definition)
	if err != nil {
		return fmt.Errorf("pins approve: the changed definition: %w", err)
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%s %s: pinned %s (%s) → changed %s (seen %s)\n", displayName(serverName(p.Server)), displayName(p.Tool),
		shortHash(p.Hash), shortTime(p.FirstSeen), shortHash(p.Pending.Hash), shortTime(p.Pending.Seen))
	if p.Pending.Tool != "" {
		fmt.Fprintf(&b, "renamed: %s → %s\n", displayName(p.Tool), displayName(p.Pending.Tool))
	}
	b.WriteString("--- pinned\n+++ changed\n")
	for _, l := range lineDiff(old, cur) {
		b.WriteString(l)
		b.WriteByte('\n')
	}
	_, err = io.WriteString(w, b.String())
	return err
}

// defLines is a definition as indented JSON with sorted keys, one line each, escaped
// for a terminal, at most maxDiffLines.
func defLines(raw json.RawMessage) ([]string, error) {
	var v any
	if err := json.Unmarshal(raw, &v); err != nil {
		return nil, err
	}
	out, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return nil, err
	}
	lines := strings.Split(string(bound.EscapeControls(out)), "\n")
	if len(lines) > maxDiffLines {
		lines = append(lines[:maxDiffLines], fmt.Sprintf("… %d more lines (pins list --format json has them)", len(lines)-maxDiffLines))
	}
	return lines, nil
}

// lineDiff is a line diff of a and b by their longest common subsequence: "  " for a
// line in both, "- " for one only in a, "+ " for one only in b, in order.
func lineDiff(a, b []string) []string {
	n, m := len(a), len(b)
	lcs := make([][]int32, n+1)
	for i := range lcs {
		lcs[i] = make([]int32, m+1)
	}
	for i := n - 1; i >= 0; i-- {
		for j := m - 1; j >= 0; j-- {
			if a[i] == b[j] {
				lcs[i][j] = lcs[i+1][j+1] + 1
			} else {
				lcs[i][j] = max(lcs[i+1][j], lcs[i][j+1])
			}
		}
	}
	var out []string
	i, j := 0, 0
	for i < n || j < m {
		switch {
		case i < n && j < m && a[i] == b[j]:
			out, i, j = append(out, "  "+a[i]), i+1, j+1
		case i < n && (j == m || lcs[i+1][j] >= lcs[i][j+1]): // removals before additions
			out, i = append(out, "- "+a[i]), i+1
		default:
			out, j = append(out, "+ "+b[j]), j+1
		}
	}
	return out
}
