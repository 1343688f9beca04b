package main

import (
	"cmp"
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/mcpgate/mcpgate/engine"
	"github.com/mcpgate/mcpgate/internal/argcheck"
	"github.com/mcpgate/mcpgate/internal/channelcheck"
	"github.com/mcpgate/mcpgate/internal/config"
	"github.com/mcpgate/mcpgate/internal/vet"
)

func init() { subcommands = append(subcommands, newRulesCmd) }

func newRulesCmd() *cobra.Command {
	var format, profile string
	cmd := &cobra.Command{
		Use:   "rules",
		Short: "List the built-in rules: id, family, default severity and what each finds",
		Long: `List every built-in rule with its stable id, its family, its default severity and a
one-line explanation. High blocks, Medium warns, Info and Low are audited only.
Change a severity with "mcpgate": {"rules": {"<id>": "high"}} in --config; the ids
are also what ctx.findings, rule_ids and the redaction helpers' kinds use.

--profile strict prints instead what gateway run --profile strict changes against the
default profile, and the flag that overrides each change (docs/policies.md#profiles).`,
		Example: "  mcpgate rules\n  mcpgate rules --format json | jq -r '.[].id'\n  mcpgate rules --profile strict",
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			switch p, err := config.ParseProfile(profile); {
			case err != nil:
				return fmt.Errorf("--%w", err)
			case p == config.ProfileStrict:
				return printProfile(cmd.OutOrStdout(), format)
			}
			return printRules(cmd.OutOrStdout(), format)
		},
	}
	cmd.Flags().StringVar(&format, "format", "text", "output format: text or json")
	cmd.Flags().StringVar(&profile, "profile", "default", "default lists the rules; strict lists what the strict profile changes")
	return cmd
}

func printRules(w io.Writer, format string) error {
	rules := append(engine.Rules(), channelcheck.Rules()...)
	rules = append(rules, vet.Rules()...)
	rules = append(rules, argcheck.Rules()...)
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

// printProfile prints config.StrictChanges: each setting, the default's behaviour,
// strict's, and the flag that overrides it.
func printProfile(w io.Writer, format string) error {
	switch format {
	case "json":
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		return enc.Encode(config.StrictChanges)
	case "text":
		tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "SETTING\tDEFAULT\tSTRICT\tOVERRIDE")
		for _, c := range config.StrictChanges {
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", c.Setting, c.Default, c.Strict, cmp.Or(c.Flag, "-"))
		}
		return tw.Flush()
	default:
		return fmt.Errorf("--format %q: want text or json", format)
	}
}
