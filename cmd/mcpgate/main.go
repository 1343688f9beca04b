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
	"syscall"

	"github.com/spf13/cobra"

	"github.com/mcpgate/mcpgate/internal/logging"
)

// Exit codes shared by the subcommands. 2 stays free for Go's panic exit (docs/decisions.md#check-exit-codes).
const (
	exitOK    = 0
	exitError = 1
	exitWarn  = 3 // mcpgate check: verdict warn
	exitBlock = 4 // mcpgate check: verdict block
)

// exitStatus lets a subcommand end with a specific exit code without printing an error.
type exitStatus int

func (e exitStatus) Error() string { return fmt.Sprintf("exit status %d", int(e)) }

// version is set at build time with -ldflags "-X main.version=…"; without it,
// buildVersion reads the module version or VCS revision the Go toolchain embedded.
var version = ""

// buildVersion returns version, else what debug.ReadBuildInfo knows: the module's
// version (go install …@vX) or "dev" with the VCS revision and a "+dirty" mark.
func buildVersion() string {
	if version != "" {
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
	switch {
	case err == nil:
		return exitOK
	case errors.As(err, &st):
		return int(st)
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
	return root
}

// subcommands is filled by each subcommand file's init, so files stay independent.
var subcommands []func() *cobra.Command
