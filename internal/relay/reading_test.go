package relay

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/mcpgate/mcpgate/internal/audit"
	"github.com/mcpgate/mcpgate/internal/jsonrpc"
	"github.com/mcpgate/mcpgate/vocab"
)

// refusal returns the next record with a reason from the one-reading rule.
func (r records) refusal(t *testing.T) *audit.Record {
	t.Helper()
	for {
		select {
		case rec := <-r.ch:
			switch rec.Reason {
			case vocab.ReasonDuplicateMember, vocab.ReasonCaseVariantMember, vocab.ReasonInvalidMemberName, vocab.ReasonInexactID:
				return rec
			}
		case <-time.After(5 * time.Second):
			t.Fatal("no refusal record")
		}
	}
}

// TestRelayRefusesAmbiguousClientMessages: a client message peers could read two ways
// is answered -32600 under its id, never reaches the server, and leaves a record
// naming the reason and no value (docs/decisions.md#one-reading).
func TestRelayRefusesAmbiguousClientMessages(t *testing.T) {
	tests := []struct {
		name, line, id string
		why            vocab.Reason
		method         string
	}{
		{"METHOD beside method", `{"jsonrpc":"2.0","id":7,"method":"tools/call","METHOD":"ping","params":{"name":"wipe"}}`, "7", vocab.ReasonDuplicateMember, ""},
		{"PARAMS beside params", `{"jsonrpc":"2.0","id":8,"method":"tools/call","params":{"name":"safe"},"PARAMS":{"name":"wipe"}}`, "8", vocab.ReasonDuplicateMember, "tools/call"},
		{"paramſ beside params", `{"jsonrpc":"2.0","id":9,"method":"tools/call","params":{"name":"safe"},"paramſ":{"name":"wipe"}}`, "9", vocab.ReasonDuplicateMember, "tools/call"},
		{"NAME beside name", `{"jsonrpc":"2.0","id":10,"method":"tools/call","params":{"name":"safe","NAME":"wipe"}}`, "10", vocab.ReasonDuplicateMember, "tools/call"},
		{"Arguments", `{"jsonrpc":"2.0","id":11,"method":"tools/call","params":{"name":"safe","arguments":{},"Arguments":{"force":true}}}`, "11", vocab.ReasonDuplicateMember, "tools/call"},
		{"Arguments alone", `{"jsonrpc":"2.0","id":12,"method":"tools/call","params":{"name":"safe","Arguments":{"force":true}}}`, "12", vocab.ReasonCaseVariantMember, "tools/call"},
		{"ambiguous id", `{"jsonrpc":"2.0","id":13,"ID":14,"method":"ping"}`, "null", vocab.ReasonDuplicateMember, "ping"},
		{"made-up method", `{"jsonrpc":"2.0","id":15,"method":"x-wipe-secret","params":{"a":1,"A":2}}`, "15", vocab.ReasonDuplicateMember, ""},
	}
	h := newHarness(t, 0)
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			h.client(tc.line)
			got := h.clientGets()
			if errorCode(t, got) != -32600 || !strings.Contains(got, `"id":`+tc.id+`,`) || !strings.Contains(got, string(tc.why)) {
				t.Fatalf("client got %s", got)
			}
			rec := h.recs.refusal(t)
			if rec.Reason != tc.why || rec.Method != tc.method || rec.Outcome != vocab.OutcomeRejected || rec.ActionTaken != vocab.Block {
				t.Fatalf("record %+v", rec)
			}
			if !strings.Contains(got, rec.EventID) {
				t.Fatalf("the answer does not cite the record %s: %s", rec.EventID, got)
			}
			if b, _ := json.Marshal(rec); strings.Contains(string(b), "wipe") || strings.Contains(string(b), "force") {
				t.Fatalf("record carries a value: %s", b)
			}
		})
	}
	// Nothing reached the server but the ping below.
	h.client(`{"jsonrpc":"2.0","id":2,"method":"ping"}`)
	if got := h.upstreamGets(); !strings.Contains(got, `"ping"`) || !strings.Contains(got, `"id":2`) {
		t.Fatalf("upstream got %q", got)
	}
}

// TestRelayRefusesAmbiguousServerMessages: a second result, a disguised server
// request and a disguised log notification never reach the client; the request is
// answered to the server with -32600, the response fails the client's request.
func TestRelayRefusesAmbiguousServerMessages(t *testing.T) {
	h := newHarness(t, 0)
	h.client(`{"jsonrpc":"2.0","id":"r1","method":"resources/read","params":{"uri":"file:///a"}}`)
	h.upstreamGets()
	h.up.lines <- `{"jsonrpc":"2.0","id":"r1","result":{"contents":[{"uri":"file:///a","text":"ok"}]},"RESULT":{"contents":[{"uri":"file:///a","text":"evil"}]}}`
	got := h.clientGets()
	if errorCode(t, got) != -32603 || !strings.Contains(got, `"id":"r1"`) || strings.Contains(got, "evil") {
		t.Fatalf("client got %s", got)
	}
	if rec := h.recs.refusal(t); rec.Method != "resources/read" || rec.Outcome != vocab.OutcomeUpstreamError || rec.Reason != vocab.ReasonDuplicateMember {
		t.Fatalf("record %+v", rec)
	}

	h.up.lines <- `{"jsonrpc":"2.0","id":"s1","method":"ping","Method":"sampling/createMessage","params":{"messages":[]}}`
	if got := h.upstreamGets(); errorCode(t, got) != -32600 || !strings.Contains(got, `"id":"s1"`) {
		t.Fatalf("upstream got %s", got)
	}
	if rec := h.recs.refusal(t); rec.Outcome != vocab.OutcomeUpstreamError {
		t.Fatalf("record %+v", rec)
	}

	h.up.lines <- `{"jsonrpc":"2.0","method":"notifications/progress","METHOD":"notifications/message","params":{"level":"info","data":"evil"}}`
	h.recs.refusal(t)

	// A response that is also a request: the server is answered, and so is the
	// client's request it would settle.
	h.client(`{"jsonrpc":"2.0","id":"r2","method":"resources/read","params":{"uri":"file:///b"}}`)
	h.upstreamGets()
	h.up.lines <- `{"jsonrpc":"2.0","id":"r2","result":{"contents":[{"uri":"file:///b","text":"evil"}]},"Method":"sampling/createMessage"}`
	if got := h.upstreamGets(); errorCode(t, got) != -32600 || !strings.Contains(got, `"id":"r2"`) {
		t.Fatalf("upstream got %s", got)
	}
	if got := h.clientGets(); errorCode(t, got) != -32603 || !strings.Contains(got, `"id":"r2"`) || strings.Contains(got, "evil") {
		t.Fatalf("client got %s", got)
	}
	h.recs.refusal(t)

	// The next clean message is the first thing the client sees after the response.
	clean := `{"jsonrpc":"2.0","method":"notifications/message","params":{"level":"info","data":"fine"}}`
	h.up.lines <- clean
	if got := h.clientGets(); got != clean {
		t.Fatalf("client got %s", got)
	}
}

// TestRelayRefusesAmbiguousToolResult: a tools/call whose result has a second
// reading fails; the client never sees either result.
func TestRelayRefusesAmbiguousToolResult(t *testing.T) {
	h := newHarness(t, 0)
	h.client(`{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"t","arguments":{}}}`)
	h.upstreamGets() // the gateway's own tools/list
	h.up.lines <- `{"jsonrpc":"2.0","id":` + ownID1 + `,"result":{"tools":[{"name":"t"}]}}`
	h.upstreamGets()
	h.up.lines <- `{"jsonrpc":"2.0","id":5,"result":{"content":[{"type":"text","text":"ok","Text":"evil"}]}}`
	got := h.clientGets()
	if !strings.Contains(got, `"error"`) || strings.Contains(got, "evil") || strings.Contains(got, `"ok"`) {
		t.Fatalf("client got %s", got)
	}
	h.recs.refusal(t)
}

// TestRelayRefusesCaseVariantArgument: an argument named like a property of the
// tool's inputSchema only under case folding ("Force" for "force", "ſcope" for
// "scope") is bound to that property by a Go server while a policy reading
// ctx.params.force sees nothing: the call is refused before it goes upstream.
func TestRelayRefusesCaseVariantArgument(t *testing.T) {
	h := newHarness(t, 0)
	h.client(`{"jsonrpc":"2.0","id":1,"method":"tools/list"}`)
	h.upstreamGets()
	h.up.lines <- `{"jsonrpc":"2.0","id":1,"result":{"tools":[{"name":"act","inputSchema":{"type":"object","properties":{"force":{"type":"boolean"},"scope":{"type":"string"},` +
		`"opts":{"type":"object","properties":{"recursive":{"type":"boolean"}}},"targets":{"type":"array","items":{"type":"object","properties":{"path":{"type":"string"}}}}}}}]}}`
	h.clientGets()
	<-h.recs.ch // the listing's record
	for i, args := range []string{`{"Force":true}`, `{"ſcope":"all"}`, `{"FORCE":true,"other":1}`,
		`{"opts":{"Recursive":true}}`, `{"targets":[{"path":"a"},{"Path":"/"}]}`} {
		h.client(fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"act","arguments":%s}}`, 10+i, args))
		got := h.clientGets()
		if errorCode(t, got) != -32600 || !strings.Contains(got, "case_variant_member") {
			t.Fatalf("%s: client got %s", args, got)
		}
		if rec := h.recs.refusal(t); rec.Method != "tools/call" || rec.Reason != vocab.ReasonCaseVariantMember {
			t.Fatalf("record %+v", rec)
		}
	}
	// Spelled as the schema spells it, or not named by it at all, the call goes.
	h.client(`{"jsonrpc":"2.0","id":20,"method":"tools/call","params":{"name":"act","arguments":{"force":false,"Other":1,"opts":{"recursive":true,"Depth":2},"targets":[{"path":"a"}]}}}`)
	if got := h.upstreamGets(); !strings.Contains(got, `"id":20`) {
		t.Fatalf("upstream got %s", got)
	}
}

// TestRelayCaseVariantArgumentAnywhereInSchema: a property name counts wherever the
// inputSchema mentions it (anyOf, oneOf, allOf, $defs behind a $ref, definitions,
// array-form items, prefixItems, additionalProperties, required, dependentRequired),
// since the gateway resolves no $ref and a Go server binds "Force" to force wherever
// its struct has it. A name the schema mentions nowhere stays the caller's data.
func TestRelayCaseVariantArgumentAnywhereInSchema(t *testing.T) {
	tests := []struct {
		name, schema, args string
		refused            bool
	}{
		{"anyOf", `{"type":"object","properties":{"opts":{"anyOf":[{"type":"object","properties":{"force":{"type":"boolean"}}},{"type":"null"}]}}}`, `{"opts":{"Force":true}}`, true},
		{"oneOf", `{"type":"object","properties":{"opts":{"oneOf":[{"type":"object","properties":{"force":{"type":"boolean"}}}]}}}`, `{"opts":{"FORCE":true}}`, true},
		{"allOf", `{"type":"object","allOf":[{"properties":{"force":{"type":"boolean"}}}]}`, `{"Force":true}`, true},
		{"$ref to $defs", `{"type":"object","properties":{"ref":{"$ref":"#/$defs/O"}},"$defs":{"O":{"type":"object","properties":{"force":{"type":"boolean"}}}}}`, `{"ref":{"Force":true}}`, true},
		{"definitions", `{"type":"object","properties":{"ref":{"$ref":"#/definitions/O"}},"definitions":{"O":{"properties":{"recursive":{}}}}}`, `{"ref":{"Recursive":true}}`, true},
		{"array-form items", `{"type":"object","properties":{"t":{"type":"array","items":[{"type":"object","properties":{"path":{}}}]}}}`, `{"t":[{"Path":"/"}]}`, true},
		{"prefixItems", `{"type":"object","properties":{"t":{"type":"array","prefixItems":[{"type":"string"},{"type":"object","properties":{"path":{}}}]}}}`, `{"t":["a",{"ſ":1,"Path":"/"}]}`, true},
		{"additionalProperties schema", `{"type":"object","additionalProperties":{"type":"object","properties":{"force":{}}}}`, `{"anything":{"Force":true}}`, true},
		{"required only", `{"type":"object","required":["force"]}`, `{"Force":true}`, true},
		{"dependentRequired", `{"type":"object","dependentRequired":{"scope":["force"]}}`, `{"SCOPE":1}`, true},
		{"Kelvin under anyOf", `{"anyOf":[{"properties":{"kind":{}}}]}`, `{"\u212aind":"x"}`, true},
		{"deep argument", `{"properties":{"force":{}}}`, `{"a":[[{"b":{"c":{"Force":true}}}]]}`, true},
		// Precision: names the schema does not mention, or spelled as it spells them.
		{"Note with no note", `{"type":"object","properties":{"force":{},"opts":{"anyOf":[{"properties":{"level":{}}}]}}}`, `{"force":true,"opts":{"level":1,"Note":"x"},"Note":"y"}`, false},
		{"exact under anyOf", `{"properties":{"opts":{"anyOf":[{"properties":{"force":{}}}]}}}`, `{"opts":{"force":true}}`, false},
		{"$defs key is no property", `{"properties":{"ref":{"$ref":"#/$defs/Force"}},"$defs":{"Force":{"type":"object"}}}`, `{"ref":{"force":1}}`, false},
	}
	for i, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t, 0)
			h.client(`{"jsonrpc":"2.0","id":1,"method":"tools/list"}`)
			h.upstreamGets()
			h.up.lines <- `{"jsonrpc":"2.0","id":1,"result":{"tools":[{"name":"wipe","inputSchema":` + tc.schema + `}]}}`
			h.clientGets()
			<-h.recs.ch // the listing's record
			h.client(fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"wipe","arguments":%s}}`, 10+i, tc.args))
			if !tc.refused {
				if got := h.upstreamGets(); !strings.Contains(got, `"tools/call"`) {
					t.Fatalf("upstream got %s", got)
				}
				return
			}
			got := h.clientGets()
			if errorCode(t, got) != -32600 || !strings.Contains(got, "case_variant_member") {
				t.Fatalf("client got %s", got)
			}
			if rec := h.recs.refusal(t); rec.Method != "tools/call" || rec.Reason != vocab.ReasonCaseVariantMember {
				t.Fatalf("record %+v", rec)
			}
		})
	}
}

// TestRelayCaseVariantArgumentConfiguredTag: a tool whose access tag is configured is
// never listed for the tag; the argument check lists the tools itself.
func TestRelayCaseVariantArgumentConfiguredTag(t *testing.T) {
	h := newHarness(t, 0, func(o *Options) {
		o.Access = map[string]string{"act": "write"}
		o.Pipeline.FilterOutput = false // no listing filter that would list the tools anyway
	})
	go func() {
		for range h.recs.ch {
		}
	}()
	h.client(`{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"act","arguments":{"Force":true}}}`)
	for {
		got := h.upstreamGets()
		if strings.Contains(got, `"tools/call"`) {
			t.Fatalf("the call went upstream: %s", got)
		}
		m, _ := jsonrpc.Parse([]byte(got))
		h.up.lines <- fmt.Sprintf(`{"jsonrpc":"2.0","id":%s,"result":{"tools":[{"name":"act","inputSchema":{"type":"object","properties":{"force":{"type":"boolean"}}}}]}}`, m.ID)
		if m.Method == "tools/list" {
			break
		}
	}
	if got := h.clientGets(); errorCode(t, got) != -32600 || !strings.Contains(got, "case_variant_member") {
		t.Fatalf("client got %s", got)
	}
}

// TestRelayRefusedResponseOneRecord: a refused server response leaves one record, the
// request's own: its method, the reason code, outcome upstream_error, cited by the
// -32603 the client gets (docs/decisions.md#one-reading).
func TestRelayRefusedResponseOneRecord(t *testing.T) {
	h := newHarness(t, 0)
	// drain returns the records written so far (a tools/call's goes to the sinks
	// once its answer is written: check waits for it).
	drain := func() (out []*audit.Record) {
		for {
			select {
			case rec := <-h.recs.ch:
				out = append(out, rec)
			default:
				return out
			}
		}
	}
	check := func(method, got string, why vocab.Reason) {
		t.Helper()
		var recs []*audit.Record
		select {
		case rec := <-h.recs.ch:
			recs = append(recs, rec)
		case <-time.After(5 * time.Second):
		}
		recs = append(recs, drain()...)
		if errorCode(t, got) != -32603 || strings.Contains(got, "evil") || len(recs) != 1 {
			t.Fatalf("%s: client got %s; %d records: %+v", method, got, len(recs), recs)
		}
		rec := recs[0]
		if rec.Method != method || rec.Reason != why || rec.Outcome != vocab.OutcomeUpstreamError || rec.ActionTaken != vocab.Block || !strings.Contains(got, rec.EventID) {
			t.Fatalf("%s: record %+v; client got %s", method, rec, got)
		}
	}
	h.client(`{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"t","arguments":{}}}`)
	h.upstreamGets() // the gateway's own tools/list
	h.up.lines <- `{"jsonrpc":"2.0","id":` + ownID1 + `,"result":{"tools":[{"name":"t"}]}}`
	h.upstreamGets()
	drain() // the own listing's, if any
	h.up.lines <- `{"jsonrpc":"2.0","id":5,"result":{"content":[{"type":"text","text":"ok","Text":"evil"}]}}`
	check("tools/call", h.clientGets(), vocab.ReasonDuplicateMember)

	h.client(`{"jsonrpc":"2.0","id":6,"method":"resources/read","params":{"uri":"file:///a"}}`)
	h.upstreamGets()
	h.up.lines <- `{"jsonrpc":"2.0","id":6,"result":{"contents":[{"uri":"file:///a","text":"ok"}]},"RESULT":{"contents":[{"uri":"file:///a","text":"evil"}]}}`
	check("resources/read", h.clientGets(), vocab.ReasonDuplicateMember)

	h.client(`{"jsonrpc":"2.0","id":7,"method":"prompts/list"}`)
	h.upstreamGets()
	h.up.lines <- `{"jsonrpc":"2.0","id":7,"result":{"prompts":[{"name":"p","NAME":"evil"}]}}`
	check("prompts/list", h.clientGets(), vocab.ReasonDuplicateMember)

	// A response that is also a server request: the server's request is answered
	// -32600 citing its own record; the client's request has its one record.
	h.client(`{"jsonrpc":"2.0","id":8,"method":"resources/read","params":{"uri":"file:///b"}}`)
	h.upstreamGets()
	h.up.lines <- `{"jsonrpc":"2.0","id":8,"result":{"contents":[{"uri":"file:///b","text":"evil"}]},"Method":"sampling/createMessage"}`
	toServer := h.upstreamGets()
	got := h.clientGets()
	var calls []*audit.Record
	for _, rec := range drain() {
		if rec.Method == "resources/read" {
			calls = append(calls, rec)
		} else if !strings.Contains(toServer, rec.EventID) {
			t.Fatalf("the server's answer %s does not cite %+v", toServer, rec)
		}
	}
	if errorCode(t, got) != -32603 || len(calls) != 1 || calls[0].Reason != vocab.ReasonCaseVariantMember || !strings.Contains(got, calls[0].EventID) {
		t.Fatalf("client got %s; records of the call: %+v", got, calls)
	}
}

// TestRelayActionBesideContent: an "action" member makes no data of a prompt or
// sampling message's content (only a real ElicitResult's content is data): a
// prompts/get result whose message hides its mimeType as "MimeType" beside an
// "action" fails the client's request, and never reaches it unscanned; a sampling
// request doing the same is refused to its server.
func TestRelayActionBesideContent(t *testing.T) {
	h := newHarness(t, 0)
	h.client(`{"jsonrpc":"2.0","id":"p1","method":"prompts/get","params":{"name":"p"}}`)
	h.upstreamGets()
	h.up.lines <- `{"jsonrpc":"2.0","id":"p1","result":{"messages":[{"role":"user","action":"accept","content":{"type":"resource","resource":{"uri":"file:///a","MimeType":"text/plain","blob":"G101MjtjO2NtMGdMWEptSUg0PQc="}}}]}}`
	if got := h.clientGets(); errorCode(t, got) != -32603 || !strings.Contains(got, `"id":"p1"`) || strings.Contains(got, "G101") {
		t.Fatalf("client got %s", got)
	}
	if rec := h.recs.refusal(t); rec.Method != "prompts/get" || rec.Reason != vocab.ReasonCaseVariantMember || rec.Outcome != vocab.OutcomeUpstreamError {
		t.Fatalf("record %+v", rec)
	}
	h.up.lines <- `{"jsonrpc":"2.0","id":"s1","method":"sampling/createMessage","params":{"messages":[{"role":"user","action":"accept","content":{"type":"text","Text":"EXFIL"}}],"maxTokens":9}}`
	if got := h.upstreamGets(); errorCode(t, got) != -32600 || !strings.Contains(got, `"id":"s1"`) {
		t.Fatalf("upstream got %s", got)
	}
	h.recs.refusal(t)
	// A real ElicitResult answering the server keeps its user's own field names.
	h.up.lines <- `{"jsonrpc":"2.0","id":"e1","method":"elicitation/create","params":{"message":"Name?","requestedSchema":{"type":"object","properties":{"Name":{"type":"string"}}}}}`
	h.clientGets()
	h.client(`{"jsonrpc":"2.0","id":"e1","result":{"action":"accept","content":{"Name":"Bob"}}}`)
	if got := h.upstreamGets(); !strings.Contains(got, `"Name":"Bob"`) {
		t.Fatalf("upstream got %s", got)
	}
}
