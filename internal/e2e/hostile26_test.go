package e2e

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/mcpgate/mcpgate/internal/testwait"
)

// hostile26Server is testdata/e2e/hostile26.mjs over stdio: a modern-only v2 SDK server
// whose every 2026-07-28 channel carries a payload.
func hostile26Server(t *testing.T) []string {
	nodeModule(t, "@modelcontextprotocol/server/package.json")
	return []string{node22(t), filepath.Join(root, "testdata", "e2e", "hostile26.mjs"), "stdio"}
}

// hostile26Client runs testdata/e2e/hostile26-client.mjs (the v2 client SDK, pinned to
// 2026-07-28) with conf and returns what it printed.
func hostile26Client(t *testing.T, conf map[string]any) map[string]json.RawMessage {
	t.Helper()
	nodeModule(t, "@modelcontextprotocol/client/package.json")
	cfg, _ := json.Marshal(conf)
	c := harnessCmd(t, 2*time.Minute, node22(t), filepath.Join(root, "testdata", "e2e", "hostile26-client.mjs"), string(cfg))
	c.Dir = filepath.Join(root, "testdata", "e2e")
	b, err := c.Output()
	if err != nil {
		t.Fatalf("hostile26-client.mjs: %v\n%s", c.explain(err), b)
	}
	var out map[string]json.RawMessage
	if err := json.Unmarshal(b, &out); err != nil {
		t.Fatalf("hostile26-client.mjs printed %q: %v", b, err)
	}
	return out
}

// TestHostileModernServer: a v2 client pinned to 2026-07-28, through the binary with
// --filter-output on the stdio front and the HTTP front, in front of a hostile
// modern-only v2 server, with a list policy that hides one tool. Per channel:
// server/discover's instructions lose their Tags (one server/discover record,
// output_hidden_text); the listing loses the confusable and the invisible-ending tool
// names (name_confusable, name_invisible) and the policy's tool, calls to them are
// rejected, the server's forged cacheScope "public" is "private" and its 10-minute
// ttlMs is clamped to 5; a
// subscriptions/listen stream gets the server's resources/updated (relayed intact, as
// docs/channels.md says of notifications that carry no text); a tasks/get of a task
// the gateway never saw created, whose answer inlines an OSC 52 result, is refused
// (task_unknown); on tools/call, prompts/get and resources/read, the
// inputRequests of an input_required result reach the client's handlers sanitized
// (no escape, no Tags; includeContext narrowed to "none", the sampling tools'
// descriptions cleaned), the retry gets the server's final result, and an
// elicitation with OSC 52 asking for a password, or sampling whose tool carries OSC
// 52, is withheld as a complete block result the client's handlers never see. Every
// answer is a valid result (no step errs: no INVALID_RESULT), every input request
// gets exactly one record naming its own method and the method it arrived on, and
// the requestState is never in a record or a log line.
func TestHostileModernServer(t *testing.T) {
	up := hostile26Server(t)
	pol := t.TempDir()
	must(t, os.WriteFile(filepath.Join(pol, "hide-wipe.js"), []byte(`if (ctx.phase === "list") ctx.tools = ctx.tools.filter((t) => t.name !== "wipe");`), 0o644))
	for _, http := range []bool{false, true} {
		name := fmt.Sprintf("http=%v", http)
		audit := filepath.Join(t.TempDir(), "audit.jsonl")
		conf := map[string]any{}
		var logs func() string
		if http {
			g := startHTTPGateway(t, append([]string{"--filter-output", "--policies", pol, "--audit-file", audit, "--"}, up...)...)
			conf["url"] = g.url
			logs = g.stderr.String
		} else {
			conf["cmd"] = append([]string{binary, "gateway", "run", "--filter-output", "--policies", pol, "--audit-file", audit, "--"}, up...)
		}
		out := hostile26Client(t, conf)
		if logs == nil {
			var s string
			_ = json.Unmarshal(out["stderr"], &s)
			logs = func() string { return s }
		}
		checkHostile26(t, name, out, auditFile(t, audit), logs())
	}
}

func checkHostile26(t *testing.T, name string, out map[string]json.RawMessage, recs []map[string]any, logs string) {
	t.Helper()
	if string(out["version"]) != `"2026-07-28"` || out["connect"] != nil {
		t.Fatalf("%s: %s", name, mustJSON(out))
	}
	hostile := func(s string) bool {
		return strings.ContainsRune(s, '\x1b') || strings.Contains(s, `\u001b`) || strings.ContainsFunc(s, func(r rune) bool { return r >= 0xe0000 && r <= 0xe007f })
	}
	if got := string(out["instructions"]); hostile(got) || !strings.Contains(got, "Use the ask tool.") {
		t.Errorf("%s: instructions %s", name, got)
	}
	var listing struct {
		CacheScope string
		TTLMs      *float64 `json:"ttlMs"`
		Tools      []struct{ Name string }
	}
	get(t, out["tools"], &listing)
	var names []string
	for _, tool := range listing.Tools {
		names = append(names, tool.Name)
	}
	if !slices.Contains(names, "read_file") || slices.Contains(names, "reаd_file") || slices.Contains(names, "list_files\u200b") || slices.Contains(names, "wipe") {
		t.Errorf("%s: listed %q", name, names)
	}
	if listing.CacheScope != "private" { // the server's "public" is forged: the listing was changed for this caller
		t.Errorf("%s: the changed listing is cacheScope %q", name, listing.CacheScope)
	}
	if listing.TTLMs == nil || *listing.TTLMs != 300000 { // the server's 10 minutes, clamped to --max-cache-ttl's 5
		t.Errorf("%s: the listing's ttlMs %v", name, listing.TTLMs)
	}
	for step, want := range map[string]string{
		"call": "done: elicit,roots,sample", "prompt": "done: elicit,roots,sample", "read": "done: elicit,roots,sample",
		"note":       `"text":"noted"`,
		"poke":       `"text":"poked"`,
		"call_block": "[mcpgate: request blocked", "prompt_block": "[mcpgate: request blocked", "read_block": "[mcpgate: request blocked",
		"call_sample": "[mcpgate: request blocked", "read_sample": "[mcpgate: request blocked",
		"confusable": "not listed for this caller",
		"wipe":       "not listed for this caller",
	} {
		if got := string(out[step]); !strings.Contains(got, want) || strings.Contains(got, `"error"`) {
			t.Errorf("%s %s: got %s, want %s", name, step, got, want)
		}
	}
	// subscriptions/listen: the server's resources/updated for the URI the client asked
	// for arrives on the stream; such a notification carries no text for the agent and
	// is relayed with its members intact (docs/channels.md), its _meta's Tags included
	var updated []struct {
		URI  string
		Meta map[string]any `json:"_meta"`
	}
	get(t, out["updated"], &updated)
	if len(updated) != 1 || updated[0].URI != "ask://x" || !strings.Contains(string(out["honored"]), `"ask://x"`) {
		t.Errorf("%s: listen honored %s, got %s", name, out["honored"], out["updated"])
	}
	// tasks/get (stdio upstream) of a task no call through the gateway created, whose
	// answer inlines a result: no tool's post phase can judge it, so it is refused
	// (-32602, task_unknown, docs/decisions.md#task-results); one record
	if got := string(out["task"]); hostile(got) || !strings.Contains(got, "not known to this session") {
		t.Errorf("%s task: %s", name, got)
	}
	tasks := 0
	for _, r := range recs {
		if r["method"] == "tasks/get" && r["reason"] == "task_unknown" {
			tasks++
		}
	}
	if tasks != 1 {
		t.Errorf("%s: %d tasks/get task_unknown records, want 1", name, tasks)
	}
	var asked map[string][]struct {
		Method string
		Params json.RawMessage
	}
	get(t, out["asked"], &asked)
	for _, step := range []string{"call", "prompt", "read"} {
		var methods []string
		for _, a := range asked[step] {
			methods = append(methods, a.Method)
			if hostile(string(a.Params)) {
				t.Errorf("%s %s: %s reached the client raw: %s", name, step, a.Method, a.Params)
			}
			if a.Method == "sampling/createMessage" && !strings.Contains(string(a.Params), `"includeContext":"none"`) {
				t.Errorf("%s %s: includeContext not narrowed: %s", name, step, a.Params)
			}
		}
		slices.Sort(methods)
		if fmt.Sprint(methods) != "[elicitation/create roots/list sampling/createMessage]" {
			t.Errorf("%s %s: the client was asked %v", name, step, methods)
		}
	}
	for _, step := range []string{"call_block", "prompt_block", "read_block", "call_sample", "read_sample", "confusable", "wipe"} {
		if len(asked[step]) != 0 {
			t.Errorf("%s %s: the client was asked %v", name, step, asked[step])
		}
	}
	// one record per input request, naming its method and the method it came on
	count := map[string]int{}
	for _, r := range recs {
		if via, _ := r["via"].(string); via != "" {
			count[fmt.Sprintf("%s via %s: %s", r["method"], via, r["decision"])]++
		}
	}
	want := map[string]int{}
	for _, via := range []string{"tools/call", "prompts/get", "resources/read"} {
		want["elicitation/create via "+via+": warn"] = 1
		want["elicitation/create via "+via+": block"] = 1
		want["sampling/createMessage via "+via+": warn"] = 1
		want["roots/list via "+via+": allow"] = 1
	}
	want["sampling/createMessage via tools/call: block"] = 1
	want["sampling/createMessage via resources/read: block"] = 1
	if fmt.Sprint(count) != fmt.Sprint(want) {
		t.Errorf("%s: input request records\n got %v\nwant %v", name, count, want)
	}
	rules := func(method string) []string {
		var ids []string
		for _, r := range recs {
			if r["method"] == method && r["via"] == nil {
				for _, id := range r["rule_ids"].([]any) {
					ids = append(ids, id.(string))
				}
			}
		}
		return ids
	}
	if ids := rules("server/discover"); !slices.Contains(ids, "output_hidden_text") {
		t.Errorf("%s: server/discover rules %v", name, ids)
	}
	if ids := rules("tools/list"); !slices.Contains(ids, "name_confusable") || !slices.Contains(ids, "name_invisible") {
		t.Errorf("%s: tools/list rules %v", name, ids)
	}
	narrowed := 0
	for _, r := range recs {
		if r["method"] == "sampling/createMessage" && slices.Contains(r["rule_ids"].([]any), any("sampling_context_narrowed")) {
			narrowed++
		}
	}
	if narrowed != 3 {
		t.Errorf("%s: %d sampling_context_narrowed records, want 3", name, narrowed)
	}
	all := mustJSON(recs) + logs
	if strings.Contains(all, "REQUEST_STATE_MARK") || strings.Contains(all, "requestState") {
		t.Errorf("%s: the requestState is in a record or a log line", name)
	}
	if strings.Contains(all, "hunter2") {
		t.Errorf("%s: the client's answer is in a record or a log line", name)
	}
}

func mustJSON(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

// TestTaskGetRunsPost: a v2 client pinned to 2026-07-28 calls a tool as a task and
// gets the finished task with tasks/get, whose answer inlines the tool's result with
// an e-mail address; the shipped redact-email.js redacts it there as on the plain
// call, in both copies (content and structuredContent), and the tasks/get record
// names the tool and the policy; on stdio and the HTTP front
// (docs/decisions.md#task-results).
func TestTaskGetRunsPost(t *testing.T) {
	up := hostile26Server(t)
	pol := policiesWith(t, "policies/redact-email.js")
	for _, http := range []bool{false, true} {
		audit := filepath.Join(t.TempDir(), "audit.jsonl")
		conf := map[string]any{}
		if http {
			g := startHTTPGateway(t, append([]string{"--policies", pol, "--audit-file", audit, "--"}, up...)...)
			conf["url"] = g.url
		} else {
			conf["cmd"] = append([]string{binary, "gateway", "run", "--policies", pol, "--audit-file", audit, "--"}, up...)
		}
		nodeModule(t, "@modelcontextprotocol/client/package.json")
		out := scriptJSON(t, "task-client.mjs", conf)
		id := gatewayTaskID(t, out["created"]) // the server's is t2 (docs/decisions.md#task-owners)
		if got := string(out["got"]); strings.Contains(got, "bob@example.com") || strings.Count(got, "[REDACTED:EMAIL]") != 2 || !strings.Contains(got, `"taskId":"`+id+`"`) {
			t.Errorf("http=%v: tasks/get %s", http, got)
		}
		ok := testwait.Within(testwait.Timeout, func() bool {
			b, _ := os.ReadFile(audit)
			for _, line := range strings.Split(string(b), "\n") {
				var r map[string]any
				if json.Unmarshal([]byte(line), &r) == nil && r["method"] == "tasks/get" && r["tool"] == "note" && strings.Contains(line, "redact-email.js") {
					return true
				}
			}
			return false
		})
		if !ok {
			b, _ := os.ReadFile(audit)
			t.Errorf("http=%v: no tasks/get record naming note and redact-email.js:\n%s", http, b)
		}
	}
}

// TestSealedRequestStateV2: a v2 client pinned to 2026-07-28, through the binary on
// stdio in front of a 2026-07-28 server whose confirm tool asks for input: the SDK's
// own round (it answers the elicitation and retries with the requestState the gateway
// gave it, the gateway's seal) reaches the server with the server's own state, which
// it echoes; a retry that presents the server's state as the server wrote it, or a
// made-up sealed one, is answered -32602 and never reaches the server.
func TestSealedRequestStateV2(t *testing.T) {
	nodeModule(t, "@modelcontextprotocol/client/package.json")
	cfg, _ := json.Marshal(map[string]any{"cmd": append([]string{binary, "gateway", "run", "--policies", t.TempDir(), "--"}, mrtrServer(t)...)})
	c := harnessCmd(t, 2*time.Minute, node22(t), filepath.Join(root, "testdata", "e2e", "state-client.mjs"), string(cfg))
	c.Dir = filepath.Join(root, "testdata", "e2e")
	b, err := c.Output()
	if err != nil {
		t.Fatalf("state-client.mjs: %v\n%s", c.explain(err), b)
	}
	var out map[string]json.RawMessage
	if err := json.Unmarshal(b, &out); err != nil {
		t.Fatalf("state-client.mjs printed %q: %v", b, err)
	}
	if got := string(out["sdk"]); !strings.Contains(got, "answer: accept") || !strings.Contains(got, "state st:prod") {
		t.Errorf("sdk: %s", got)
	}
	for _, step := range []string{"raw", "forged"} {
		if got := string(out[step]); !strings.Contains(got, "requestState") || strings.Contains(got, "answer:") {
			t.Errorf("%s: %s", step, got)
		}
	}
}
