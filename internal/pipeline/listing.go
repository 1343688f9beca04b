package pipeline

import (
	"encoding/json"
	"strconv"
	"strings"
	"time"

	"github.com/mcpgate/mcpgate/ctxapi"
	"github.com/mcpgate/mcpgate/engine"
	"github.com/mcpgate/mcpgate/internal/jsonrpc"
	"github.com/mcpgate/mcpgate/vocab"
)

// RuleToolDefinitionChanged is the finding of a tool whose definition differs from
// its pin (docs/channels.md#pinning).
const RuleToolDefinitionChanged = "tool_definition_changed"

// listKeys names the array of each listing result.
var listKeys = map[string]string{
	"tools/list":               "tools",
	"prompts/list":             "prompts",
	"resources/list":           "resources",
	"resources/templates/list": "resourceTemplates",
}

// listing filters one listing response: every string of every entry is read (names,
// titles, descriptions, schemas, annotations); an entry that blocks is removed (and,
// for tools, hidden), one that warns is sanitized in place, with no notice. For
// tools/list, tool pins are checked and the list phase runs. One record per response.
func (r *run) listing(c Channel, resp *jsonrpc.Message) Reply {
	p := r.p
	key := listKeys[c.Method]
	result := resp.Result
	stage := time.Now()
	var m map[string]json.RawMessage
	var entries []json.RawMessage
	rep, err := p.Analyzer.AnalyzeArguments(result)
	if err == nil && len(rep.Findings) == 0 && !rep.Truncated && (p.Pins == nil || c.Method != "tools/list") &&
		c.Method != "tools/list" && c.Method != "prompts/list" && // their names are checked below
		(c.Method != "tools/list" || !r.set.Acts(ctxapi.PhaseList)) && listShaped(result, key) {
		// clean, and nothing else reads it: no need to decode the entries
		r.rec.stage(vocab.StageOutputRules, stage)
		r.rec.setFindings(rep)
		r.outputVerdict(rep, nil)
		return Reply{Original: resp.Raw}
	}
	if err == nil {
		if json.Unmarshal(result, &m) != nil || m == nil || json.Unmarshal(orArray(m[key]), &entries) != nil {
			rep, err = engine.Report{}, engine.ErrUndecodable
		}
	}
	pinned := map[int]bool{}
	if err == nil && c.Method == "tools/list" && p.Pins != nil {
		changes, perr := p.Pins.CheckListing(c.Server, entries, wholeListing(c.Params, result))
		if perr != nil {
			p.logger().Warn("tool pins could not be checked", "err", perr)
		}
		sev := engine.SeverityMedium
		if p.PinBlock {
			sev = engine.SeverityHigh
		}
		for _, ch := range changes {
			rep.Findings = append(rep.Findings, engine.Finding{RuleID: RuleToolDefinitionChanged, Severity: sev,
				Pointer: "/tools/" + strconv.Itoa(ch.Index)})
			if sev > rep.Highest {
				rep.Highest, rep.Verdict = sev, engine.VerdictFor(sev)
			}
			pinned[ch.Index] = p.PinBlock
		}
	}
	if err == nil {
		addFindings(&rep, listingFindings(c, key, entries), p.StructureSeverities)
	}
	r.rec.stage(vocab.StageOutputRules, stage)
	r.rec.setFindings(rep)
	verdict := r.outputVerdict(rep, err)
	if err != nil {
		if verdict == engine.Block { // fail-closed: an empty listing
			r.rec.escalate(vocab.Block)
			r.rec.outputChanged()
			b, _ := jsonrpc.Marshal(map[string]any{key: []any{}})
			return Reply{Result: b, HiddenAll: &Hidden{EventID: r.rec.eventID(), Policy: HiddenByFilter, Reason: vocab.ReasonUndecodableResult}}
		}
		return Reply{Original: resp.Raw}
	}
	if verdict == engine.Block && rep.Truncated && r.rec.r.FailModeTriggered {
		// --fail-mode closed and entries past the scan cap went unread: none is listed
		var hidden []Hidden
		for _, e := range entries {
			hidden = append(hidden, Hidden{Tool: entryName(c.Method, e), EventID: r.rec.eventID(), Policy: HiddenByFilter, Reason: vocab.ReasonScanTruncated})
		}
		r.rec.escalate(vocab.Block)
		r.rec.outputChanged()
		m[key] = json.RawMessage("[]")
		b, _ := jsonrpc.Marshal(m)
		return Reply{Result: b, Hidden: hidden}
	}

	// The verdict of each entry.
	worst := make([]engine.Verdict, len(entries))
	prefix := "/" + key + "/"
	for _, f := range rep.Findings {
		rest, ok := strings.CutPrefix(f.Pointer, prefix)
		if !ok {
			continue
		}
		n, err := strconv.Atoi(strings.SplitN(rest, "/", 2)[0])
		if err != nil || n < 0 || n >= len(entries) {
			continue
		}
		worst[n] = max(worst[n], engine.VerdictFor(f.Severity))
	}
	var hidden []Hidden
	changed := false
	out := make([]json.RawMessage, 0, len(entries))
	for i, e := range entries {
		switch {
		case pinned[i]:
			hidden = append(hidden, Hidden{Tool: entryName(c.Method, e), EventID: r.rec.eventID(), Policy: HiddenByPin, Reason: vocab.ReasonToolDefinitionChanged})
			r.rec.guardrail(HiddenByPin)
			changed = true
			continue
		case r.filterOutput && worst[i] == engine.Block:
			hidden = append(hidden, Hidden{Tool: entryName(c.Method, e), EventID: r.rec.eventID(), Policy: HiddenByFilter, Reason: vocab.ReasonFilterBlock})
			changed = true
			continue
		case r.filterOutput && worst[i] == engine.Warn:
			clean, err := engine.SanitizeJSON(e)
			if err != nil {
				hidden = append(hidden, Hidden{Tool: entryName(c.Method, e), EventID: r.rec.eventID(), Policy: HiddenByFilter, Reason: vocab.ReasonSanitizeFailed})
				changed = true
				continue
			}
			if string(clean) != string(e) {
				e, changed = clean, true
				r.rec.escalate(vocab.Warn)
			}
		}
		out = append(out, e)
	}
	if len(hidden) > 0 {
		r.rec.escalate(vocab.Block)
		byFilter, byPin := false, false
		for _, h := range hidden {
			byFilter = byFilter || h.Policy == HiddenByFilter
			byPin = byPin || h.Policy == HiddenByPin
		}
		if byPin && !byFilter { // pins block whatever --filter-output says
			r.rec.setReason(vocab.ReasonToolDefinitionChanged)
		}
	}

	// The list phase: ctx.tools, for the policies that take part in it.
	if c.Method == "tools/list" && r.set.Acts(ctxapi.PhaseList) {
		tools, _ := jsonrpc.Marshal(out)
		pol := r.phase(vocab.StageListPolicies, &ctxapi.Call{Phase: ctxapi.PhaseList, Params: orObject(c.Params),
			Tools: tools, Findings: rep.Findings})
		r.rec.acted(pol.Acted)
		var after []json.RawMessage
		switch {
		case pol.Reject != nil:
			// fail closed: the caller sees no tool, and every call is rejected
			rej := pol.Reject
			r.rec.setReason(rej.Code)
			r.rec.setPolicy(rej.Policy)
			r.rec.guardrail(rej.Policy)
			r.rec.escalate(vocab.Block)
			for _, e := range out {
				hidden = append(hidden, Hidden{Tool: entryName(c.Method, e), EventID: r.rec.eventID(), Policy: rej.Policy, Reason: rej.Code})
			}
			out, changed = []json.RawMessage{}, true
		case pol.Changed && json.Unmarshal(pol.Content, &after) == nil:
			kept := map[string]bool{}
			for i, e := range after {
				if r.filterOutput { // a policy cannot put escapes back
					if clean, err := engine.SanitizeJSON(e); err == nil {
						after[i] = clean
					}
				}
				kept[entryName(c.Method, after[i])] = true
			}
			for _, e := range out {
				if name := entryName(c.Method, e); !kept[name] {
					hidden = append(hidden, Hidden{Tool: name, EventID: r.rec.eventID(), Policy: lastOf(pol.Acted), Reason: vocab.ReasonPolicyHidden})
				}
			}
			r.rec.escalate(policyAction(pol.Action))
			out, changed = after, true
		}
	}
	if len(hidden) > 0 || changed {
		r.rec.outputChanged()
	}
	if !changed {
		return Reply{Original: resp.Raw}
	}
	m[key], _ = jsonrpc.Marshal(out)
	b, err := jsonrpc.Marshal(m)
	if err != nil {
		return r.blockChannel(c.Method, nil)
	}
	return Reply{Result: b, Hidden: hidden}
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

// entryName is what an entry of a method's listing is asked for by: a tool's or
// prompt's name, a resource's uri, a template's uriTemplate; "" when it has none.
// It reads that key alone and exactly, as the client does: a tool that also carries
// a "uri", or a "NAME" beside its "name", is still asked for by its "name".
func entryName(method string, e json.RawMessage) string {
	key := "name"
	switch method {
	case "resources/list":
		key = "uri"
	case "resources/templates/list":
		key = "uriTemplate"
	}
	var v map[string]json.RawMessage
	var name string
	if json.Unmarshal(e, &v) != nil || json.Unmarshal(v[key], &name) != nil {
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
