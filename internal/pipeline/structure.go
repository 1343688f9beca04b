package pipeline

import (
	"bytes"
	"encoding/json"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/mcpgate/mcpgate/ctxapi"
	"github.com/mcpgate/mcpgate/engine"
	"github.com/mcpgate/mcpgate/gate"
	"github.com/mcpgate/mcpgate/internal/channelcheck"
	"github.com/mcpgate/mcpgate/internal/jsonrpc"
	"github.com/mcpgate/mcpgate/internal/jsonscan"
	"github.com/mcpgate/mcpgate/internal/methods"
	"github.com/mcpgate/mcpgate/vocab"
)

// This file holds the channel checks that read a message's structure
// (internal/channelcheck) and the instructions channel (docs/channels.md#instructions):
// small hooks the channel flows call.

// addFindings merges findings of the structural rules into a report of the text
// rules, raising its highest severity and verdict; sev overrides their severities
// (Pipeline.StructureSeverities), and a rule set to none is left out.
func addFindings(rep *engine.Report, fs []engine.Finding, sev map[string]engine.Severity) {
	for _, f := range fs {
		if s, ok := sev[f.RuleID]; ok {
			if f.Severity = s; s == engine.SeverityNone {
				continue
			}
		}
		rep.Findings = append(rep.Findings, f)
		if f.Severity > rep.Highest {
			rep.Highest, rep.Verdict = f.Severity, engine.VerdictFor(f.Severity)
		}
	}
}

// listingFindings are the structural findings of a listing's entries: the names of
// tools and prompts (channelcheck.Names) and, with several servers, a tool that
// steers another server's tool (channelcheck.CrossServer).
func listingFindings(c Channel, key string, entries []json.RawMessage) []engine.Finding {
	var out []engine.Finding
	for i, e := range entries { // every listing: icons; tools: x-mcp-header
		out = append(out, channelcheck.Definition(e, "/"+key+"/"+strconv.Itoa(i), c.Method == methods.ToolsList)...)
	}
	if c.Method != methods.ToolsList && c.Method != methods.PromptsList {
		return out
	}
	names := make([]string, len(entries))
	for i, e := range entries {
		names[i] = nameMember(e)
	}
	out = append(out, channelcheck.Names(names, channelcheck.EntryPointer(key))...)
	if c.Method == methods.ToolsList {
		out = append(out, channelcheck.SplitOrders(describedTools(c, key, names, entries))...)
	}
	if c.Method == methods.ToolsList && c.SplitName != nil {
		tools := make([]channelcheck.Tool, 0, len(entries))
		at := make([]int, 0, len(entries)) // tools[k] is entries[at[k]]
		for i, e := range entries {
			server, bare, ok := c.SplitName(names[i])
			if !ok {
				continue
			}
			t := channelcheck.Tool{Server: server, Name: names[i], Bare: bare}
			var v any
			if json.Unmarshal(e, &v) == nil {
				collectTexts(v, "/"+key+"/"+strconv.Itoa(i), true, &t.Texts)
			}
			tools, at = append(tools, t), append(at, i)
		}
		out = append(out, channelcheck.CrossServer(tools)...)
		out = append(out, channelcheck.Shadowing(tools, func(k int) string { return channelcheck.EntryPointer(key)(at[k]) })...)
	}
	return out
}

// describedTools reads each listed tool's description, with its server when the
// listing merges several (channelcheck.SplitOrders judges each server's as a whole).
func describedTools(c Channel, key string, names []string, entries []json.RawMessage) []channelcheck.Described {
	out := make([]channelcheck.Described, 0, len(entries))
	for i, e := range entries {
		var t struct{ Description string }
		// the member alone is read (of two, the last, as json.Unmarshal reads it)
		if t.Description = stringValue(memberRaw(e, "description")); t.Description == "" {
			continue
		}
		server := ""
		if c.SplitName != nil {
			if s, _, ok := c.SplitName(names[i]); ok {
				server = s
			}
		}
		out = append(out, channelcheck.Described{Server: server, Pointer: "/" + key + "/" + strconv.Itoa(i) + "/description", Description: t.Description})
	}
	return out
}

// collectTexts lists the strings of a decoded JSON value with their pointers,
// leaving out an entry's own name (top is the entry itself).
func collectTexts(v any, at string, top bool, out *[]channelcheck.Text) {
	switch x := v.(type) {
	case string:
		*out = append(*out, channelcheck.Text{Pointer: at, Value: x})
	case []any:
		for i, y := range x {
			collectTexts(y, at+"/"+strconv.Itoa(i), false, out)
		}
	case map[string]any:
		for k, y := range x {
			if top && k == "name" {
				continue
			}
			collectTexts(y, at+"/"+strings.ReplaceAll(strings.ReplaceAll(k, "~", "~0"), "/", "~1"), false, out)
		}
	}
}

// wholeListing reports whether a listing response is the whole listing: the first
// page (no cursor asked for) and the last (no nextCursor).
func wholeListing(params, result json.RawMessage) bool {
	var p, r map[string]json.RawMessage
	_ = json.Unmarshal(params, &p)
	_ = json.Unmarshal(result, &r)
	var cursor, next string
	_ = json.Unmarshal(p["cursor"], &cursor)
	_ = json.Unmarshal(r["nextCursor"], &next)
	return cursor == "" && next == ""
}

// requestFindings are the structural findings of a server-to-client request:
// elicitation/create (channelcheck.Elicitation) and the names of a
// sampling/createMessage request's own tools. For a sampling request whose
// includeContext is not "none" to a client that did not declare sampling.context,
// narrowed is params with includeContext "none" (and a sampling_context_narrowed
// finding); otherwise nil.
func requestFindings(c Channel, params json.RawMessage) (fs []engine.Finding, narrowed json.RawMessage) {
	switch c.Method {
	case methods.ElicitationCreate:
		return channelcheck.Elicitation(params), nil
	case methods.SamplingCreateMessage:
		var m map[string]json.RawMessage
		if json.Unmarshal(params, &m) != nil {
			return nil, nil
		}
		var tools []json.RawMessage
		if json.Unmarshal(m["tools"], &tools) == nil && len(tools) > 0 {
			names := make([]string, len(tools))
			for i, t := range tools {
				names[i] = nameMember(t)
			}
			fs = channelcheck.Names(names, channelcheck.EntryPointer("tools"))
		}
		var ic string
		if json.Unmarshal(m["includeContext"], &ic) == nil && ic != "" && ic != "none" && !c.SamplingContext {
			if out, err := setPath(params, []string{"includeContext"}, json.RawMessage(`"none"`)); err == nil {
				fs = append(fs, engine.Finding{RuleID: channelcheck.RuleSamplingContextNarrowed, Severity: engine.SeverityLow, Pointer: "/includeContext"})
				narrowed = out
			}
		}
	}
	return fs, narrowed
}

func instructionsBlockedText(eventID string) string {
	return "[mcpgate: instructions blocked — see audit log entry " + eventID + "]"
}

// instructions filters the instructions of an initialize or server/discover result
// (docs/channels.md#instructions), which clients put into the model's system prompt:
// the output rules read them; a block replaces them with a placeholder; the
// instructions phase may rewrite or reject them (ctx.params.instructions); a warn
// sanitizes them in place, with no notice. The rest of the result is left as it is.
func (r *run) instructions(c Channel, resp *jsonrpc.Message) Reply {
	result := resp.Result
	parts := []part{{path: []string{"instructions"}, raw: field(result, "instructions")}}
	var ins string
	_ = json.Unmarshal(parts[0].raw, &ins)
	rep, verdict, err := r.channelRules(parts, nil, channelcheck.Instructions(ins, c.SplitName)...)
	if verdict == engine.Block {
		return r.blockInstructions(result, instructionsBlockedText(r.rec.eventID()))
	}
	if err != nil {
		return Reply{Original: resp.Raw}
	}
	var pol gate.Result
	if r.set.Acts(ctxapi.PhaseInstructions) {
		params, _ := jsonrpc.Marshal(map[string]json.RawMessage{"instructions": parts[0].raw})
		pol = r.phase(vocab.StageInstructionsPolicies, &ctxapi.Call{Phase: ctxapi.PhaseInstructions, Params: params, Findings: rep.Findings})
		if rej := pol.Reject; rej != nil {
			r.rec.setReason(rej.Code)
			r.rec.setPolicy(rej.Policy)
			r.rec.guardrail(rej.Policy)
			msg, _ := r.thrown(rej) // instructions carry no notice
			return r.blockInstructions(result, rejectText(rej.Policy, msg, r.rec.eventID()))
		}
		if pol.Changed {
			var ins string
			v := field(pol.Params, "instructions")
			if json.Unmarshal(v, &ins) != nil {
				const msg = "ctx.params.instructions must be a string"
				r.rec.setReason(vocab.ReasonBadCtxShape)
				r.rec.setPolicy(lastOf(pol.Acted))
				return r.blockInstructions(result, rejectText(lastOf(pol.Acted), msg, r.rec.eventID()))
			}
			r.rec.escalate(policyAction(pol.Action))
			r.rec.outputChanged()
			if result, err = setPath(result, []string{"instructions"}, v); err != nil {
				return r.blockInstructions(resp.Result, instructionsBlockedText(r.rec.eventID()))
			}
			parts[0].raw = v
			if verdict = r.channelRescanParts(parts, verdict); verdict == engine.Block {
				return r.blockInstructions(resp.Result, instructionsBlockedText(r.rec.eventID()))
			}
		}
	}
	start := time.Now()
	defer r.rec.stage(vocab.StageMerge, start)
	if verdict == engine.Warn || len(pol.Warnings) > 0 {
		clean, err := sanitizeParts(result, parts)
		if err != nil {
			r.rec.setReason(vocab.ReasonSanitizeFailed)
			return r.blockInstructions(resp.Result, instructionsBlockedText(r.rec.eventID()))
		}
		r.rec.escalate(vocab.Warn)
		r.rec.outputChanged()
		return Reply{Result: clean}
	}
	if !pol.Changed {
		return Reply{Original: resp.Raw}
	}
	return Reply{Result: result}
}

// blockInstructions replaces the instructions of a result with text.
func (r *run) blockInstructions(result json.RawMessage, text string) Reply {
	if r.rec.state.reason == "" {
		r.rec.setReason(vocab.ReasonFilterBlock)
	}
	r.rec.escalate(vocab.Block)
	r.rec.outputChanged()
	t, _ := jsonrpc.Marshal(text)
	out, err := setPath(result, []string{"instructions"}, t)
	if err != nil {
		out, _ = jsonrpc.Marshal(map[string]json.RawMessage{"instructions": t})
	}
	return Reply{Result: out}
}

// channelRescanParts runs the output rules over parts a policy rewrote; it returns
// the stronger verdict, as channelRescan does for a whole message.
func (r *run) channelRescanParts(parts []part, verdict engine.Verdict) engine.Verdict {
	if !r.filterOutput {
		return verdict
	}
	again, err := analyzeParts(r.p.Analyzer, parts, r.c.Roots)
	if err != nil || again.Verdict <= verdict {
		return verdict
	}
	r.rec.addFindings(again)
	r.rec.rulesActed(again)
	r.rec.setFilter(vocab.FilterOn, again.Verdict)
	if again.Verdict == engine.Block {
		r.rec.setReason(vocab.ReasonFilterBlock)
	}
	return again.Verdict
}

// nameMember returns the string of an entry's "name" member, read by that key
// exactly (as entryName reads it; of two, the last) but without decoding the entry:
// only the name is decoded. "" when the entry is not an object or has no string name.
func nameMember(e json.RawMessage) string {
	v := memberRaw(e, "name")
	if len(v) >= 2 && v[0] == '"' && v[len(v)-1] == '"' && bytes.IndexByte(v, '\\') < 0 && utf8.Valid(v) {
		return string(v[1 : len(v)-1]) // no escape: the bytes are the string
	}
	var name string
	if v != nil && json.Unmarshal(v, &name) == nil {
		return name
	}
	return ""
}

// memberRaw returns the bytes of the member key (matched exactly after unescaping;
// of two, the last) of the JSON object b, or nil. The message was validated when it
// was parsed; malformed bytes give nil.
func memberRaw(b []byte, key string) []byte {
	var found [1][]byte
	membersRaw(b, []string{key}, found[:])
	return found[0]
}

// membersRaw is memberRaw for several keys in one pass: found[k] is keys[k]'s bytes
// or nil (all nil when b is malformed).
func membersRaw(b []byte, keys []string, found [][]byte) {
	clear(found)
	if !membersInto(b, keys, found) {
		clear(found)
	}
}

func membersInto(b []byte, keys []string, found [][]byte) bool {
	i := jsonscan.Space(b, 0)
	if i >= len(b) || b[i] != '{' {
		return false
	}
	i++
	if j := jsonscan.Space(b, i); j < len(b) && b[j] == '}' {
		return false
	}
	for {
		i = jsonscan.Space(b, i)
		if i >= len(b) || b[i] != '"' {
			return false
		}
		end, escaped := jsonscan.String(b, i)
		if end < 0 {
			return false
		}
		k := b[i:end]
		i = jsonscan.Space(b, end)
		if i >= len(b) || b[i] != ':' {
			return false
		}
		start := jsonscan.Space(b, i+1)
		if i = skipValue(b, start); i < 0 {
			return false
		}
		var u string
		if escaped && json.Unmarshal(k, &u) != nil {
			u = ""
		}
		for n, key := range keys {
			if len(k) == len(key)+2 && string(k[1:len(k)-1]) == key || escaped && u == key {
				found[n] = b[start:i]
			}
		}
		i = jsonscan.Space(b, i)
		if i < len(b) && b[i] == '}' {
			return true
		}
		if i >= len(b) || b[i] != ',' {
			return false
		}
		i++
	}
}

// arrayItems returns the items of the JSON array b, as bytes; ok is false when b is
// not an array.
func arrayItems(b []byte) (items [][]byte, ok bool) {
	i := jsonscan.Space(b, 0)
	if i >= len(b) || b[i] != '[' {
		return nil, false
	}
	i = jsonscan.Space(b, i+1)
	if i < len(b) && b[i] == ']' {
		return nil, true
	}
	for i < len(b) {
		end := skipValue(b, i)
		if end < 0 {
			return nil, false
		}
		items = append(items, b[i:end])
		i = jsonscan.Space(b, end)
		if i < len(b) && b[i] == ']' {
			return items, true
		}
		if i >= len(b) || b[i] != ',' {
			return nil, false
		}
		i = jsonscan.Space(b, i+1)
	}
	return nil, false
}

// namesClean reports, without decoding the listing, whether its names give no
// structural finding and its tools' descriptions no split order, so that a clean
// listing may still pass undecoded. A listing
// of several servers is always decoded (the steering check reads every string), and
// so is one that may hold icons or x-mcp-header annotations (channelcheck.Definition).
func namesClean(c Channel, key string, result json.RawMessage) bool {
	if bytes.Contains(result, []byte("icons")) || bytes.Contains(result, []byte("x-mcp-header")) || bytes.Contains(result, []byte(`\u`)) {
		return false
	}
	if c.Method != methods.ToolsList && c.Method != methods.PromptsList {
		return true
	}
	if c.SplitName != nil {
		return false
	}
	v := memberRaw(result, key)
	if v == nil {
		return true // no entries
	}
	items, ok := arrayItems(v)
	if !ok {
		return false
	}
	names := make([]string, len(items))
	var tools []channelcheck.Described
	var found [2][]byte
	for i, e := range items {
		membersRaw(e, []string{"name", "description"}, found[:])
		names[i] = stringValue(found[0])
		if d := stringValue(found[1]); d != "" && c.Method == methods.ToolsList {
			// NoOrder: the engine read each description and found nothing
			tools = append(tools, channelcheck.Described{Pointer: "/" + key + "/" + strconv.Itoa(i) + "/description", Description: d, NoOrder: true})
		}
	}
	if len(channelcheck.Names(names, func(int) string { return "" })) != 0 {
		return false
	}
	// an order split across the descriptions (channelcheck.SplitOrders) is in no
	// single entry, so the engine's reading of each finds none
	return len(tools) < 2 || len(channelcheck.SplitOrders(tools)) == 0
}

// stringValue is the string a JSON string value's bytes hold ("" for nil or another
// value); one without escapes is its bytes.
func stringValue(raw []byte) string {
	switch {
	case len(raw) >= 2 && raw[0] == '"' && raw[len(raw)-1] == '"' && bytes.IndexByte(raw, '\\') < 0 && utf8.Valid(raw):
		return string(raw[1 : len(raw)-1])
	case len(raw) > 0 && raw[0] == '"':
		var s string
		_ = json.Unmarshal(raw, &s)
		return s
	}
	return ""
}

// skipValue returns the offset just past the JSON value at b[i], or -1.
func skipValue(b []byte, i int) int {
	if i >= len(b) {
		return -1
	}
	switch b[i] {
	case '"':
		end, _ := jsonscan.String(b, i)
		return end
	case '{', '[':
		depth := 0
		for i < len(b) {
			switch b[i] {
			case '"':
				end, _ := jsonscan.String(b, i)
				if end < 0 {
					return -1
				}
				i = end
				continue
			case '{', '[':
				depth++
			case '}', ']':
				if depth--; depth == 0 {
					return i + 1
				}
			}
			i++
		}
		return -1
	}
	for i < len(b) && b[i] != ',' && b[i] != '}' && b[i] != ']' && b[i] != ' ' && b[i] != '\t' && b[i] != '\n' && b[i] != '\r' {
		i++
	}
	return i
}

// appFindings are the findings of the MCP Apps among a resources/read result's
// contents (docs/channels.md#apps): an item whose uri is ui:// or whose mimeType is
// HTML with profile=mcp-app, its text (or base64 blob) read by channelcheck.App
// against the origins its _meta.ui.csp declares. Medium, High in the strict profile.
func appFindings(doc json.RawMessage, strict bool) []engine.Finding {
	if !bytes.Contains(doc, []byte("ui:")) && !bytes.Contains(doc, []byte("mcp-app")) && !bytes.Contains(doc, []byte(`\u`)) {
		return nil
	}
	var r struct {
		Contents []struct {
			URI      string `json:"uri"`
			MimeType string `json:"mimeType"`
			Text     string `json:"text"`
			Blob     []byte `json:"blob"`
			Meta     struct {
				UI struct {
					CSP struct {
						Connect  []string `json:"connectDomains"`
						Resource []string `json:"resourceDomains"`
					} `json:"csp"`
				} `json:"ui"`
			} `json:"_meta"`
		} `json:"contents"`
	}
	if json.Unmarshal(doc, &r) != nil {
		return nil
	}
	sev := engine.SeverityMedium
	if strict {
		sev = engine.SeverityHigh
	}
	var out []engine.Finding
	for i, c := range r.Contents {
		mt := strings.ToLower(c.MimeType)
		if !strings.HasPrefix(strings.ToLower(c.URI), "ui://") && !(strings.HasPrefix(mt, "text/html") && strings.Contains(mt, "mcp-app")) {
			continue
		}
		text, at := c.Text, "/contents/"+strconv.Itoa(i)+"/text"
		if text == "" && len(c.Blob) > 0 {
			text, at = string(c.Blob), "/contents/"+strconv.Itoa(i)+"/blob"
		}
		allowed := append(append([]string(nil), c.Meta.UI.CSP.Connect...), c.Meta.UI.CSP.Resource...)
		out = append(out, channelcheck.App(text, allowed, sev, at)...)
	}
	return out
}
