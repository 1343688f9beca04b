package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"

	"github.com/spf13/cobra"

	"github.com/mcpgate/mcpgate/engine"
)

func init() { subcommands = append(subcommands, newCheckCmd) }

// checkOutput is the --format json shape of mcpgate check. It never carries a
// matched value: findings hold rule, entity, pointer and offsets only.
type checkOutput struct {
	Input     string           `json:"input"` // "text" or "result"
	Verdict   string           `json:"verdict"`
	Highest   engine.Severity  `json:"highest_severity"`
	Truncated bool             `json:"truncated"`
	RuleIDs   []string         `json:"rule_ids"`
	Findings  []engine.Finding `json:"findings"`
	Sanitized json.RawMessage  `json:"sanitized"` // a JSON string (text) or the result object
}

func newCheckCmd() *cobra.Command {
	var format string
	cmd := &cobra.Command{
		Use:   "check [--format text|json] [FILE|-]",
		Short: "Analyse a text or a CallToolResult with the built-in rules",
		Long: `check runs mcpgate's built-in rules (terminal escapes, hidden text, prompt-injection
markers, PII, secrets) over one input and prints the verdict, the findings and the
sanitized form the Warn path would forward.

The input is FILE, or standard input when FILE is "-" or absent. If it parses as a JSON
object with a "content" member it is analysed as an MCP CallToolResult (every
text-bearing part, JSON Pointers into the result); anything else is plain text.

Findings name the rule, severity, entity kind, pointer and byte offsets, never the
matched value. The sanitized output is printed even for a block, for inspection.

Exit status: 0 allow, 3 warn, 4 block, 1 usage or I/O error.

Examples:
  mcpgate check build.log
  printf 'hi \033]52;c;aGk=\007' | mcpgate check -
  mcpgate check --format json result.json | jq .rule_ids
  mcpgate check result.json || echo "verdict: exit $?"`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if format != "text" && format != "json" {
				return fmt.Errorf("check: --format must be text or json, not %q", format)
			}
			name := "-"
			if len(args) == 1 {
				name = args[0]
			}
			input, err := readCheckInput(cmd.InOrStdin(), name)
			if err != nil {
				return err
			}
			out, err := runCheck(input)
			if err != nil {
				return err
			}
			w := cmd.OutOrStdout()
			if format == "json" {
				enc := json.NewEncoder(w)
				enc.SetIndent("", "  ")
				if err := enc.Encode(out); err != nil {
					return err
				}
			} else if err := writeCheckText(w, out); err != nil {
				return err
			}
			switch out.Verdict {
			case engine.Block.String():
				return exitStatus(exitBlock)
			case engine.Warn.String():
				return exitStatus(exitWarn)
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&format, "format", "text", "output format: text or json")
	return cmd
}

func readCheckInput(stdin io.Reader, name string) ([]byte, error) {
	if name == "-" {
		b, err := io.ReadAll(stdin)
		if err != nil {
			return nil, fmt.Errorf("check: reading standard input: %w", err)
		}
		return b, nil
	}
	b, err := os.ReadFile(name)
	if err != nil {
		return nil, fmt.Errorf("check: %w", err)
	}
	return b, nil
}

// runCheck analyses input as a CallToolResult when it is a JSON object with
// "content", else as plain text.
func runCheck(input []byte) (checkOutput, error) {
	a, err := engine.New(engine.Options{})
	if err != nil {
		return checkOutput{}, err
	}
	var probe struct {
		Content json.RawMessage `json:"content"`
	}
	trimmed := bytes.TrimSpace(input)
	isResult := len(trimmed) > 0 && trimmed[0] == '{' && json.Unmarshal(trimmed, &probe) == nil && probe.Content != nil
	var out checkOutput
	var rep engine.Report
	if isResult {
		out.Input = "result"
		if rep, err = a.AnalyzeResult(input); err != nil {
			return out, fmt.Errorf("check: %w", err)
		}
		clean, err := engine.SanitizeResult(input)
		if err != nil {
			return out, fmt.Errorf("check: %w", err)
		}
		var buf bytes.Buffer
		if err := json.Compact(&buf, clean); err != nil {
			return out, fmt.Errorf("check: %w", err)
		}
		out.Sanitized = buf.Bytes()
	} else {
		out.Input = "text"
		rep = a.AnalyzeText(string(input))
		s, err := json.Marshal(engine.Sanitize(string(input)))
		if err != nil {
			return out, err
		}
		out.Sanitized = s
	}
	out.Verdict = rep.Verdict.String()
	out.Highest = rep.Highest
	out.Truncated = rep.Truncated
	out.RuleIDs = rep.RuleIDs()
	out.Findings = rep.Findings
	if out.Findings == nil {
		out.Findings = []engine.Finding{}
	}
	return out, nil
}

func writeCheckText(w io.Writer, out checkOutput) error {
	var b bytes.Buffer
	fmt.Fprintf(&b, "verdict: %s (highest %s, %d findings", out.Verdict, out.Highest, len(out.Findings))
	if out.Truncated {
		b.WriteString(", truncated at the scan cap")
	}
	b.WriteString(")\n")
	for _, f := range out.Findings {
		ptr := f.Pointer
		if ptr == "" {
			ptr = "(text)"
		}
		key := ""
		if f.InKey {
			key = " (member name)"
		}
		fmt.Fprintf(&b, "  %-8s %-36s %-18s %s [%d,%d)%s\n", f.Severity, f.RuleID, f.Entity, ptr, f.Start, f.End, key)
	}
	b.WriteString("sanitized:\n")
	if out.Input == "text" {
		var s string
		if err := json.Unmarshal(out.Sanitized, &s); err != nil {
			return err
		}
		b.WriteString(s)
		if len(s) > 0 && s[len(s)-1] != '\n' {
			b.WriteByte('\n')
		}
	} else {
		b.Write(out.Sanitized)
		b.WriteByte('\n')
	}
	_, err := w.Write(b.Bytes())
	return err
}
