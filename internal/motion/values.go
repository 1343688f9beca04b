package motion

import (
	"encoding/base64"
	"encoding/json"
	"strconv"
	"strings"

	"github.com/mcpgate/mcpgate/engine"
)

// RuleSensitiveFile is the Source.Rule of a line remembered because the call that
// produced it named a credential file (engine.CredentialPath).
const RuleSensitiveFile = "sensitive_file"

// MinLineBytes: a shorter line of a credential file ("}", "[default]") is not
// remembered.
const MinLineBytes = 16

// Values returns the PII and secret values that findings (an analysis of doc, a
// CallToolResult) point at, each with its finding's rule id, de-duplicated. A finding
// whose pointer does not resolve to a string is skipped. doc is decoded only when a
// finding is of the PII or secret family.
func Values(doc []byte, findings []engine.Finding) (rules []string, values [][]byte) {
	var root any
	decoded := false
	seen := map[string]bool{}
	for _, f := range findings {
		if !redactable(f.RuleID) || f.Decoded != "" {
			continue
		}
		if !decoded {
			decoded = true
			if json.Unmarshal(doc, &root) != nil {
				return nil, nil
			}
		}
		s, ok := resolve(root, f.Pointer, f.InKey)
		if !ok || f.Start < 0 || f.End > len(s) || f.Start >= f.End {
			continue
		}
		v := s[f.Start:f.End]
		if seen[v] {
			continue
		}
		seen[v] = true
		rules = append(rules, f.RuleID)
		values = append(values, []byte(v))
	}
	return rules, values
}

func redactable(rule string) bool {
	return strings.HasPrefix(rule, engine.FamilySecret+"_") || strings.HasPrefix(rule, engine.FamilyPII+"_")
}

// resolve follows an RFC 6901 pointer to a string: the member name itself when
// inKey, and a base64 blob decoded when the last segment is "blob".
func resolve(root any, ptr string, inKey bool) (string, bool) {
	if ptr == "" || ptr[0] != '/' {
		return "", false
	}
	segs := strings.Split(ptr[1:], "/")
	for i := range segs {
		segs[i] = strings.ReplaceAll(strings.ReplaceAll(segs[i], "~1", "/"), "~0", "~")
	}
	if inKey {
		return segs[len(segs)-1], true
	}
	cur := root
	for _, seg := range segs {
		switch c := cur.(type) {
		case map[string]any:
			v, ok := c[seg]
			if !ok {
				return "", false
			}
			cur = v
		case []any:
			n, err := strconv.Atoi(seg)
			if err != nil || n < 0 || n >= len(c) {
				return "", false
			}
			cur = c[n]
		default:
			return "", false
		}
	}
	s, ok := cur.(string)
	if ok && segs[len(segs)-1] == "blob" {
		b, err := base64.StdEncoding.DecodeString(s)
		if err != nil {
			if b, err = base64.RawStdEncoding.DecodeString(s); err != nil {
				return "", false
			}
		}
		return string(b), true
	}
	return s, ok
}

// Strings returns the strings of a JSON document (arguments): every string leaf and
// every member name, since a value sent as a member name moves as well; nil for a
// document that does not decode.
func Strings(doc []byte) []string {
	var v any
	if json.Unmarshal(doc, &v) != nil {
		return nil
	}
	var out []string
	var walk func(any)
	walk = func(v any) {
		switch x := v.(type) {
		case string:
			out = append(out, x)
		case map[string]any:
			for k, e := range x {
				out = append(out, k)
				walk(e)
			}
		case []any:
			for _, e := range x {
				walk(e)
			}
		}
	}
	walk(v)
	return out
}

// NamesCredentialFile reports whether any string leaf of args is a path or file: URI
// that engine.CredentialPath calls a credential file.
func NamesCredentialFile(args []string) bool {
	for _, s := range args {
		if engine.CredentialPath(s) {
			return true
		}
	}
	return false
}

// Lines returns the lines of the result's text strings (every string leaf of doc but
// type, mimeType, uri and binary data, and every member name) of at least MinLineBytes
// after trimming, at most MaxPerResult of them: what a credential file's read showed.
func Lines(doc []byte) [][]byte {
	var root any
	if json.Unmarshal(doc, &root) != nil {
		return nil
	}
	var out [][]byte
	var walk func(key string, v any)
	walk = func(key string, v any) {
		if len(out) >= MaxPerResult {
			return
		}
		lines := func(x string) {
			for _, l := range strings.Split(x, "\n") {
				l = strings.TrimSpace(l)
				if len(l) >= MinLineBytes && len(out) < MaxPerResult {
					out = append(out, []byte(l))
				}
			}
		}
		switch x := v.(type) {
		case string:
			if key == "type" || key == "mimeType" || key == "data" || key == "blob" || key == "uri" {
				return
			}
			lines(x)
		case map[string]any:
			for k, e := range x {
				lines(k)
				walk(k, e)
			}
		case []any:
			for _, e := range x {
				walk(key, e)
			}
		}
	}
	walk("", root)
	return out
}
