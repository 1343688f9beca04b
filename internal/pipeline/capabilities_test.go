package pipeline

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/mcpgate/mcpgate/internal/jsonrpc"
)

// TestMissingCapabilities: the capabilities an input_required result's input
// requests need and the request's envelope does not declare, in the
// ClientCapabilities shape; none without an envelope (a 2025-11-25 request).
func TestMissingCapabilities(t *testing.T) {
	form := `"f":{"method":"elicitation/create","params":{"message":"name?","requestedSchema":{"type":"object"}}}`
	url := `"u":{"method":"elicitation/create","params":{"mode":"url","message":"log in","url":"https://example.org/login","elicitationId":"e"}}`
	sample := `"s":{"method":"sampling/createMessage","params":{"messages":[],"maxTokens":5}}`
	sampleTools := `"t":{"method":"sampling/createMessage","params":{"messages":[],"maxTokens":5,"tools":[]}}`
	roots := `"r":{"method":"roots/list"}`
	result := func(entries ...string) json.RawMessage {
		return json.RawMessage(`{"resultType":"input_required","inputRequests":{` + strings.Join(entries, ",") + `}}`)
	}
	for _, tc := range []struct {
		name, declared string
		result         json.RawMessage
		want           string // JSON of the missing capabilities, "" for none
	}{
		{"no envelope", "", result(form, roots), ""},
		{"nothing declared", `{}`, result(form, sample, roots), `{"elicitation":{"form":{}},"roots":{},"sampling":{}}`},
		{"bare elicitation is form", `{"elicitation":{}}`, result(form), ""},
		{"bare elicitation is not url", `{"elicitation":{}}`, result(url), `{"elicitation":{"url":{}}}`},
		{"url declared, form not", `{"elicitation":{"url":{}}}`, result(form, url), `{"elicitation":{"form":{}}}`},
		{"both modes", `{"elicitation":{"form":{},"url":{}}}`, result(form, url), ""},
		{"sampling", `{"sampling":{}}`, result(sample), ""},
		{"sampling without tools", `{"sampling":{}}`, result(sampleTools), `{"sampling":{"tools":{}}}`},
		{"sampling with tools", `{"sampling":{"tools":{}}}`, result(sample, sampleTools), ""},
		{"roots", `{"roots":{"listChanged":true}}`, result(roots), ""},
		{"unknown method is inputRequests' matter", `{}`, result(`"x":{"method":"tools/list"}`), ""},
		{"no input requests", `{}`, json.RawMessage(`{"resultType":"input_required"}`), ""},
		{"unreadable capabilities declare nothing", `[]`, result(roots), `{"roots":{}}`},
		{"an escaped url mode is url", `{"elicitation":{"form":{}}}`, result(`"e":{"method":"elicitation/create","params":{"mode":"\u0075rl","message":"log in","url":"https://example.org/login","elicitationId":"e"}}`), `{"elicitation":{"url":{}}}`},
		{"null declares nothing", `{"elicitation":null,"roots":null}`, result(form, roots), `{"elicitation":{"form":{}},"roots":{}}`},
	} {
		var declared json.RawMessage
		if tc.declared != "" {
			declared = json.RawMessage(tc.declared)
		}
		missing := missingCapabilities(declared, tc.result)
		got := ""
		if missing != nil {
			b, _ := jsonrpc.Marshal(missing)
			got = string(b)
		}
		if got != tc.want {
			t.Errorf("%s: missing %s, want %s", tc.name, got, tc.want)
		}
	}
}

// TestMissingCapabilityAnswered: an input_required result asking for input the
// request's clientCapabilities do not declare is answered -32021 with
// data.requiredCapabilities and one record (missing_client_capability), on
// tools/call and on prompts/get; declared, it is relayed as it came.
func TestMissingCapabilityAnswered(t *testing.T) {
	p, rec := newPipeline(t, nil, true, false)
	elicit := `{"resultType":"input_required","requestState":"s","inputRequests":{"q":{"method":"elicitation/create","params":{"message":"name?","requestedSchema":{"type":"object","properties":{}}}}}}`
	check := func(name string, r Reply) {
		t.Helper()
		var e jsonrpc.ErrorObject
		if json.Unmarshal(r.Error, &e) != nil || e.Code != -32021 || string(e.Data) != `{"requiredCapabilities":{"elicitation":{"form":{}}}}` || !strings.Contains(e.Message, "elicitation") || !r.Abandoned {
			t.Fatalf("%s: %+v", name, r)
		}
		rec.mu.Lock()
		defer rec.mu.Unlock()
		if n := len(rec.recs); n != 1 || rec.recs[0].Reason != "missing_client_capability" || !strings.Contains(e.Message, rec.recs[0].EventID) {
			t.Fatalf("%s: records %+v", name, rec.recs)
		}
		rec.recs = nil
	}
	call := func(caps string) Reply {
		return p.Handle(context.Background(), Call{Params: json.RawMessage(`{"name":"t","arguments":{}}`), ClientCapabilities: json.RawMessage(caps)}, upstreamReturning(elicit, nil))
	}
	check("tools/call", call(`{"sampling":{}}`))
	check("prompts/get", p.Response(context.Background(), Channel{Method: "prompts/get", ClientCapabilities: json.RawMessage(`{}`)}, response(t, elicit)))
	if r := call(`{"elicitation":{}}`); r.Error != nil || !strings.Contains(string(r.Original), `"requestState":"s"`) {
		t.Fatalf("declared: %+v", r)
	}
}
