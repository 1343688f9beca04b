package main

import (
	"encoding/json"
	"testing"
)

// TestDemoHeadline: the demo's headline comes from the record, so a call that passed
// never reads as rejected, and a warning says only the hiding codes are stripped.
func TestDemoHeadline(t *testing.T) {
	for _, tc := range []struct{ rec, want string }{
		{`{"action_taken":"pass","tool":"delete_repo"}`, "passed through unchanged"},
		{`{"action_taken":"block","policy":"block-force-delete.js","reason":"policy_throw"}`, "rejected by policy block-force-delete.js (policy_throw)"},
		{`{"action_taken":"block","rule_ids":["output_osc52_clipboard_write"],"reason":"filter_block"}`, "blocked by output_osc52_clipboard_write (filter_block)"},
		{`{"action_taken":"block","rule_ids":[],"reason":"scan_truncated"}`, "blocked (scan_truncated)"},
		{`{"action_taken":"redact","policies_acted":["redact-email.js"]}`, "redacted by redact-email.js"},
		{`{"action_taken":"mask","policies_acted":["mask.js"]}`, "masked by mask.js"},
		{`{"action_taken":"warn","rule_ids":["output_hidden_text"]}`, "warning for output_hidden_text; only the codes that hide text are stripped, the text itself stays"},
		{`{"action_taken":"warn","rule_ids":[],"policies_acted":["w.js"]}`, "warning from ctx.warn in w.js"},
	} {
		var rec map[string]any
		if err := json.Unmarshal([]byte(tc.rec), &rec); err != nil {
			t.Fatal(err)
		}
		if got := headline(rec); got != tc.want {
			t.Errorf("headline(%s) = %q, want %q", tc.rec, got, tc.want)
		}
	}
}
