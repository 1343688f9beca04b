package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strconv"
	"text/tabwriter"
	"unicode"

	"github.com/spf13/cobra"

	"github.com/mcpgate/mcpgate/engine"
	"github.com/mcpgate/mcpgate/gate"
	"github.com/mcpgate/mcpgate/internal/audit"
	"github.com/mcpgate/mcpgate/internal/capture"
	"github.com/mcpgate/mcpgate/internal/fixture"
	"github.com/mcpgate/mcpgate/vocab"
)

func init() { subcommands = append(subcommands, newReplayCmd) }

// replayRow is one call of mcpgate replay --format json.
type replayRow struct {
	EventID        string        `json:"event_id"`
	Tool           string        `json:"tool"`
	Caller         *audit.Caller `json:"caller,omitempty"`
	RecordedAction vocab.Action  `json:"recorded_action"`
	ReplayedAction vocab.Action  `json:"replayed_action"`
	Differs        bool          `json:"differs"`
}

func newReplayCmd() *cobra.Command {
	var file, dir, format, cfgPath, profile, caller string
	cmd := &cobra.Command{
		Use:   "replay --capture FILE --policies DIR [--format text|json]",
		Short: "Re-run captured tools/calls with another policy set and show what changes",
		Long: `replay reads a capture file written by gateway run --capture FILE and runs every
captured tools/call again through the pipeline (built-in rules, DIR's policies, the
call's own --filter-output setting) against its captured upstream result. It prints
per call the recorded action, the replayed action and whether they differ, then a
summary. Nothing is sent to any server. --caller NAME replays only the calls of one
caller (its user id or caller id, exactly, as mcpgate audit --caller).

A call the live set rejected before the upstream ran has no captured result; if DIR
lets it through, it is replayed against an empty result.

Exit status: 0 when nothing differs, 3 when a call's action differs, 1 when the
capture file or the policies cannot be read.`,
		Example: `  mcpgate gateway run --filter-output --capture /var/log/mcpgate/calls.jsonl -- CMD ...
  mcpgate replay --capture /var/log/mcpgate/calls.jsonl --policies ./candidate`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runReplay(cmd.Context(), file, dir, format, cfgPath, profile, caller, cmd.OutOrStdout())
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&file, "capture", "", "capture file written by gateway run --capture (required)")
	fl.StringVar(&dir, "policies", "", "policies directory to replay with (required)")
	fl.StringVar(&format, "format", "text", "output format: text or json")
	fl.StringVar(&caller, "caller", "", "only the calls of this caller: its user id or its caller id, exactly")
	fl.StringVar(&cfgPath, "config", "", "configuration file whose rule severities (its \"rules\" and \"profile\") to use, as the gateway did")
	fl.StringVar(&profile, "profile", "", profileFlagHelp)
	_ = cmd.MarkFlagRequired("capture")
	_ = cmd.MarkFlagRequired("policies")
	return cmd
}

func runReplay(ctx context.Context, file, dir, format, cfgPath, profile, caller string, stdout io.Writer) error {
	if format != "text" && format != "json" {
		return fmt.Errorf("--format must be text or json, not %q", format)
	}
	f, err := os.Open(file)
	if err != nil {
		return fmt.Errorf("--capture: %w", err)
	}
	entries, err := capture.Read(f)
	f.Close()
	if err != nil {
		return err
	}
	sev, err := engineSeverities(cfgPath, profile)
	if err != nil {
		return err
	}
	an, err := engine.New(engine.Options{Severities: sev})
	if err != nil {
		return fmt.Errorf("config: %w", err)
	}
	g, err := gate.Load(ctx, gate.Options{Dir: dir, Analyzer: an})
	if err != nil {
		return loadError(err)
	}
	defer g.Close()
	runner, err := fixture.New(fixture.Options{Gate: g, Analyzer: an})
	if err != nil {
		return err
	}
	rows := []replayRow{}
	differ := 0
	for _, e := range entries {
		if caller != "" && e.User.UserID != caller && e.User.CallerID != caller {
			continue
		}
		filter := e.FilterOutput
		out, err := runner.Call(ctx, fixture.Call{
			Tool: e.Tool, Params: e.Arguments, ToolAccess: e.ToolAccess, User: e.User,
			Result: e.Result, FilterOutput: &filter, Guardrails: e.Guardrails,
		}, nil)
		if err != nil {
			return fmt.Errorf("replay %s: %w", e.EventID, err)
		}
		row := replayRow{EventID: e.EventID, Tool: e.Tool, RecordedAction: e.ActionTaken, ReplayedAction: out.Action}
		if e.User.UserID != "" || e.User.CallerID != "" {
			row.Caller = &audit.Caller{UserID: e.User.UserID, CallerID: e.User.CallerID, CallerClass: e.User.CallerClass}
		}
		row.Differs = row.RecordedAction != row.ReplayedAction
		if row.Differs {
			differ++
		}
		rows = append(rows, row)
	}
	if format == "json" {
		b, _ := json.MarshalIndent(rows, "", "  ")
		fmt.Fprintf(stdout, "%s\n", b)
	} else {
		tw := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
		for _, r := range rows {
			mark := ""
			if r.Differs {
				mark = "differs"
			}
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t-> %s\t%s\n", r.EventID, displayName(r.Tool), displayName(audit.CallerLabel(r.Caller)), r.RecordedAction, r.ReplayedAction, mark)
		}
		tw.Flush()
		fmt.Fprintf(stdout, "%d of %s %s\n", differ, plural(len(rows), "call", "calls"), map[bool]string{true: "differs", false: "differ"}[differ == 1])
	}
	if differ > 0 {
		return exitStatus(exitDiffers)
	}
	return nil
}

// displayName prints a tool name as is, or quoted with escapes when it holds a
// control, format (bidi) or other non-graphic character that could disguise a row.
func displayName(s string) string {
	for _, r := range s {
		if !unicode.IsGraphic(r) {
			return strconv.QuoteToGraphic(s)
		}
	}
	if s == "" {
		return "-"
	}
	return s
}
