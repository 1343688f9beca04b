package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"strings"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"
	"github.com/spf13/cobra"

	"github.com/mcpgate/mcpgate/internal/audit"
	"github.com/mcpgate/mcpgate/internal/config"
	"github.com/mcpgate/mcpgate/internal/demo"
	"github.com/mcpgate/mcpgate/internal/gateway"
	"github.com/mcpgate/mcpgate/internal/jsonrpc"
	"github.com/mcpgate/mcpgate/internal/logging"
	"github.com/mcpgate/mcpgate/policies"
	"github.com/mcpgate/mcpgate/vocab"
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
		RunE:   func(cmd *cobra.Command, args []string) error { return demo.Serve(buildVersion()) },
	}
}

// demoPolicies is the shipped policy set (policies/*.js) plus
// examples/block-force-delete.js, read straight from the binary.
type demoPolicies struct{}

const demoExample = "block-force-delete.js"

func (demoPolicies) Open(name string) (fs.File, error) {
	if name == demoExample {
		name = "examples/" + demoExample
	}
	return policies.FS.Open(name)
}

func (demoPolicies) ReadDir(name string) ([]fs.DirEntry, error) {
	ents, err := fs.ReadDir(policies.FS, name)
	if err != nil || name != "." {
		return ents, err
	}
	ex, err := fs.ReadDir(policies.FS, "examples")
	if err != nil {
		return nil, err
	}
	for _, e := range ex {
		if e.Name() == demoExample {
			ents = append(ents, e)
		}
	}
	return ents, nil
}

func runDemo(ctx context.Context, policyDir string, out io.Writer) error {
	self, err := os.Executable()
	if err != nil {
		return fmt.Errorf("demo: find own binary: %w", err)
	}
	ctx, cancel := context.WithTimeout(ctx, 60*time.Second)
	defer cancel()

	direct, err := startClient(ctx, transport.NewStdio(self, nil, "demo-server"), "demo-server")
	if err != nil {
		return err
	}
	defer direct.Close()

	// The gateway runs in this process: its records and log lines go to a pipe, where
	// scanAudit picks out the records.
	records := make(chan map[string]any, 16)
	pr, pw := io.Pipe()
	go scanAudit(pr, records)
	defer pw.Close()
	errw := logging.NewLineWriter(pw)
	cfg := gateway.Config{
		FilterOutput: true,
		PoliciesDir:  policyDir,
		Logger:       logging.New(errw, logging.FormatJSON, slog.LevelWarn),
		Stderr:       errw,
		Servers:      []gateway.Server{{Server: config.Server{Command: self, Args: []string{"demo-server"}}}},
	}
	shown := policyDir
	if policyDir == "" {
		cfg.Policies, shown = demoPolicies{}, "the built-in set (policies/*.js) and policies/examples/"+demoExample
	}
	g, err := gateway.New(ctx, cfg)
	if err != nil {
		return fmt.Errorf("demo: %w", err)
	}
	defer g.Close()
	toGW, clientOut := io.Pipe()
	clientIn, fromGW := io.Pipe()
	served := make(chan error, 1)
	go func() {
		served <- g.ServeStdio(ctx, toGW, fromGW)
		fromGW.Close()
	}()
	gw, err := startClient(ctx, transport.NewIO(clientIn, clientOut, nil), "the gateway")
	if err != nil {
		return err
	}

	fmt.Fprintf(out, "mcpgate demo: client → mcpgate gateway (--filter-output) → sample server\npolicies: %s\n", shown)
	for i, step := range demo.Steps {
		sent, err := call(ctx, direct, step)
		if err != nil {
			return fmt.Errorf("demo: direct call %s: %w", step.Tool, err)
		}
		got, err := call(ctx, gw, step)
		if err != nil {
			return fmt.Errorf("demo: call %s through the gateway: %w", step.Tool, err)
		}
		var rec map[string]any
		select {
		case rec = <-records:
		case <-time.After(5 * time.Second):
			return fmt.Errorf("demo: no audit record for %s", step.Tool)
		}
		fmt.Fprintf(out, "\n── %d. %s: %s\n   tools/call %s %s\n", i+1, step.What, headline(rec), step.Tool, compact(step.Args))
		fmt.Fprintf(out, "   server (direct): %s\n   client received: %s\n   audit record:    %s\n", sent, got, summarize(rec))
	}
	fmt.Fprintln(out, "\nEach call left exactly one audit record; no record holds an argument or a result value.")
	gw.Close()
	if err := <-served; err != nil {
		return fmt.Errorf("demo: gateway: %w", err)
	}
	return nil
}

// headline says what happened to a call, from its audit record alone.
func headline(rec map[string]any) string {
	str := func(k string) string { s, _ := rec[k].(string); return s }
	list := func(k string) string {
		var out []string
		v, _ := rec[k].([]any)
		for _, x := range v {
			if s, ok := x.(string); ok && s != audit.GuardrailOutputSanitization {
				out = append(out, s)
			}
		}
		return strings.Join(out, ", ")
	}
	by := func(what string) string {
		if what == "" {
			return ""
		}
		return " by " + what
	}
	switch action := vocab.Action(str("action_taken")); {
	case action == vocab.Block && str("policy") != "":
		return fmt.Sprintf("rejected by policy %s (%s)", str("policy"), str("reason"))
	case action == vocab.Block:
		return fmt.Sprintf("blocked%s (%s)", by(list("rule_ids")), str("reason"))
	case action == vocab.Redact || action == vocab.Mask:
		return strings.ToLower(action.Label()) + by(list("policies_acted"))
	case action == vocab.Warn && list("rule_ids") != "":
		return "warning for " + list("rule_ids") + "; only the codes that hide text are stripped, the text itself stays"
	case action == vocab.Warn && list("policies_acted") != "":
		return "warning from ctx.warn in " + list("policies_acted")
	case action == vocab.Warn:
		return "warning"
	default:
		return "passed through unchanged"
	}
}

// startClient starts an mcp-go client on t and initializes it.
func startClient(ctx context.Context, t transport.Interface, what string) (*client.Client, error) {
	c := client.NewClient(t)
	if err := c.Start(ctx); err != nil {
		return nil, fmt.Errorf("demo: start %s: %w", what, err)
	}
	init := mcp.InitializeRequest{}
	init.Params.ProtocolVersion = mcp.LATEST_PROTOCOL_VERSION
	init.Params.ClientInfo = mcp.Implementation{Name: "mcpgate-demo", Version: buildVersion()}
	if _, err := c.Initialize(ctx, init); err != nil {
		c.Close()
		return nil, fmt.Errorf("demo: initialize %s: %w", what, err)
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
	for _, k := range []string{"event_id", "decision", "action_taken", "blocked", "rule_ids", "guardrails_triggered", "policies_acted", "reason", "policy", "tool", "tool_access", "elapsed_ms"} {
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
