package pipeline

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/mcpgate/mcpgate/engine"
	"github.com/mcpgate/mcpgate/internal/jsonrpc"
	"github.com/mcpgate/mcpgate/internal/methods"
)

// part is one piece of a server message that the rules read: a content block, read
// like an item of a CallToolResult's content (text, embedded resources, text blobs;
// image and audio data skipped), or a free-form JSON value whose every string and
// member name is read.
type part struct {
	path     []string // JSON Pointer tokens into the message's result or params
	raw      json.RawMessage
	block    bool
	resource bool // a resources/read contents item, read as an embedded resource
}

// errNoParts reports a message of a known method that holds nothing to read.
var errNoParts = errors.New("nothing to filter")

// errShape reports a text member of an unexpected shape (messages that are not an
// array): the whole message is then read, member by member.
var errShape = errors.New("pipeline: unexpected member shape")

// partsOf lists what the rules read in a message of method m (its row's Text,
// docs/channels.md): doc is the result for responses and the params for server
// requests and notifications. Members are read by their exact names, as the client
// reads them: encoding/json would take "CONTENTS" or "Data" for them. It errors
// (engine.ErrUndecodable) when doc is not an object, and with errNoParts when it holds
// nothing to read. A text member of an unexpected shape makes every member of doc a
// part, read whole.
func partsOf(m *methods.Method, doc json.RawMessage) ([]part, error) {
	t := bytes.TrimSpace(doc)
	name := "the message"
	if m != nil {
		name = m.Name
	}
	var top map[string]json.RawMessage
	if len(t) == 0 || t[0] != '{' || json.Unmarshal(t, &top) != nil {
		return nil, fmt.Errorf("%w: %s is not a JSON object", engine.ErrUndecodable, name)
	}
	if m == nil || m.Shape != methods.Fields {
		return nil, fmt.Errorf("pipeline: no channel filter for %s", name)
	}
	var parts []part
	for _, fl := range m.Text {
		if err := collect(&parts, t, nil, fl.Path, fl.Kind); err != nil {
			parts = parts[:0]
			for k, v := range top {
				parts = append(parts, part{path: []string{k}, raw: v})
			}
			break
		}
	}
	if len(parts) == 0 {
		return nil, errNoParts
	}
	return parts, nil
}

// collect walks rest from v (found at path at) and adds the parts of what it reaches.
// An absent or null member adds nothing; a "*" token walks every item of an array.
func collect(parts *[]part, v json.RawMessage, at, rest []string, kind methods.FieldKind) error {
	v = bytes.TrimSpace(v)
	if len(v) == 0 || string(v) == "null" {
		return nil
	}
	if len(rest) == 0 {
		return addParts(parts, v, at, kind)
	}
	here := at[:len(at):len(at)]
	if rest[0] == "*" {
		var items []json.RawMessage
		if v[0] != '[' || json.Unmarshal(v, &items) != nil {
			return errShape
		}
		for i, it := range items {
			if err := collect(parts, it, append(here, strconv.Itoa(i)), rest[1:], kind); err != nil {
				return err
			}
		}
		return nil
	}
	var obj map[string]json.RawMessage
	if v[0] != '{' || json.Unmarshal(v, &obj) != nil {
		return errShape
	}
	return collect(parts, obj[rest[0]], append(here, rest[0]), rest[1:], kind)
}

// addParts adds the parts of one text member of its kind.
func addParts(parts *[]part, v json.RawMessage, at []string, kind methods.FieldKind) error {
	path := func(more ...string) []string { return append(at[:len(at):len(at)], more...) }
	var items []json.RawMessage
	if kind == methods.Messages || kind == methods.Resources {
		if v[0] != '[' || json.Unmarshal(v, &items) != nil {
			return errShape
		}
	}
	switch kind {
	case methods.Free:
		*parts = append(*parts, part{path: at, raw: v})
	case methods.Blocks:
		addBlocks(parts, at, v)
	case methods.Resources:
		for i, c := range items {
			*parts = append(*parts, part{path: path(strconv.Itoa(i)), raw: c, block: true, resource: true})
		}
	case methods.Messages:
		// each message's content as blocks, the rest of it (but its role) as free JSON
		for i, msg := range items {
			var mm map[string]json.RawMessage
			if json.Unmarshal(msg, &mm) != nil || mm == nil {
				*parts = append(*parts, part{path: path(strconv.Itoa(i)), raw: msg})
				continue
			}
			for k, v := range mm {
				p := path(strconv.Itoa(i), k)
				if k == "content" {
					addBlocks(parts, p, v)
				} else if k != "role" {
					*parts = append(*parts, part{path: p, raw: v})
				}
			}
		}
	}
	return nil
}

// addBlocks adds a content block, or each block of an array of them (sampling).
func addBlocks(parts *[]part, at []string, v json.RawMessage) {
	if t := bytes.TrimSpace(v); len(t) > 0 && t[0] == '[' {
		var a []json.RawMessage
		if json.Unmarshal(t, &a) == nil {
			for i, b := range a {
				*parts = append(*parts, part{path: append(at[:len(at):len(at)], strconv.Itoa(i)), raw: b, block: true})
			}
			return
		}
	}
	if len(v) > 0 && string(v) != "null" {
		*parts = append(*parts, part{path: at, raw: v, block: true})
	}
}

// viewDoc builds the CallToolResult-shaped document the analyzer and the sanitizer
// read: {"content":[blocks…],"structuredContent":{"<part index>":free value,…}}. The
// parts' bytes are copied as they are; nothing is re-encoded.
func viewDoc(parts []part) []byte {
	var b bytes.Buffer
	b.WriteString(`{"content":[`)
	n := 0
	for _, p := range parts {
		if !p.block {
			continue
		}
		if n > 0 {
			b.WriteByte(',')
		}
		n++
		if p.resource {
			b.WriteString(`{"type":"resource","resource":`)
			b.Write(p.raw)
			b.WriteByte('}')
		} else {
			b.Write(p.raw)
		}
	}
	b.WriteString(`],"structuredContent":{`)
	n = 0
	for i, p := range parts {
		if p.block {
			continue
		}
		if n > 0 {
			b.WriteByte(',')
		}
		n++
		b.WriteString(`"` + strconv.Itoa(i) + `":`)
		b.Write(p.raw)
	}
	b.WriteString(`}}`)
	return b.Bytes()
}

// blockIndex maps the view's content indexes to part indexes.
func blockIndex(parts []part) []int {
	var idx []int
	for i, p := range parts {
		if p.block {
			idx = append(idx, i)
		}
	}
	return idx
}

// analyzeParts runs the output rules over the parts, judging file: targets by the
// roots the client declared to the server (Call.Roots; nil: none known); finding
// pointers are rewritten to point into the original message.
func analyzeParts(an *engine.Analyzer, parts []part, roots []string) (engine.Report, error) {
	rep, err := an.AnalyzeResultWithin(viewDoc(parts), roots)
	if err != nil {
		return rep, err
	}
	blocks := blockIndex(parts)
	for i := range rep.Findings {
		rep.Findings[i].Pointer = viewPointer(parts, blocks, rep.Findings[i].Pointer)
	}
	return rep, nil
}

// viewPointer maps a JSON Pointer into the view back into the message.
func viewPointer(parts []part, blocks []int, ptr string) string {
	toks := strings.Split(strings.TrimPrefix(ptr, "/"), "/")
	if len(toks) < 2 {
		return ptr
	}
	n, err := strconv.Atoi(toks[1])
	if err != nil {
		return ptr
	}
	var p part
	rest := toks[2:]
	switch {
	case toks[0] == "content" && n < len(blocks):
		p = parts[blocks[n]]
		if p.resource && len(rest) > 0 && rest[0] == "resource" {
			rest = rest[1:]
		}
	case toks[0] == "structuredContent" && n < len(parts):
		p = parts[n]
	default:
		return ptr
	}
	var b strings.Builder
	for _, t := range p.path {
		b.WriteString("/" + strings.NewReplacer("~", "~0", "/", "~1").Replace(t))
	}
	for _, t := range rest {
		b.WriteString("/" + t)
	}
	return b.String()
}

// sanitizeParts runs the Warn sanitizer over the parts and writes every changed part
// back into doc; doc itself comes back when nothing changed.
func sanitizeParts(doc json.RawMessage, parts []part) (json.RawMessage, error) {
	view := viewDoc(parts)
	clean, err := engine.SanitizeResult(view)
	if err != nil {
		return nil, err
	}
	if bytes.Equal(clean, view) {
		return doc, nil
	}
	var v struct {
		Content           []json.RawMessage          `json:"content"`
		StructuredContent map[string]json.RawMessage `json:"structuredContent"`
	}
	if err := json.Unmarshal(clean, &v); err != nil {
		return nil, err
	}
	blocks := blockIndex(parts)
	if len(v.Content) != len(blocks) {
		return nil, errors.New("pipeline: sanitized view lost content items")
	}
	out := doc
	for j, i := range blocks {
		val := v.Content[j]
		if parts[i].resource {
			var w struct {
				Resource json.RawMessage `json:"resource"`
			}
			if err := json.Unmarshal(val, &w); err != nil {
				return nil, err
			}
			val = w.Resource
		}
		if bytes.Equal(val, parts[i].raw) {
			continue
		}
		if out, err = setPath(out, parts[i].path, val); err != nil {
			return nil, err
		}
	}
	for i, p := range parts {
		if p.block {
			continue
		}
		val := v.StructuredContent[strconv.Itoa(i)]
		if val == nil || bytes.Equal(val, p.raw) {
			continue
		}
		if out, err = setPath(out, p.path, val); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// setPath returns doc with the value at path (JSON Pointer tokens, unescaped)
// replaced by val. Objects on the path are re-encoded (member order sorted); every
// other value keeps its bytes.
func setPath(doc json.RawMessage, path []string, val json.RawMessage) (json.RawMessage, error) {
	if len(path) == 0 {
		return val, nil
	}
	t := bytes.TrimSpace(doc)
	if len(t) > 0 && t[0] == '[' {
		var a []json.RawMessage
		if err := json.Unmarshal(t, &a); err != nil {
			return nil, err
		}
		i, err := strconv.Atoi(path[0])
		if err != nil || i < 0 || i >= len(a) {
			return nil, fmt.Errorf("pipeline: no item %q", path[0])
		}
		if a[i], err = setPath(a[i], path[1:], val); err != nil {
			return nil, err
		}
		return jsonrpc.Marshal(a)
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(t, &m); err != nil || m == nil {
		return nil, fmt.Errorf("pipeline: no object at %q", path[0])
	}
	v, err := setPath(m[path[0]], path[1:], val)
	if err != nil {
		return nil, err
	}
	m[path[0]] = v
	return jsonrpc.Marshal(m)
}
