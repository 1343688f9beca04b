package jsonrpc

import (
	"bytes"
	"encoding/json"
	"hash/maphash"
	"sync"
	"unicode"
	"unicode/utf16"
	"unicode/utf8"

	"github.com/mcpgate/mcpgate/internal/jsonscan"
	"github.com/mcpgate/mcpgate/vocab"
)

// AmbiguousError is Parse's error for a message that peers could read differently
// (docs/decisions.md#one-reading): two members of one object equal, or equal under
// Unicode simple case folding; a member of a protocol object named like a protocol
// member only under folding ("METHOD", "Arguments", "paramſ"); or a member name that
// is not valid Unicode. Such a message is never forwarded. Reason is the record's
// code; the error never carries a member name or a value.
type AmbiguousError struct {
	Reason vocab.Reason
	// Kind, ID and Method are the message as read with exact member names (the last
	// of equal ones), for the refusal: a request is answered with methods.CodeInvalidRequest
	// under ID (nil when the id itself is ambiguous), a response fails the request it
	// answers. Method is "" when the method is ambiguous.
	Kind   Kind
	ID     []byte
	Method string
	// Answers is set when the message also carries a result or an error: read as a
	// response, it would settle the request under ID.
	Answers bool
}

// Refusal is the error message a refused message is answered with, citing the
// record (eventID, when there is one).
func (e *AmbiguousError) Refusal(eventID string) string {
	t := "mcpgate: message refused: it has more than one reading (" + string(e.Reason) + "): " +
		"send each member once, spelled exactly as JSON-RPC and MCP spell it"
	if e.Reason == vocab.ReasonInexactID {
		t = "mcpgate: message refused: it has more than one reading (" + string(e.Reason) + "): " +
			"an id must be an integer from -9007199254740991 to 9007199254740991 or a string of Unicode text (valid UTF-8, no lone surrogate), which every peer reads alike"
	}
	if eventID != "" {
		t += " (audit log entry " + eventID + ")"
	}
	return t
}

func (e *AmbiguousError) Error() string {
	switch e.Reason {
	case vocab.ReasonDuplicateMember:
		return "jsonrpc: an object holds two members whose names are equal, or equal under Unicode case folding"
	case vocab.ReasonCaseVariantMember:
		return "jsonrpc: a member name differs from a JSON-RPC or MCP member name only by case"
	case vocab.ReasonInexactID:
		return "jsonrpc: an id is neither an integer within ±(2^53−1) nor a string of Unicode text, so some peers read it as another id"
	}
	return "jsonrpc: a member name is not valid Unicode (invalid UTF-8 or a lone surrogate)"
}

// checkReading walks a syntactically valid JSON document and returns the reason it
// has more than one reading, or "". Every object is checked for member names equal
// under simple case folding (the matching encoding/json does: ASCII letters and the
// SimpleFold orbits, so "ſ" U+017F is "s" and "K" U+212A is "k"). Objects on the
// protocol's own levels (the envelope, params, result, error, content items, _meta
// and the rest of MCP's structures, content blocks wherever they stand, not the data
// they carry: arguments, structuredContent, schemas, data, metadata, an
// ElicitResult's content, that is the content of a message's result or of an
// inputResponses entry holding action, content and _meta alone) are also checked for
// members named like an MCP member only under folding.
func checkReading(b []byte) vocab.Reason {
	r := readers.Get().(*reader)
	r.b, r.why = b, ""
	i := jsonscan.Space(b, 0)
	if i < len(b) {
		r.value(i, levelEnvelope, 0)
	}
	why := r.why
	r.b, r.fold, r.keys, r.name = nil, r.fold[:0], r.keys[:0], r.name[:0]
	if cap(r.fold) <= 64<<10 && cap(r.keys) <= 4<<10 { // keep the scratch of ordinary messages only
		readers.Put(r)
	}
	return why
}

// readers holds the scratch of checkReading, so a message costs no allocation.
var readers = sync.Pool{New: func() any {
	return &reader{fold: make([]byte, 0, 512), keys: make([]keyRef, 0, 64)}
}}

// level says which checks an object gets.
type level uint8

const (
	levelData     level = iota // duplicates only
	levelProtocol              // duplicates and case variants of MCP member names
	levelMeta                  // _meta: its own names are checked as protocol names, its values are data
	// Protocol objects that say where an ElicitResult may stand (the only place a
	// "content" object is data): a message's result (a client's answer to
	// elicitation/create), and an entry of a request's params.inputResponses (a
	// 2026-07-28 answer to an input request).
	levelEnvelope       // the message (or a batch's element)
	levelParams         // its params
	levelInputResponses // params.inputResponses: free keys, each value an answer
	levelAnswer         // the message's result, or an entry of params.inputResponses
	// inputRequests of an input_required result: free keys, each value a request.
	levelInputRequests
)

// namesChecked reports whether the member names of an object of level lv are
// checked as MCP names (a protocol object's; not data's, nor the free keys of
// inputRequests and inputResponses).
func (lv level) namesChecked() bool {
	return lv != levelData && lv != levelInputRequests && lv != levelInputResponses
}

// within is the level of the value of member name of an object of level lv.
func (lv level) within(name string) level {
	switch lv {
	case levelData, levelMeta:
		return levelData
	case levelInputResponses:
		return levelAnswer // whatever the key: an answer, never data by its key's name
	case levelInputRequests:
		return levelProtocol // whatever the key: a request {method, params}
	}
	child := childLevel(name)
	switch {
	case child != levelProtocol:
		return child
	case lv == levelEnvelope && name == "result":
		return levelAnswer
	case lv == levelEnvelope && name == "params":
		return levelParams
	case lv == levelParams && name == "inputResponses":
		return levelInputResponses
	case name == "inputRequests":
		return levelInputRequests
	}
	return levelProtocol
}

// maxDepth bounds the walk (Parse's encoding/json already refuses deeper documents).
const maxDepth = 10000

type reader struct {
	b    []byte
	why  vocab.Reason
	fold []byte   // folded names of the open objects, back to back
	keys []keyRef // their spans in fold
	name []byte   // scratch: the decoded name
}

type keyRef struct{ off, end int }

// value returns the offset after the value at b[i].
func (r *reader) value(i int, lv level, depth int) int {
	switch r.b[i] {
	case '{':
		return r.object(i, lv, depth+1)
	case '[':
		return r.array(i, lv, depth+1)
	case '"':
		end, _ := jsonscan.String(r.b, i)
		return end
	}
	j := i
	for j < len(r.b) {
		switch r.b[j] {
		case ',', '}', ']', ' ', '\t', '\n', '\r':
			return j
		}
		j++
	}
	return j
}

func (r *reader) array(i int, lv level, depth int) int {
	if depth > maxDepth {
		r.why = vocab.ReasonDuplicateMember // unreachable after Parse's decode
		return len(r.b)
	}
	i = jsonscan.Space(r.b, i+1)
	if r.b[i] == ']' {
		return i + 1
	}
	for r.why == "" {
		i = jsonscan.Space(r.b, r.value(i, lv, depth))
		if r.why != "" {
			return len(r.b)
		}
		if r.b[i] == ']' {
			return i + 1
		}
		i = jsonscan.Space(r.b, i+1) // ','
	}
	return len(r.b)
}

// smallObject is how many members an object may have before its names' hashes go
// into a map (no string kept per name: a 1 MiB object of short names is 100,000).
const smallObject = 16

// nameSeed keys the hashes of member names; random per process, so a message
// cannot be built to collide (a collision costs a comparison, never a verdict).
var nameSeed = maphash.MakeSeed()

func (r *reader) object(i int, lv level, depth int) int {
	if depth > maxDepth {
		r.why = vocab.ReasonDuplicateMember
		return len(r.b)
	}
	end := r.members(i, lv, depth)
	return end
}

// members reads the members of the object at b[i] == '{' and returns the offset
// after it; the names it folded are dropped when it returns.
func (r *reader) members(i int, lv level, depth int) int {
	base, foldBase := len(r.keys), len(r.fold)
	i = r.memberList(i, lv, depth, base)
	r.keys, r.fold = r.keys[:base], r.fold[:foldBase]
	return i
}

func (r *reader) memberList(i int, lv level, depth, base int) int {
	var seen map[uint64]bool // the maphash of each folded name, past smallObject names
	start := i
	i = jsonscan.Space(r.b, i+1)
	if r.b[i] == '}' {
		return i + 1
	}
	for r.why == "" {
		end, escaped := jsonscan.String(r.b, i)
		name, ok := r.decodeName(r.b[i+1:end-1], escaped)
		if !ok {
			r.why = vocab.ReasonInvalidMemberName
			return len(r.b)
		}
		off := len(r.fold)
		r.fold = appendFolded(r.fold, name)
		folded := r.fold[off:]
		if seen == nil && len(r.keys)-base == smallObject {
			seen = make(map[uint64]bool, 2*smallObject)
			for _, k := range r.keys[base:] {
				seen[maphash.Bytes(nameSeed, r.fold[k.off:k.end])] = true
			}
		}
		var h uint64
		if seen != nil {
			h = maphash.Bytes(nameSeed, folded)
		}
		if seen == nil || seen[h] {
			// A small object's names, or a hash seen before (a duplicate, or in
			// practice never a collision): compare the names themselves.
			for _, k := range r.keys[base:] {
				if string(r.fold[k.off:k.end]) == string(folded) {
					r.why = vocab.ReasonDuplicateMember
					return len(r.b)
				}
			}
		}
		if seen != nil {
			seen[h] = true
		}
		r.keys = append(r.keys, keyRef{off, len(r.fold)})
		if lv.namesChecked() && !protocolNames[string(name)] && foldedProtocolNames[string(folded)] {
			r.why = vocab.ReasonCaseVariantMember
			return len(r.b)
		}
		child := lv.within(string(name))
		i = jsonscan.Space(r.b, end)
		i = jsonscan.Space(r.b, i+1) // ':'
		if lv == levelAnswer && r.b[i] == '{' && string(name) == "content" && elicitResult(r.b, start) {
			child = levelData // an ElicitResult's content: the user's own fields
		}
		i = jsonscan.Space(r.b, r.value(i, child, depth))
		if r.why != "" {
			return len(r.b)
		}
		if r.b[i] == '}' {
			return i + 1
		}
		i = jsonscan.Space(r.b, i+1) // ','
	}
	return len(r.b)
}

// elicitResult reports whether the object at b[i] == '{', standing where an answer
// stands (a message's result, an entry of params.inputResponses), is an ElicitResult:
// a member spelled exactly "action", and none but "action", "content" and "_meta".
// Its "content" is the one content object that is data (the user's own fields);
// every other content object or array is content blocks, whatever stands beside it
// (a prompt or sampling message with an "action" member included).
func elicitResult(b []byte, i int) bool {
	var r reader
	action := false
	for i = skipSpace(b, i+1); i < len(b) && b[i] == '"'; {
		end, escaped := jsonscan.String(b, i)
		if end < 0 {
			return false
		}
		n, ok := r.decodeName(b[i+1:end-1], escaped)
		switch {
		case !ok:
			return false
		case string(n) == "action":
			action = true
		case string(n) != "content" && string(n) != "_meta":
			return false
		}
		i = skipSpace(b, end)
		if i >= len(b) || b[i] != ':' {
			return false
		}
		if i = skipValue(b, skipSpace(b, i+1)); i < 0 {
			return false
		}
		if i = skipSpace(b, i); i < len(b) && b[i] == '}' {
			return action
		}
		if i >= len(b) || b[i] != ',' {
			return false
		}
		i = skipSpace(b, i+1)
	}
	return false
}

// childLevel is the level of the value of a protocol object's member name.
func childLevel(name string) level {
	switch name {
	case "_meta":
		return levelMeta
	case "arguments", "structuredContent", "inputSchema", "outputSchema", "requestedSchema",
		"data", "metadata", "experimental", "properties":
		// Data the protocol carries but does not define.
		return levelData
	}
	return levelProtocol
}

// decodeName returns a member name as encoding/json decodes it, in r.name when it
// has escapes; ok is false for invalid UTF-8 or a lone surrogate (which
// encoding/json and JavaScript would read differently).
func (r *reader) decodeName(raw []byte, escaped bool) ([]byte, bool) {
	if !escaped {
		for _, c := range raw {
			if c >= utf8.RuneSelf {
				return raw, utf8.Valid(raw)
			}
		}
		return raw, true
	}
	out := r.name[:0]
	for i := 0; i < len(raw); {
		c := raw[i]
		if c != '\\' {
			if c < utf8.RuneSelf {
				out = append(out, c)
				i++
				continue
			}
			ru, n := utf8.DecodeRune(raw[i:])
			if ru == utf8.RuneError && n == 1 {
				return nil, false
			}
			out = append(out, raw[i:i+n]...)
			i += n
			continue
		}
		if e, ok := jsonscan.Escaped(raw[i+1]); ok {
			out = append(out, e)
			i += 2
			continue
		}
		// \uXXXX, possibly a surrogate pair.
		ru := hex4(raw[i+2 : i+6])
		i += 6
		if utf16.IsSurrogate(ru) {
			if ru >= 0xDC00 || i+6 > len(raw) || raw[i] != '\\' || raw[i+1] != 'u' {
				return nil, false
			}
			lo := hex4(raw[i+2 : i+6])
			ru = utf16.DecodeRune(ru, lo)
			if ru == unicode.ReplacementChar {
				return nil, false
			}
			i += 6
		}
		out = utf8.AppendRune(out, ru)
	}
	r.name = out
	return out, true
}

func hex4(b []byte) rune {
	var v rune
	for _, c := range b {
		v <<= 4
		switch {
		case c >= '0' && c <= '9':
			v |= rune(c - '0')
		case c >= 'a' && c <= 'f':
			v |= rune(c - 'a' + 10)
		case c >= 'A' && c <= 'F':
			v |= rune(c - 'A' + 10)
		}
	}
	return v
}

// appendFolded appends name folded as encoding/json folds names to match struct
// fields (its foldName): ASCII letters to upper case, every other rune to the
// smallest rune of its unicode.SimpleFold orbit. Two names fold alike exactly when
// bytes.EqualFold says they are equal.
func appendFolded(out, name []byte) []byte {
	for i := 0; i < len(name); {
		c := name[i]
		if c < utf8.RuneSelf {
			if 'a' <= c && c <= 'z' {
				c -= 'a' - 'A'
			}
			out = append(out, c)
			i++
			continue
		}
		ru, n := utf8.DecodeRune(name[i:])
		out = utf8.AppendRune(out, foldRune(ru))
		i += n
	}
	return out
}

// foldRune returns the smallest rune of r's simple case folding orbit.
func foldRune(r rune) rune {
	for {
		r2 := unicode.SimpleFold(r)
		if r2 <= r {
			return r2
		}
		r = r2
	}
}

// protocolNames are the member names of the JSON-RPC envelope and of MCP's
// structures (2025-11-25 and 2026-07-28, as the Go SDKs spell them); a member of a
// protocol object that folds to one of them must be spelled exactly.
var protocolNames = map[string]bool{}

// foldedProtocolNames holds protocolNames folded.
var foldedProtocolNames = map[string]bool{}

func init() {
	for _, n := range protocolNameList {
		protocolNames[n] = true
		foldedProtocolNames[string(appendFolded(nil, []byte(n)))] = true
	}
}

var protocolNameList = []string{
	// JSON-RPC 2.0 envelope and error object.
	"jsonrpc", "id", "method", "params", "result", "error", "code", "message", "data",
	// MCP.
	"_meta", "action", "annotations", "argument", "arguments", "audience", "blob",
	"cacheScope", "capabilities", "clientInfo", "completion", "completions", "content",
	"contents", "context", "costPriority", "createdAt", "cursor", "description",
	"destructiveHint", "elicitation", "elicitationId", "execution", "experimental",
	"extensions", "form", "hasMore", "hints", "icons", "idempotentHint", "includeContext",
	"inputRequests", "inputResponses", "inputSchema", "instructions", "intelligencePriority",
	"isError", "lastModified", "lastUpdatedAt", "level", "listChanged", "logger", "logging",
	"maxTokens", "messages", "metadata", "mimeType", "mode", "model", "modelPreferences",
	"name", "nextCursor", "openWorldHint", "outputSchema", "pollInterval", "priority",
	"progress", "progressToken", "prompts", "protocolVersion", "readOnlyHint", "reason",
	"ref", "requestId", "requestState", "requestedSchema", "required", "resource",
	"resourceTemplates", "resources", "resultType", "role", "roots", "sampling",
	"serverInfo", "size", "sizes", "speedPriority", "src", "status", "statusMessage",
	"stopReason", "stopSequences", "structuredContent", "subscribe", "supportedVersions",
	"systemPrompt", "task", "taskId", "taskSupport", "tasks", "temperature", "text",
	"theme", "title", "toolChoice", "toolUseId", "tools", "total", "ttl", "type", "uri",
	"uriTemplate", "url", "value", "values", "version", "websiteUrl",
}

// exactReading reads a message's envelope with exact member names, for the refusal
// of an ambiguous one: the kind, and the id and method when exactly one member names
// each under folding (else nil and "").
func exactReading(line []byte) *AmbiguousError {
	var members []struct {
		folded string
		name   string
		value  json.RawMessage
	}
	dec := json.NewDecoder(bytes.NewReader(line))
	if t, err := dec.Token(); err != nil || t != json.Delim('{') {
		return &AmbiguousError{}
	}
	for dec.More() {
		t, err := dec.Token()
		name, ok := t.(string)
		if err != nil || !ok {
			break
		}
		var v json.RawMessage
		if dec.Decode(&v) != nil {
			break
		}
		members = append(members, struct {
			folded string
			name   string
			value  json.RawMessage
		}{string(appendFolded(nil, []byte(name))), name, v})
	}
	one := func(folded, exact string) (json.RawMessage, bool) {
		var v json.RawMessage
		n := 0
		for _, m := range members {
			if m.folded == folded {
				n++
				v = m.value
				if m.name != exact {
					return nil, false
				}
			}
		}
		return v, n == 1
	}
	a := &AmbiguousError{}
	has := func(folded string) bool {
		for _, m := range members {
			if m.folded == folded {
				return true
			}
		}
		return false
	}
	if id, ok := one("ID", "id"); ok && validID(id) {
		a.ID = bytes.Clone(id)
	}
	if v, ok := one("METHOD", "method"); ok {
		_ = json.Unmarshal(v, &a.Method)
	}
	a.Answers = has("RESULT") || has("ERROR")
	switch {
	case has("METHOD") && a.ID != nil:
		a.Kind = KindRequest
	case has("METHOD") && !has("ID"):
		a.Kind = KindNotification
	case has("METHOD"):
		a.Kind = KindRequest // its id is ambiguous: answered under null
	case has("RESULT") || has("ERROR"):
		a.Kind = KindResponse
	}
	return a
}

// FoldName returns name folded as encoding/json folds member names to match struct
// fields (simple case folding): two names fold alike exactly when a Go peer binds
// them to the same field.
func FoldName(name string) string { return string(appendFolded(nil, []byte(name))) }

// Member is one member of a JSON object: its decoded name and its raw value.
type Member struct {
	Name  string
	Value []byte
}

// Members returns the members of the JSON object obj, in order, names decoded and
// values raw (not decoded, not validated); nil when obj is not an object.
func Members(obj []byte) []Member {
	i := skipSpace(obj, 0)
	if i >= len(obj) || obj[i] != '{' {
		return nil
	}
	var r reader
	var ms []Member
	for i = skipSpace(obj, i+1); i < len(obj) && obj[i] == '"'; {
		end, escaped := jsonscan.String(obj, i)
		if end < 0 {
			return ms
		}
		name, ok := r.decodeName(obj[i+1:end-1], escaped)
		i = skipSpace(obj, end)
		if i >= len(obj) || obj[i] != ':' {
			return ms
		}
		start := skipSpace(obj, i+1)
		if i = skipValue(obj, start); i < 0 {
			return ms
		}
		if ok {
			ms = append(ms, Member{Name: string(name), Value: obj[start:i]})
		}
		if i = skipSpace(obj, i); i >= len(obj) || obj[i] != ',' {
			return ms
		}
		i = skipSpace(obj, i+1)
	}
	return ms
}
