package audit

import (
	"testing"
	"time"

	"github.com/mcpgate/mcpgate/vocab"
)

// FuzzParseFilter: the reader's filter parser never panics, and what it accepts has a
// known status and a sane limit.
func FuzzParseFilter(f *testing.F) {
	f.Add("redact", "read_file", "1h", "100")
	f.Add("", "", "", "")
	f.Add("BLOCK", "x", "-5m", "0")
	f.Add("mask", "", "7d", "1")
	now := time.Date(2026, 11, 29, 0, 0, 0, 0, time.UTC)
	f.Fuzz(func(t *testing.T, status, tool, since, limit string) {
		flt, err := ParseFilter(status, tool, since, limit, now)
		if err != nil {
			return
		}
		switch flt.Status {
		case "", vocab.Pass, vocab.Warn, vocab.Redact, vocab.Mask, vocab.Block:
		default:
			t.Fatalf("accepted status %q", flt.Status)
		}
		if since != "" && !flt.Since.Before(now) {
			t.Fatalf("since %q accepted as %v, not before now", since, flt.Since)
		}
		if flt.Limit <= 0 {
			t.Fatalf("accepted limit %d", flt.Limit)
		}
	})
}
