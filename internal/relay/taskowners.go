package relay

import (
	"encoding/json"
	"sync"

	"github.com/mcpgate/mcpgate/internal/jsonrpc"
	"github.com/mcpgate/mcpgate/internal/methods"
	"github.com/mcpgate/mcpgate/vocab"
)

// Tasks bound to their caller (docs/decisions.md#task-owners). A task id is a
// capability: tasks/get, tasks/result, tasks/update and tasks/cancel of a task are
// relayed only on the session whose tools/call created it. Each session is one caller
// (over HTTP a 2025-11-25 session, or one identity's 2026-07-28 backend; with OAuth the
// identity is the subject and client), so a request for a task another session
// created is answered -32602 as for an unknown task, with a record (task_not_owned),
// and never reaches a server, which may hand out guessable ids and serve any of them
// to anyone.

// maxTaskOwners bounds the task ids the process remembers across sessions; past it
// the oldest are forgotten (each session still holds its own, taskIndex).
const maxTaskOwners = 1 << 16

// taskOwners maps each task id the gateway saw created to the sessions that created
// it (two sessions with their own upstream process may each get "t1").
var taskOwners = struct {
	sync.Mutex
	by    map[string][]*Session
	order []string
}{by: map[string][]*Session{}}

// ownTask notes that s created the task a tools/call response carries, if any.
func (s *Session) ownTask(resp *jsonrpc.Message) {
	if resp == nil || resp.Result == nil || !mayHoldTask(resp.Result) {
		return
	}
	var r struct {
		Task *struct {
			TaskID string `json:"taskId"`
		} `json:"task"`
	}
	if json.Unmarshal(resp.Result, &r) != nil || r.Task == nil || r.Task.TaskID == "" {
		return
	}
	id := r.Task.TaskID
	taskOwners.Lock()
	defer taskOwners.Unlock()
	for _, o := range taskOwners.by[id] {
		if o == s {
			return
		}
	}
	taskOwners.by[id] = append(taskOwners.by[id], s)
	taskOwners.order = append(taskOwners.order, id)
	for len(taskOwners.order) > maxTaskOwners {
		old := taskOwners.order[0]
		taskOwners.order = taskOwners.order[1:]
		if list := taskOwners.by[old]; len(list) > 1 {
			taskOwners.by[old] = list[1:]
		} else {
			delete(taskOwners.by, old)
		}
	}
}

// forgetTasks drops s from the owners when its session ends.
func (s *Session) forgetTasks() {
	taskOwners.Lock()
	defer taskOwners.Unlock()
	kept := taskOwners.order[:0]
	for _, id := range taskOwners.order {
		list := taskOwners.by[id]
		out := list[:0]
		for _, o := range list {
			if o != s {
				out = append(out, o)
			}
		}
		if len(out) == 0 {
			delete(taskOwners.by, id)
			continue
		}
		taskOwners.by[id] = out
		kept = append(kept, id)
	}
	taskOwners.order = kept
}

// ownedElsewhere reports whether the task a request names (params.taskId) was created
// on another session and not on s.
func (s *Session) ownedElsewhere(params json.RawMessage) bool {
	var p map[string]json.RawMessage // exact keys
	var id string
	if json.Unmarshal(params, &p) != nil || json.Unmarshal(p["taskId"], &id) != nil || id == "" {
		return false
	}
	taskOwners.Lock()
	defer taskOwners.Unlock()
	list := taskOwners.by[id]
	for _, o := range list {
		if o == s {
			return false
		}
	}
	return len(list) > 0
}

// notOwnedTaskError records a request for another session's task and returns its
// error: -32602, the code and shape of an unknown task, so it tells the caller
// nothing about the task.
func (s *Session) notOwnedTaskError(id json.RawMessage, method, server string) *jsonrpc.Message {
	ev := s.recordRefusal(method, server, vocab.ReasonTaskNotOwned, false)
	return jsonrpc.NewErrorResponse(id, methods.CodeInvalidParams, "mcpgate: the task is not known to this session "+
		"(its ttl passed, it was forgotten, or it was not created through the gateway), so "+method+" cannot be "+
		"filtered and is not relayed (audit log entry "+ev+")")
}
