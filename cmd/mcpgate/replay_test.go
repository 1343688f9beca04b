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

// TestReplayCaller: replay shows each call's caller (bounded and escaped like a tool
// name) in both formats, and --caller keeps one caller's calls, by user id or caller
// id; the summary agrees in number.
func TestReplayCaller(t *testing.T) {
	dir := t.TempDir()
	capFile := filepath.Join(dir, "calls.jsonl")
	result := `{"content":[{"type":"text","text":"ok"}]}`
	lines := []string{
		`{"event_id":"ev-1","ts":"2026-11-29T10:00:00.000Z","tool":"read_file","user":{"userID":"alice","callerId":"claude-code","callerClass":"trusted"},"filter_output":true,"arguments":{},"result":` + result + `,"action_taken":"pass","outcome":"ok"}`,
		`{"event_id":"ev-2","ts":"2026-11-29T10:01:00.000Z","tool":"read_file","user":{"userID":"bob\u202e","callerId":"ci-bot"},"filter_output":true,"arguments":{},"result":` + result + `,"action_taken":"pass","outcome":"ok"}`,
	}
	if err := os.WriteFile(capFile, []byte(strings.Join(lines, "\n")+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	pol := t.TempDir()
	replay := func(args ...string) string {
		t.Helper()
		var out, errb bytes.Buffer
		argv := append([]string{"replay", "--capture", capFile, "--policies", pol}, args...)
		if code := run(context.Background(), argv, nil, &out, &errb); code != 0 {
			t.Fatalf("%q: exit %d: %s", args, code, errb.String())
		}
		return out.String()
	}
	all := replay()
	if !strings.Contains(all, "alice (claude-code)") || !strings.Contains(all, `bob\u202e (ci-bot)`) || strings.Contains(all, "\u202e") || !strings.Contains(all, "0 of 2 calls differ\n") {
		t.Errorf("replay:\n%s", all)
	}
	for _, who := range []string{"ci-bot", "bob\u202e"} {
		one := replay("--caller", who)
		if strings.Contains(one, "ev-1") || !strings.Contains(one, "ev-2") || !strings.Contains(one, "0 of 1 call differ\n") {
			t.Errorf("--caller %q:\n%s", who, one)
		}
	}
	var rows []replayRow
	if err := json.Unmarshal([]byte(replay("--format", "json", "--caller", "alice")), &rows); err != nil || len(rows) != 1 || rows[0].Caller == nil || rows[0].Caller.CallerID != "claude-code" {
		t.Errorf("json: %v %+v", err, rows)
	}
}
