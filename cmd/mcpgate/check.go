package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"

	"github.com/spf13/cobra"

	"github.com/mcpgate/mcpgate/engine"
	"github.com/mcpgate/mcpgate/internal/config"
)

func init() { subcommands = append(subcommands, newCheckCmd) }

// checkOutput is the --format json shape of mcpgate check. It never carries a
// matched value: findings hold rule, entity, pointer and offsets only.
type checkOutput struct {
	Input     string           `json:"input"` // "text" or "result"
	Verdict   string           `json:"verdict"`
	Highest   engine.Severity  `json:"highest_severity"`
	BytesRead int64            `json:"bytes_read"` // every byte read is scanned
	Truncated bool             `json:"truncated"`  // always false: check has no scan cap
	RuleIDs   []string         `json:"rule_ids"`
	Findings  []engine.Finding `json:"findings"`
	// Sanitized is a JSON string (text) or the result object; null when a text input
	// is larger than checkSanitizeLimit and was only streamed.
	Sanitized json.RawMessage `json:"sanitized"`
}

const (
	// checkResultLimit bounds a JSON input read whole to be analysed as a
	// CallToolResult: the gateway's default message limit (docs/decisions.md#message-size).
	// A larger input is scanned as text, streaming.
	checkResultLimit = 64 << 20
	// checkSanitizeLimit bounds the text inputs whose sanitized form check prints; a
	// larger text is streamed through the analyzer in bounded memory and not kept.
	checkSanitizeLimit = engine.MaxScanBytes
)

func newCheckCmd() *cobra.Command {
	var format, configPath, profile string
	cmd := &cobra.Command{
		Use:   "check [--format text|json] [--config FILE] [--profile default|strict] [FILE|-]",
		Short: "Analyse a text or a CallToolResult with the built-in rules",
		Long: `check runs mcpgate's built-in rules (terminal escapes, hidden text, prompt-injection
markers and orders aimed at the model, hidden orders in markup, exfiltration URLs,
targets an agent must not fetch, PII, secrets) over one input and prints the verdict,
the findings and the sanitized form the Warn path would forward.

The input is FILE, or standard input when FILE is "-" or absent. If it parses as a JSON
object with a "content" member (and is at most 64 MiB) it is analysed as an MCP
CallToolResult (every text-bearing part, JSON Pointers into the result); anything else
is plain text.

check is a pipeline tool: it scans every byte of its input, however long. Text is
streamed in 4 MiB windows in bounded memory (the gateway's 1 MiB verdict cap does not
apply here), and the output says how many bytes were read. The sanitized form is
printed for results and for texts up to 1 MiB; a longer text is not kept.

Findings name the rule, severity, entity kind, pointer and byte offsets, never the
matched value. The sanitized output is printed even for a block, for inspection.

With --config, the rule severities of the configuration's "mcpgate.rules" and
"mcpgate.profile" apply, as in the gateway: a rule raised to high blocks here too,
and so does output_tool_transfer under the strict profile (--profile wins over the
file's, as in gateway run).

Exit status: 0 allow, 3 warn, 4 block, 1 usage or I/O error.

Examples:
  mcpgate check build.log
  tail -c 50M app.log | mcpgate check -
  printf 'hi \033]52;c;aGk=\007' | mcpgate check -
  mcpgate check --format json result.json | jq .rule_ids
  mcpgate check result.json || echo "verdict: exit $?"
  mcpgate check --config /etc/mcpgate/config.json result.json`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if format != "text" && format != "json" {
				return fmt.Errorf("check: --format must be text or json, not %q", format)
			}
			name := "-"
			if len(args) == 1 {
				name = args[0]
			}
			var in io.Reader = cmd.InOrStdin()
			if name != "-" {
				f, err := os.Open(name)
				if err != nil {
					return fmt.Errorf("check: %w", err)
				}
				defer f.Close()
				in = f
			}
			sev, err := engineSeverities(configPath, profile)
			if err != nil {
				return fmt.Errorf("check: %w", err)
			}
			out, err := runCheck(in, sev)
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
	cmd.Flags().StringVar(&configPath, "config", "", `JSON configuration file: its "mcpgate.rules" severities apply`)
	cmd.Flags().StringVar(&profile, "profile", "", profileFlagHelp)
	return cmd
}

// readPrefix reads up to limit bytes of r; whole is true when r ended within them.
func readPrefix(r io.Reader, limit int) (b []byte, whole bool, err error) {
	b, err = io.ReadAll(io.LimitReader(r, int64(limit)+1))
	if err != nil {
		return b, false, fmt.Errorf("check: reading input: %w", err)
	}
	if len(b) > limit {
		return b, false, nil
	}
	return b, true, nil
}

// profileFlagHelp is the --profile of the commands that run the built-in rules as the
// gateway does.
const profileFlagHelp = `default or strict: the rule severities of gateway run --profile (strict raises output_tool_transfer to high; default: the config's "profile", else default)`

// engineSeverities is the engine's rule severities as the gateway reads them: the
// configuration file cfgPath's (config.Default when ""), under the profile (flag, else
// its "profile"): strict raises config.StrictSeverities, then its "rules" win. The
// error names the file, or the profile that is neither default nor strict.
func engineSeverities(cfgPath, flag string) (map[string]engine.Severity, error) {
	cfg := config.Default()
	if cfgPath != "" {
		var err error
		if cfg, err = config.Load(cfgPath); err != nil {
			return nil, err
		}
	}
	profile, err := cfg.ProfileName(flag)
	if err != nil {
		return nil, err
	}
	return cfg.SeveritiesIn(profile == config.ProfileStrict), nil
}

// runCheck analyses all of in: as a CallToolResult when it is a JSON object with
// "content" of at most checkResultLimit bytes, else as plain text, streamed.
// sev overrides rule severities (--config); nil keeps the defaults.
func runCheck(in io.Reader, sev map[string]engine.Severity) (checkOutput, error) {
	var out checkOutput
	// the first bytes decide: text, or JSON that may be a result
	head, whole, err := readPrefix(in, checkSanitizeLimit)
	if err != nil {
		return out, err
	}
	if t := bytes.TrimLeft(head, " \t\r\n"); len(t) > 0 && t[0] == '{' && !whole {
		rest, _, err := readPrefix(in, checkResultLimit-len(head))
		if err != nil {
			return out, err
		}
		head = append(head, rest...)
		whole = len(head) <= checkResultLimit
	}
	if whole && isResult(head) {
		return checkResult(head, sev)
	}
	a, err := engine.New(engine.Options{Severities: sev})
	if err != nil {
		return out, err
	}
	out.Input = "text"
	var src io.Reader = bytes.NewReader(head)
	if !whole {
		src = io.MultiReader(src, in)
	}
	rep, err := a.AnalyzeReader(src)
	if err != nil {
		return out, fmt.Errorf("check: reading input after %d bytes: %w", rep.BytesRead, err)
	}
	if whole {
		if out.Sanitized, err = json.Marshal(engine.Sanitize(string(head))); err != nil {
			return out, err
		}
	} else {
		out.Sanitized = json.RawMessage("null")
	}
	out.fill(rep.Report, rep.BytesRead)
	return out, nil
}

func isResult(b []byte) bool {
	var probe struct {
		Content json.RawMessage `json:"content"`
	}
	t := bytes.TrimSpace(b)
	return len(t) > 0 && t[0] == '{' && json.Unmarshal(t, &probe) == nil && probe.Content != nil
}

// checkResult analyses a whole CallToolResult with no scan cap.
func checkResult(input []byte, sev map[string]engine.Severity) (checkOutput, error) {
	out := checkOutput{Input: "result"}
	// every string and one separator each: never more than twice the input's length
	a, err := engine.New(engine.Options{MaxScanBytes: 2*len(input) + 1, Severities: sev})
	if err != nil {
		return out, err
	}
	rep, err := a.AnalyzeResult(input)
	if err != nil {
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
	out.fill(rep, int64(len(input)))
	return out, nil
}

func (out *checkOutput) fill(rep engine.Report, read int64) {
	out.Verdict = rep.Verdict.String()
	out.Highest = rep.Highest
	out.BytesRead = read
	out.Truncated = rep.Truncated
	out.RuleIDs = rep.RuleIDs()
	out.Findings = rep.Findings
	if out.Findings == nil {
		out.Findings = []engine.Finding{}
	}
}

func writeCheckText(w io.Writer, out checkOutput) error {
	var b bytes.Buffer
	fmt.Fprintf(&b, "verdict: %s (highest %s, %s)\n", out.Verdict, out.Highest, plural(len(out.Findings), "finding", "findings"))
	fmt.Fprintf(&b, "read: %s, all scanned\n", plural(int(out.BytesRead), "byte", "bytes"))
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
	if string(out.Sanitized) == "null" {
		fmt.Fprintf(&b, "sanitized: not printed for a text over %d bytes\n", checkSanitizeLimit)
		_, err := w.Write(b.Bytes())
		return err
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
