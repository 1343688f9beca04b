package logging

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
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

// TestLogLinesHoldNoUserinfo: a URL's user-info (a collector's or a store's
// password) never reaches a log line, whether it rides in an attribute, an error or
// the message, in either format.
func TestLogLinesHoldNoUserinfo(t *testing.T) {
	for _, format := range []Format{FormatJSON, FormatText} {
		var buf bytes.Buffer
		log := New(&buf, format, slog.LevelInfo)
		log.Info("export to https://bob:hunter2@collector.example:4318/v1/logs",
			"endpoint", "http://alice:s3cret@127.0.0.1:4318",
			"err", fmt.Errorf(`parse "redis://:t0ken@cache:6379/0": bad`),
			"store", "postgres://mcp:pg-pw@db/audit?sslmode=disable")
		line := buf.String()
		for _, secret := range []string{"hunter2", "s3cret", "t0ken", "pg-pw", "alice", "bob@", "mcp:"} {
			if strings.Contains(line, secret) {
				t.Errorf("%s line holds %q: %s", format, secret, line)
			}
		}
		for _, want := range []string{"collector.example:4318/v1/logs", "127.0.0.1:4318", "cache:6379/0", "db/audit?sslmode=disable"} {
			if !strings.Contains(line, want) {
				t.Errorf("%s line lost %q: %s", format, want, line)
			}
		}
	}
}

func TestStripUserinfo(t *testing.T) {
	for in, want := range map[string]string{
		"":                                    "",
		"no url here":                         "no url here",
		"http://host:1/p":                     "http://host:1/p",
		"http://u:p@host:1/p":                 "http://host:1/p",
		"http://u@host":                       "http://host",
		"http://u:p@w@host/x@y":               "http://host/x@y",
		`"https://a:b@h" and ftp://c:d@e?q`:   `"https://h" and ftp://e?q`,
		"mailto:a@b":                          "mailto:a@b",
		"x://@h":                              "x://h",
		"redis://:pw@h:6379/0, then http://h": "redis://h:6379/0, then http://h",
	} {
		if got := StripUserinfo(in); got != want {
			t.Errorf("StripUserinfo(%q) = %q, want %q", in, got, want)
		}
	}
}

// --log-format text into a file or pipe writes plain text: no SGR colours.
func TestTextFormatNoColourWhenRedirected(t *testing.T) {
	f, err := os.CreateTemp(t.TempDir(), "log")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var buf bytes.Buffer
	for _, w := range []io.Writer{f, &buf, NewLineWriter(f)} {
		New(w, FormatText, slog.LevelDebug).Warn("upstream exited", "err", errors.New("exit status 1"), "n", 3)
	}
	got, _ := os.ReadFile(f.Name())
	got = append(got, buf.Bytes()...)
	if bytes.Contains(got, []byte("\x1b")) || bytes.Contains(got, []byte("[0m")) || bytes.Contains(got, []byte(`\x1b`)) {
		t.Fatalf("colours in redirected text log: %q", got)
	}
	if !bytes.Contains(got, []byte("upstream exited")) {
		t.Fatalf("message missing: %q", got)
	}
}
