package pipeline

import (
	"encoding/json"
	"slices"
	"strings"

	"github.com/mcpgate/mcpgate/internal/jsonrpc"
	"github.com/mcpgate/mcpgate/internal/methods"
	"github.com/mcpgate/mcpgate/vocab"
)

// missingCapabilities returns, in the ClientCapabilities shape, the capabilities the
// input requests of an input_required result need and declared (a request's
// envelope clientCapabilities) lacks; nil when none is missing or there is no
// envelope (declared nil: a 2025-11-25 request, whose client declared its
// capabilities at initialize). A bare elicitation: {} declares form, its 2025
// meaning. An entry the gateway cannot read is left to inputRequests.
func missingCapabilities(declared, result json.RawMessage) map[string]map[string]struct{} {
	if declared == nil {
		return nil
	}
	var caps map[string]map[string]json.RawMessage
	_ = json.Unmarshal(declared, &caps) // unreadable: nothing declared
	var res struct {
		InputRequests map[string]struct {
			Method string          `json:"method"`
			Params json.RawMessage `json:"params"`
		} `json:"inputRequests"`
	}
	if json.Unmarshal(result, &res) != nil {
		return nil
	}
	var missing map[string]map[string]struct{}
	for _, e := range res.InputRequests {
		capability, member := methods.Of(e.Method).Required(e.Params) // the table's Need
		if capability == "" {
			continue
		}
		have, ok := caps[capability]
		ok = ok && have != nil // "elicitation": null declares nothing
		_, hasMember := have[member]
		if ok && (member == "" || hasMember || capability == "elicitation" && member == "form" && have["form"] == nil && have["url"] == nil) {
			continue
		}
		if missing == nil {
			missing = map[string]map[string]struct{}{}
		}
		if missing[capability] == nil {
			missing[capability] = map[string]struct{}{}
		}
		if member != "" {
			missing[capability][member] = struct{}{}
		}
	}
	return missing
}

// missingCapability answers a request whose input_required result asks the client
// for input its clientCapabilities do not declare: -32021 with
// data.requiredCapabilities (only the missing ones), as a conforming server answers;
// the client is asked for nothing, and the record says why.
func (r *run) missingCapability(missing map[string]map[string]struct{}) Reply {
	r.rec.setReason(vocab.ReasonMissingCapability)
	r.rec.escalate(vocab.Block)
	r.rec.outputChanged()
	names := slices.Sorted(func(yield func(string) bool) {
		for k := range missing {
			if !yield(k) {
				return
			}
		}
	})
	data, _ := jsonrpc.Marshal(map[string]any{"requiredCapabilities": missing})
	b, _ := jsonrpc.Marshal(jsonrpc.ErrorObject{Code: methods.CodeMissingRequiredClientCapability,
		Message: "mcpgate: the server asks for input the request's clientCapabilities do not declare: " + strings.Join(names, ", ") +
			" (audit log entry " + r.rec.eventID() + ")", Data: data})
	return Reply{Error: b}
}
