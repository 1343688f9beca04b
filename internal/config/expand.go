package config

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// LookupFunc reads one environment variable: its value and whether it is set
// (os.LookupEnv's shape).
type LookupFunc func(name string) (string, bool)

// expandJSON replaces ${NAME} and ${NAME:-default} in every string value of the JSON
// document b (docs/decisions.md#config-expansion) and returns it re-encoded. Only
// values are expanded, never keys, and after decoding, so a value that holds a quote
// or a brace stays one value. Every unset variable without a default and every
// malformed reference is an error naming the value's path and the variable (never
// its value), all of them at once, in path order. The names read under the top-level
// "mcpgate" key are appended to gateEnv.
func expandJSON(b []byte, lookup LookupFunc, gateEnv *[]string) ([]byte, error) {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber() // numbers pass through as written
	var doc any
	if err := dec.Decode(&doc); err != nil {
		return nil, fmt.Errorf("not valid JSON: %w", err)
	}
	var errs []error
	doc = expandValue(doc, "", lookup, gateEnv, &errs)
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	return json.Marshal(doc)
}

func expandValue(v any, path string, lookup LookupFunc, gateEnv *[]string, errs *[]error) any {
	switch v := v.(type) {
	case string:
		s, err := Expand(v, lookup)
		if err != nil {
			*errs = append(*errs, fmt.Errorf("%q: %w", strings.TrimPrefix(path, "."), err))
		}
		return s
	case map[string]any:
		keys := make([]string, 0, len(v))
		for k := range v {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		for _, k := range keys {
			l := lookup
			if path == "" && k == "mcpgate" {
				l = func(n string) (string, bool) { *gateEnv = append(*gateEnv, n); return lookup(n) }
			}
			v[k] = expandValue(v[k], path+"."+k, l, gateEnv, errs)
		}
	case []any:
		for i := range v {
			v[i] = expandValue(v[i], path+"["+strconv.Itoa(i)+"]", lookup, gateEnv, errs)
		}
	}
	return v
}

// Expand replaces the references in s: ${NAME} by NAME's value (set and empty is
// empty), ${NAME:-default} by the value when set and non-empty, else by default (as
// the shell does), and $${ by a literal ${. NAME is [A-Za-z_][A-Za-z0-9_]*. A $ not
// followed by { is kept. Errors: an unset NAME without a default, an unclosed ${,
// a bad NAME; the first one found.
func Expand(s string, lookup LookupFunc) (string, error) {
	if !strings.Contains(s, "${") {
		return s, nil
	}
	var b strings.Builder
	for {
		i := strings.Index(s, "${")
		if i < 0 {
			b.WriteString(s)
			return b.String(), nil
		}
		if i > 0 && s[i-1] == '$' { // $${ is a literal ${
			b.WriteString(s[:i-1])
			b.WriteString("${")
			s = s[i+2:]
			continue
		}
		b.WriteString(s[:i])
		end := strings.IndexByte(s[i:], '}')
		if end < 0 {
			return "", fmt.Errorf("%q is not closed with } (write $${ for a literal ${)", clip(s[i:]))
		}
		ref := s[i+2 : i+end]
		name, def, hasDef := strings.Cut(ref, ":-")
		if !validName(name) {
			return "", fmt.Errorf("${%s}: %q is not a variable name (letters, digits and _, not starting with a digit; write $${ for a literal ${)", clip(ref), clip(name))
		}
		val, set := lookup(name)
		switch {
		case hasDef && (!set || val == ""):
			b.WriteString(def)
		case !set:
			return "", fmt.Errorf("environment variable %s is not set (set it, or give a default: ${%s:-default})", name, name)
		default:
			b.WriteString(val)
		}
		s = s[i+end+1:]
	}
}

func validName(n string) bool {
	if n == "" || n[0] >= '0' && n[0] <= '9' {
		return false
	}
	for i := 0; i < len(n); i++ {
		c := n[i]
		if !(c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9') {
			return false
		}
	}
	return true
}

// clip bounds text quoted in an error (it comes from the file, not the environment).
func clip(s string) string {
	if len(s) > 64 {
		return s[:64] + "…"
	}
	return s
}
