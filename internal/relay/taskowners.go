package relay

import (
	"bytes"
	"encoding/json"
	"slices"
	"sync"

	"github.com/mcpgate/mcpgate/internal/jsonrpc"
	"github.com/mcpgate/mcpgate/internal/methods"
	"github.com/mcpgate/mcpgate/vocab"
)

// Tasks bound to their caller (docs/decisions.md#task-owners). A task id is a
// capability. The client never sees a server's task id: the gateway hands it one of
// its own, 128 random bits (taskIndex.created), and translates both ways
// (taskRequest, taskIDsToClient). tasks/get, tasks/result, tasks/update and
// tasks/cancel are relayed only for an id the session itself handed out: each session
// is one caller (over HTTP a 2025-11-25 session, or one identity's 2026-07-28 backend;
// with OAuth the identity is the subject and client), so any other id (another
// caller's, a forgotten one, a server's own, however guessable the server's ids are)
// is answered -32602 as for an unknown task, with one record, and never reaches a
// server. tasks/list shows only the session's own tasks.

// relatedTaskKey is the _meta member that ties a message to a task (MCP 2025-11-25
// "Tasks": io.modelcontextprotocol/related-task, {taskId}).
const relatedTaskKey = "io.modelcontextprotocol/related-task"

// maxTaskOwners bounds the ids the process remembers across sessions, only to tell a
// request for another caller's task (task_not_owned) from one for an unknown task
// (task_unknown) in the record; past it the oldest are forgotten. Neither is relayed.
const maxTaskOwners = 1 << 16

// taskOwners maps each task id the gateway handed out to the session it gave it.
var taskOwners = struct {
	sync.Mutex
	by    map[string]*Session
	order []string
}{by: map[string]*Session{}}

// ownTask notes that s was handed the task id id.
func (s *Session) ownTask(id string) {
	taskOwners.Lock()
	defer taskOwners.Unlock()
	taskOwners.by[id] = s
	taskOwners.order = append(taskOwners.order, id)
	for len(taskOwners.order) > maxTaskOwners {
		delete(taskOwners.by, taskOwners.order[0])
		taskOwners.order = taskOwners.order[1:]
	}
}

// forgetTasks drops s's ids when its session ends.
func (s *Session) forgetTasks() {
	taskOwners.Lock()
	defer taskOwners.Unlock()
	kept := taskOwners.order[:0]
	for _, id := range taskOwners.order {
		if o, ok := taskOwners.by[id]; !ok || o == s {
			delete(taskOwners.by, id)
			continue
		}
		kept = append(kept, id)
	}
	taskOwners.order = kept
}

// ownedElsewhere reports whether the gateway handed the task id id to another session.
func (s *Session) ownedElsewhere(id string) bool {
	taskOwners.Lock()
	defer taskOwners.Unlock()
	o, ok := taskOwners.by[id]
	return ok && o != s
}

// notOwnedTaskError records a request for another session's task and returns its
// error: -32602, the code and text of an unknown task, so it tells the caller nothing
// about the task.
func (s *Session) notOwnedTaskError(id json.RawMessage, method, server string) *jsonrpc.Message {
	ev := s.recordRefusal(method, server, vocab.ReasonTaskNotOwned, false)
	return jsonrpc.NewErrorResponse(id, methods.CodeInvalidParams, "mcpgate: the task is not known to this session "+
		"(its ttl passed, it was forgotten, or it was not created through the gateway), so "+method+" cannot be "+
		"filtered and is not relayed (audit log entry "+ev+")")
}

// taskIDsToClient replaces the upstream's task ids in a server→client message with the
// ids the client holds: for a response to a task method (task is the client's id of
// the task the request named) its result's taskId and related task; tasks/list's
// tasks, of which only the session's own are kept; a task status notification's
// taskId (the table's Names: notifications/tasks/status, the 2026-07-28
// notifications/tasks); and the related task in any message's _meta. An id the session does not
// hold stays as it is (the client cannot name it in a request). A message with no
// task id comes back as it was.
func (s *Session) taskIDsToClient(method, task string, msg *jsonrpc.Message) *jsonrpc.Message {
	if !bytes.Contains(msg.Raw, []byte("taskId")) {
		return msg
	}
	toClient := func(up string) (string, bool) { return s.tasks.client(up, msg.Upstream) }
	if task != "" {
		toClient = func(string) (string, bool) { return task, true }
	}
	switch msg.Kind {
	case jsonrpc.KindResponse:
		var res map[string]json.RawMessage
		if msg.Result == nil || json.Unmarshal(msg.Result, &res) != nil {
			return msg
		}
		changed := relatedTask(res, toClient)
		if m := methods.Of(method); m != nil && m.Route == methods.ByTask && task != "" {
			changed = setTaskID(res, toClient) || changed
		}
		if method == methods.TasksList {
			changed = ownTasksOnly(res, toClient) || changed
		}
		if changed {
			if b, err := jsonrpc.Marshal(res); err == nil {
				return msg.WithResult(b)
			}
		}
	case jsonrpc.KindNotification, jsonrpc.KindRequest:
		var params map[string]json.RawMessage
		if json.Unmarshal(msg.Params, &params) != nil {
			return msg
		}
		changed := relatedTask(params, toClient)
		if m := methods.Of(method); msg.Kind == jsonrpc.KindNotification && m != nil && slices.ContainsFunc(m.Names, isTaskID) {
			changed = setTaskID(params, toClient) || changed
		}
		if changed {
			if b, err := jsonrpc.Marshal(params); err == nil {
				return msg.WithParams(b)
			}
		}
	}
	return msg
}

// isTaskID reports whether n is a top-level taskId member.
func isTaskID(n methods.Name) bool { return len(n.Path) == 1 && n.Path[0] == "taskId" }

// setTaskID replaces obj's taskId when toClient knows it; it reports whether it did.
func setTaskID(obj map[string]json.RawMessage, toClient func(string) (string, bool)) bool {
	var up string
	if json.Unmarshal(obj["taskId"], &up) != nil {
		return false
	}
	id, ok := toClient(up)
	if !ok || id == up {
		return false
	}
	obj["taskId"], _ = jsonrpc.Marshal(id)
	return true
}

// relatedTask replaces the taskId of obj's _meta related task when toClient knows it.
func relatedTask(obj map[string]json.RawMessage, toClient func(string) (string, bool)) bool {
	var meta, rel map[string]json.RawMessage
	if json.Unmarshal(obj["_meta"], &meta) != nil || json.Unmarshal(meta[relatedTaskKey], &rel) != nil || !setTaskID(rel, toClient) {
		return false
	}
	meta[relatedTaskKey], _ = jsonrpc.Marshal(rel)
	obj["_meta"], _ = jsonrpc.Marshal(meta)
	return true
}

// ownTasksOnly keeps the tasks of a tasks/list result that the session holds, under the
// client's ids; it reports whether the list changed.
func ownTasksOnly(res map[string]json.RawMessage, toClient func(string) (string, bool)) bool {
	var tasks []map[string]json.RawMessage
	if json.Unmarshal(res["tasks"], &tasks) != nil || tasks == nil {
		return false
	}
	kept := make([]map[string]json.RawMessage, 0, len(tasks))
	for _, t := range tasks {
		if setTaskID(t, toClient) {
			kept = append(kept, t)
		}
	}
	res["tasks"], _ = jsonrpc.Marshal(kept)
	return true
}
