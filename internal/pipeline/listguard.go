package pipeline

import (
	"encoding/json"
	"strconv"
	"strings"

	"github.com/mcpgate/mcpgate/engine"
	"github.com/mcpgate/mcpgate/internal/guardrail"
	"github.com/mcpgate/mcpgate/internal/jsonrpc"
	"github.com/mcpgate/mcpgate/internal/methods"
	"github.com/mcpgate/mcpgate/vocab"
)

// Content guardrails on tools/list (docs/guardrails.md#listings): the tools the
// output rules left are sent as one request, every string leaf of each at
// /tools/<i>/..., input_type response, after the rules and before the list phase.

// ListingGuarded reports whether a content guardrail judges tools/list: it can
// withhold a tool from a caller's listing, and it is sent the caller, so one caller's
// listing can differ from another's.
func (p *Pipeline) ListingGuarded() bool { return p.Guardrails.Content(methods.ToolsList) }

// guarded reports whether a content guardrail judges this listing.
func (l *list) guarded() bool {
	return l.m.Name == methods.ToolsList && l.guardrails().Content(l.m.Name)
}

// judge runs the content guardrails that take tools/list over l.out. A BLOCKED
// withholds the tools its findings point into, or every tool when it has no finding
// or one that points into none; a failure under fail mode closed withholds every
// tool. An intervention replaces description and title texts; a tool whose other
// text (its name, a schema keyword) it would change is withheld, since a callout
// never renames a tool or rewrites its schema. The output rules then read the
// replacements (an escape withholds the tool under --filter-output) and the Warn
// sanitizer cleans them. It returns the guardrails' findings (pointers into the
// server's listing, as the rules' are) and a reply when the client cancelled.
func (l *list) judge(rep engine.Report) ([]engine.Finding, *Reply) {
	if !l.guarded() || len(l.out) == 0 {
		return nil, nil
	}
	doc, err := jsonrpc.Marshal(map[string]any{l.key: l.out})
	if err != nil {
		return nil, nil
	}
	texts, err := guardrail.Leaves(doc, false)
	if err != nil || len(texts) == 0 {
		return nil, nil
	}
	c := l.guardContent(guardPost, texts, l.toOut(rep.Findings))
	outs, _, cancelled := l.callGuardrails(guardPost, vocab.StageGuardrailsPost, c, nil)
	if cancelled {
		reply := l.upstreamFailed(ErrCancelled)
		return nil, &reply
	}
	// withhold[i] is the reason tool i of l.out is withheld; all, every tool's.
	withhold := map[int]vocab.Reason{}
	var all vocab.Reason
	by := map[int]string{}
	allBy := ""
	recorded := false
	for _, o := range outs {
		if !o.Stops() {
			continue
		}
		code := l.guardStopRecordOnce(o, &recorded)
		l.rec.guardrail(guardrail.Source(o.Name))
		tools, ok := l.flagged(o)
		if o.Verdict != guardrail.Block || !ok {
			if all == "" {
				all, allBy = code, guardrail.Source(o.Name)
			}
			continue
		}
		for _, i := range tools {
			if _, seen := withhold[i]; !seen {
				withhold[i], by[i] = code, guardrail.Source(o.Name)
			}
		}
	}
	found := l.fromOut(findingsOf(outs))
	if all != "" {
		for _, e := range l.out {
			l.hide(e, allBy, all)
		}
		l.out, l.from = []json.RawMessage{}, nil
		return found, nil
	}
	replaced := l.listIntervene(doc, texts, outs, withhold, by)
	kept, from := make([]json.RawMessage, 0, len(l.out)), make([]int, 0, len(l.out))
	first := -1
	for i, e := range l.out {
		if reason, ok := withhold[i]; ok {
			l.hide(e, by[i], reason)
			if first < 0 {
				first = i
			}
			continue
		}
		if replaced != nil && i < len(replaced) {
			e = replaced[i]
		}
		kept, from = append(kept, e), append(from, l.from[i])
	}
	if first >= 0 && !recorded { // withheld for an intervention it could not apply, or its escape
		l.rec.setReason(withhold[first])
		l.rec.setPolicy(by[first])
		l.rec.escalate(vocab.Block)
		l.rec.setPhase(guardPost)
	}
	if len(kept) != len(l.out) || replaced != nil {
		l.out, l.from, l.changed = kept, from, true
	}
	return found, nil
}

// guardStopRecordOnce records the first stop of a listing as guardStopRecord does,
// and returns the reason code of each (stopReason).
func (l *list) guardStopRecordOnce(o guardrail.Outcome, recorded *bool) vocab.Reason {
	if !*recorded {
		*recorded = true
		code, _ := l.guardStopRecord(o, guardPost)
		return code
	}
	code, _ := stopReason(o)
	return code
}

// flagged returns the tools (indexes into l.out) a BLOCKED's findings point into;
// ok is false when it has none or one points into no tool: the block cannot be
// attributed.
func (l *list) flagged(o guardrail.Outcome) (tools []int, ok bool) {
	if len(o.Findings) == 0 {
		return nil, false
	}
	seen := map[int]bool{}
	for _, f := range o.Findings {
		i, _, ok := l.entryOf(f.Pointer)
		if !ok || i >= len(l.out) {
			return nil, false
		}
		if !seen[i] {
			seen[i] = true
			tools = append(tools, i)
		}
	}
	return tools, true
}

// listIntervene applies the interventions of outs to doc ({key: l.out}) and returns
// the tools as the caller gets them, nil when nothing changed. A tool whose
// replaced text is neither a description nor a title, or whose replacement the
// output rules block (under --filter-output), is added to withhold.
func (l *list) listIntervene(doc json.RawMessage, texts []guardrail.Text, outs []guardrail.Outcome, withhold map[int]vocab.Reason, by map[int]string) []json.RawMessage {
	allowed := make([]guardrail.Outcome, 0, len(outs))
	for _, o := range outs {
		if o.Verdict != guardrail.Intervene {
			continue
		}
		o.Texts = append([]string(nil), o.Texts...)
		for j, idx := range o.Sent {
			t := texts[idx]
			if o.Texts[j] == t.Value {
				continue
			}
			i, rest, _ := l.entryOf(t.Pointer)
			if last := rest[strings.LastIndexByte(rest, '/')+1:]; last != "description" && last != "title" {
				if _, seen := withhold[i]; !seen {
					withhold[i], by[i] = vocab.ReasonGuardrailBlock, guardrail.Source(o.Name)
					l.rec.guardrail(guardrail.Source(o.Name))
				}
				o.Texts[j] = t.Value // not applied: the tool is withheld
			}
		}
		allowed = append(allowed, o)
	}
	raw, changed, err := l.intervene(doc, texts, allowed, guardPost, false)
	if err != nil || !changed {
		return nil
	}
	l.rec.escalate(vocab.Redact)
	if l.filterOutput {
		if again, err := l.p.Analyzer.AnalyzeDefinitions(raw); err == nil {
			for _, f := range again.Findings {
				if engine.VerdictFor(f.Severity) != engine.Block {
					continue
				}
				if i, _, ok := l.entryOf(f.Pointer); ok {
					if _, seen := withhold[i]; !seen {
						withhold[i], by[i] = vocab.ReasonFilterBlock, HiddenByFilter
					}
				}
			}
			if again.Verdict == engine.Block {
				l.rec.addFindings(again)
				l.rec.setFilter(vocab.FilterOn, again.Verdict)
			}
		}
	}
	clean, _, err := l.intervene(doc, texts, allowed, guardPost, true)
	var m map[string]json.RawMessage
	var tools []json.RawMessage
	if err != nil || json.Unmarshal(clean, &m) != nil || json.Unmarshal(m[l.key], &tools) != nil || len(tools) != len(l.out) {
		for i := range l.out { // cannot happen: Replace wrote the same shape
			withhold[i], by[i] = vocab.ReasonGuardrailError, guardrail.Source(lastIntervened(outs))
		}
		return nil
	}
	return tools
}

// entryOf reads "/<key>/<i>/rest" into i and "/rest".
func (l *list) entryOf(pointer string) (int, string, bool) {
	rest, ok := strings.CutPrefix(pointer, "/"+l.key+"/")
	if !ok {
		return 0, "", false
	}
	n, tail, _ := strings.Cut(rest, "/")
	i, err := strconv.Atoi(n)
	if err != nil || i < 0 {
		return 0, "", false
	}
	return i, "/" + tail, true
}

// toOut maps findings over the server's listing onto l.out's indexes (those of a
// withheld tool are dropped); fromOut maps back.
func (l *list) toOut(fs []engine.Finding) []engine.Finding {
	at := map[int]int{}
	for j, i := range l.from {
		at[i] = j
	}
	var out []engine.Finding
	for _, f := range fs {
		i, rest, ok := l.entryOf(f.Pointer)
		if j, kept := at[i]; ok && kept {
			f.Pointer = "/" + l.key + "/" + strconv.Itoa(j) + strings.TrimSuffix(rest, "/")
			out = append(out, f)
		}
	}
	return out
}

func (l *list) fromOut(fs []engine.Finding) []engine.Finding {
	out := make([]engine.Finding, 0, len(fs))
	for _, f := range fs {
		if j, rest, ok := l.entryOf(f.Pointer); ok && j < len(l.from) {
			f.Pointer = "/" + l.key + "/" + strconv.Itoa(l.from[j]) + strings.TrimSuffix(rest, "/")
		}
		out = append(out, f)
	}
	return out
}
