package pipeline

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"time"

	"github.com/mcpgate/mcpgate/engine"
	"github.com/mcpgate/mcpgate/gate"
	"github.com/mcpgate/mcpgate/internal/audit"
	"github.com/mcpgate/mcpgate/internal/guardrail"
	"github.com/mcpgate/mcpgate/internal/jsonrpc"
	"github.com/mcpgate/mcpgate/internal/methods"
	"github.com/mcpgate/mcpgate/vocab"
)

// The guardrails stage (docs/guardrails.md): outside content guardrails and
// authorization services, called between the built-in rules and the policies of a
// phase. A callout can only narrow (docs/decisions.md#callouts-narrow): a block or a
// deny stops the message, an intervention replaces exactly the texts it was sent,
// and the built-in rules and the Warn sanitizer run again over the replacement.

// Phases of a guardrail callout, as its record entry names them.
const (
	guardPre          = "pre"
	guardPost         = "post"
	guardPreRewritten = "pre_rewritten" // authorization again, on a pre policy's arguments
)

// guardrailsPre runs the pre phase's guardrails over the arguments after the input
// rules: content guardrails (their findings go to the pre policies) and
// authorization. in is updated when an intervention rewrote the arguments. It returns
// the guardrails' findings, and a reply when the call stops.
func (r *run) guardrailsPre(in *engine.Report) ([]engine.Finding, *Reply) {
	g, method := r.guardrails(), r.rec.r.Method
	content, authz := g.Content(method), g.Authorizes(method)
	if !content && !authz {
		return nil, nil
	}
	var c *guardrail.Content
	if content {
		if texts, err := guardrail.Leaves(r.args, false); err == nil {
			c = r.guardContent(guardPre, texts, in.Findings)
		}
	}
	var a *guardrail.Access
	if authz {
		a = r.guardAccess(guardPre)
	}
	outs, stop := r.runGuardrails(guardPre, vocab.StageGuardrailsPre, c, a)
	if stop != nil {
		return nil, stop
	}
	if c == nil {
		return findingsOf(outs), nil
	}
	args, changed, err := r.intervene(r.args, c.Texts, outs, guardPre, false)
	if err != nil || !changed {
		return findingsOf(outs), nil
	}
	again, err := r.rewriteArguments(args)
	if err != nil { // Replace wrote an object: cannot happen
		return nil, r.guardStop(guardrail.Outcome{Name: lastIntervened(outs), Failure: guardrail.FailureError, FailClosed: true}, guardPre)
	}
	*in = again
	// What the intervention produced is what the argument checks judge and what gets
	// authorized: a callout can only narrow, so a replacement cannot carry past them
	// what the client's own arguments could not (the secrets-in-motion check runs
	// later, over the final arguments).
	if refused := r.argumentChecks(); refused != nil {
		return nil, refused
	}
	if stop := r.authorizeRewritten(); stop != nil {
		return nil, stop
	}
	return findingsOf(outs), nil
}

// authorizeRewritten asks the authorization services again about arguments a pre
// policy (or a content guardrail) rewrote, so that what a mutation produced is what
// was authorized (docs/guardrails.md#authorization).
func (r *run) authorizeRewritten() *Reply {
	if !r.guardrails().Authorizes(r.rec.r.Method) {
		return nil
	}
	_, stop := r.runGuardrails(guardPreRewritten, vocab.StageGuardrailsPre, nil, r.guardAccess(guardPreRewritten))
	return stop
}

// AuthorizeEntry asks the authorization guardrails that take a prompts/get or
// resources/read about the request before it goes to the server
// (docs/guardrails.md#prompts-and-resources): the resource is the prompt's name or
// the resource's URI, the context the prompt's arguments' shape. A deny, or a failure
// under fail mode closed, answers the request in its channel's block shape with one
// record naming the service (stopped). Otherwise the answer goes with the request, for
// the record of the response (Channel.Authorized); nil when no guardrail took it.
func (p *Pipeline) AuthorizeEntry(ctx context.Context, c Channel) (reply Reply, allowed *Authorized, stopped bool) {
	if !p.Guardrails.Authorizes(c.Method) {
		return Reply{}, nil, false
	}
	var q struct {
		Name      string          `json:"name"`
		URI       string          `json:"uri"`
		Arguments json.RawMessage `json:"arguments"`
	}
	asks := "name"
	if c.Method == methods.ResourcesRead {
		asks = "uri"
	}
	if raw := memberRaw(c.Params, asks); len(raw) == 0 || raw[0] != '"' {
		// the service would be asked about "" while the server reads the value
		// another way (a lax server coerces ["secret"] to "secret")
		r := p.arriveChannel(ctx, c)
		defer r.rec.emit(p)
		return r.invalidParams(fmt.Errorf("%s needs a string %s", c.Method, asks)), nil, true
	}
	_ = json.Unmarshal(c.Params, &q)
	a := &guardrail.Access{Phase: guardPre, Method: c.Method, Server: c.Server, Tool: q.Name, Resource: guardrail.ResourcePrompt,
		ProtocolVersion: c.ProtocolVersion, User: c.User}
	if c.Method == methods.ResourcesRead {
		a.Tool, a.Resource = q.URI, guardrail.ResourceResource
	} else if len(q.Arguments) > 0 && q.Arguments[0] == '{' {
		a.Arguments = q.Arguments
	}
	r := p.arriveChannel(ctx, c)
	a.EventID = r.rec.eventID()
	start := time.Now()
	outs := p.Guardrails.Run(ctx, nil, a)
	r.rec.stage(vocab.StageGuardrailsPre, start)
	if ctx.Err() != nil { // the client cancelled or left: no guardrail failed
		r.rec.setOutcome(vocab.OutcomeCancelled)
		r.rec.emit(p)
		return Reply{NoReply: true}, nil, true
	}
	var stop *guardrail.Outcome
	for i, o := range outs {
		if o.Verdict == guardrail.Deny || stop == nil && o.Stops() {
			stop = &outs[i]
		}
		if o.Verdict == guardrail.Deny {
			break
		}
	}
	if stop == nil {
		return Reply{}, &Authorized{EventID: r.rec.eventID(), Outcomes: outs}, false // the response's record carries them
	}
	defer r.rec.emit(p)
	for _, o := range outs {
		r.rec.guardrailCall(o, guardPre)
	}
	_, msg := r.guardStopRecord(*stop, guardPre)
	r.rec.setOutcome(vocab.OutcomeRejected)
	var orig json.RawMessage
	m := methods.Of(c.Method)
	if m.Block == methods.ResourceContents { // the placeholder names the uri asked for
		orig, _ = jsonrpc.Marshal(map[string]any{"contents": []map[string]string{{"uri": q.URI}}})
	}
	text := guardRejectText(guardrail.Source(stop.Name), engine.Sanitize(msg), r.rec.eventID())
	return Reply{Result: blockedResult(m.Block, orig, text, "")}, nil, true
}

// Authorized is what the authorization guardrails answered about a request they let
// through: the event id they were asked under and their outcomes.
type Authorized struct {
	EventID  string
	Outcomes []guardrail.Outcome
}

// guardrailsPost runs the content guardrails over a result after the output rules.
// It returns the result to go on with (replaced where a guardrail intervened),
// whether it changed, the verdict after the output rules ran again over a
// replacement, the guardrails' findings for the post policies, and a reply when the
// result is blocked.
func (r *run) guardrailsPost(result json.RawMessage, out engine.Report, verdict engine.Verdict) (json.RawMessage, bool, engine.Verdict, []engine.Finding, *Reply) {
	if !r.guardrails().Content(r.rec.r.Method) {
		return result, false, verdict, nil, nil
	}
	texts, err := guardrail.Leaves(result, true)
	if err != nil { // undecodable: the fail mode of the output rules decided it
		return result, false, verdict, nil, nil
	}
	c := r.guardContent(guardPost, texts, out.Findings)
	outs, stop := r.runGuardrails(guardPost, vocab.StageGuardrailsPost, c, nil)
	if stop != nil {
		return nil, false, verdict, nil, stop
	}
	// The output rules judge what the service returned; the Warn sanitizer then
	// cleans it, so a service can never put escapes back.
	raw, changed, err := r.intervene(result, texts, outs, guardPost, false)
	if err != nil || !changed {
		return result, false, verdict, findingsOf(outs), nil
	}
	r.rec.escalate(vocab.Redact)
	r.rec.outputChanged()
	r.shadow.shareRedact()
	v, _ := r.rescan(raw, verdict)
	if v == engine.Block {
		reply := r.block()
		return nil, false, v, nil, &reply
	}
	replaced, _, err := r.intervene(result, texts, outs, guardPost, true)
	if err != nil {
		reply := r.block()
		return nil, false, v, nil, &reply
	}
	return replaced, true, v, findingsOf(outs), nil
}

// guardrails is the call's guardrails: a replayed or stubbed set (Call.Guardrails),
// else the Pipeline's.
func (r *run) guardrails() *guardrail.Set {
	if r.c.Guardrails != nil {
		return r.c.Guardrails
	}
	return r.p.Guardrails
}

func (r *run) guardContent(phase string, texts []guardrail.Text, findings []engine.Finding) *guardrail.Content {
	return &guardrail.Content{Method: r.rec.r.Method, Server: r.c.Server, Tool: r.tool, Phase: phase,
		ProtocolVersion: r.c.ProtocolVersion, EventID: r.rec.eventID(), User: r.c.User, Texts: texts, Findings: findings}
}

func (r *run) guardAccess(phase string) *guardrail.Access {
	return &guardrail.Access{Phase: phase, Method: r.rec.r.Method, Server: r.c.Server, Tool: r.tool,
		ProtocolVersion: r.c.ProtocolVersion, EventID: r.rec.eventID(), User: r.c.User, Arguments: r.args}
}

// runGuardrails runs one phase's callouts, records each, and returns a reply when
// one stops the message: a block or a deny first, else the first failure under fail
// mode closed, in guardrail name order.
func (r *run) runGuardrails(phase string, stage vocab.Stage, c *guardrail.Content, a *guardrail.Access) ([]guardrail.Outcome, *Reply) {
	outs, stop, cancelled := r.callGuardrails(phase, stage, c, a)
	switch {
	case cancelled: // the client cancelled or left: no guardrail failed
		reply := r.upstreamFailed(ErrCancelled)
		return nil, &reply
	case stop != nil:
		return nil, r.guardStop(*stop, phase)
	}
	return outs, nil
}

// callGuardrails runs one phase's callouts and records each; stop is the outcome
// that stops the message, if any: a block or a deny first, else the first failure
// under fail mode closed, in guardrail name order. cancelled: ctx ended meanwhile.
func (r *run) callGuardrails(phase string, stage vocab.Stage, c *guardrail.Content, a *guardrail.Access) (outs []guardrail.Outcome, stop *guardrail.Outcome, cancelled bool) {
	start := time.Now()
	outs = r.guardrails().Run(r.ctx, c, a)
	r.rec.stage(stage, start)
	if r.ctx.Err() != nil {
		return nil, nil, true
	}
	for _, o := range outs {
		r.rec.guardrailCall(o, phase)
		if r.capture != nil { // --capture keeps each verdict for mcpgate replay
			r.capture.Guardrails = append(r.capture.Guardrails, guardrail.Recorded{Phase: phase, Outcome: o})
		}
	}
	for i, o := range outs {
		if o.Verdict == guardrail.Block || o.Verdict == guardrail.Deny {
			return outs, &outs[i], false
		}
	}
	for i, o := range outs {
		if o.Stops() {
			return outs, &outs[i], false
		}
	}
	return outs, nil, false
}

// guardrailsChannel runs the content guardrails that take a channel's method (a
// resources/read or prompts/get result, a sampling or elicitation request) over the
// texts the rules read in it (parts), as guardrailsPost does for a tools/call result;
// a stop withholds the message in its row's block shape.
func (r *run) guardrailsChannel(m *methods.Method, doc, orig json.RawMessage, parts []part, rep engine.Report, verdict engine.Verdict) (json.RawMessage, bool, engine.Verdict, []engine.Finding, *Reply) {
	if !r.guardrails().Content(m.Name) || len(parts) == 0 {
		return doc, false, verdict, nil, nil
	}
	paths, blocks := make([][]string, len(parts)), make([]bool, len(parts))
	for i, p := range parts {
		paths[i], blocks[i] = p.path, p.block
	}
	texts, err := guardrail.LeavesUnder(doc, paths, blocks)
	if err != nil || len(texts) == 0 {
		return doc, false, verdict, nil, nil
	}
	outs, stop, cancelled := r.callGuardrails(guardPost, vocab.StageGuardrailsPost, r.guardContent(guardPost, texts, rep.Findings), nil)
	switch {
	case cancelled && m.Direction == methods.ClientRequest:
		reply := r.upstreamFailed(ErrCancelled)
		return nil, false, verdict, nil, &reply
	case cancelled: // a server's message nothing judged: withheld, whatever the fail mode
		r.rec.setReason(vocab.ReasonGuardrailTimeout)
		r.rec.escalate(vocab.Block)
		r.rec.setPhase(guardPost)
		reply := r.blockMessage(m, orig, parts, blockTextOf(m, r.rec.eventID()), "")
		return nil, false, verdict, nil, &reply
	case stop != nil:
		r.guardStopRecord(*stop, guardPost)
		reply := r.blockMessage(m, orig, parts, blockTextOf(m, r.rec.eventID()), "")
		return nil, false, verdict, nil, &reply
	}
	raw, changed, err := r.intervene(doc, texts, outs, guardPost, false)
	if err != nil || !changed {
		return doc, false, verdict, findingsOf(outs), nil
	}
	r.rec.escalate(vocab.Redact)
	r.rec.outputChanged()
	if verdict = r.channelRescan(m, raw, verdict); verdict == engine.Block {
		reply := r.blockMessage(m, orig, parts, blockTextOf(m, r.rec.eventID()), "")
		return nil, false, verdict, nil, &reply
	}
	replaced, _, err := r.intervene(doc, texts, outs, guardPost, true)
	if err != nil {
		reply := r.blockMessage(m, orig, parts, blockTextOf(m, r.rec.eventID()), "")
		return nil, false, verdict, nil, &reply
	}
	return replaced, true, verdict, findingsOf(outs), nil
}

// guardStop answers a message a guardrail stopped: in pre, the call is rejected with
// one record naming the service; in post, the result is blocked.
func (r *run) guardStop(o guardrail.Outcome, phase string) *Reply {
	code, msg := r.guardStopRecord(o, phase)
	if phase == guardPost {
		reply := r.block()
		return &reply
	}
	name := guardrail.Source(o.Name)
	r.rec.setOutcome(vocab.OutcomeRejected)
	text, notice := r.thrown(&gate.Rejection{Code: code, Message: msg})
	reply := Reply{Result: noticedErrorResult(notice, guardRejectText(name, text, r.rec.eventID()))}
	return &reply
}

// guardStopRecord records a stop: the reason, the service as policy and guardrail,
// the phase, the fail mode. It returns the code and the client's message.
func (r *run) guardStopRecord(o guardrail.Outcome, phase string) (vocab.Reason, string) {
	name := guardrail.Source(o.Name)
	code, msg := stopReason(o)
	if o.Failure != "" {
		r.rec.setFailModeTriggered()
	}
	r.rec.setReason(code)
	r.rec.setPolicy(name)
	r.rec.guardrail(name)
	r.shadow.shareStop(code, name, phase)
	r.rec.escalate(vocab.Block)
	r.rec.setPhase(phase)
	if phase == guardPreRewritten {
		r.rec.setPhase(guardPre)
	}
	return code, msg
}

// stopReason is the reason code and the client's message of an outcome that stops
// a call: a deny, a timeout or failure under failMode closed, or a block (its
// blocked_reason, for the client only, scanned and bounded by thrown).
func stopReason(o guardrail.Outcome) (vocab.Reason, string) {
	switch {
	case o.Verdict == guardrail.Deny:
		return vocab.ReasonGuardrailDeny, "the authorization service denied the call"
	case o.Failure == guardrail.FailureTimeout:
		return vocab.ReasonGuardrailTimeout, "the guardrail did not answer in time (failMode closed)"
	case o.Failure != "":
		return vocab.ReasonGuardrailError, "the guardrail failed (failMode closed)"
	case o.Reason != "":
		return vocab.ReasonGuardrailBlock, o.Reason
	}
	return vocab.ReasonGuardrailBlock, "the guardrail blocked the call"
}

// intervene applies the interventions of outs to doc: each replaces exactly the
// texts its guardrail was sent, index by index, and only where the text changed; on
// the same text a later guardrail (by name) wins. With sanitize each replacement
// goes through the Warn sanitizer.
func (r *run) intervene(doc json.RawMessage, texts []guardrail.Text, outs []guardrail.Outcome, phase string, sanitize bool) (json.RawMessage, bool, error) {
	set, counts := replacements(texts, outs, sanitize)
	if !sanitize {
		for _, o := range outs {
			if counts[o.Name] > 0 {
				r.rec.guardrailReplaced(o.Name, phase, counts[o.Name])
				r.rec.guardrail(guardrail.Source(o.Name))
			}
		}
	}
	if len(set) == 0 {
		return doc, false, nil
	}
	out, err := guardrail.Replace(doc, set)
	return out, err == nil, err
}

// replacements are the texts the interventions of outs replace, at their pointers:
// each replaces exactly the texts its guardrail was sent, index by index, and only
// where the text changed; on the same text a later guardrail (by name) wins. With
// sanitize each replacement goes through the Warn sanitizer. counts is the texts
// each guardrail changed, by name.
func replacements(texts []guardrail.Text, outs []guardrail.Outcome, sanitize bool) (set []guardrail.Text, counts map[string]int) {
	at := map[string]int{}
	counts = map[string]int{}
	for _, o := range outs {
		if o.Verdict != guardrail.Intervene {
			continue
		}
		for i, idx := range o.Sent {
			t := texts[idx]
			v := o.Texts[i]
			if v == t.Value {
				continue
			}
			if sanitize {
				v = engine.Sanitize(v)
			}
			if v == t.Value {
				continue
			}
			counts[o.Name]++
			if j, ok := at[t.Pointer]; ok {
				set[j].Value = v
				continue
			}
			at[t.Pointer] = len(set)
			set = append(set, guardrail.Text{Pointer: t.Pointer, Value: v})
		}
	}
	return set, counts
}

func findingsOf(outs []guardrail.Outcome) []engine.Finding {
	var fs []engine.Finding
	for _, o := range outs {
		fs = append(fs, o.Findings...)
	}
	return fs
}

func lastIntervened(outs []guardrail.Outcome) string {
	name := ""
	for _, o := range outs {
		if o.Verdict == guardrail.Intervene {
			name = o.Name
		}
	}
	return name
}

// withFindings is the built-in findings followed by the guardrails', a new slice.
func withFindings(built, outside []engine.Finding) []engine.Finding {
	if len(outside) == 0 {
		return built
	}
	return slices.Concat(built, outside)
}

// guardRejectText is the rejection of a call a guardrail stopped
// (docs/guardrails.md#semantics; the shape of docs/decisions.md#rejection-shape).
func guardRejectText(name, message, eventID string) string {
	return "[mcpgate: call rejected by " + name + ": " + message + " — see audit log entry " + eventID + "]"
}

// guardrailCall records one callout: its verdict or failure, its time in stage_ms
// under "guardrail:<name>", never a text or a reason.
func (t *record) guardrailCall(o guardrail.Outcome, phase string) {
	c := guardrailEntry(o, phase)
	t.r.Guardrails = append(t.r.Guardrails, c)
	t.r.StageMS[vocab.Stage(guardrail.Source(o.Name))] += c.MS
}

// guardrailEntry is the record entry of one callout: its verdict or failure, never a
// text or a reason.
func guardrailEntry(o guardrail.Outcome, phase string) audit.GuardrailCall {
	mode := guardrail.FailOpen
	if o.FailClosed {
		mode = guardrail.FailClosed
	}
	return audit.GuardrailCall{Name: o.Name, Kind: o.Kind, Phase: phase,
		Verdict: string(o.Verdict), Error: string(o.Failure), Detail: o.Detail, FailMode: mode,
		Findings: len(o.Findings), Cached: o.Cached, MS: ms(o.Elapsed)}
}

// guardrailReplaced notes how many texts an intervention changed.
func (t *record) guardrailReplaced(name, phase string, n int) {
	for i := range t.r.Guardrails {
		if g := &t.r.Guardrails[i]; g.Name == name && g.Phase == phase {
			g.Replaced = n
		}
	}
}
