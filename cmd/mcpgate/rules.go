package main

import (
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/mcpgate/mcpgate/engine"
	"github.com/mcpgate/mcpgate/internal/channelcheck"
)

func init() { subcommands = append(subcommands, newRulesCmd) }

func newRulesCmd() *cobra.Command {
	var format string
	cmd := &cobra.Command{
		Use:   "rules",
		Short: "List the built-in rules: id, family, default severity and what each finds",
		Long: `List every built-in rule with its stable id, its family, its default severity and a
one-line explanation. High blocks, Medium warns, Info and Low are audited only.
Change a severity with "mcpgate": {"rules": {"<id>": "high"}} in --config; the ids
are also what ctx.findings, rule_ids and the redaction helpers' kinds use.`,
		Example: "  mcpgate rules\n  mcpgate rules --format json | jq -r '.[].id'",
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return printRules(cmd.OutOrStdout(), format)
		},
	}
	cmd.Flags().StringVar(&format, "format", "text", "output format: text or json")
	return cmd
}

func printRules(w io.Writer, format string) error {
	rules := append(engine.Rules(), channelcheck.Rules()...)
	slices.SortFunc(rules, func(a, b engine.Rule) int { return strings.Compare(a.ID, b.ID) })
	switch format {
	case "json":
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		return enc.Encode(rules)
	case "text":
		tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "ID\tFAMILY\tSEVERITY\tFINDS")
		for _, r := range rules {
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", r.ID, r.Family, r.Severity, r.Summary)
		}
		return tw.Flush()
	default:
		return fmt.Errorf("--format %q: want text or json", format)
	}
}
