package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"
	"github.com/spf13/cobra"

	"github.com/mcpgate/mcpgate/engine"
	"github.com/mcpgate/mcpgate/internal/audit"
	"github.com/mcpgate/mcpgate/internal/config"
	"github.com/mcpgate/mcpgate/internal/gateway"
	"github.com/mcpgate/mcpgate/internal/httpfront"
	"github.com/mcpgate/mcpgate/internal/jsonrpc"
	"github.com/mcpgate/mcpgate/internal/upstream"
)

func init() { subcommands = append(subcommands, newMCPServerCmd) }

// mcpServerFlags are the flags of `mcpgate mcp-server`.
type mcpServerFlags struct {
	sanitize  bool
	policies  string
	auditFile string
	config    string
	logFormat string
	logLevel  string
	http      httpFlags
	telemetry telemetryFlags // audit sinks, as for gateway run (telemetry.go)
}

func newMCPServerCmd() *cobra.Command {
	var f mcpServerFlags
	cmd := &cobra.Command{
		Use:   "mcp-server",
		Short: "Serve mcpgate's engine as MCP tools (scan_text, sanitize_text, redact_text, explain_rule)",
		Long: `Run mcpgate's own MCP server over stdio (or Streamable HTTP with --listen). Its tools:

  scan_text      run the built-in rules over a text; returns the findings and the verdict
  sanitize_text  remove terminal escapes, controls and hidden characters from a text
  redact_text    replace PII and secrets (strategy redact, mask or hash)
  explain_rule   describe a rule by id, or list every rule

Every tools/call goes through the same pipeline as the gateway and writes one audit
record of kind mcp_output_filter, with the client's clientInfo from initialize and
no agent_origin. With --sanitize-tool-output the tool results go through the output
filter, fail-closed: a truncated scan or an undecodable result is blocked.`,
		Example: `  mcpgate mcp-server --sanitize-tool-output
  # Claude Desktop:  "mcpgate": {"command": "/usr/local/bin/mcpgate", "args": ["mcp-server", "--sanitize-tool-output"]}`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runMCPServer(cmd.Context(), f, cmd.InOrStdin(), cmd.OutOrStdout(), cmd.ErrOrStderr())
		},
	}
	fl := cmd.Flags()
	fl.BoolVar(&f.sanitize, "sanitize-tool-output", false, "filter every tool result through the output filter, fail-closed")
	fl.StringVar(&f.policies, "policies", "", "directory of *.js policies to run on these tools too (default: none)")
	fl.StringVar(&f.auditFile, "audit-file", "", "append audit records (JSONL) to this file instead of stderr")
	fl.StringVar(&f.config, "config", "", "JSON configuration file (mcpgate key: user, tokens, rules)")
	fl.StringVar(&f.logFormat, "log-format", "auto", "log format: auto, text or json")
	fl.StringVar(&f.logLevel, "log-level", "info", "log level: debug, info, warn or error")
	f.http.register(fl, "its own relay session over in-process tools; no process is started", httpfront.DefaultMaxSessions)
	f.telemetry.register(fl)
	return cmd
}

func runMCPServer(ctx context.Context, f mcpServerFlags, stdin io.Reader, stdout, stderr io.Writer) error {
	log, errw, err := newLogger(f.logFormat, f.logLevel, stderr)
	if err != nil {
		return err
	}
	if err := f.http.check(); err != nil {
		return err
	}
	file := config.Default()
	if f.config != "" {
		if file, err = config.Load(f.config); err != nil {
			return err
		}
	}
	g, err := gateway.New(ctx, gateway.Config{
		Kind:         audit.KindMCPServer,
		File:         file,
		PoliciesDir:  f.policies, // "" means no policies
		Evaluators:   os.Getenv("GATE_EVALUATORS"),
		FilterOutput: f.sanitize,
		FailClosed:   f.sanitize, // docs/decisions.md#fail-modes: the MCP server fails closed
		InputOnly:    strings.EqualFold(os.Getenv("MCPGATE_AUDIT_OUTPUT"), "off"),
		Audit:        f.telemetry.audit(file.Gate.Audit, f.auditFile),
		Admin:        f.telemetry.admin(file.Gate.Admin),
		Logger:       log,
		Stderr:       errw,
		Upstream:     func(an *engine.Analyzer) (upstream.Conn, error) { return startToolServer(an), nil },
		HTTP:         f.http.config(),
	})
	if err != nil {
		return err
	}
	defer g.Close()
	if f.http.enabled() {
		return g.ServeHTTP(ctx)
	}
	log.Info("mcpgate MCP server on stdio", "sanitize_tool_output", f.sanitize)
	return g.ServeStdio(ctx, stdin, stdout)
}

// toolServer is mcpgate's tool server running in-process behind a pair of pipes, so
// that the same relay and pipeline as the gateway's stand in front of it.
type toolServer struct {
	toSrv   *io.PipeWriter
	fromSrv *io.PipeReader
	conn    *jsonrpc.Stream
	cancel  context.CancelFunc
	done    chan struct{}
}

func startToolServer(an *engine.Analyzer) *toolServer {
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	ctx, cancel := context.WithCancel(context.Background())
	ts := &toolServer{toSrv: inW, fromSrv: outR, conn: jsonrpc.NewStream(outR, inW, 0), cancel: cancel, done: make(chan struct{})}
	srv := newToolMCPServer(an)
	go func() {
		defer close(ts.done)
		stdio := server.NewStdioServer(srv)
		stdio.SetErrorLogger(log.New(io.Discard, "", 0))
		_ = stdio.Listen(ctx, inR, outW)
		_ = outW.Close()
	}()
	return ts
}

func (t *toolServer) Send(msg *jsonrpc.Message) error { return t.conn.Send(msg) }
func (t *toolServer) Recv() (*jsonrpc.Message, error) { return t.conn.Recv() }

func (t *toolServer) Close(ctx context.Context, _ time.Duration) error {
	_ = t.toSrv.Close()
	t.cancel()
	select {
	case <-t.done:
	case <-ctx.Done():
	}
	_ = t.fromSrv.Close()
	return nil
}

// pureTool annotates a tool that only computes on its arguments: it reads nothing,
// changes nothing and reaches nothing outside this process.
var pureTool = func(t *mcp.Tool) {
	for _, opt := range []mcp.ToolOption{
		mcp.WithReadOnlyHintAnnotation(true),
		mcp.WithDestructiveHintAnnotation(false),
		mcp.WithIdempotentHintAnnotation(true),
		mcp.WithOpenWorldHintAnnotation(false),
	} {
		opt(t)
	}
}

// newToolMCPServer builds the MCP server and its four tools.
func newToolMCPServer(an *engine.Analyzer) *server.MCPServer {
	s := server.NewMCPServer("mcpgate", buildVersion(), server.WithToolCapabilities(false),
		server.WithInstructions("mcpgate's analysis engine: scan, sanitize and redact text; explain rules."))
	s.AddTool(mcp.NewTool("scan_text",
		mcp.WithDescription("Run mcpgate's built-in rules (terminal escapes, hidden text, prompt injection, PII, secrets) over a text. Returns the verdict and the findings (rule, severity, byte range), never the matched values."),
		mcp.WithString("text", mcp.Required(), mcp.Description("the text to scan")),
		pureTool,
	), func(_ context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		if err := onlyArguments(req, "text"); err != nil {
			return mcp.NewToolResultError(err.Error()), nil
		}
		text, err := req.RequireString("text")
		if err != nil {
			return mcp.NewToolResultError(err.Error()), nil
		}
		return jsonResult(scanSummary(an.AnalyzeText(text))), nil
	})
	s.AddTool(mcp.NewTool("sanitize_text",
		mcp.WithDescription("Remove escape sequences, bare CR, control characters and zero-width or other hidden characters from a text."),
		mcp.WithString("text", mcp.Required(), mcp.Description("the text to clean")),
		pureTool,
	), func(_ context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		if err := onlyArguments(req, "text"); err != nil {
			return mcp.NewToolResultError(err.Error()), nil
		}
		text, err := req.RequireString("text")
		if err != nil {
			return mcp.NewToolResultError(err.Error()), nil
		}
		return mcp.NewToolResultText(engine.Sanitize(text)), nil
	})
	s.AddTool(mcp.NewTool("redact_text",
		mcp.WithDescription("Replace PII and secrets in a text: strategy redact ([REDACTED:EMAIL]), mask (keep the last 4) or hash ([HASH:EMAIL:1a2b3c4d]); kinds limits it to entity kinds or rule ids."),
		mcp.WithString("text", mcp.Required(), mcp.Description("the text to redact")),
		mcp.WithString("strategy", mcp.Enum("redact", "mask", "hash"), mcp.Description("how to replace a value (default redact)")),
		mcp.WithArray("kinds", mcp.WithStringItems(), mcp.Description("entity kinds or rule ids to redact (default: all)")),
		pureTool,
	), func(_ context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		if err := onlyArguments(req, "text", "strategy", "kinds"); err != nil {
			return mcp.NewToolResultError(err.Error()), nil
		}
		text, err := req.RequireString("text")
		if err != nil {
			return mcp.NewToolResultError(err.Error()), nil
		}
		strategy := engine.Strategy(req.GetString("strategy", string(engine.StrategyRedact)))
		switch strategy {
		case engine.StrategyRedact, engine.StrategyMask, engine.StrategyHash:
		default:
			return mcp.NewToolResultError(fmt.Sprintf("strategy %q: want redact, mask or hash", strategy)), nil
		}
		out, n := an.Redact(text, strategy, req.GetStringSlice("kinds", nil))
		return &mcp.CallToolResult{
			Content:           []mcp.Content{mcp.NewTextContent(out)},
			StructuredContent: map[string]any{"text": out, "replacements": n},
		}, nil
	})
	s.AddTool(mcp.NewTool("explain_rule",
		mcp.WithDescription("Describe one built-in rule by id (family, default severity, what it finds), or list every rule when id is empty."),
		mcp.WithString("id", mcp.Description("a rule id such as output_osc52_clipboard_write; empty lists all")),
		pureTool,
	), func(_ context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		if err := onlyArguments(req, "id"); err != nil {
			return mcp.NewToolResultError(err.Error()), nil
		}
		id := strings.TrimSpace(req.GetString("id", ""))
		rules := engine.Rules()
		if id == "" {
			return jsonResult(map[string]any{"rules": rules}), nil
		}
		for _, r := range rules {
			if r.ID == id {
				return jsonResult(r), nil
			}
		}
		return mcp.NewToolResultError(fmt.Sprintf("no rule %q; call explain_rule without an id for the list", id)), nil
	})
	return s
}

// onlyArguments refuses arguments a tool does not take, so that a misspelt one
// ("rule" for "id") is an error instead of being ignored.
func onlyArguments(req mcp.CallToolRequest, names ...string) error {
	for k := range req.GetArguments() {
		if !slices.Contains(names, k) {
			return fmt.Errorf("unknown argument %q: %s takes %s", k, req.Params.Name, strings.Join(names, ", "))
		}
	}
	return nil
}

// scanSummary is scan_text's answer: codes and positions only.
func scanSummary(r engine.Report) map[string]any {
	findings := make([]map[string]any, 0, len(r.Findings))
	for _, f := range r.Findings {
		m := map[string]any{"rule_id": f.RuleID, "severity": f.Severity.String(), "start": f.Start, "end": f.End}
		if f.Entity != "" {
			m["entity"] = f.Entity
		}
		findings = append(findings, m)
	}
	return map[string]any{
		"verdict":          r.Verdict.String(),
		"highest_severity": r.Highest.String(),
		"rule_ids":         r.RuleIDs(),
		"findings":         findings,
		"truncated":        r.Truncated,
	}
}

// jsonResult returns v as both a JSON text item and structuredContent.
func jsonResult(v any) *mcp.CallToolResult {
	b, _ := json.Marshal(v)
	return &mcp.CallToolResult{
		Content:           []mcp.Content{mcp.NewTextContent(string(b))},
		StructuredContent: v,
	}
}
