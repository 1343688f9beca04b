package audit

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"github.com/mcpgate/mcpgate/internal/bound"
)

// WriteTable writes records as an aligned table, one row each, in the given order:
// TIME, STATUS, TOOL (the method for channels other than tools/call), OUTCOME, RULES,
// GUARDRAILS, MS, EVENT, and SHADOW (the --shadow set's action, "≠" when it differs)
// when any record has one. Cells hold names and codes only, as the records do.
func WriteTable(w io.Writer, recs []Record) error {
	shadow := false
	for i := range recs {
		shadow = shadow || recs[i].Shadow != nil
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	head := "TIME\tSTATUS\tTOOL\tOUTCOME\tRULES\tGUARDRAILS\tMS\tEVENT"
	if shadow {
		head += "\tSHADOW"
	}
	fmt.Fprintln(tw, head)
	for i := range recs {
		r := &recs[i]
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%.1f\t%s",
			r.TS, r.ActionTaken.Label(), cell(toolCell(r)), cell(string(r.Outcome)),
			cell(strings.Join(r.RuleIDs, ",")), cell(strings.Join(r.GuardrailsTriggered, ",")),
			r.ElapsedMS, r.EventID)
		if shadow {
			fmt.Fprintf(tw, "\t%s", shadowCell(r.Shadow))
		}
		fmt.Fprintln(tw)
	}
	return tw.Flush()
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
	if m := RecordMethod(r); m != "tools/call" {
		if r.Tool != "" {
			return m + " " + r.Tool
		}
		return m
	}
	return r.Tool
}

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
