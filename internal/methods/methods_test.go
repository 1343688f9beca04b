package methods

import (
	"testing"

	"github.com/mcpgate/mcpgate/ctxapi"
)

// TestTableConsistent: every row is whole: a listing names its array and entry key, a
// Fields row names its members, a row that withholds or invalidates names a listing
// row, a phase is one the gate knows and sits on a direction that has it, and no
// method is listed twice.
func TestTableConsistent(t *testing.T) {
	seen := map[string]bool{}
	phases := map[ctxapi.Phase]bool{ctxapi.PhasePre: true, ctxapi.PhasePost: true, ctxapi.PhaseList: true, ctxapi.PhaseResource: true,
		ctxapi.PhasePrompt: true, ctxapi.PhaseServerRequest: true, ctxapi.PhaseInstructions: true, ctxapi.PhaseRoots: true}
	for i := range table {
		m := &table[i]
		if seen[m.Name] {
			t.Errorf("%s: listed twice", m.Name)
		}
		seen[m.Name] = true
		if m.Revisions == 0 || m.Direction == 0 {
			t.Errorf("%s: no revision or direction", m.Name)
		}
		switch m.Shape {
		case Listing:
			if m.List == nil || m.List.Key == "" || m.List.Entry == "" || m.List.Capability == "" || m.List.Sep == "" {
				t.Errorf("%s: a listing without its List", m.Name)
			}
		case Fields:
			if len(m.Text) == 0 {
				t.Errorf("%s: Fields without Text", m.Name)
			}
		}
		if m.Phase != "" && !phases[m.Phase] {
			t.Errorf("%s: unknown phase %q", m.Name, m.Phase)
		}
		if m.Phase == ctxapi.PhaseRoots && (m.Direction != ServerRequest || m.Shape != NoText) {
			t.Errorf("%s: the roots phase runs on the client's answer to a server request whose request carries no text", m.Name)
		}
		if m.Phase == ctxapi.PhasePre && (m.Direction != ClientRequest || m.Shape != NoText || m.RequestPhase() != ctxapi.PhasePre) {
			t.Errorf("%s: the pre phase runs on a client request's own params, of a request whose response carries no text", m.Name)
		}
		if m.Phase == ctxapi.PhaseServerRequest && m.Direction != ServerRequest {
			t.Errorf("%s: server_request phase on a %v", m.Name, m.Direction)
		}
		if (m.Phase == ctxapi.PhaseResource || m.Phase == ctxapi.PhasePrompt) && m.PhaseKey == "" {
			t.Errorf("%s: a response phase without PhaseKey", m.Name)
		}
		if (m.Block == Refuse) != (m.Direction == ServerRequest && m.Shape != NoText) {
			t.Errorf("%s: Refuse is for server requests, and every filtered one", m.Name)
		}
		for _, ref := range []string{m.Withholds, m.Invalidates} {
			if ref != "" && (Of(ref) == nil || Of(ref).Shape != Listing) {
				t.Errorf("%s: %q is not a listing row", m.Name, ref)
			}
		}
		if m.Withholds != "" && m.Asks == "" {
			t.Errorf("%s: withholds without Asks", m.Name)
		}
		if m.Route != Unrouted && m.Direction != ClientRequest {
			t.Errorf("%s: a route on a %v", m.Name, m.Direction)
		}
	}
	for _, name := range []string{"tools/call", "tools/list", "resources/read", "prompts/get", "tasks/get", "notifications/message"} {
		if In(name, Rev20251125) == nil {
			t.Errorf("%s missing from 2025-11-25", name)
		}
	}
	if In("initialize", Rev20260728) != nil || In("server/discover", Rev20251125) != nil {
		t.Error("initialize is 2025-11-25 only, server/discover 2026-07-28 only")
	}
}

// TestTableFactsConsistent: only a 2026-07-28 client request can be input_required,
// every server request (and only one) names the capability it needs, a Names path
// starts at a member of a result or a notification's params, and each relay effect
// sits on a message of the direction the relay sees it in.
func TestTableFactsConsistent(t *testing.T) {
	for i := range table {
		m := &table[i]
		if m.InputRequired && (m.Direction != ClientRequest || m.Revisions&Rev20260728 == 0) {
			t.Errorf("%s: only a 2026-07-28 client request's result can be input_required", m.Name)
		}
		if (m.Need != nil) != (m.Direction == ServerRequest) || m.Need != nil && m.Need.Capability == "" {
			t.Errorf("%s: every server request, and only one, names the capability it needs", m.Name)
		}
		for _, n := range m.Names {
			if len(n.Path) == 0 || n.Path[0] == "*" || n.Path[len(n.Path)-1] == "*" && n.Kind == NameString ||
				m.Direction != ClientRequest && m.Direction != ServerNotification {
				t.Errorf("%s: Names %v: a member path from a result or a notification's params", m.Name, n.Path)
			}
		}
		// notifications/cancelled goes both ways; the relay settles what the client cancels
		if m.Does(Calls|NotesClientInfo) && m.Direction != ClientRequest || m.Does(ForgetsRoots) && m.Direction != ClientNotification ||
			m.Does(Cancels) && m.Direction != ServerNotification && m.Direction != ClientNotification ||
			m.Does(ObservesTools|ObservesPrompts|NotesVersion) && m.Direction != ClientRequest {
			t.Errorf("%s: an effect on a message of the wrong direction", m.Name)
		}
	}
}

func TestRevisionOf(t *testing.T) {
	for v, want := range map[string]Revision{"2024-11-05": Rev20251125, "2025-06-18": Rev20251125, "2025-11-25": Rev20251125,
		"2026-07-28": Rev20260728, "": Rev20251125} {
		if got := RevisionOf(v); got != want {
			t.Errorf("RevisionOf(%q) = %v, want %v", v, got, want)
		}
	}
}

// TestConform: what a 2026-07-28 result must carry is added, what is valid is kept,
// and a 2025-11-25 result is left alone.
func TestConform(t *testing.T) {
	for _, c := range []struct {
		method, version, in string
		private             bool
		want                string
	}{
		{"tools/call", "2026-07-28", `{"content":[]}`, false, `{"content":[],"resultType":"complete"}`},
		{"tools/call", "2025-11-25", `{"content":[]}`, false, `{"content":[]}`},
		{"tools/call", "2026-07-28", `{"content":[],"resultType":"complete"}`, false, `{"content":[],"resultType":"complete"}`},
		{"resources/read", "2026-07-28", `{"contents":[]}`, false, `{"cacheScope":"private","contents":[],"resultType":"complete","ttlMs":0}`},
		{"tools/list", "2026-07-28", `{"tools":[],"resultType":"complete","ttlMs":5000,"cacheScope":"public"}`, false, `{"tools":[],"resultType":"complete","ttlMs":5000,"cacheScope":"public"}`},
		{"tools/list", "2026-07-28", `{"tools":[],"resultType":"complete","ttlMs":5000,"cacheScope":"public"}`, true, `{"cacheScope":"private","resultType":"complete","tools":[],"ttlMs":5000}`},
		{"tools/list", "2026-07-28", `{"tools":[],"ttlMs":-1,"cacheScope":"shared"}`, false, `{"cacheScope":"private","resultType":"complete","tools":[],"ttlMs":0}`},
		{"tools/call", "2026-07-28", `{"resultType":"input_required","inputRequests":{}}`, false, `{"resultType":"input_required","inputRequests":{}}`},
		{"tools/call", "2026-07-28", `[1]`, false, `[1]`},
		// values are read decoded, as every peer reads them
		{"tools/list", "2026-07-28", `{"tools":[],"resultType":"\u0063omplete","ttlMs":86400000,"cacheScope":"public"}`, true, `{"cacheScope":"private","resultType":"\u0063omplete","tools":[],"ttlMs":86400000}`},
		{"tools/list", "2026-07-28", `{"tools":[],"resultType":"complete","ttlMs":5000,"cacheScope":"\u0070ublic"}`, true, `{"cacheScope":"private","resultType":"complete","tools":[],"ttlMs":5000}`},
		{"tools/list", "2026-07-28", `{"tools":[],"resultType":"complete","ttlMs":5000,"cacheScope":"\u0070ublic"}`, false, `{"tools":[],"resultType":"complete","ttlMs":5000,"cacheScope":"\u0070ublic"}`},
		{"tools/list", "2026-07-28", `{"tools":[],"resultType":"complete","ttlMs":-5,"cacheScope":"\u0070rivate"}`, false, `{"cacheScope":"\u0070rivate","resultType":"complete","tools":[],"ttlMs":0}`},
	} {
		if got := string(Conform(Of(c.method), c.version, []byte(c.in), c.private)); got != c.want {
			t.Errorf("%s %s %s private=%v: got %s, want %s", c.method, c.version, c.in, c.private, got, c.want)
		}
	}
}

// TestEnvelopeOf reads the per-request _meta by its exact member names.
func TestEnvelopeOf(t *testing.T) {
	e, ok := EnvelopeOf([]byte(`{"name":"x","_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientInfo":{"name":"c","version":"1"}}}`))
	if !ok || e.ProtocolVersion != "2026-07-28" || string(e.ClientInfo) != `{"name":"c","version":"1"}` {
		t.Errorf("got %+v %v", e, ok)
	}
	// names read decoded, as every peer reads them
	for _, p := range []string{
		`{"_meta":{"io.modelcontextprotocol/protocol\u0056ersion":"2026-07-28"}}`,
		`{"_meta":{"io.modelcontextprotocol\/protocolVersion":"2026-07-28"}}`,
		`{"_m\u0065ta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"}}`,
	} {
		if e, ok := EnvelopeOf([]byte(p)); !ok || e.ProtocolVersion != "2026-07-28" {
			t.Errorf("%s: got %+v %v", p, e, ok)
		}
	}
	for _, p := range []string{`{}`, `{"_meta":{"io.modelcontextprotocol/protocolversion":"2026-07-28"}}`, `{"_meta":{"io.modelcontextprotocol/protocolVersion":5}}`, `null`, `{"x":"io.modelcontextprotocol/protocolVersion"}`} {
		if _, ok := EnvelopeOf([]byte(p)); ok {
			t.Errorf("%s read as 2026-07-28", p)
		}
	}
}

// TestKnown: a method name is kept only when the table has it (a record or log line
// never holds a name the sender made up).
func TestKnown(t *testing.T) {
	for _, c := range []struct{ name, want string }{
		{"tools/call", "tools/call"}, {"elicitation/create", "elicitation/create"},
		{"sk-live-secret/x", ""}, {"", ""}, {"TOOLS/CALL", ""},
	} {
		if got := Known(c.name); got != c.want {
			t.Errorf("Known(%q) = %q, want %q", c.name, got, c.want)
		}
	}
}

// TestRequired: a server request needs the capability and member its params ask for,
// read decoded, as the client reads them.
func TestRequired(t *testing.T) {
	for _, c := range []struct{ method, params, capability, member string }{
		{ElicitationCreate, `{"message":"m"}`, "elicitation", "form"},
		{ElicitationCreate, `{"mode":"form"}`, "elicitation", "form"},
		{ElicitationCreate, `{"mode":"url","url":"https://x"}`, "elicitation", "url"},
		{ElicitationCreate, `{"mode":"\u0075rl"}`, "elicitation", "url"},
		{ElicitationCreate, `{"Mode":"url"}`, "elicitation", "form"},
		{SamplingCreateMessage, `{"messages":[]}`, "sampling", ""},
		{SamplingCreateMessage, `{"messages":[],"tools":[]}`, "sampling", "tools"},
		{SamplingCreateMessage, `{"toolChoice":null}`, "sampling", "tools"},
		{RootsList, `{}`, "roots", ""},
		{RootsList, `not json`, "roots", ""},
		{ToolsCall, `{}`, "", ""},
		{"made/up", `{}`, "", ""},
	} {
		if capability, member := Of(c.method).Required([]byte(c.params)); capability != c.capability || member != c.member {
			t.Errorf("%s %s: got %q %q, want %q %q", c.method, c.params, capability, member, c.capability, c.member)
		}
	}
}
