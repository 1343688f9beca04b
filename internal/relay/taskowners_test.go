package relay

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/mcpgate/mcpgate/internal/jsonrpc"
)

// TestTaskIDsAreTheGateways: the client holds the gateway's id of each task, never
// the server's: the CreateTaskResult, a task method's answer, the related task of a
// tasks/result and of a server's message, and a status notification carry the
// gateway's id; tasks/list shows only the session's own tasks; the server gets its own
// id back (docs/decisions.md#task-owners).
func TestTaskIDsAreTheGateways(t *testing.T) {
	h := newHarness(t, 0)
	id := h.createTask("c1", "1") // a server whose ids are sequential; id is 22 characters
	steps := []struct {
		name, request, answer string
		want                  []string // in what the client gets
	}{
		{"tasks/get", `{"jsonrpc":"2.0","id":2,"method":"tasks/get","params":{"taskId":"` + id + `"}}`,
			`{"jsonrpc":"2.0","id":2,"result":{"taskId":"1","status":"working"}}`, []string{`"taskId":"` + id + `"`}},
		{"tasks/result", `{"jsonrpc":"2.0","id":3,"method":"tasks/result","params":{"taskId":"` + id + `"}}`,
			`{"jsonrpc":"2.0","id":3,"result":{"content":[{"type":"text","text":"done"}],"_meta":{"io.modelcontextprotocol/related-task":{"taskId":"1"}}}}`,
			[]string{`"io.modelcontextprotocol/related-task":{"taskId":"` + id + `"}`, `"done"`}},
		{"tasks/list", `{"jsonrpc":"2.0","id":4,"method":"tasks/list","params":{}}`,
			`{"jsonrpc":"2.0","id":4,"result":{"tasks":[{"taskId":"0","status":"working"},{"taskId":"1","status":"working"},{"taskId":"2","status":"completed"}]}}`,
			[]string{`"tasks":[{"status":"working","taskId":"` + id + `"}]`}},
	}
	for _, st := range steps {
		h.client(st.request)
		if up := h.upstreamGets(); st.name != "tasks/list" && (!strings.Contains(up, `"taskId":"1"`) || strings.Contains(up, id)) {
			t.Fatalf("%s: the upstream got %s", st.name, up)
		}
		h.up.lines <- st.answer
		got := h.clientGets()
		for _, w := range st.want {
			if !strings.Contains(got, w) {
				t.Fatalf("%s: the client got %s, want %s in it", st.name, got, w)
			}
		}
		if strings.Contains(got, `"taskId":"0"`) || strings.Contains(got, `"taskId":"1"`) || strings.Contains(got, `"taskId":"2"`) {
			t.Fatalf("%s: the client got a server's task id: %s", st.name, got)
		}
	}
	for _, n := range []string{
		`{"jsonrpc":"2.0","method":"notifications/tasks/status","params":{"taskId":"1","status":"working"}}`,
		`{"jsonrpc":"2.0","method":"notifications/message","params":{"level":"info","data":"step 2","_meta":{"io.modelcontextprotocol/related-task":{"taskId":"1"}}}}`,
	} {
		h.up.lines <- n
		if got := h.clientGets(); !strings.Contains(got, `"taskId":"`+id+`"`) || strings.Contains(got, `"taskId":"1"`) {
			t.Fatalf("the client got %s", got)
		}
	}
}

// TestTaskOwnersFailClosed: a task method naming an id the session does not hold is
// refused, -32602 with the text of an unknown task and one record, and no server is
// asked, for every task method: an id another session holds (task_not_owned), the
// same id once that session has ended, the server's own (sequential) id, and none
// (task_unknown).
func TestTaskOwnersFailClosed(t *testing.T) {
	alice := newHarness(t, 0)
	id := alice.createTask("c1", "1")
	bob := newHarness(t, 0)
	bob.createTask("c1", "1") // bob's own task, which his server also calls 1
	ask := func(method, taskID, reason string) {
		t.Helper()
		params := `{}`
		if taskID != "-" {
			params = `{"taskId":"` + taskID + `"}`
		}
		bob.client(`{"jsonrpc":"2.0","id":7,"method":"` + method + `","params":` + params + `}`)
		got := bob.clientGets()
		if errorCode(t, got) != -32602 || !strings.Contains(got, "the task is not known to this session") {
			t.Fatalf("%s of %s: %s", method, taskID, got)
		}
		if rec := bob.record(); rec.Method != method || string(rec.Reason) != reason || rec.Outcome != "rejected" {
			t.Fatalf("%s of %s: record %+v, want reason %s", method, taskID, rec, reason)
		}
	}
	methods := []string{"tasks/get", "tasks/result", "tasks/cancel", "tasks/update"}
	for _, m := range methods {
		ask(m, id, "task_not_owned")
		ask(m, "1", "task_unknown")
		ask(m, "-", "task_unknown")
	}
	alice.in.Close() // alice's session ends
	select {
	case <-alice.done:
	case <-time.After(5 * time.Second):
		t.Fatal("alice's session did not end")
	}
	for _, m := range methods {
		ask(m, id, "task_unknown")
	}
	select {
	case l := <-bob.up.sent:
		t.Fatalf("bob's upstream got %s", l)
	case rec := <-bob.recs.ch:
		t.Fatalf("a record too many: %+v", rec)
	default:
	}
}

// FuzzTaskIDsToClient: whatever a server sends, the rewrite of its task ids never
// panics, leaves a message without taskId as it was, keeps a message valid JSON, and
// never shows the client the server's id of a task the session holds.
func FuzzTaskIDsToClient(f *testing.F) {
	for _, seed := range []string{
		`{"jsonrpc":"2.0","id":1,"result":{"taskId":"up-1","status":"working"}}`,
		`{"jsonrpc":"2.0","id":1,"result":{"tasks":[{"taskId":"up-1"},{"taskId":"x"},7,null]}}`,
		`{"jsonrpc":"2.0","method":"notifications/tasks/status","params":{"taskId":"up-1","_meta":{"io.modelcontextprotocol/related-task":{"taskId":"up-1"}}}}`,
		`{"jsonrpc":"2.0","id":"s","method":"elicitation/create","params":{"_meta":{"io.modelcontextprotocol/related-task":"up-1"}}}`,
	} {
		f.Add([]byte(seed), "tasks/list")
	}
	f.Fuzz(func(t *testing.T, raw []byte, method string) {
		msg, err := jsonrpc.Parse(raw)
		if err != nil || msg == nil {
			return
		}
		s := &Session{}
		create, _ := jsonrpc.Parse([]byte(`{"jsonrpc":"2.0","id":1,"result":{"task":{"taskId":"up-1"}}}`))
		_, id := s.tasks.created(create, nil)
		out := s.taskIDsToClient(method, "", msg)
		if !strings.Contains(string(raw), "taskId") && out != msg {
			t.Fatal("a message without taskId changed")
		}
		if !json.Valid(out.Raw) {
			t.Fatalf("invalid JSON out: %s", out.Raw)
		}
		if out != msg && strings.Contains(string(out.Raw), `"taskId":"up-1"`) && !strings.Contains(string(out.Raw), id) {
			t.Fatalf("a rewritten message still shows the server's id: %s", out.Raw)
		}
	})
}

// TestTaskIDsOfTheSender: with several servers a server names only its own tasks: a
// bare id is the sender's, and "b+t" sent by server a is not b's task t.
func TestTaskIDsOfTheSender(t *testing.T) {
	var idx taskIndex
	created := func(up string) string {
		resp := &jsonrpc.Message{Kind: jsonrpc.KindResponse, Result: json.RawMessage(`{"task":{"taskId":"` + up + `","ttl":null}}`)}
		_, id := idx.created(resp, json.RawMessage(`{"name":"x"}`))
		if id == "" {
			t.Fatalf("no task created for %s", up)
		}
		return id
	}
	aT, bT := created("a+t"), created("b+t")
	for _, tc := range []struct {
		up, server, want string
	}{
		{"t", "a", aT}, {"a+t", "a", aT}, {"t", "b", bT}, {"b+t", "b", bT},
		{"b+t", "a", ""}, {"a+t", "b", ""}, {"u", "a", ""},
		{"a+t", "", aT}, // one server: ids are the server's as they are
	} {
		got, ok := idx.client(tc.up, tc.server)
		if got != tc.want || ok != (tc.want != "") {
			t.Errorf("client(%q, %q) = %q, %v; want %q", tc.up, tc.server, got, ok, tc.want)
		}
	}
}
