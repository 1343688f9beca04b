// Package mcpparam checks the Mcp-Param-* headers of a 2026-07-28 tools/call against
// the call's arguments, for the properties the tool's inputSchema marks with
// x-mcp-header (SEP-2243 "Custom Headers"), as the reference server does
// (@modelcontextprotocol/server 2.4.0, validateMcpParamHeaders).
package mcpparam

import (
	"encoding/base64"
	"encoding/json"
	"math"
	"net/http"
	"net/textproto"
	"regexp"
	"strconv"
	"strings"
	"unicode/utf8"
)

// Prefix is the fixed prefix of every custom-parameter header.
const Prefix = "Mcp-Param-"

// Declaration is one x-mcp-header annotation: the property's path through
// "properties", the header suffix, and the property's JSON Schema type.
type Declaration struct {
	Path   []string
	Header string // the x-mcp-header value: the header is Prefix+Header
	Type   string // "string", "integer", "boolean" or "number"
}

// tchar is RFC 9110 §5.6.2 token syntax.
var token = regexp.MustCompile("^[!#$%&'*+\\-.^_`|~0-9A-Za-z]+$")

// unreachable are the keywords under which an x-mcp-header makes the schema invalid.
var unreachable = []string{"items", "prefixItems", "contains", "additionalProperties",
	"unevaluatedProperties", "unevaluatedItems", "propertyNames", "patternProperties",
	"dependentSchemas", "oneOf", "anyOf", "allOf", "not", "if", "then", "else", "$defs", "definitions"}

var objectValued = map[string]bool{"patternProperties": true, "dependentSchemas": true, "$defs": true, "definitions": true}

// maxDepth bounds the schema walk (a hostile listing may nest without end).
const maxDepth = 64

// Declarations reads the x-mcp-header annotations of an inputSchema. A schema whose
// annotations break a rule (not reachable through "properties" alone, empty or not a
// token, a type other than string/integer/boolean, names equal under case folding)
// declares none, as the reference server's check sees it; a "number"-typed one is
// invalid for clients but still checked. Malformed JSON declares none.
func Declarations(schema json.RawMessage) []Declaration {
	d, _ := declarations(schema)
	return d
}

// Valid reports whether a tool's inputSchema breaks none of the x-mcp-header rules
// Declarations applies (a schema without annotations, or malformed JSON, is valid
// here): the specification tells a client to exclude a tool whose annotations break
// them (SEP-2243 "Custom Headers").
func Valid(schema json.RawMessage) bool {
	_, ok := declarations(schema)
	return ok
}

func declarations(schema json.RawMessage) ([]Declaration, bool) {
	var root any
	if json.Unmarshal(schema, &root) != nil {
		return nil, true
	}
	var out []Declaration
	seen := map[string]bool{}
	var visit func(node any, path []string, reachable bool, depth int) bool // false: invalid
	visit = func(node any, path []string, reachable bool, depth int) bool {
		s, ok := node.(map[string]any)
		if !ok {
			return true
		}
		if depth > maxDepth {
			return false
		}
		if raw, has := s["x-mcp-header"]; has {
			name, _ := raw.(string)
			if !reachable || len(path) == 0 || name == "" || !token.MatchString(name) {
				return false
			}
			typ, _ := s["type"].(string)
			switch typ {
			case "string", "integer", "boolean", "number":
			default:
				return false
			}
			if seen[strings.ToLower(name)] {
				return false
			}
			seen[strings.ToLower(name)] = true
			out = append(out, Declaration{Path: append([]string(nil), path...), Header: name, Type: typ})
		}
		if props, ok := s["properties"].(map[string]any); ok {
			for k, child := range props {
				if !visit(child, append(path, k), reachable, depth+1) {
					return false
				}
			}
		}
		for _, k := range unreachable {
			sub, has := s[k]
			if !has {
				continue
			}
			var branches []any
			switch v := sub.(type) {
			case []any:
				branches = v
			case map[string]any:
				if objectValued[k] {
					for _, b := range v {
						branches = append(branches, b)
					}
				} else {
					branches = []any{v}
				}
			}
			for _, b := range branches {
				if !visit(b, append(path, "<"+k+">"), false, depth+1) {
					return false
				}
			}
		}
		return true
	}
	if !visit(root, nil, true, 0) {
		return nil, false
	}
	return out, true
}

// Mismatch is a rejected call: HTTP 400 with JSON-RPC -32020 (HeaderMismatch) and
// data {mismatch: {header, body}}. Its texts name the header and the property, never
// a value.
type Mismatch struct {
	Header string // the header, Prefix+Declaration.Header
	Reason string // "missing", "invalid encoding" or "mismatch"
	Body   string // what the body carries, as text naming the property path
}

// Message is the JSON-RPC error message of m.
func (m *Mismatch) Message() string {
	return "Bad Request: the request headers and body disagree: " + m.Body
}

var canonicalB64 = regexp.MustCompile(`^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?$`)
var canonicalDecimal = regexp.MustCompile(`^-?\d+(\.\d+)?$`)

// Decode decodes an Mcp-Param-* value (already trimmed of optional whitespace): one of
// the form "=?base64?<canonical base64>?=" is its payload as UTF-8; any other value is
// itself. ok is false for the sentinel around a payload that is not canonical base64
// (padding included) or not valid UTF-8.
func Decode(v string) (string, bool) {
	if !strings.HasPrefix(v, "=?base64?") || !strings.HasSuffix(v, "?=") || len(v) < len("=?base64??=") {
		return v, true
	}
	b64 := v[len("=?base64?") : len(v)-2]
	if !canonicalB64.MatchString(b64) {
		return "", false
	}
	b, err := base64.StdEncoding.DecodeString(b64)
	if err != nil || !utf8.Valid(b) {
		return "", false
	}
	return string(b), true
}

// Check checks the headers h against the call's arguments (a JSON object) for the
// declarations decls; nil when they agree. A property the body leaves out, sets to
// null or to a non-primitive needs no header, and a header for it is ignored.
func Check(decls []Declaration, arguments json.RawMessage, h http.Header) *Mismatch {
	if len(decls) == 0 {
		return nil
	}
	var args any
	_ = json.Unmarshal(arguments, &args)
	for _, d := range decls {
		key := Prefix + d.Header
		body := valueAt(args, d.Path)
		want, ok := primitiveString(body)
		if !ok {
			continue
		}
		where := strings.Join(d.Path, ".")
		vals := h.Values(textproto.CanonicalMIMEHeaderKey(key))
		if len(vals) == 0 {
			return &Mismatch{Header: key, Reason: "missing", Body: "the body carries " + where + " but the " + key + " header is absent"}
		}
		got, ok := Decode(strings.Trim(strings.Join(vals, ", "), " \t\r\n"))
		if !ok {
			return &Mismatch{Header: key, Reason: "invalid encoding", Body: "the " + key + " header carries an invalid Base64 sentinel value"}
		}
		n, isNum := body.(float64)
		equal := got == want
		if (d.Type == "integer" || d.Type == "number") && isNum && canonicalDecimal.MatchString(got) {
			f, err := strconv.ParseFloat(got, 64)
			equal = err == nil && f == n
		}
		if !equal {
			return &Mismatch{Header: key, Reason: "mismatch", Body: "the " + key + " header does not match " + where + " of the body"}
		}
	}
	return nil
}

func valueAt(v any, path []string) any {
	for _, k := range path {
		m, ok := v.(map[string]any)
		if !ok {
			return nil
		}
		v = m[k]
	}
	return v
}

// primitiveString is v as the header carries it: a string itself, a boolean "true" or
// "false", a number as ECMAScript's Number::toString writes it; ok is false for null,
// absent, objects, arrays and integers past 2^53.
func primitiveString(v any) (string, bool) {
	switch x := v.(type) {
	case string:
		return x, true
	case bool:
		return strconv.FormatBool(x), true
	case float64:
		if math.IsInf(x, 0) || math.IsNaN(x) {
			return "", false
		}
		if x == math.Trunc(x) && math.Abs(x) > 1<<53-1 {
			return "", false
		}
		return jsNumber(x), true
	}
	return "", false
}

// jsNumber formats a finite float64 as ECMAScript Number::toString (radix 10).
func jsNumber(x float64) string {
	if x == 0 {
		return "0"
	}
	sign := ""
	if x < 0 {
		sign, x = "-", -x
	}
	e := strconv.FormatFloat(x, 'e', -1, 64) // d.ddddde±XX, shortest
	mant, exp, _ := strings.Cut(e, "e")
	digits := strings.Replace(mant, ".", "", 1)
	p, _ := strconv.Atoi(exp)
	n := p + 1 // ECMAScript's n: the decimal point after n digits
	k := len(digits)
	switch {
	case k <= n && n <= 21:
		return sign + digits + strings.Repeat("0", n-k)
	case 0 < n && n <= 21:
		return sign + digits[:n] + "." + digits[n:]
	case -6 < n && n <= 0:
		return sign + "0." + strings.Repeat("0", -n) + digits
	}
	es := "+"
	if n-1 < 0 {
		es = "-"
	}
	ex := strconv.Itoa(abs(n - 1))
	if k == 1 {
		return sign + digits + "e" + es + ex
	}
	return sign + digits[:1] + "." + digits[1:] + "e" + es + ex
}

func abs(i int) int {
	if i < 0 {
		return -i
	}
	return i
}

// Of returns the Mcp-Param-* headers of h (names canonical), non-nil even when h has
// none.
func Of(h http.Header) map[string][]string {
	out := map[string][]string{}
	for k, v := range h {
		if len(k) > len(Prefix) && strings.EqualFold(k[:len(Prefix)], Prefix) {
			out[textproto.CanonicalMIMEHeaderKey(k)] = v
		}
	}
	return out
}

// Headers returns the Mcp-Param-* headers a call with these arguments carries, for
// the declarations decls (names canonical): each primitive value as text, encoded
// with Encode; nil when there are none.
func Headers(decls []Declaration, arguments json.RawMessage) map[string][]string {
	var args any
	_ = json.Unmarshal(arguments, &args)
	var out map[string][]string
	for _, d := range decls {
		v, ok := primitiveString(valueAt(args, d.Path))
		if !ok {
			continue
		}
		if out == nil {
			out = map[string][]string{}
		}
		out[textproto.CanonicalMIMEHeaderKey(Prefix+d.Header)] = []string{Encode(v)}
	}
	return out
}

// Encode is v as a header value (SEP-2243): itself when it is visible ASCII with
// spaces only inside, otherwise "=?base64?<standard base64 of its UTF-8>?=".
func Encode(v string) string {
	plain := v != "" && v[0] != ' ' && v[len(v)-1] != ' '
	for i := 0; plain && i < len(v); i++ {
		plain = v[i] >= 0x20 && v[i] < 0x7f
	}
	if plain && !strings.HasPrefix(v, "=?") {
		return v
	}
	return "=?base64?" + base64.StdEncoding.EncodeToString([]byte(v)) + "?="
}
