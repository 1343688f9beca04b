package audit

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
)

// WriteTable writes records as an aligned table, one row each, in the given order:
// TIME, STATUS, TOOL, OUTCOME, RULES, GUARDRAILS, MS, EVENT. Cells hold names and
// codes only, as the records do.
func WriteTable(w io.Writer, recs []Record) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "TIME\tSTATUS\tTOOL\tOUTCOME\tRULES\tGUARDRAILS\tMS\tEVENT")
	for i := range recs {
		r := &recs[i]
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%.1f\t%s\n",
			r.TS, r.ActionTaken.Label(), cell(r.Tool), cell(string(r.Outcome)),
			cell(strings.Join(r.RuleIDs, ",")), cell(strings.Join(r.GuardrailsTriggered, ",")),
			r.ElapsedMS, r.EventID)
	}
	return tw.Flush()
}

// cell keeps a table cell on one line and never empty.
func cell(s string) string {
	if s == "" {
		return "-"
	}
	return strings.Map(func(r rune) rune {
		if r < 0x20 || r == 0x7f || (r >= 0x80 && r < 0xa0) {
			return '?'
		}
		return r
	}, s)
}
