package guardrail

import (
	"bytes"
	"encoding/json"
	"errors"
	"sort"
	"strconv"
	"strings"
)

// skipInResult are the members of a content block (or of its embedded resource)
// whose strings are no text for a content guardrail: content types, MIME types and
// base64 payloads. Elsewhere (structuredContent, a block's _meta) a member of these
// names is data like any other, as the output rules read it.
var skipInResult = map[string]bool{"type": true, "mimeType": true, "blob": true, "data": true}

// Leaves returns the string leaves of doc (object member values, never names) with
// their JSON pointers, members in sorted order. For a result (result true) only the
// leaves under content and structuredContent are taken, less the type, mimeType, blob
// and data of each content block and of its embedded resource. doc must be a JSON
// object.
func Leaves(doc json.RawMessage, result bool) ([]Text, error) {
	v, err := decode(doc)
	if err != nil {
		return nil, err
	}
	m, ok := v.(map[string]any)
	if !ok {
		return nil, errors.New("guardrail: not a JSON object")
	}
	var out []Text
	if !result {
		walk(m, "", false, &out)
		return out, nil
	}
	if blocks, ok := m["content"].([]any); ok {
		for i, b := range blocks {
			walk(b, "/content/"+strconv.Itoa(i), true, &out)
		}
	} else if e, ok := m["content"]; ok {
		walk(e, "/content", false, &out)
	}
	if e, ok := m["structuredContent"]; ok {
		walk(e, "/structuredContent", false, &out)
	}
	return out, nil
}

// LeavesUnder returns the string leaves under each of paths (JSON Pointer tokens
// into doc), each leaf once; where blocks[i] is true, paths[i] names a content block
// (or a resources/read contents item), whose type, mimeType, blob and data are left
// out as Leaves leaves them out of a result. A path that names nothing is skipped.
func LeavesUnder(doc json.RawMessage, paths [][]string, blocks []bool) ([]Text, error) {
	v, err := decode(doc)
	if err != nil {
		return nil, err
	}
	var out []Text
	seen := map[string]bool{}
	for pi, path := range paths {
		e, ok := v, true
		ptr := ""
		for _, tok := range path {
			ptr += "/" + escape(tok)
			switch x := e.(type) {
			case map[string]any:
				e, ok = x[tok]
			case []any:
				i, err := strconv.Atoi(tok)
				ok = err == nil && i >= 0 && i < len(x)
				if ok {
					e = x[i]
				}
			default:
				ok = false
			}
			if !ok {
				break
			}
		}
		if !ok {
			continue
		}
		var leaves []Text
		walk(e, ptr, pi < len(blocks) && blocks[pi], &leaves)
		for _, t := range leaves {
			if !seen[t.Pointer] {
				seen[t.Pointer] = true
				out = append(out, t)
			}
		}
	}
	return out, nil
}

// walk adds the string leaves of v; block says v is a content block, whose own
// skipInResult strings are left out, as are its embedded resource's (deeper, every
// string is taken, as the output rules read them).
func walk(v any, ptr string, block bool, out *[]Text) {
	level := levelFree
	if block {
		level = levelBlock
	}
	walkAt(v, ptr, level, out)
}

// Levels of walkAt: a content block, its embedded resource, anything else.
const (
	levelFree = iota
	levelResource
	levelBlock
)

func walkAt(v any, ptr string, level int, out *[]Text) {
	switch x := v.(type) {
	case string:
		*out = append(*out, Text{Pointer: ptr, Value: x})
	case []any:
		for i, e := range x {
			walkAt(e, ptr+"/"+strconv.Itoa(i), levelFree, out)
		}
	case map[string]any:
		keys := make([]string, 0, len(x))
		for k := range x {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			if level != levelFree && skipInResult[k] {
				if _, ok := x[k].(string); ok {
					continue
				}
			}
			child := levelFree
			if level == levelBlock && k == "resource" {
				child = levelResource
			}
			walkAt(x[k], ptr+"/"+escape(k), child, out)
		}
	}
}

// Replace writes texts into doc at their pointers (each must name a string leaf that
// Leaves returned) and returns the new document.
func Replace(doc json.RawMessage, texts []Text) (json.RawMessage, error) {
	v, err := decode(doc)
	if err != nil {
		return nil, err
	}
	for _, t := range texts {
		if v, err = set(v, splitPointer(t.Pointer), t.Value); err != nil {
			return nil, err
		}
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n")), nil
}

var errPointer = errors.New("guardrail: pointer names no string leaf")

func set(v any, path []string, s string) (any, error) {
	if len(path) == 0 {
		if _, ok := v.(string); !ok {
			return nil, errPointer
		}
		return s, nil
	}
	switch x := v.(type) {
	case map[string]any:
		e, ok := x[path[0]]
		if !ok {
			return nil, errPointer
		}
		n, err := set(e, path[1:], s)
		if err != nil {
			return nil, err
		}
		x[path[0]] = n
		return x, nil
	case []any:
		i, err := strconv.Atoi(path[0])
		if err != nil || i < 0 || i >= len(x) {
			return nil, errPointer
		}
		n, err := set(x[i], path[1:], s)
		if err != nil {
			return nil, err
		}
		x[i] = n
		return x, nil
	}
	return nil, errPointer
}

func decode(doc json.RawMessage) (any, error) {
	dec := json.NewDecoder(bytes.NewReader(doc))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, err
	}
	return v, nil
}

// escape is RFC 6901 §3's escaping of one reference token.
func escape(k string) string {
	return strings.ReplaceAll(strings.ReplaceAll(k, "~", "~0"), "/", "~1")
}

func splitPointer(p string) []string {
	if p == "" {
		return nil
	}
	parts := strings.Split(strings.TrimPrefix(p, "/"), "/")
	for i, s := range parts {
		parts[i] = strings.ReplaceAll(strings.ReplaceAll(s, "~1", "/"), "~0", "~")
	}
	return parts
}
