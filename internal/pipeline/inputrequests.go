package pipeline

import (
	"context"
	"encoding/json"
	"maps"
	"slices"

	"github.com/mcpgate/mcpgate/engine"
	"github.com/mcpgate/mcpgate/internal/jsonrpc"
	"github.com/mcpgate/mcpgate/internal/jsonscan"
	"github.com/mcpgate/mcpgate/internal/methods"
	"github.com/mcpgate/mcpgate/vocab"
)

// This file holds the Multi Round-Trip Requests channel of MCP 2026-07-28: a result
// of resultType "input_required" carries, in inputRequests, the requests a 2025-11-25
// server sends the client on their own (elicitation/create, sampling/createMessage,
// roots/list). Each goes through what such a request goes through
// (docs/channels.md#input-requests).

// inputRequired reports whether a result is a 2026-07-28 input_required result: its
// resultType decoded, as every peer reads it ("input\u005frequired" is
// "input_required"; docs/decisions.md#decoded-values). It reads that one member of
// the result, which jsonrpc.Parse validated, without decoding the rest
// (docs/decisions.md#read-members).
func inputRequired(result json.RawMessage) bool {
	var t []byte // the last one, as a decoder reads it
	jsonscan.Members(result, func(name, v []byte) {
		if jsonscan.StringIs(name, "resultType") {
			t = v
		}
	})
	return jsonscan.StringIs(t, "input_required")
}

// maxRequestState bounds the opaque requestState the gateway relays, in bytes.
const maxRequestState = 1 << 20

// inputRequests runs each entry of an input_required result's inputRequests through
// the rules and the server_request phase of its own method, as ServerRequest runs a
// 2025-11-25 server request, with one record each naming its method and via (the
// method the result answers). Every entry is evaluated, in key order, whether or not
// an earlier one was withheld; when one is, the result is withheld whole and the
// records of the others say outcome "cancelled" (they never reached the client).
// requestState is the server's: relayed byte for byte, never read, never shown to a
// policy or recorded; past maxRequestState the result is withheld. It returns the
// result to relay (result itself when nothing changed), or a non-empty withheld: the
// text of the refusal of the first entry (in key order) that blocked, that a policy
// rejected, that the gateway does not know or that is not {method, params}.
func (p *Pipeline) inputRequests(ctx context.Context, c Channel, via string, result json.RawMessage) (out json.RawMessage, withheld string) {
	var res map[string]json.RawMessage
	if json.Unmarshal(result, &res) != nil || res == nil {
		return result, ""
	}
	if len(res["requestState"]) > maxRequestState {
		return nil, "[mcpgate: request blocked — the server's requestState exceeds the gateway's bound]"
	}
	var reqs map[string]json.RawMessage
	if v := res["inputRequests"]; len(v) > 0 && string(v) != "null" {
		if json.Unmarshal(v, &reqs) != nil {
			return nil, "[mcpgate: request blocked — inputRequests is not an object]"
		}
	}
	type entry struct {
		rec     *record
		relayed bool // would reach the client
	}
	var entries []entry
	withhold := func(text string) {
		if withheld == "" {
			withheld = text
		}
	}
	changed := false
	for _, key := range slices.Sorted(maps.Keys(reqs)) {
		var e map[string]json.RawMessage
		var method string
		if json.Unmarshal(reqs[key], &e) != nil || json.Unmarshal(e["method"], &method) != nil {
			withhold("[mcpgate: request blocked — an input request is not {method, params}]")
			continue
		}
		m := methods.Of(method)
		if m == nil || m.Direction != methods.ServerRequest {
			withhold("[mcpgate: request blocked — an input request of a method the gateway does not filter]")
			continue
		}
		ch := c
		ch.Method, ch.Params, ch.Via, ch.Tool, ch.ToolAccess, ch.Arguments = method, methods.OrObject(e["params"]), via, "", "", nil
		raw := jsonrpc.Request(json.RawMessage(`"input"`), method, ch.Params)
		reply, rec := p.serverRequest(ctx, ch, raw)
		switch {
		case reply.Error != nil:
			var eo jsonrpc.ErrorObject
			_ = json.Unmarshal(reply.Error, &eo)
			withhold(eo.Message)
			entries = append(entries, entry{rec, false})
			continue
		case reply.Params != nil:
			e["params"] = reply.Params
			reqs[key], _ = jsonrpc.Marshal(e)
			changed = true
		}
		entries = append(entries, entry{rec, true})
	}
	for _, e := range entries {
		if e.relayed && withheld != "" {
			e.rec.setOutcome(vocab.OutcomeCancelled)
		}
		e.rec.emit(p)
	}
	switch {
	case withheld != "":
		return nil, withheld
	case !changed:
		return result, ""
	}
	res["inputRequests"], _ = jsonrpc.Marshal(reqs)
	b, _ := jsonrpc.Marshal(res)
	return b, ""
}

// inputResponses adds the input rules' findings over a 2026-07-28 retry's
// inputResponses (the client's answers to the input requests) to in, pointed into
// params: they reach the pre phase as ctx.findings like the arguments'.
func (r *run) inputResponses(in *engine.Report) {
	v := r.params["inputResponses"]
	if len(v) == 0 || v[0] != '{' {
		return
	}
	rep, err := r.p.Analyzer.AnalyzeArguments(v)
	if err != nil {
		return
	}
	for _, f := range rep.Findings {
		f.Pointer = "/inputResponses" + f.Pointer
		in.Findings = append(in.Findings, f)
		if f.Severity > in.Highest {
			in.Highest, in.Verdict = f.Severity, engine.VerdictFor(f.Severity)
		}
	}
}

// inputRequiredReply relays an input_required result answering m, its input requests
// filtered (inputRequests); the record of m is the outer one.
func (r *run) inputRequiredReply(m *methods.Method, resp *jsonrpc.Message) Reply {
	if missing := missingCapabilities(r.c.ClientCapabilities, resp.Result); missing != nil {
		reply := r.missingCapability(missing)
		reply.Abandoned = true
		return reply
	}
	ch := Channel{User: r.c.User, ClientInfo: r.c.ClientInfo, ProtocolVersion: r.c.ProtocolVersion, Server: r.c.Server, Policies: r.set,
		SamplingContext: r.c.SamplingContext}
	via := methods.ToolsCall
	if m != nil {
		via = m.Name
	}
	out, withheld := r.p.inputRequests(r.ctx, ch, via, resp.Result)
	if withheld != "" {
		return r.withholdInputRequired(m, withheld)
	}
	r.rec.setOutcome(vocab.OutcomeInputRequired) // the round's record, not the call's end
	switch {
	case string(out) == string(resp.Result):
		return Reply{Original: resp.Raw}
	}
	r.rec.outputChanged()
	return Reply{Result: out}
}

// withholdInputRequired answers a result whose input request was withheld: the
// method's block shape carrying the refusal text, as a complete result, so the
// client asks for nothing the rules refused.
func (r *run) withholdInputRequired(m *methods.Method, text string) Reply {
	if r.rec.state.reason == "" {
		r.rec.setReason(vocab.ReasonFilterBlock)
	}
	r.rec.escalate(vocab.Block)
	r.rec.outputChanged()
	block := methods.ToolOutput
	if m != nil {
		block = m.Block
	}
	return Reply{Result: blockedResult(block, nil, text, ""), Abandoned: true}
}
