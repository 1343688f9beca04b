package methods

import "encoding/json"

// Need is the client capability a server request needs (MCP 2026-07-28 "Multi
// Round-Trip Requests": a server MUST NOT send an input request the request's
// clientCapabilities do not cover): a top-level ClientCapabilities member and the
// member under it.
type Need struct {
	Capability string // "elicitation", "sampling", "roots"
	Member     string // the member needed unless a When applies ("form"); "" for the capability alone
	When       []When // params that need another member
}

// When is a params member that makes a server request need Member: when it holds
// the decoded string Value, or, with Value "", when it is present at all.
type When struct {
	Param, Value, Member string
}

// Required is the capability and member a server request of m with params needs
// (Need); "", "" for a method that needs none. params are read by their exact member
// names and decoded values, as the client reads them ("\u0075rl" is "url").
func (m *Method) Required(params json.RawMessage) (capability, member string) {
	if m == nil || m.Need == nil {
		return "", ""
	}
	var p map[string]json.RawMessage
	_ = json.Unmarshal(params, &p)
	for _, w := range m.Need.When {
		v, ok := p[w.Param]
		if ok && (w.Value == "" || decodedString(v) == w.Value) {
			return m.Need.Capability, w.Member
		}
	}
	return m.Need.Capability, m.Need.Member
}

// NameKind is what a member that carries a server's name holds.
type NameKind uint8

const (
	// NameString: the member is a string, the name itself (a URI, a task id).
	NameString NameKind = iota
	// NameContent: the member is a content block; a resource_link's uri or an embedded
	// resource's resource.uri is the name.
	NameContent
)

// Name is a member that carries a server's name of a thing, which several servers
// namespace as "<server>+<name>" (internal/multi). Path is its JSON Pointer tokens from
// the result (responses) or the params (notifications); "*" stands for every item of
// an array.
type Name struct {
	Path []string
	Kind NameKind
}

// Effect is what the relay does with a method's message beside relaying it, as a set
// of bits.
type Effect uint16

const (
	// Calls: a client request the relay carries through the tools/call pipeline
	// (Pipeline.Handle) instead of relaying it.
	Calls Effect = 1 << iota
	// NotesClientInfo: the request's clientInfo is noted, for records.
	NotesClientInfo
	// NotesVersion: the result's negotiated protocolVersion is noted.
	NotesVersion
	// ObservesTools: the result's tools are observed (their access annotations and
	// definitions).
	ObservesTools
	// ObservesPrompts: the result's prompts are observed (their arguments).
	ObservesPrompts
	// Cancels: the client's notification settles the pending request it names.
	Cancels
	// ForgetsRoots: the client's roots are stale until a server asks again.
	ForgetsRoots
)

// Does reports whether the relay does e for a message of m (nil: an unknown method,
// which gets no effect).
func (m *Method) Does(e Effect) bool { return m != nil && m.Effects&e != 0 }
