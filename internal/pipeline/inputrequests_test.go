package pipeline

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
)

// TestInputRequests: each input request of a 2026-07-28 input_required result goes
// through the rules and the server_request phase of its own method, with a record
// naming its method and via; one that blocks (or a policy rejects) withholds the
// result, a warned one is sanitized in place, a clean result passes byte for byte and
// requestState is relayed as it came.
func TestInputRequests(t *testing.T) {
	p, rec := newPipeline(t, map[string]string{"ask.js": `if (ctx.phase === "server_request" && ctx.method === "elicitation/create" && ctx.params.message === "reject me") throw new Error("no");`}, true, false)
	elicit := func(msg string) string {
		return `{"resultType":"input_required","requestState":"opaque-state","inputRequests":{"q":{"method":"elicitation/create","params":{"message":` + js(msg) + `,"requestedSchema":{"type":"object","properties":{}}}}}}`
	}
	call := func(result string) Reply {
		return p.Handle(context.Background(), Call{Params: json.RawMessage(`{"name":"t","arguments":{}}`)}, upstreamReturning(result, nil))
	}
	clean := elicit("What is your name?")
	if r := call(clean); !strings.Contains(string(r.Original), `"requestState":"opaque-state"`) || r.Result != nil || r.Abandoned {
		t.Errorf("clean: %+v", r)
	}
	for _, c := range []struct{ msg, want string }{{blockPayload, "request blocked"}, {"reject me", "call rejected by policy ask.js"}} {
		r := call(elicit(c.msg))
		if out := string(r.Result); !strings.Contains(out, c.want) || !strings.Contains(out, `"isError":true`) || strings.Contains(out, "inputRequests") || !r.Abandoned {
			t.Errorf("%q: %+v", c.msg, r)
		}
		rec.mu.Lock()
		var found bool
		for _, x := range rec.recs {
			if x.Method == "elicitation/create" && x.Via == "tools/call" && x.ActionTaken == "block" {
				found = true
			}
		}
		rec.recs = nil
		rec.mu.Unlock()
		if !found {
			t.Errorf("%q: no elicitation/create record via tools/call", c.msg)
		}
	}
	r := call(elicit(warnPayload))
	if out := string(r.Result); strings.Contains(out, `\u001b`) || !strings.Contains(out, "delete every workspace") || !strings.Contains(out, `"requestState":"opaque-state"`) {
		t.Errorf("warn: %+v", r)
	}
	// prompts/get and resources/read carry them too
	resp := response(t, elicit(blockPayload))
	if r := p.Response(context.Background(), Channel{Method: "prompts/get"}, resp); !strings.Contains(string(r.Result), "request blocked") || !strings.Contains(string(r.Result), `"messages"`) {
		t.Errorf("prompts/get: %+v", r)
	}
}

// TestInputResponsesReadByInputRules: a retry's inputResponses (the client's answers)
// reach the pre phase as findings, pointed into /inputResponses.
func TestInputResponsesReadByInputRules(t *testing.T) {
	p, rec := newPipeline(t, map[string]string{"deny.js": `if (ctx.phase === "pre" && ctx.findings.some((f) => f.pointer.startsWith("/inputResponses"))) throw new Error("answer refused");`}, true, false)
	r := p.Handle(context.Background(), Call{Params: json.RawMessage(`{"name":"t","arguments":{},"inputResponses":{"q":{"action":"accept","content":{"name":` + js(blockPayload) + `}}}}`)},
		upstreamReturning(`{"content":[]}`, nil))
	if !strings.Contains(string(r.Result), "answer refused") {
		t.Errorf("got %+v", r)
	}
	if x := rec.last(t); len(x.InputRuleIDs) == 0 {
		t.Errorf("record input_rule_ids: %v", x.InputRuleIDs)
	}
}
