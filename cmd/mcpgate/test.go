package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/mcpgate/mcpgate/engine"
	"github.com/mcpgate/mcpgate/gate"
	"github.com/mcpgate/mcpgate/gate/policytest"
	"github.com/mcpgate/mcpgate/internal/fixture"
)

func init() { subcommands = append(subcommands, newTestCmd) }

// Exit codes of mcpgate test and mcpgate replay (docs/policies.md#tests).
const (
	exitTestFailed = 2 // mcpgate test: a test failed or raised an error
	exitDiffers    = 3 // mcpgate replay: a replayed decision differs from the recorded one
)

// testResult is one line of mcpgate test --format json.
type testResult struct {
	File       string  `json:"file"`
	Name       string  `json:"name"`
	Outcome    string  `json:"outcome"` // pass, fail or error
	Message    string  `json:"message"`
	DurationMS float64 `json:"duration_ms"`
	// Line and Column locate a failed assertion, a throw or an error in File (1-based;
	// absent when unknown: a time or memory limit, an unhandled rejection).
	Line   int `json:"line,omitempty"`
	Column int `json:"column,omitempty"`
	// PolicyErrors are the policy faults (a runtime error, a timeout, a limit) that
	// rejected a call during a test that did not pass: "file:line:col: class (reason)".
	PolicyErrors []string `json:"policy_errors,omitempty"`
}

// policyFaults is a slog.Handler that keeps the pipeline's "policy error" records of
// the running test, and passes every record on to next.
type policyFaults struct {
	next   slog.Handler
	faults *[]string
}

func (h policyFaults) Enabled(ctx context.Context, l slog.Level) bool {
	return l >= slog.LevelWarn || h.next.Enabled(ctx, l)
}

func (h policyFaults) Handle(ctx context.Context, r slog.Record) error {
	if r.Level >= slog.LevelWarn && strings.HasPrefix(r.Message, "policy error") {
		var file, class, reason string
		var line, col int64
		r.Attrs(func(a slog.Attr) bool {
			switch a.Key {
			case "policy":
				file = a.Value.String()
			case "error_class":
				class = a.Value.String()
			case "reason":
				reason = a.Value.String()
			case "line":
				line = a.Value.Int64()
			case "column":
				col = a.Value.Int64()
			}
			return true
		})
		*h.faults = append(*h.faults, fmt.Sprintf("%s:%d:%d: %s (%s)", file, line, col, class, reason))
	}
	if h.next.Enabled(ctx, r.Level) {
		return h.next.Handle(ctx, r)
	}
	return nil
}

func (h policyFaults) WithAttrs(as []slog.Attr) slog.Handler {
	return policyFaults{next: h.next.WithAttrs(as), faults: h.faults}
}

func (h policyFaults) WithGroup(name string) slog.Handler {
	return policyFaults{next: h.next.WithGroup(name), faults: h.faults}
}

type testFlags struct {
	format  string
	run     string
	verbose bool
	config  string
	profile string
}

func newTestCmd() *cobra.Command {
	var f testFlags
	cmd := &cobra.Command{
		Use:   "test [--format text|json] [--run REGEX] [-v] [DIR]",
		Short: "Run the policy tests (*_test.js) of a policies directory",
		Long: `test runs the tests that sit beside your policies. DIR (default ./policies) holds
policies (*.js) and their tests (*_test.js); the gateway never loads a *_test.js
file as a policy.

Every top-level function whose name starts with test_ is one test. Tests run in file
order, each in a fresh runtime with the policies' sandbox and limits. A test fails
when it throws. The global mcpgate offers:

  mcpgate.call(spec)               run one whole tools/call through the real pipeline
                                   (built-in rules, DIR's policies, --filter-output on)
                                   against a fixture result instead of an upstream
  mcpgate.channel(spec)            run one message of another channel (a listing, a
                                   resource, a prompt, a sampling or elicitation request,
                                   a notification) through its filters and policy phase
  mcpgate.assert(cond, message)    fail unless cond is truthy
  mcpgate.assertEqual(actual, expected)
                                   deep equality, with a line diff on failure

spec is {tool, params, toolAccess, user: {userID, callerId, callerClass, roles},
result} (result: the CallToolResult the upstream returns; policies: ["a.js"] runs
only those files). mcpgate.call returns {outcome, action, decision, reason, policy,
phase, sent, result}: outcome and action as in the audit record, sent the arguments the
upstream received (null when rejected), result what the client receives.

mcpgate.channel's spec is {method, params, result, user, policies} (method: tools/list,
resources/read, prompts/get, sampling/createMessage, notifications/message, …;
params: the client request's, or the server message's). It returns {action, decision,
reason, policy, result, params, error, dropped, hidden}: hidden names the tools a
listing withheld from the caller (docs/channels.md).

Output: one line per test (PASS, FAIL with the message, ERROR with file:line:col),
then "N passed, N failed". Under a test that did not pass, "policy error during the
test: FILE:LINE:COL: CLASS (reason)" names a policy that crashed during its calls. Exit status: 0 all passed, 2 a test failed or raised an
error, 1 a policy or test file does not load (syntax error with file:line:col).

Example:
  mcpgate test                       the tests of ./policies
  mcpgate test --run email policies  only tests whose name matches "email"
  mcpgate test --format json policies/examples`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			dir := "policies"
			if len(args) == 1 {
				dir = args[0]
			}
			return runTests(cmd.Context(), f, dir, cmd.OutOrStdout(), cmd.ErrOrStderr())
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&f.format, "format", "text", "output format: text or json")
	fl.StringVar(&f.run, "run", "", "run only tests whose name (or file:name) matches this regular expression")
	fl.BoolVarP(&f.verbose, "verbose", "v", false, "print each test's duration, and the policies' warn lines on stderr")
	fl.StringVar(&f.config, "config", "", "configuration file whose rule severities (its \"rules\" and \"profile\") the built-in rules use, as the gateway's --config")
	fl.StringVar(&f.profile, "profile", "", profileFlagHelp)
	return cmd
}

func runTests(ctx context.Context, f testFlags, dir string, stdout, stderr io.Writer) error {
	if f.format != "text" && f.format != "json" {
		return fmt.Errorf("--format must be text or json, not %q", f.format)
	}
	var filter *regexp.Regexp
	if f.run != "" {
		var err error
		if filter, err = regexp.Compile(f.run); err != nil {
			return fmt.Errorf("--run: %w", err)
		}
	}
	var next slog.Handler = slog.DiscardHandler
	if f.verbose {
		next = slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: slog.LevelWarn})
	}
	var faults []string
	log := slog.New(policyFaults{next: next, faults: &faults})
	files, err := loadTestFiles(dir)
	if err != nil {
		return err
	}
	sev, err := engineSeverities(f.config, f.profile)
	if err != nil {
		return err
	}
	an, err := engine.New(engine.Options{Severities: sev})
	if err != nil {
		return fmt.Errorf("config: %w", err)
	}
	g, err := gate.Load(ctx, gate.Options{Dir: dir, Logger: log, Analyzer: an})
	if err != nil {
		return loadError(err)
	}
	defer g.Close()
	runner, err := fixture.New(fixture.Options{Gate: g, Analyzer: an, Logger: log})
	if err != nil {
		return err
	}
	results := []testResult{}
	for _, tf := range files {
		for _, name := range tf.Tests {
			if filter != nil && !filter.MatchString(name) && !filter.MatchString(tf.Name+":"+name) {
				continue
			}
			start := time.Now()
			faults = faults[:0]
			res := policytest.Run(ctx, g, tf, name, runner.Host())
			tr := testResult{
				File: tf.Name, Name: name, Outcome: res.Outcome, Message: res.Message,
				DurationMS: float64(time.Since(start).Microseconds()) / 1000, Line: res.Line, Column: res.Column,
			}
			if res.Outcome != policytest.Pass && len(faults) > 0 {
				tr.PolicyErrors = append([]string(nil), faults...)
			}
			results = append(results, tr)
			if ctx.Err() != nil {
				return ctx.Err()
			}
		}
	}
	failed := 0
	for _, r := range results {
		if r.Outcome != policytest.Pass {
			failed++
		}
	}
	if f.format == "json" {
		b, _ := json.MarshalIndent(results, "", "  ")
		fmt.Fprintf(stdout, "%s\n", b)
	} else {
		for _, r := range results {
			writeTestLine(stdout, r, f.verbose)
		}
		if len(files) == 0 {
			fmt.Fprintf(stderr, "mcpgate test: no *%s files in %s\n", gate.TestSuffix, dir)
		}
		fmt.Fprintf(stdout, "%d passed, %d failed\n", len(results)-failed, failed)
	}
	if failed > 0 {
		return exitStatus(exitTestFailed)
	}
	return nil
}

// writeTestLine prints one test: PASS, or FAIL or ERROR with the file:line:col of
// the failed assertion, throw or error and its message; a message of several lines (a
// diff) continues indented.
func writeTestLine(w io.Writer, r testResult, verbose bool) {
	loc := r.File
	if r.Line > 0 {
		loc = fmt.Sprintf("%s:%d:%d", r.File, r.Line, r.Column)
	}
	var line string
	switch r.Outcome {
	case policytest.Pass:
		line = "PASS  " + r.File + ": " + r.Name
	case policytest.Fail:
		line = "FAIL  " + loc + ": " + r.Name + ": " + r.Message
	default:
		line = "ERROR " + loc + ": " + r.Name + ": " + r.Message
	}
	if verbose {
		line = strings.Replace(line, "\n", fmt.Sprintf(" (%.1f ms)\n", r.DurationMS), 1)
		if !strings.Contains(line, " ms)") {
			line += fmt.Sprintf(" (%.1f ms)", r.DurationMS)
		}
	}
	for _, pe := range r.PolicyErrors {
		line += "\npolicy error during the test: " + pe
	}
	fmt.Fprintln(w, strings.ReplaceAll(line, "\n", "\n      "))
}

// loadTestFiles compiles every top-level *_test.js of dir, in lexical order.
func loadTestFiles(dir string) ([]*policytest.File, error) {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("policies directory: %w", err)
	}
	var names []string
	for _, e := range ents {
		if n := e.Name(); gate.IsTestFile(n) && !strings.HasPrefix(n, ".") && !e.IsDir() {
			names = append(names, n)
		}
	}
	slices.Sort(names)
	var out []*policytest.File
	for _, n := range names {
		src, err := os.ReadFile(filepath.Join(dir, n))
		if err != nil {
			return nil, err
		}
		tf, err := policytest.Compile(n, src)
		if err != nil {
			return nil, loadError(err)
		}
		out = append(out, tf)
	}
	return out, nil
}

// loadError words a file that does not load as file:line:col: message.
func loadError(err error) error {
	var ce *gate.CompileError
	if errors.As(err, &ce) {
		if ce.Line > 0 {
			return fmt.Errorf("%s:%d:%d: %s", ce.File, ce.Line, ce.Column, ce.Msg)
		}
		return fmt.Errorf("%s: %s", ce.File, ce.Msg)
	}
	return err
}
