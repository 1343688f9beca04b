package pipeline

import (
	"cmp"
	"encoding/json"
	"strconv"
	"strings"
	"time"

	"github.com/mcpgate/mcpgate/ctxapi"
	"github.com/mcpgate/mcpgate/engine"
	"github.com/mcpgate/mcpgate/internal/jsonrpc"
	"github.com/mcpgate/mcpgate/internal/methods"
	"github.com/mcpgate/mcpgate/vocab"
)

// RuleToolDefinitionChanged is the finding of a tool whose definition differs from
// its pin (docs/channels.md#pinning).
const RuleToolDefinitionChanged = "tool_definition_changed"

// listing filters one listing response (a row whose Shape is Listing): every string
// of every entry is read (names, titles, descriptions, schemas, annotations); an
// entry that blocks is removed (and hidden), one that warns is sanitized in place,
// with no notice. Tool pins are checked for tools/list, the content guardrails that
// take tools/list judge the tools left, and the row's list phase runs.
// One record per response.
//
//	output rules (+ pins) → entries → guardrails → list phase → merge → record
func (r *run) listing(c Channel, m *methods.Method, resp *jsonrpc.Message) Reply {
	l := &list{run: r, ch: c, m: m, key: m.List.Key}
	stage := time.Now()
	rep, err := r.p.Analyzer.AnalyzeDefinitions(resp.Result)
	rep.AddressesAsInfo() // definitions address the model by nature
	if err == nil && len(rep.Findings) == 0 && !rep.Truncated && !l.pinned() && !l.hasPhase() && !l.guarded() && namesClean(l.ch, l.key, resp.Result) && listShaped(resp.Result, l.key) {
		// clean, and nothing else reads it: no need to decode the entries
		r.rec.stage(vocab.StageOutputRules, stage)
		r.rec.setFindings(rep)
		r.outputVerdict(rep, nil)
		return Reply{Original: resp.Raw}
	}
	if err == nil && !l.decode(resp.Result) {
		rep, err = engine.Report{}, engine.ErrUndecodable
	}
	pinned := l.checkPins(&rep, err, resp.Result)
	if err == nil {
		addFindings(&rep, listingFindings(l.ch, l.key, l.entries), l.p.StructureSeverities)
	}
	r.rec.stage(vocab.StageOutputRules, stage)
	r.rec.setFindings(rep)
	verdict := r.outputVerdict(rep, err)
	switch {
	case err != nil && verdict == engine.Block: // fail-closed: an empty listing
		r.rec.escalate(vocab.Block)
		r.rec.outputChanged()
		b, _ := jsonrpc.Marshal(map[string]any{l.key: []any{}})
		return Reply{Result: b, HiddenAll: &Hidden{EventID: r.rec.eventID(), Policy: HiddenByFilter, Reason: vocab.ReasonUndecodableResult}}
	case err != nil:
		return Reply{Original: resp.Raw}
	case verdict == engine.Block && rep.Truncated && r.rec.state.failMode:
		// --fail-mode closed and entries past the scan cap went unread: none is listed
		for _, e := range l.entries {
			l.hide(e, HiddenByFilter, vocab.ReasonScanTruncated)
		}
		r.rec.escalate(vocab.Block)
		r.rec.outputChanged()
		l.out, l.changed = []json.RawMessage{}, true
		return l.reply(resp)
	}
	l.filterEntries(rep, pinned)
	outside, stop := l.judge(rep)
	if stop != nil {
		return *stop
	}
	rep.Findings = withFindings(rep.Findings, outside)
	l.listPhase(rep)
	return l.reply(resp)
}

// list is one listing on its way through the stages.
type list struct {
	*run
	ch      Channel
	m       *methods.Method
	key     string                     // the entries' array member
	doc     map[string]json.RawMessage // the result's members
	entries []json.RawMessage          // as the server listed them
	out     []json.RawMessage          // as the caller gets them
	from    []int                      // from[i] is the index in entries of out[i], until the list phase
	hidden  []Hidden
	changed bool
}

// pinned reports whether tool pins read this listing.
func (l *list) pinned() bool { return l.p.Pins != nil && l.m.Name == methods.ToolsList }

// hasPhase reports whether a policy takes part in the row's list phase.
func (l *list) hasPhase() bool { return l.m.Phase != "" && l.set.Acts(l.m.Phase) }

// decode reads the result's members and its entries.
func (l *list) decode(result json.RawMessage) bool {
	return json.Unmarshal(result, &l.doc) == nil && l.doc != nil && json.Unmarshal(orArray(l.doc[l.key]), &l.entries) == nil
}

// checkPins adds a tool_definition_changed finding per changed tool and returns the
// entries it hides (--pins-mode block).
func (l *list) checkPins(rep *engine.Report, err error, result json.RawMessage) map[int]bool {
	pinned := map[int]bool{}
	if err != nil || !l.pinned() {
		return pinned
	}
	server := l.ch.Server
	if server == "" {
		server = l.p.PinServer // the command after --: its command line or --pins-name
	}
	changes, perr := l.p.Pins.CheckListing(server, l.entries, wholeListing(l.ch.Params, result))
	if perr != nil {
		l.p.logger().Warn("tool pins could not be checked", "err", perr)
	}
	sev := engine.SeverityMedium
	if l.p.PinBlock {
		sev = engine.SeverityHigh
	}
	for _, ch := range changes {
		rep.Findings = append(rep.Findings, engine.Finding{RuleID: RuleToolDefinitionChanged, Severity: sev,
			Pointer: "/" + l.key + "/" + strconv.Itoa(ch.Index)})
		if sev > rep.Highest {
			rep.Highest, rep.Verdict = sev, engine.VerdictFor(sev)
		}
		pinned[ch.Index] = l.p.PinBlock
	}
	return pinned
}

// hide withholds one entry from the caller.
func (l *list) hide(e json.RawMessage, by string, reason vocab.Reason) {
	l.hidden = append(l.hidden, Hidden{Tool: entryName(l.m, e), EventID: l.rec.eventID(), Policy: by, Reason: reason})
	l.changed = true
}

// filterEntries applies each entry's verdict: a pinned or blocking entry is hidden, a
// warned one sanitized.
func (l *list) filterEntries(rep engine.Report, pinned map[int]bool) {
	worst := make([]engine.Verdict, len(l.entries))
	prefix := "/" + l.key + "/"
	for _, f := range rep.Findings {
		rest, ok := strings.CutPrefix(f.Pointer, prefix)
		if !ok {
			continue
		}
		n, err := strconv.Atoi(strings.SplitN(rest, "/", 2)[0])
		if err != nil || n < 0 || n >= len(l.entries) {
			continue
		}
		worst[n] = max(worst[n], engine.VerdictFor(f.Severity))
	}
	l.out = make([]json.RawMessage, 0, len(l.entries))
	l.from = make([]int, 0, len(l.entries))
	for i, e := range l.entries {
		switch {
		case pinned[i]:
			l.hide(e, HiddenByPin, vocab.ReasonToolDefinitionChanged)
			l.rec.guardrail(HiddenByPin)
			continue
		case l.filterOutput && worst[i] == engine.Block:
			l.hide(e, HiddenByFilter, vocab.ReasonFilterBlock)
			continue
		case l.filterOutput && worst[i] == engine.Warn:
			clean, err := engine.SanitizeJSON(e)
			if err != nil {
				l.hide(e, HiddenByFilter, vocab.ReasonSanitizeFailed)
				continue
			}
			if string(clean) != string(e) {
				e, l.changed = clean, true
				l.rec.escalate(vocab.Warn)
			}
		}
		l.out, l.from = append(l.out, e), append(l.from, i)
	}
	if len(l.hidden) == 0 {
		return
	}
	l.rec.escalate(vocab.Block)
	byFilter, byPin := false, false
	for _, h := range l.hidden {
		byFilter = byFilter || h.Policy == HiddenByFilter
		byPin = byPin || h.Policy == HiddenByPin
	}
	if byPin && !byFilter { // pins block whatever --filter-output says
		l.rec.setReason(vocab.ReasonToolDefinitionChanged)
	}
}

// listPhase runs the row's list phase over the entries the rules left (ctx.tools): a
// throw hides every entry (fail closed), an edit replaces them, and an entry it
// removes is hidden from this caller, citing the policy that removed it
// (docs/decisions.md#truthful-telemetry).
func (l *list) listPhase(rep engine.Report) {
	if !l.hasPhase() {
		return
	}
	tools, _ := jsonrpc.Marshal(l.out)
	pol := l.phase(phaseStages[l.m.Phase], &ctxapi.Call{Phase: l.m.Phase, Params: methods.OrObject(l.ch.Params),
		Tools: tools, Findings: rep.Findings})
	l.rec.acted(pol.Acted)
	var after []json.RawMessage
	switch {
	case pol.Reject != nil:
		rej := pol.Reject
		l.rec.setReason(rej.Code)
		l.rec.setPolicy(rej.Policy)
		l.rec.guardrail(rej.Policy)
		l.rec.escalate(vocab.Block)
		for _, e := range l.out {
			l.hide(e, rej.Policy, rej.Code)
		}
		l.out = []json.RawMessage{}
	case pol.Changed && json.Unmarshal(pol.Content, &after) == nil:
		kept := map[string]bool{}
		for i, e := range after {
			if l.filterOutput { // a policy cannot put escapes back
				if clean, err := engine.SanitizeJSON(e); err == nil {
					after[i] = clean
				}
			}
			kept[entryName(l.m, after[i])] = true
		}
		for _, e := range l.out {
			if name := entryName(l.m, e); !kept[name] {
				l.hide(e, cmp.Or(pol.Removed[name], lastOf(pol.Acted)), vocab.ReasonPolicyHidden)
			}
		}
		l.rec.escalate(policyAction(pol.Action))
		l.out, l.changed = after, true
	}
}

// reply is the listing the caller gets: the server's bytes when nothing changed.
func (l *list) reply(resp *jsonrpc.Message) Reply {
	if len(l.hidden) > 0 || l.changed {
		l.rec.outputChanged()
	}
	if !l.changed {
		return Reply{Original: resp.Raw}
	}
	l.doc[l.key], _ = jsonrpc.Marshal(l.out)
	b, err := jsonrpc.Marshal(l.doc)
	if err != nil {
		return l.blockMessage(nil, nil, nil, blockText(l.rec.eventID()), "")
	}
	return Reply{Result: b, Hidden: l.hidden}
}

// listShaped reports whether result is a JSON object whose key member is an array
// (or absent): only such a listing may pass undecoded; any other goes on to be
// decoded, and is undecodable (docs/decisions.md#fail-modes).
func listShaped(result json.RawMessage, key string) bool {
	var m map[string]json.RawMessage
	if json.Unmarshal(result, &m) != nil || m == nil {
		return false
	}
	v := strings.TrimSpace(string(m[key]))
	return v == "" || v == "null" || v[0] == '['
}

// entryName is what an entry of a listing is asked for by (its row's List.Entry): a
// tool's or prompt's name, a resource's uri, a template's uriTemplate; "" when it has
// none. It reads that key alone and exactly, as the client does: a tool that also
// carries a "uri", or a "NAME" beside its "name", is still asked for by its "name".
func entryName(m *methods.Method, e json.RawMessage) string {
	var v map[string]json.RawMessage
	var name string
	if m == nil || m.List == nil || json.Unmarshal(e, &v) != nil || json.Unmarshal(v[m.List.Entry], &name) != nil {
		return ""
	}
	return name
}

func orArray(v json.RawMessage) json.RawMessage {
	if len(v) == 0 || string(v) == "null" {
		return json.RawMessage("[]")
	}
	return v
}
