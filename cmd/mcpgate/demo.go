package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"
	"github.com/spf13/cobra"

	"github.com/mcpgate/mcpgate/internal/demo"
	"github.com/mcpgate/mcpgate/internal/jsonrpc"
	"github.com/mcpgate/mcpgate/policies"
)

func init() {
	subcommands = append(subcommands, newDemoCmd, newDemoServerCmd)
}

func newDemoCmd() *cobra.Command {
	var policyDir string
	cmd := &cobra.Command{
		Use:   "demo",
		Short: "Show every kind of decision on a built-in sample server",
		Long: `Run a real MCP client, in this process, through "mcpgate gateway run --filter-output"
to a small sample MCP server built into this binary. For each sample call it prints
what the server returns when called directly, what the client received through the
gateway, and the call's audit record:
a clean call, a redaction, a block, a warning and a policy rejection.

The policies are the shipped set (policies/*.js, built into the binary) plus the
example policies/examples/block-force-delete.js, unless --policies names a directory.`,
		Example: "  mcpgate demo\n  mcpgate demo --policies ./policies",
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			return runDemo(cmd.Context(), policyDir, cmd.OutOrStdout())
		},
	}
	cmd.Flags().StringVar(&policyDir, "policies", "", "policies directory to use instead of the built-in set")
	return cmd
}

func newDemoServerCmd() *cobra.Command {
	return &cobra.Command{
		Use:    "demo-server",
		Short:  "Serve the built-in sample MCP server on stdio (used by mcpgate demo)",
		Hidden: true,
		Args:   cobra.NoArgs,
		RunE:   func(cmd *cobra.Command, args []string) error { return demo.Serve(version) },
	}
}

// demoPolicies writes the built-in policy set and block-force-delete.js to a new
// temporary directory.
func demoPolicies() (string, error) {
	dir, err := os.MkdirTemp("", "mcpgate-demo-policies-")
	if err != nil {
		return "", err
	}
	files, _ := fs.Glob(policies.FS, "*.js")
	files = append(files, "examples/block-force-delete.js")
	for _, name := range files {
		b, err := policies.FS.ReadFile(name)
		if err != nil {
			return "", fmt.Errorf("built-in policy %s: %w", name, err)
		}
		if err := os.WriteFile(filepath.Join(dir, filepath.Base(name)), b, 0o600); err != nil {
			return "", err
		}
	}
	return dir, nil
}

func runDemo(ctx context.Context, policyDir string, out io.Writer) error {
	self, err := os.Executable()
	if err != nil {
		return fmt.Errorf("demo: find own binary: %w", err)
	}
	if policyDir == "" {
		if policyDir, err = demoPolicies(); err != nil {
			return fmt.Errorf("demo: %w", err)
		}
		defer os.RemoveAll(policyDir)
	}
	ctx, cancel := context.WithTimeout(ctx, 60*time.Second)
	defer cancel()

	direct, err := startClient(ctx, self, []string{"demo-server"}, nil)
	if err != nil {
		return err
	}
	defer direct.Close()

	records := make(chan map[string]any, 16)
	pr, pw := io.Pipe()
	go scanAudit(pr, records)
	defer pw.Close()
	gw, err := startClient(ctx, self, []string{"gateway", "run", "--filter-output", "--log-format", "json",
		"--policies", policyDir, "--", self, "demo-server"}, pw)
	if err != nil {
		return err
	}
	defer gw.Close()

	fmt.Fprintf(out, "mcpgate demo: client → mcpgate gateway run --filter-output → sample server\npolicies: %s\n", policyDir)
	for i, step := range demo.Steps {
		fmt.Fprintf(out, "\n── %d. %s\n   tools/call %s %s\n", i+1, step.Title, step.Tool, compact(step.Args))
		sent, err := call(ctx, direct, step)
		if err != nil {
			return fmt.Errorf("demo: direct call %s: %w", step.Tool, err)
		}
		got, err := call(ctx, gw, step)
		if err != nil {
			return fmt.Errorf("demo: call %s through the gateway: %w", step.Tool, err)
		}
		fmt.Fprintf(out, "   server (direct): %s\n   client received: %s\n", sent, got)
		select {
		case rec := <-records:
			fmt.Fprintf(out, "   audit record:    %s\n", summarize(rec))
		case <-time.After(5 * time.Second):
			return fmt.Errorf("demo: no audit record for %s", step.Tool)
		}
	}
	fmt.Fprintln(out, "\nEach call left exactly one audit record; no record holds an argument or a result value.")
	return nil
}

func startClient(ctx context.Context, command string, args []string, stderr io.Writer) (*client.Client, error) {
	var opts []transport.StdioOption
	if stderr != nil {
		opts = append(opts, transport.WithCommandStderrWriter(stderr))
	}
	c, err := client.NewStdioMCPClientWithOptions(command, nil, args, opts...)
	if err != nil {
		return nil, fmt.Errorf("demo: start %s: %w", strings.Join(args, " "), err)
	}
	init := mcp.InitializeRequest{}
	init.Params.ProtocolVersion = mcp.LATEST_PROTOCOL_VERSION
	init.Params.ClientInfo = mcp.Implementation{Name: "mcpgate-demo", Version: version}
	if _, err := c.Initialize(ctx, init); err != nil {
		c.Close()
		return nil, fmt.Errorf("demo: initialize %s: %w", strings.Join(args, " "), err)
	}
	return c, nil
}

func call(ctx context.Context, c *client.Client, step demo.Step) (string, error) {
	req := mcp.CallToolRequest{}
	req.Params.Name = step.Tool
	req.Params.Arguments = step.Args
	res, err := c.CallTool(ctx, req)
	if err != nil {
		return "", err
	}
	return compact(res), nil
}

// scanAudit picks the audit records (lines with both event_id and kind) out of the
// gateway's stderr.
func scanAudit(r io.Reader, records chan<- map[string]any) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 4<<20)
	for sc.Scan() {
		var m map[string]any
		if json.Unmarshal(sc.Bytes(), &m) == nil && m["event_id"] != nil && m["kind"] != nil {
			records <- m
		}
	}
	_, _ = io.Copy(io.Discard, r)
}

// summarize keeps the record's decision fields, for a readable demo line.
func summarize(rec map[string]any) string {
	keep := map[string]any{}
	for _, k := range []string{"event_id", "decision", "action_taken", "blocked", "rule_ids", "guardrails_triggered", "reason", "policy", "tool", "tool_access", "elapsed_ms"} {
		if v, ok := rec[k]; ok {
			keep[k] = v
		}
	}
	return compact(keep)
}

func compact(v any) string {
	b, err := jsonrpc.Marshal(v)
	if err != nil {
		return fmt.Sprintf("%v", v)
	}
	return string(b)
}
