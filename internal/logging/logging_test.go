package logging

import (
	"bytes"
	"encoding/json"
	"log/slog"
	"strings"
	"testing"
)

// TestLogLinesNeverLookLikeAuditRecords: on stderr only audit records carry both
// event_id and kind, so a log line's "kind" attribute is renamed.
func TestLogLinesNeverLookLikeAuditRecords(t *testing.T) {
	var buf bytes.Buffer
	log := New(&buf, FormatJSON, slog.LevelDebug)
	log.Info("x", "event_id", "e1", "kind", "gateway_output_filter")
	var m map[string]any
	if err := json.Unmarshal(buf.Bytes(), &m); err != nil {
		t.Fatal(err)
	}
	if _, ok := m["kind"]; ok {
		t.Fatalf("log line carries kind: %s", buf.String())
	}
	if m["log_kind"] != "gateway_output_filter" || m["event_id"] != "e1" {
		t.Fatalf("attributes lost: %s", buf.String())
	}
}

func TestFormatAutoIsJSONOffATerminal(t *testing.T) {
	var buf bytes.Buffer
	New(NewLineWriter(&buf), FormatAuto, slog.LevelInfo).Info("hello")
	if !json.Valid(bytes.TrimSpace(buf.Bytes())) {
		t.Fatalf("auto format off a terminal should be JSON: %q", buf.String())
	}
	buf.Reset()
	New(&buf, FormatText, slog.LevelInfo).Info("hello")
	if json.Valid(bytes.TrimSpace(buf.Bytes())) || !strings.Contains(buf.String(), "hello") {
		t.Fatalf("text format: %q", buf.String())
	}
}
