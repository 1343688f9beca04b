package relay

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mcpgate/mcpgate/gate"
	"github.com/mcpgate/mcpgate/internal/jsonrpc"
	"github.com/mcpgate/mcpgate/internal/translate"
)

// TestToolResultPathsRunPost: every path by which a tool's result reaches the client
// runs the post phase of the tool that produced it (docs/decisions.md#task-results).
// The shipped redact-email.js redacts the address on each: the plain call, the
// 2025-11-25 tasks/result, a 2026-07-28 tasks/get that inlines the finished task's
// result, and a notifications/tasks/status or 2026-07-28 notifications/tasks that
// carries it; with one server and with
// several (routed by name). A tasks/get or status carrying a result for a task the
// session does not hold is refused, never relayed.
func TestToolResultPathsRunPost(t *testing.T) {
	const mail = "bob@example.com"
	result := `{"content":[{"type":"text","text":"write to ` + mail + `"}],"structuredContent":{"to":"` + mail + `"}}`
	paths := []struct {
		name string
		// fetch is what the client sends for the task's result ("" for none), and the
		// server's answer to it or its own notification (%s: the tool's result).
		fetch, answer string
		task          bool
	}{
		{"direct tools/call", "", "", false},
		{"tasks/result", `{"jsonrpc":"2.0","id":2,"method":"tasks/result","params":{"taskId":"t-1"}}`,
			`{"jsonrpc":"2.0","id":2,"result":%s}`, true},
		// A CallToolResult with a member named result of its own is still the result.
		{"tasks/result with a result member", `{"jsonrpc":"2.0","id":2,"method":"tasks/result","params":{"taskId":"t-1"}}`,
			`{"jsonrpc":"2.0","id":2,"result":%s}`, true},
		{"tasks/get inlining the result", `{"jsonrpc":"2.0","id":2,"method":"tasks/get","params":{"taskId":"t-1"}}`,
			`{"jsonrpc":"2.0","id":2,"result":{"taskId":"t-1","status":"completed","resultType":"complete","result":%s}}`, true},
		{"notifications/tasks/status with the result", "",
			`{"jsonrpc":"2.0","method":"notifications/tasks/status","params":{"taskId":"t-1","status":"completed","result":%s}}`, true},
		{"notifications/tasks with the result", "",
			`{"jsonrpc":"2.0","method":"notifications/tasks","params":{"taskId":"t-1","status":"completed","result":%s}}`, true},
	}
	pol := t.TempDir()
	src, err := os.ReadFile(filepath.Join("..", "..", "policies", "redact-email.js"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(pol, "redact-email.js"), src, 0o600); err != nil {
		t.Fatal(err)
	}
	withPolicy := func(o *Options) {
		g, err := gate.Load(context.Background(), gate.Options{Dir: pol, Analyzer: o.Pipeline.Analyzer, Logger: o.Logger})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { g.Close() })
		o.Pipeline.Gate = g
	}
	for _, servers := range []string{"one server", "several servers"} {
		for _, p := range paths {
			t.Run(servers+"/"+p.name, func(t *testing.T) {
				up := newFakeUpstream()
				tool := "lookup"
				var h *harness
				if servers == "one server" {
					h = newHarnessWith(t, up, withPolicy)
				} else {
					var calls atomic.Int32
					tool = "crm_lookup"
					h = newHarnessOver(t, countingRouter{up, &calls}, up, withPolicy)
				}
				task := ""
				if p.task {
					task = `,"task":{"ttl":60000}`
				}
				h.client(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"` + tool + `","arguments":{"q":1}` + task + `}}`)
				list := h.upstreamGets()
				h.up.lines <- `{"jsonrpc":"2.0","id":` + list[strings.Index(list, `"id":`)+5:strings.Index(list, `,"method"`)] + `,"result":{"tools":[{"name":"` + tool + `","inputSchema":{"type":"object"}}]}}`
				h.upstreamGets()
				if !p.task {
					h.up.lines <- `{"jsonrpc":"2.0","id":1,"result":` + result + `}`
					checkRedacted(t, h.clientGets(), mail)
					if rec := h.recs.call(); rec.Tool != tool || len(rec.GuardrailsTriggered) == 0 {
						t.Fatalf("record %+v", rec)
					}
					return
				}
				h.up.lines <- `{"jsonrpc":"2.0","id":1,"result":{"task":{"taskId":"t-1","status":"working","ttl":60000}}}`
				id := clientTaskID(t, h.clientGets()) // the gateway's id for t-1
				h.recs.call()
				if p.fetch != "" {
					h.client(strings.Replace(p.fetch, "t-1", id, 1))
					if up := h.upstreamGets(); !strings.Contains(up, `"taskId":"t-1"`) || strings.Contains(up, id) {
						t.Fatalf("the upstream got %s", up)
					}
				}
				answer := strings.Replace(p.answer, "%s", result, 1)
				if p.name == "tasks/result with a result member" {
					answer = strings.Replace(answer, `"structuredContent"`, `"result":{"content":[]},"structuredContent"`, 1)
				}
				h.up.lines <- answer
				got := h.clientGets()
				checkRedacted(t, got, mail)
				if strings.Contains(answer, `"taskId"`) && (!strings.Contains(got, `"taskId":"`+id+`"`) || strings.Contains(got, "t-1")) {
					t.Fatalf("the client got the server's task id: %s", got)
				}
				rec := <-h.recs.ch
				if rec.Tool != tool || len(rec.GuardrailsTriggered) == 0 || rec.GuardrailsTriggered[0] != "redact-email.js" {
					t.Fatalf("record %+v", rec)
				}

				// A task the session does not hold: no tool to judge the result by.
				if p.fetch == "" {
					h.up.lines <- strings.Replace(strings.Replace(p.answer, "%s", result, 1), "t-1", "t-9", 1)
					if rec := <-h.recs.ch; rec.Reason != "task_unknown" {
						t.Fatalf("record %+v", rec)
					}
					clean := `{"jsonrpc":"2.0","method":"notifications/message","params":{"level":"info","data":"fine"}}`
					h.up.lines <- clean
					if got := h.clientGets(); got != clean {
						t.Fatalf("client got %s", got)
					}
					return
				}
				// A request for an unknown id, or for the server's own id of the task, is
				// refused before any server is asked.
				for _, other := range []string{"t-9", "t-1"} {
					h.client(strings.Replace(strings.Replace(p.fetch, "t-1", other, 1), `"id":2`, `"id":3`, 1))
					if got := h.clientGets(); errorCode(t, got) != -32602 || strings.Contains(got, mail) {
						t.Fatalf("unknown task %s: %s", other, got)
					}
					if rec := <-h.recs.ch; rec.Reason != "task_unknown" {
						t.Fatalf("record %+v", rec)
					}
				}
				select {
				case l := <-h.up.sent:
					t.Fatalf("the upstream got %s", l)
				default:
				}
			})
		}
	}
}

// clientTaskID is the task id of a CreateTaskResult response the client got.
func clientTaskID(t *testing.T, got string) string {
	t.Helper()
	var r struct {
		Result struct {
			Task struct {
				TaskID string `json:"taskId"`
			} `json:"task"`
		} `json:"result"`
	}
	if json.Unmarshal([]byte(got), &r) != nil || len(r.Result.Task.TaskID) != 22 {
		t.Fatalf("tools/call: no task id of the gateway's in %s", got)
	}
	return r.Result.Task.TaskID
}

func checkRedacted(t *testing.T, got, mail string) {
	t.Helper()
	if strings.Contains(got, mail) || strings.Count(got, "[REDACTED:EMAIL]") < 2 {
		t.Fatalf("the client got the address unredacted (or not in both copies): %s", got)
	}
}

// TestToolResultPathsRunPostTranslated: the last path of TestToolResultPathsRunPost,
// a translated Multi Round-Trip round: a 2026-07-28 client in front of a 2025-11-25
// server, whose tool asks the client (elicitation/create) before it answers; the
// retry gets the server's result with redact-email.js applied.
func TestToolResultPathsRunPostTranslated(t *testing.T) {
	const mail = "bob@example.com"
	const env = `"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{"elicitation":{}},"io.modelcontextprotocol/clientInfo":{"name":"cl","version":"1"}}`
	pol := t.TempDir()
	src, err := os.ReadFile(filepath.Join("..", "..", "policies", "redact-email.js"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(pol, "redact-email.js"), src, 0o600); err != nil {
		t.Fatal(err)
	}
	up := newFakeUpstream()
	h := newHarnessOver(t, translate.Wrap(closable{up}, translate.Options{}), up, func(o *Options) {
		g, err := gate.Load(context.Background(), gate.Options{Dir: pol, Analyzer: o.Pipeline.Analyzer, Logger: o.Logger})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { g.Close() })
		o.Pipeline.Gate = g
	})
	idOf := func(line string) string {
		m, err := jsonrpc.Parse([]byte(line))
		if err != nil {
			t.Fatalf("%s: %v", line, err)
		}
		return string(m.ID)
	}
	expect := func(method string) string {
		t.Helper()
		for {
			l := h.upstreamGets()
			if strings.Contains(l, `"method":"`+method+`"`) {
				return l
			}
		}
	}
	h.client(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"lookup","arguments":{"q":1},` + env + `}}`)
	h.up.lines <- `{"jsonrpc":"2.0","id":` + idOf(expect("server/discover")) + `,"error":{"code":-32601,"message":"Method not found"}}`
	h.up.lines <- `{"jsonrpc":"2.0","id":` + idOf(expect("initialize")) + `,"result":{"protocolVersion":"2025-11-25","capabilities":{"tools":{}},"serverInfo":{"name":"v1","version":"1"}}}`
	h.up.lines <- `{"jsonrpc":"2.0","id":` + idOf(expect("tools/list")) + `,"result":{"tools":[{"name":"lookup","inputSchema":{"type":"object"}}]}}`
	call := idOf(expect("tools/call"))
	h.up.lines <- `{"jsonrpc":"2.0","id":100,"method":"elicitation/create","params":{"message":"sure?","requestedSchema":{"type":"object","properties":{}}}}`
	got := h.clientGets()
	state := regexp.MustCompile(`"requestState":"([^"]+)"`).FindStringSubmatch(got)
	key := regexp.MustCompile(`"inputRequests":\{"([^"]+)"`).FindStringSubmatch(got)
	if state == nil || key == nil {
		t.Fatalf("client got %s", got)
	}
	h.client(`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"lookup","arguments":{"q":1},"inputResponses":{"` + key[1] + `":{"action":"accept","content":{}}},"requestState":"` + state[1] + `",` + env + `}}`)
	for l := h.upstreamGets(); !strings.Contains(l, `"id":100`); l = h.upstreamGets() {
	}
	h.up.lines <- `{"jsonrpc":"2.0","id":` + call + `,"result":{"content":[{"type":"text","text":"write to ` + mail + `"}],"structuredContent":{"to":"` + mail + `"}}}`
	got = h.clientGets()
	if !strings.Contains(got, `"id":2`) {
		t.Fatalf("client got %s", got)
	}
	checkRedacted(t, got, mail)
}

// closable is a fakeUpstream as the translation wraps a server connection.
type closable struct{ *fakeUpstream }

func (closable) Close(context.Context, time.Duration) error { return nil }
