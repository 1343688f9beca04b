package guardrail

import (
	"bytes"
	"encoding/json"
	"errors"
	"sort"
	"strconv"
	"strings"
)

// skipInResult are the members of a result whose strings are no text for a content
// guardrail: content types, MIME types and base64 payloads.
var skipInResult = map[string]bool{"type": true, "mimeType": true, "blob": true, "data": true}

// Leaves returns the string leaves of doc (object member values, never names) with
// their JSON pointers, members in sorted order. For a result (result true) only the
// leaves under content and structuredContent are taken, less type, mimeType, blob and
// data. doc must be a JSON object.
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
	for _, k := range []string{"content", "structuredContent"} {
		if e, ok := m[k]; ok {
			walk(e, "/"+escape(k), true, &out)
		}
	}
	return out, nil
}

// LeavesUnder returns the string leaves under each of paths (JSON Pointer tokens
// into doc), as Leaves reads a result (type, mimeType, blob and data left out), each
// leaf once. A path that names nothing is skipped.
func LeavesUnder(doc json.RawMessage, paths [][]string) ([]Text, error) {
	v, err := decode(doc)
	if err != nil {
		return nil, err
	}
	var out []Text
	seen := map[string]bool{}
	for _, path := range paths {
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
		walk(e, ptr, true, &leaves)
		for _, t := range leaves {
			if !seen[t.Pointer] {
				seen[t.Pointer] = true
				out = append(out, t)
			}
		}
	}
	return out, nil
}

func walk(v any, ptr string, result bool, out *[]Text) {
	switch x := v.(type) {
	case string:
		*out = append(*out, Text{Pointer: ptr, Value: x})
	case []any:
		for i, e := range x {
			walk(e, ptr+"/"+strconv.Itoa(i), result, out)
		}
	case map[string]any:
		keys := make([]string, 0, len(x))
		for k := range x {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			if result && skipInResult[k] {
				if _, ok := x[k].(string); ok {
					continue
				}
			}
			walk(x[k], ptr+"/"+escape(k), result, out)
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
