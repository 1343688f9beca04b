package pipeline

import (
	"encoding/json"

	"github.com/mcpgate/mcpgate/engine"
	"github.com/mcpgate/mcpgate/internal/jsonrpc"
	"github.com/mcpgate/mcpgate/internal/methods"
	"github.com/mcpgate/mcpgate/vocab"
)

// A task's tool result reaches the client by more paths than tasks/result: a
// 2026-07-28 tasks/get of a finished task inlines it under "result", and so may a
// task status notification (notifications/tasks/status, the 2026-07-28
// notifications/tasks). Each goes through the same output stages and post
// phase as the tools/call that created the task (docs/decisions.md#task-results).

// inlinedToolResult returns the CallToolResult a task message inlines under
// "result" (an object), or nil.
func inlinedToolResult(doc json.RawMessage) json.RawMessage {
	for _, mb := range jsonrpc.Members(doc) {
		if mb.Name == "result" && len(mb.Value) > 0 && mb.Value[0] == '{' {
			return mb.Value
		}
	}
	return nil
}

// InlinesToolResult reports whether a task message (a tasks/get result, a task status
// notification's params; methods.Method.InlinesTaskResult) carries the task's
// CallToolResult, which only the task's tool can judge.
func InlinesToolResult(doc json.RawMessage) bool { return inlinedToolResult(doc) != nil }

// taskFlow filters a task message (tasks/get's result, notifications/tasks/status's
// params: doc, as it came in raw) that inlines its tool's CallToolResult, for the
// task's tool c.Tool: the members the row names outside "result" (statusMessage, an
// error) go through the row's flow, the CallToolResult through output (the rules,
// the post phase of c.Tool with c.Arguments, the merge), as a tasks/result's does.
// One record. asParams says doc is a notification's params (Reply.Params), not a
// result (Reply.Result).
func (r *run) taskFlow(c Channel, m *methods.Method, doc json.RawMessage, raw []byte, asParams bool) Reply {
	rest := *m
	rest.Text = nil
	for _, f := range m.Text {
		if len(f.Path) == 0 || f.Path[0] != "result" {
			rest.Text = append(rest.Text, f)
		}
	}
	fr := r.flow(c, &rest, doc, raw)
	if fr.Error != nil || fr.NoReply || r.rec.state.action == vocab.Block {
		return fr
	}
	cur := doc
	switch {
	case fr.Result != nil:
		cur = fr.Result
	case fr.Params != nil:
		cur = fr.Params
	}
	inner := inlinedToolResult(cur)
	if inner == nil {
		return fr
	}
	ids, n, highest := r.rec.r.RuleIDs, r.rec.state.findings, r.rec.r.HighestSeverity
	ir := r.output(&jsonrpc.Message{Kind: jsonrpc.KindResponse, Result: inner, Raw: inner}, nil, 0)
	// The record holds the findings of both readings.
	for _, id := range ids {
		r.rec.r.RuleIDs = appendUnique(r.rec.r.RuleIDs, id)
	}
	r.rec.state.findings += n
	if s, _ := engine.ParseSeverity(highest); s > mustSeverity(r.rec.r.HighestSeverity) {
		r.rec.r.HighestSeverity = highest
	}
	switch {
	case ir.Error != nil || ir.NoReply: // cancelled while the post phase ran
		if asParams {
			return Reply{NoReply: true}
		}
		return ir
	case ir.Result == nil && fr.Result == nil && fr.Params == nil:
		return Reply{Original: raw}
	}
	out := cur
	if ir.Result != nil {
		var whole map[string]json.RawMessage
		if json.Unmarshal(cur, &whole) != nil {
			return r.blockMessage(m, doc, nil, blockTextOf(m, r.rec.eventID()), "")
		}
		whole["result"] = ir.Result
		out, _ = jsonrpc.Marshal(whole)
	}
	if asParams {
		return Reply{Params: out}
	}
	return Reply{Result: out}
}

func mustSeverity(s string) engine.Severity {
	v, _ := engine.ParseSeverity(s)
	return v
}
