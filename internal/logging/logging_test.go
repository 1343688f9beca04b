package logging

import (
	"bytes"
	"encoding/json"
	"log/slog"
	"strings"
	"testing"
	"time"
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

// TestJSONLogLines: durations read as Go durations, not integer nanoseconds, and C1
// and bidi controls in a value are escaped on the line.
func TestJSONLogLines(t *testing.T) {
	var buf bytes.Buffer
	log := New(NewLineWriter(&buf), FormatJSON, slog.LevelInfo)
	log.Info("drain", "drain_timeout", 30*time.Second, "took", 1500*time.Millisecond, "tool", "x\u202ey")
	line := buf.String()
	for _, want := range []string{`"drain_timeout":"30s"`, `"took":"1.5s"`, `"tool":"x\u202ey"`} {
		if !strings.Contains(line, want) {
			t.Errorf("line lacks %s: %s", want, line)
		}
	}
	if strings.ContainsRune(line, 0x202e) {
		t.Errorf("raw bidi control in %q", line)
	}
}
