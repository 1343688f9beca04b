package pipeline

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/mcpgate/mcpgate/engine"
	"github.com/mcpgate/mcpgate/internal/jsonrpc"
	"github.com/mcpgate/mcpgate/internal/methods"
	"github.com/mcpgate/mcpgate/vocab"
)

// Request runs a client request whose row has a request phase (methods.Method.
// RequestPhase: tasks/update, MCP 2026-07-28 tasks extension) on its way to the
// server: the input rules read its inputResponses (the client's answers to the
// task's input requests; their findings reach the phase as ctx.findings, pointed
// into params), then the pre phase runs with ctx.method, and with ctx.tool and
// ctx.params of the tools/call that created the task (c.Tool, c.Arguments). A
// rejection comes back as Error (-32600 with the rejection text, citing the record)
// and the request is not sent; otherwise the zero Reply: send it as it came (a
// rewrite of ctx.params has nothing to apply to, since the request carries no
// arguments). A finding, a policy that acted or a rejection leaves one record
// (docs/channels.md#tasks).
func (p *Pipeline) Request(ctx context.Context, c Channel) (reply Reply) {
	m := methods.Of(c.Method)
	r := p.arriveChannel(ctx, c)
	acted := false
	defer func() {
		if v := recover(); v != nil { // a bug refuses the request, keeps the record and the process
			p.logger().Error("request filter panicked; request refused", "event_id", r.rec.eventID(), "method", r.rec.r.Method, "panic", fmt.Sprint(v))
			r.rec.setReason(vocab.ReasonInternalError)
			r.rec.setOutcome(vocab.OutcomeRejected)
			r.rec.escalate(vocab.Block)
			reply, acted = requestError(requestBlockedText(r.rec.eventID())), true
		}
		if acted {
			r.rec.emit(p)
		}
	}()
	_ = json.Unmarshal(c.Params, &r.params) // exact keys; unreadable params read as none
	var in engine.Report
	start := time.Now()
	r.inputResponses(&in)
	r.rec.stage(vocab.StageInputRules, start)
	r.rec.setInputRules(in)
	acted = len(in.Findings) > 0
	phase := m.RequestPhase()
	if phase == "" || !r.set.Acts(phase) {
		return Reply{}
	}
	pre := r.policies(r.policyCall(phase, nil, in.Findings), vocab.StagePrePolicies)
	acted = acted || len(pre.Acted) > 0
	if pre.Reject == nil {
		return Reply{}
	}
	acted = true
	notice, text := r.rejection(pre.Reject, vocab.OutcomeRejected)
	if notice != "" {
		text = notice + " " + text
	}
	return requestError(text)
}

// requestError is a Reply answering a client request with -32600 and message.
func requestError(message string) Reply {
	b, _ := jsonrpc.Marshal(jsonrpc.ErrorObject{Code: methods.CodeInvalidRequest, Message: message})
	return Reply{Error: b}
}
