package audit

import (
	"fmt"
	"io"
	"maps"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"

	"github.com/mcpgate/mcpgate/internal/bound"
	"github.com/mcpgate/mcpgate/internal/methods"
)

// WriteTable writes records as an aligned table, one row each, in the given order:
// TIME, STATUS, TOOL (the method for channels other than tools/call), CALLER,
// OUTCOME, RULES, GUARDRAILS, MS, EVENT, and SHADOW (the --shadow set's action, "≠"
// when it differs) when any record has one. Cells hold names and codes only, as the
// records do.
func WriteTable(w io.Writer, recs []Record) error {
	shadow := false
	for i := range recs {
		shadow = shadow || recs[i].Shadow != nil
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	head := "TIME\tSTATUS\tTOOL\tCALLER\tOUTCOME\tRULES\tGUARDRAILS\tMS\tEVENT"
	if shadow {
		head += "\tSHADOW"
	}
	fmt.Fprintln(tw, head)
	for i := range recs {
		r := &recs[i]
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%.1f\t%s",
			r.TS, r.ActionTaken.Label(), cell(toolCell(r)), cell(CallerLabel(r.Caller)), cell(string(r.Outcome)),
			cell(strings.Join(r.RuleIDs, ",")), cell(strings.Join(r.GuardrailsTriggered, ",")),
			r.ElapsedMS, r.EventID)
		if shadow {
			fmt.Fprintf(tw, "\t%s", shadowCell(r.Shadow))
		}
		fmt.Fprintln(tw)
	}
	return tw.Flush()
}

// CallerCell bounds each part of a caller shown in a table column, in bytes: user
// ids and OAuth client ids can be long, and a column must not push the rest away.
const CallerCell = 32

// CallerLabel is the CALLER column: "user_id (caller_id)", each part cut at
// CallerCell bytes, "" without a caller. Escaping is the caller's (cell).
func CallerLabel(c *Caller) string {
	if c == nil || c.UserID == "" && c.CallerID == "" {
		return ""
	}
	u, id := bound.Truncate(c.UserID, CallerCell), bound.Truncate(c.CallerID, CallerCell)
	switch {
	case id == "":
		return u
	case u == "":
		return "(" + id + ")"
	}
	return u + " (" + id + ")"
}

// WriteRecord writes one record for a person to read (mcpgate audit show): one
// "field: value" line per field that is set, in a fixed order, every value escaped
// as the table's cells are and lists joined with ", ". Names and codes only, as the
// record holds.
func WriteRecord(w io.Writer, r *Record) error {
	var b strings.Builder
	line := func(k, v string) {
		if v != "" {
			fmt.Fprintf(&b, "%-20s %s\n", k+":", cell(v))
		}
	}
	list := func(k string, vs []string) { line(k, strings.Join(vs, ", ")) }
	line("event_id", r.EventID)
	line("time", r.TS)
	line("status", r.ActionTaken.Label())
	line("method", RecordMethod(r))
	line("tool", r.Tool)
	line("server", r.Server)
	line("tool_access", r.ToolAccess)
	if c := r.Caller; c != nil {
		line("caller.user_id", c.UserID)
		line("caller.caller_id", c.CallerID)
		line("caller.caller_class", c.CallerClass)
		list("caller.scopes", c.Scopes)
	}
	for _, k := range slices.Sorted(maps.Keys(r.ClientInfo)) {
		line("client_info."+k, r.ClientInfo[k])
	}
	line("outcome", string(r.Outcome))
	line("reason", string(r.Reason))
	line("policy", r.Policy)
	line("phase", r.Phase)
	line("decision", r.Decision)
	line("filter", r.Filter)
	line("findings_count", strconv.Itoa(r.FindingsCount))
	line("highest_severity", r.HighestSeverity)
	list("rule_ids", r.RuleIDs)
	list("input_rule_ids", r.InputRuleIDs)
	list("guardrails", r.GuardrailsTriggered)
	list("policies_acted", r.Policies)
	line("params_rewritten", strconv.FormatBool(r.ParamsRewritten))
	line("truncated", strconv.FormatBool(r.Truncated))
	line("fail_mode_triggered", strconv.FormatBool(r.FailModeTriggered))
	line("elapsed_ms", strconv.FormatFloat(r.ElapsedMS, 'f', -1, 64))
	if len(r.StageMS) > 0 {
		var st []string
		for _, k := range slices.Sorted(maps.Keys(r.StageMS)) {
			st = append(st, fmt.Sprintf("%s %s", k, strconv.FormatFloat(r.StageMS[k], 'f', -1, 64)))
		}
		list("stage_ms", st)
	}
	if r.PolicyGen != 0 || r.PolicySetHash != "" {
		line("policy_set", fmt.Sprintf("generation %d, %s", r.PolicyGen, r.PolicySetHash))
	}
	if r.PolicyRevision != "" {
		line("policy_revision", r.PolicyRevision)
	}
	if s := r.Shadow; s != nil {
		v := s.ActionTaken.Label()
		if s.Differs {
			v += " (differs)"
		}
		if s.Reason != "" {
			v += ", " + string(s.Reason)
		}
		if s.Policy != "" {
			v += ", " + s.Policy
		}
		line("shadow", v)
	}
	line("replica", r.Replica)
	line("audit_output", r.AuditOutput)
	line("kind", r.Kind)
	_, err := io.WriteString(w, b.String())
	return err
}

// shadowCell is the SHADOW column: the candidate set's action, marked when it differs.
func shadowCell(s *Shadow) string {
	switch {
	case s == nil:
		return "-"
	case s.Differs:
		return s.ActionTaken.Label() + " ≠"
	}
	return s.ActionTaken.Label()
}

// toolCell is the TOOL column: the tool of a tools/call, the method (and tool, if
// any) of another channel's record.
func toolCell(r *Record) string {
	if m := RecordMethod(r); m != methods.ToolsCall {
		if r.Tool != "" {
			return m + " " + r.Tool
		}
		return m
	}
	return r.Tool
}

// TableCell is a cell of WriteTable's: one line, never empty, controls shown as
// \uXXXX; for the other tables of the CLI.
func TableCell(s string) string { return cell(s) }

// cell keeps a table cell on one line, never empty, and shows C0, C1 and bidi
// controls as \uXXXX, so that no cell can reorder or hide its row.
func cell(s string) string {
	if s == "" {
		return "-"
	}
	s = strings.Map(func(r rune) rune {
		if r < 0x20 || r == 0x7f {
			return '?'
		}
		return r
	}, s)
	return string(bound.EscapeControls([]byte(s)))
}
