// Command mcpgate is an MCP gateway: it relays an MCP client to MCP servers and, on
// every tools/call, runs the built-in rules, the JavaScript policies in policies/, and
// writes one audit record.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"runtime/debug"
	"strings"
	"syscall"

	"github.com/spf13/cobra"

	"github.com/mcpgate/mcpgate/internal/logging"
)

// Exit codes shared by the subcommands (docs/decisions.md#check-exit-codes,
// #unknown-command).
const (
	exitOK      = 0
	exitError   = 1 // a usage (bad flag or argument) or I/O error
	exitUnknown = 2 // the command line names no mcpgate command: nothing ran
	exitWarn    = 3 // mcpgate check: verdict warn
	exitBlock   = 4 // mcpgate check: verdict block
)

// unknownCommandError is an argument that names no subcommand of cmd, a command
// group (mcpgate, mcpgate gateway, mcpgate pins).
type unknownCommandError struct {
	cmd  *cobra.Command
	name string
}

func (e *unknownCommandError) Error() string {
	msg := fmt.Sprintf("unknown command %q for %q", e.name, e.cmd.CommandPath())
	if s := e.cmd.SuggestionsFor(e.name); len(s) > 0 {
		msg += "; did you mean " + strings.Join(s, " or ") + "?"
	}
	return msg
}

// groupRunE makes a command group runnable: alone it prints its help (exit 0); with
// an argument, which cannot be a subcommand or cobra would have gone there, it is an
// unknownCommandError (exit 2 with short help on stderr). Without it cobra prints the
// help and exits 0 for "gateway start", and the error for "mcpgate start" is exit 1.
func groupRunE(cmd *cobra.Command, args []string) error {
	if len(args) == 0 {
		return cmd.Help()
	}
	return &unknownCommandError{cmd: cmd, name: args[0]}
}

// makeGroupsStrict gives every command with subcommands and no action of its own
// groupRunE.
func makeGroupsStrict(c *cobra.Command) {
	if c.HasSubCommands() {
		c.SuggestionsMinimumDistance = 2
	}
	if c.HasSubCommands() && !c.Runnable() {
		c.Args = cobra.ArbitraryArgs
		c.RunE = groupRunE
	}
	for _, sub := range c.Commands() {
		makeGroupsStrict(sub)
	}
}

// exitStatus lets a subcommand end with a specific exit code without printing an error.
type exitStatus int

func (e exitStatus) Error() string { return fmt.Sprintf("exit status %d", int(e)) }

// version and commit are set at build time by the Makefile, from git describe and
// git rev-parse (docs/decisions.md#version-stamp): -ldflags "-X main.version=v1.2.0-3-gabc1234 -X main.commit=abc1234…".
// Without them, buildVersion reads what the Go toolchain embedded.
var (
	version = ""
	commit  = ""
)

// buildVersion is what --version, serverInfo.version and mcp-server report: version
// and commit as stamped ("v1.2.0 (commit 0123456789ab)", "dev (commit …)" from a
// clone without tags), else debug.ReadBuildInfo's module version (go install …@vX) or
// "dev" with the VCS revision and a "+dirty" mark.
func buildVersion() string {
	if version != "" {
		if commit != "" {
			return version + " (commit " + commit + ")"
		}
		return version
	}
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return "dev"
	}
	if v := bi.Main.Version; v != "" && v != "(devel)" {
		return v
	}
	var rev, dirty string
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			rev = s.Value
		case "vcs.modified":
			if s.Value == "true" {
				dirty = "+dirty"
			}
		}
	}
	if len(rev) > 12 {
		rev = rev[:12]
	}
	if rev == "" {
		return "dev"
	}
	return "dev (" + rev + dirty + ")"
}

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, os.Args[1:], os.Stdin, os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

// run executes the command line args and returns the process exit code. It never
// calls os.Exit, so every path is testable.
func run(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	root := newRootCmd(stdin, stdout, stderr)
	root.SetArgs(args)
	err := root.ExecuteContext(ctx)
	var st exitStatus
	var unknown *unknownCommandError
	switch {
	case err == nil:
		return exitOK
	case errors.As(err, &st):
		return int(st)
	case errors.As(err, &unknown):
		fmt.Fprintf(stderr, "mcpgate: %v\n\n%s\nRun '%s --help' for more.\n", err, shortHelp(unknown.cmd), unknown.cmd.CommandPath())
		return exitUnknown
	default:
		// An error may quote a flag's URL (--audit-otlp, --rate-limit-store): its
		// user-info never reaches the terminal or a log collector.
		fmt.Fprintf(stderr, "mcpgate: %s\n", logging.StripUserinfo(err.Error()))
		return exitError
	}
}

func newRootCmd(stdin io.Reader, stdout, stderr io.Writer) *cobra.Command {
	root := &cobra.Command{
		Use:   "mcpgate",
		Short: "A security gateway for MCP tool calls",
		Long: `mcpgate sits between an MCP client (Claude Desktop, Claude Code, Cursor) and the
MCP servers it calls. On every tools/call it runs built-in rules that find terminal
escapes, hidden text, prompt-injection markers, PII and secrets, then the JavaScript
policies in policies/, and writes one audit record per call.

Start with:
  mcpgate demo                                   see every decision on a built-in sample
  mcpgate gateway run --filter-output -- CMD ... put mcpgate in front of an MCP server
  mcpgate check FILE                             analyse a text or a CallToolResult`,
		Version:       buildVersion(),
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.SetIn(stdin)
	root.SetOut(stdout)
	root.SetErr(stderr)
	for _, add := range subcommands {
		root.AddCommand(add())
	}
	makeGroupsStrict(root)
	return root
}

// shortHelp is a group's usage line and its commands, one line each.
func shortHelp(c *cobra.Command) string {
	var b strings.Builder
	fmt.Fprintf(&b, "Usage:\n  %s COMMAND\n\nCommands:\n", c.CommandPath())
	for _, sub := range c.Commands() {
		if sub.IsAvailableCommand() {
			fmt.Fprintf(&b, "  %-*s %s\n", sub.NamePadding(), sub.Name(), sub.Short)
		}
	}
	return b.String()
}

// subcommands is filled by each subcommand file's init, so files stay independent.
var subcommands []func() *cobra.Command

// plural is "1 finding", "0 findings", "2 findings": for what people read on the
// terminal. Wire texts never singularise ("N findings" in the Warn notice,
// docs/decisions.md#warn-shape), so this is not for them.
func plural(n int, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return fmt.Sprintf("%d %s", n, many)
}
