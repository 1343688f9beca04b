package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestCheck(t *testing.T) {
	dir := t.TempDir()
	resultFile := filepath.Join(dir, "result.json")
	if err := os.WriteFile(resultFile, []byte(`{"content":[{"type":"text","text":"a \u001b]52;c;aGk=\u0007 b"}],"isError":false}`), 0o644); err != nil {
		t.Fatal(err)
	}
	cfgFile := filepath.Join(dir, "config.json")
	if err := os.WriteFile(cfgFile, []byte(`{"mcpgate":{"rules":{"pii_email":"high"}}}`), 0o644); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name       string
		args       []string
		stdin      string
		code       int
		want       []string // substrings of stdout
		notWant    []string // never in stdout
		wantStderr string
	}{
		{"plain text allows", []string{"check", "-"}, "The build finished in 4.2 s; 17 tests passed.\n", exitOK,
			[]string{"verdict: allow (highest NONE, 0 findings)", "read: 46 bytes, all scanned", "sanitized:\nThe build finished"}, nil, ""},
		{"no arg reads stdin", []string{"check"}, "\x1b[31mred\x1b[0m", exitOK, []string{"verdict: allow", "sanitized:\nred\n"}, nil, ""},
		{"hidden text warns", []string{"check"}, "v \x1b[37;47m hidden \x1b[0m", exitWarn,
			[]string{"verdict: warn", "output_hidden_text", "sgr_same_colour", "(text) [2,18)", "v  hidden "}, []string{"\x1b"}, ""},
		{"osc52 blocks", []string{"check", "-"}, "x \x1b]52;c;aGk=\x07", exitBlock, []string{"verdict: block", "output_osc52_clipboard_write", "1 finding)"}, []string{"aGk="}, ""},
		{"one byte is a byte", []string{"check", "-"}, "x", exitOK, []string{"read: 1 byte, all scanned"}, nil, ""},
		{"result file", []string{"check", resultFile}, "", exitBlock,
			[]string{"/content/0/text [2,14)", `{"content":[{"type":"text","text":"a  b"}],"isError":false}`}, []string{"aGk="}, ""},
		{"json format", []string{"check", "--format", "json", "-"}, "mail bob@example.com", exitOK,
			[]string{`"verdict": "allow"`, `"rule_ids": [`, `"pii_email"`, `"entity": "email"`, `"input": "text"`}, nil, ""},
		{"json without content is text", []string{"check", "-"}, `{"a":"\u202e"}`, exitOK, []string{"verdict: allow"}, nil, ""},
		{"config raises a severity", []string{"check", "--config", cfgFile, "-"}, "mail bob@example.com", exitBlock,
			[]string{"verdict: block", "pii_email"}, nil, ""},
		{"config raises it in a result", []string{"check", "--config", cfgFile, "-"}, `{"content":[{"type":"text","text":"mail bob@example.com"}]}`, exitBlock,
			[]string{"verdict: block", "pii_email"}, nil, ""},
		{"bad config", []string{"check", "--config", filepath.Join(dir, "nope.json"), "-"}, "", exitError, nil, nil, "check: config"},
		{"bad format", []string{"check", "--format", "yaml", "-"}, "", exitError, nil, nil, "--format must be text or json"},
		{"missing file", []string{"check", filepath.Join(dir, "nope")}, "", exitError, nil, nil, "no such file"},
		{"two args", []string{"check", "a", "b"}, "", exitError, nil, nil, "accepts at most 1 arg"},
		{"bad result JSON", []string{"check", "-"}, `{"content":[{"type":"text","text":"x"}], "b":}`, exitOK, []string{"verdict: allow", "sanitized:"}, nil, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			code := run(context.Background(), tc.args, strings.NewReader(tc.stdin), &stdout, &stderr)
			if code != tc.code {
				t.Errorf("exit %d, want %d\nstdout: %s\nstderr: %s", code, tc.code, stdout.String(), stderr.String())
			}
			for _, w := range tc.want {
				if !strings.Contains(stdout.String(), w) {
					t.Errorf("stdout lacks %q:\n%s", w, stdout.String())
				}
			}
			for _, w := range tc.notWant {
				if strings.Contains(stdout.String(), w) {
					t.Errorf("stdout holds %q:\n%s", w, stdout.String())
				}
			}
			if !strings.Contains(stderr.String(), tc.wantStderr) {
				t.Errorf("stderr %q lacks %q", stderr.String(), tc.wantStderr)
			}
		})
	}
}

// TestCheckJSONNeverCarriesValues: findings in --format json hold no matched value.
func TestCheckJSONNeverCarriesValues(t *testing.T) {
	var stdout, stderr bytes.Buffer
	in := `{"content":[{"type":"text","text":"key AKIA2OGYBAH6STMMNXNN mail bob@example.com"}],"structuredContent":{"card":"4111 1111 1111 1111"}}`
	code := run(context.Background(), []string{"check", "--format", "json"}, strings.NewReader(in), &stdout, &stderr)
	if code != exitOK {
		t.Fatalf("exit %d: %s", code, stderr.String())
	}
	var out struct {
		Input    string            `json:"input"`
		RuleIDs  []string          `json:"rule_ids"`
		Findings []json.RawMessage `json:"findings"`
	}
	if err := json.Unmarshal(stdout.Bytes(), &out); err != nil {
		t.Fatal(err)
	}
	if out.Input != "result" || len(out.Findings) != 3 || len(out.RuleIDs) != 3 {
		t.Fatalf("output %s", stdout.String())
	}
	for _, f := range out.Findings {
		for _, v := range []string{"AKIA2OGYBAH6STMMNXNN", "bob@example.com", "4111"} {
			if strings.Contains(string(f), v) {
				t.Errorf("finding %s carries a value", f)
			}
		}
	}
}

// TestCheckReadsWholeInput: check is a pipeline tool with no scan cap. An OSC 52
// write at byte 2,000,000 of a long log blocks (exit 4); the output says every byte
// was read; a text over 1 MiB is streamed and its sanitized form not printed.
func TestCheckReadsWholeInput(t *testing.T) {
	line := "2026-11-29T19:49:51Z INFO request ok tool=read_text_file elapsed=1.42ms\n"
	var b strings.Builder
	for b.Len() < 2_000_000 {
		b.WriteString(line)
	}
	b.WriteString("\x1b]52;c;ZXZpbA==\x07")
	at := b.Len() - len("\x1b]52;c;ZXZpbA==\x07")
	for b.Len() < 3_000_000 {
		b.WriteString(line)
	}
	logText := b.String()
	file := filepath.Join(t.TempDir(), "app.log")
	if err := os.WriteFile(file, []byte(logText), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{{"check", "--format", "json", file}, {"check", "--format", "json", "-"}} {
		var stdout, stderr bytes.Buffer
		code := run(context.Background(), args, strings.NewReader(logText), &stdout, &stderr)
		if code != exitBlock {
			t.Fatalf("%v: exit %d, want %d: %s", args, code, exitBlock, stderr.String())
		}
		var out checkOutput
		if err := json.Unmarshal(stdout.Bytes(), &out); err != nil {
			t.Fatal(err)
		}
		if out.BytesRead != int64(len(logText)) || out.Truncated || string(out.Sanitized) != "null" {
			t.Errorf("%v: read %d of %d, truncated %v, sanitized %.40s", args, out.BytesRead, len(logText), out.Truncated, out.Sanitized)
		}
		if len(out.Findings) != 1 || out.Findings[0].Start != at || out.Findings[0].RuleID != "output_osc52_clipboard_write" {
			t.Errorf("%v: findings %+v, want one OSC 52 at %d", args, out.Findings, at)
		}
	}
	var stdout, stderr bytes.Buffer
	run(context.Background(), []string{"check", file}, nil, &stdout, &stderr)
	if !strings.Contains(stdout.String(), "read: 3000") || !strings.Contains(stdout.String(), "sanitized: not printed") || stdout.Len() > 4096 {
		t.Errorf("text output:\n%.600s", stdout.String())
	}
}

// TestCheckLargeResult: a CallToolResult over the gateway's 1 MiB scan cap is still
// analysed whole, as a result.
func TestCheckLargeResult(t *testing.T) {
	filler := strings.Repeat("clean text ", 200_000)
	in := `{"content":[{"type":"text","text":"` + filler + `"},{"type":"text","text":"late \u001b]52;c;aGk=\u0007"}]}`
	var stdout, stderr bytes.Buffer
	code := run(context.Background(), []string{"check", "--format", "json", "-"}, strings.NewReader(in), &stdout, &stderr)
	var out checkOutput
	if err := json.Unmarshal(stdout.Bytes(), &out); err != nil {
		t.Fatal(err)
	}
	if code != exitBlock || out.Input != "result" || out.Truncated || out.BytesRead != int64(len(in)) || len(out.Findings) != 1 || out.Findings[0].Pointer != "/content/1/text" {
		t.Errorf("exit %d, input %s, truncated %v, read %d of %d, findings %+v", code, out.Input, out.Truncated, out.BytesRead, len(in), out.Findings)
	}
}
