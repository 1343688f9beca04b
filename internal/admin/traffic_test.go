package admin

import (
	"encoding/json"
	"reflect"
	"testing"
	"time"

	"github.com/mcpgate/mcpgate/internal/audit"
	"github.com/mcpgate/mcpgate/vocab"
)

// TestTraffic proves the chart's counts: one bucket per minute up to MaxBuckets
// minutes, wider buckets beyond, every record in the bucket of its minute under its
// final action, and the top tools and rules (a record counts once per rule).
func TestTraffic(t *testing.T) {
	now := time.Date(2026, 11, 29, 10, 30, 0, 0, time.UTC)
	at := func(min int, a vocab.Action, tool string, rules ...string) audit.Record {
		return audit.Record{TS: now.Add(time.Duration(-min) * time.Minute).Format(audit.TSLayout),
			ActionTaken: a, Tool: tool, RuleIDs: rules, InputRuleIDs: rules}
	}
	recs := []audit.Record{ // newest first, as a store answers
		at(0, vocab.Block, "read_file", "output_osc52_clipboard_write"),
		at(1, vocab.Redact, "lookup", "pii_email"),
		at(1, vocab.Redact, "lookup", "pii_email"),
		at(14, vocab.Pass, "read_file"),
		at(14, "weird", "read_file"),
	}
	tr := traffic(recs, now.Add(-15*time.Minute), now)
	if tr.BucketSec != 60 || len(tr.Actions[vocab.Pass]) != 16 || tr.Start != "2026-11-29T10:15:00.000Z" {
		t.Fatalf("buckets: %d s × %d from %s", tr.BucketSec, len(tr.Actions[vocab.Pass]), tr.Start)
	}
	if got := tr.Actions[vocab.Pass][1]; got != 2 {
		t.Errorf("minute 10:16 has %d pass, want 2 (an action off the ladder counts as pass)", got)
	}
	if tr.Actions[vocab.Redact][14] != 2 || tr.Actions[vocab.Block][15] != 1 {
		t.Errorf("redact %v block %v", tr.Actions[vocab.Redact], tr.Actions[vocab.Block])
	}
	if want := []Top{{"read_file", 3}, {"lookup", 2}}; !reflect.DeepEqual(tr.Tools, want) {
		t.Errorf("tools %v, want %v", tr.Tools, want)
	}
	if want := []Top{{"pii_email", 2}, {"output_osc52_clipboard_write", 1}}; !reflect.DeepEqual(tr.Rules, want) {
		t.Errorf("rules %v, want %v", tr.Rules, want)
	}

	week := traffic(recs, now.Add(-168*time.Hour), now)
	if n := len(week.Actions[vocab.Pass]); n > MaxBuckets+1 || week.BucketSec%60 != 0 || week.BucketSec <= 60 {
		t.Errorf("7 days: %d buckets of %d s", n, week.BucketSec)
	}
	sum := 0
	for _, a := range vocab.Actions {
		for _, n := range week.Actions[a] {
			sum += n
		}
	}
	if sum != len(recs) {
		t.Errorf("7 days count %d records, want %d", sum, len(recs))
	}
}

// TestTrafficAPI proves GET /api/traffic answers the filter over the store.
func TestTrafficAPI(t *testing.T) {
	w := do(handler(""), "/api/traffic?since=1h", "localhost", nil)
	if w.Code != 200 {
		t.Fatalf("status %d: %s", w.Code, w.Body)
	}
	var tr Traffic
	if err := json.Unmarshal(w.Body.Bytes(), &tr); err != nil {
		t.Fatal(err)
	}
	if tr.Records != 6 || len(tr.Tools) != 2 || tr.BucketSec != 60 {
		t.Fatalf("%+v", tr)
	}
	if w := do(handler(""), "/api/traffic?since=forever", "localhost", nil); w.Code != 400 {
		t.Fatalf("bad since: %d", w.Code)
	}
}
