package argcheck

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"sync"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"github.com/santhosh-tekuri/jsonschema/v6/kind"

	"github.com/mcpgate/mcpgate/engine"
)

// Rule ids: a finding's Rule, a record's input_rule_ids (docs/engine.md#argument-checks).
const (
	RuleSchema           = "argument_schema"             // the arguments break the listed schema
	RuleMissing          = "argument_missing"            // a required argument is missing: recorded, the server answers it
	RuleUndeclared       = "argument_undeclared"         // a top-level argument the schema does not declare
	RuleShell            = "argument_shell"              // chaining, substitution or redirection where a shell may read it
	RulePathTraversal    = "argument_path_traversal"     // a path whose ".." climbs above its start
	RulePathOutsideRoots = "argument_path_outside_roots" // an absolute, "~" or file: path outside every root
	RulePathRemote       = "argument_path_remote"        // a UNC path or a non-file URL where a path is expected
	RulePathAbsolute     = "argument_path_absolute"      // an absolute or "~" path with no roots known
	RuleTemplate         = "argument_template"           // server-side template markers in plain text
	RuleGuessableHandle  = "argument_guessable_handle"   // a state handle a caller could enumerate ("basket_1002")
	RuleURLInternal      = "argument_url_internal"       // a URL argument aimed at cloud metadata, a link-local, loopback or private address
)

// Family is the rules' family in `mcpgate rules`.
const Family = "argument"

// Rules lists the argument rules with their severities, for `mcpgate rules`.
func Rules() []engine.Rule {
	return []engine.Rule{
		{ID: RuleSchema, Family: Family, Severity: engine.SeverityMedium, Summary: "arguments that break the inputSchema of the listing the gateway saw (type, required, enum/const, bounds, lengths, pattern, format, additionalProperties), or a prompt's declared arguments; strict refuses"},
		{ID: RuleMissing, Family: Family, Severity: engine.SeverityInfo, Summary: "a required argument (required, dependentRequired, minProperties) is missing: it carries nothing, so it is recorded and the server answers the call"},
		{ID: RuleUndeclared, Family: Family, Severity: engine.SeverityMedium, Summary: "a top-level argument the listed schema's properties do not declare (additionalProperties unset); strict refuses"},
		{ID: RuleShell, Family: Family, Severity: engine.SeverityMedium, Summary: "command chaining, substitution or redirection (; && || | ` $( ) > <, a newline then a command) in a command, host, URL or query argument, or a shell payload in any string; strict refuses it in a command, host or URL argument"},
		{ID: RulePathTraversal, Family: Family, Severity: engine.SeverityMedium, Summary: "a path argument whose .. segments climb above where it starts; strict refuses"},
		{ID: RulePathOutsideRoots, Family: Family, Severity: engine.SeverityMedium, Summary: "an absolute, ~ or file: path outside every root the client declared or --root pinned; strict refuses"},
		{ID: RulePathRemote, Family: Family, Severity: engine.SeverityMedium, Summary: "a UNC path or a non-file URL in a path argument; strict refuses"},
		{ID: RulePathAbsolute, Family: Family, Severity: engine.SeverityInfo, Summary: "an absolute or ~ path argument while no roots are known"},
		{ID: RuleTemplate, Family: Family, Severity: engine.SeverityMedium, Summary: "server-side template markers ({{…}}, ${…}, <%…%>) in an argument the schema types as plain text"},
		{ID: RuleURLInternal, Family: Family, Severity: engine.SeverityMedium, Summary: "a URL argument whose host is cloud metadata (169.254.169.254, fd00:ec2::254, metadata.google.internal, also as a decimal or hex integer or a wildcard-DNS name such as 169.254.169.254.nip.io) or link-local: strict refuses; loopback or private: recorded"},
		{ID: RuleGuessableHandle, Family: Family, Severity: engine.SeverityLow, Summary: "a top-level id or handle argument whose string value is a lower-case word and a counter (\"cart_1002\", \"session-17\"): a state handle another caller can enumerate; recorded, never refused"},
	}
}

// Known reports whether id is an argument rule.
func Known(id string) bool {
	return slices.ContainsFunc(Rules(), func(r engine.Rule) bool { return r.ID == id })
}

// Finding is one thing Check found. It never holds a value.
type Finding struct {
	Rule    string `json:"rule"`
	Pointer string `json:"pointer"`           // RFC 6901 pointer into the arguments ("" is the whole object)
	Keyword string `json:"keyword,omitempty"` // the schema keyword that failed (argument_schema)
	Refuse  bool   `json:"-"`                 // the strict profile refuses the call for it
}

// Schema states.
const (
	SchemaChecked = "checked"        // validated against the listed schema
	SchemaUnknown = "schema_unknown" // no listing of the tool was seen
	SchemaInvalid = "schema_invalid" // the listed schema does not compile: not validated
)

// Result is what Check found: the schema state and the findings, sorted by pointer.
type Result struct {
	Schema   string
	Findings []Finding
}

// Refused is the first finding the strict profile refuses, or nil.
func (r Result) Refused() *Finding {
	for i := range r.Findings {
		if r.Findings[i].Refuse {
			return &r.Findings[i]
		}
	}
	return nil
}

// maxFindings bounds the findings of one call.
const maxFindings = 16

// Tool is the checks of one listed tool (or prompt), compiled once on first use.
type Tool struct {
	name string
	raw  json.RawMessage

	once  sync.Once
	sch   *jsonschema.Schema
	err   error
	props map[string]prop // the top-level properties
	open  bool            // additionalProperties or patternProperties set: undeclared arguments are the schema's business
}

// prop is what a top-level property declares that the shell and path checks read.
type prop struct {
	class  class
	schema map[string]any
}

// NewTool returns the checks for a tool named name (as the client sees it) with the
// listing's inputSchema; nothing is compiled until the first Check.
func NewTool(name string, inputSchema json.RawMessage) *Tool {
	return &Tool{name: name, raw: bytes.Clone(inputSchema)}
}

// PromptArgument is one entry of a prompts/list entry's arguments.
type PromptArgument struct {
	Name        string `json:"name"`
	Description string `json:"description,omitempty"`
	Required    bool   `json:"required,omitempty"`
}

// NewPrompt returns the checks for a prompt's declared arguments: an object of string
// properties, the required ones required, no others allowed.
func NewPrompt(name string, args []PromptArgument) *Tool {
	props := map[string]any{}
	required := []string{}
	for _, a := range args {
		p := map[string]any{"type": "string"}
		if a.Description != "" {
			p["description"] = a.Description
		}
		props[a.Name] = p
		if a.Required {
			required = append(required, a.Name)
		}
	}
	raw, _ := json.Marshal(map[string]any{"type": "object", "properties": props, "required": required, "additionalProperties": false})
	return NewTool(name, raw)
}

// noLoader refuses every $ref outside the schema document: a listing never makes the
// gateway read a file or the network.
type noLoader struct{}

func (noLoader) Load(url string) (any, error) {
	return nil, errors.New("argcheck: external $ref not followed")
}

// anyRegexp is a pattern Go's regexp cannot compile (lookaround, backreferences in
// ECMA 262 syntax): it asserts nothing, so a server's schema never refuses for the
// gateway's regexp dialect.
type anyRegexp string

func (r anyRegexp) MatchString(string) bool { return true }
func (r anyRegexp) String() string          { return string(r) }

func compileRegexp(s string) (jsonschema.Regexp, error) {
	re, err := regexp.Compile(s)
	if err != nil {
		return anyRegexp(s), nil
	}
	return re, nil
}

func (t *Tool) compile() {
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(t.raw))
	if err != nil {
		t.err = err
		return
	}
	obj, _ := doc.(map[string]any)
	if obj == nil {
		t.err = errors.New("argcheck: inputSchema is not an object")
		return
	}
	c := jsonschema.NewCompiler()
	c.DefaultDraft(jsonschema.Draft2020)
	c.AssertFormat()
	c.UseLoader(noLoader{})
	c.UseRegexpEngine(compileRegexp)
	const loc = "mcpgate:///inputSchema.json"
	if err := c.AddResource(loc, doc); err != nil {
		t.err = err
		return
	}
	if t.sch, t.err = c.Compile(loc); t.err != nil {
		t.sch = nil
	}
	t.props = map[string]prop{}
	if ps, ok := obj["properties"].(map[string]any); ok {
		inRepo := false
		for name := range ps {
			inRepo = inRepo || namesRepository(name)
		}
		for name, v := range ps {
			s, _ := v.(map[string]any)
			cl := classify(t.name, name, s)
			if cl == classPath && inRepo {
				// a path inside the repository or wiki the call names (GitHub's
				// get_file_contents "path": "/", Azure DevOps' repositoryId and wikiId), not
				// on the client's file system: no roots apply
				cl = classPlain
			}
			t.props[name] = prop{class: cl, schema: s}
		}
	}
	_, ap := obj["additionalProperties"]
	_, pp := obj["patternProperties"]
	_, up := obj["unevaluatedProperties"]
	t.open = ap || pp || up || len(t.props) == 0 || hasComposition(obj)
}

// namesRepository reports whether an argument's name names a repository or a wiki
// a call reads from: repo, repository or wiki, alone or with id, name or slug
// ("repositoryId", "repo_name", "wikiId").
func namesRepository(name string) bool {
	w := splitWords(name)
	if len(w) == 0 || len(w) > 2 || w[0] != "repo" && w[0] != "repository" && w[0] != "wiki" {
		return false
	}
	return len(w) == 1 || w[1] == "id" || w[1] == "name" || w[1] == "slug"
}

// hasComposition reports whether the schema combines others at the top (allOf, anyOf,
// oneOf, $ref, if): properties declared there are not in its own "properties".
func hasComposition(obj map[string]any) bool {
	for _, k := range []string{"allOf", "anyOf", "oneOf", "$ref", "$dynamicRef", "if", "dependentSchemas"} {
		if _, ok := obj[k]; ok {
			return true
		}
	}
	return false
}

// Options are what Check reads besides the arguments.
type Options struct {
	// Roots are the file:// URIs the paths must stay under: the client's declared
	// roots, else the pinned ones. Empty: no roots are known.
	Roots []string
}

// Check judges args (a JSON object, or empty for none) against t; a nil t is a tool
// with no listing seen: only the shell, path and template checks run, and Schema
// is SchemaUnknown. tool is the name the client called.
func Check(t *Tool, tool string, args json.RawMessage, o Options) Result {
	res := Result{Schema: SchemaUnknown}
	if len(bytes.TrimSpace(args)) == 0 || string(bytes.TrimSpace(args)) == "null" {
		args = json.RawMessage("{}")
	}
	inst, err := jsonschema.UnmarshalJSON(bytes.NewReader(args))
	if err != nil {
		return res
	}
	var props map[string]prop
	open := true
	if t != nil {
		t.once.Do(t.compile)
		props, open = t.props, t.open
		if t.sch == nil {
			res.Schema = SchemaInvalid
		} else {
			res.Schema = SchemaChecked
			var ve *jsonschema.ValidationError
			if err := t.sch.Validate(inst); errors.As(err, &ve) {
				res.Findings = append(res.Findings, schemaFindings(ve)...)
			}
		}
	}
	obj, _ := inst.(map[string]any)
	roots := parseRoots(o.Roots)
	for _, name := range sortedKeys(obj) {
		p, declared := props[name]
		if !declared && !open && t != nil && t.sch != nil {
			res.Findings = append(res.Findings, Finding{Rule: RuleUndeclared, Pointer: pointer(name), Refuse: true})
		}
		if v, ok := obj[name].(string); ok && handleName(name) && guessableHandle(v) {
			res.Findings = append(res.Findings, Finding{Rule: RuleGuessableHandle, Pointer: pointer(name)})
		}
		cl := p.class
		if !declared {
			cl = classify(tool, name, nil)
		}
		res.Findings = walk(res.Findings, obj[name], pointer(name), cl, roots, 0)
	}
	slices.SortStableFunc(res.Findings, func(a, b Finding) int {
		if c := strings.Compare(a.Pointer, b.Pointer); c != 0 {
			return c
		}
		if c := strings.Compare(a.Rule, b.Rule); c != 0 {
			return c
		}
		return strings.Compare(a.Keyword, b.Keyword)
	})
	res.Findings = slices.CompactFunc(res.Findings, func(a, b Finding) bool {
		return a.Rule == b.Rule && a.Pointer == b.Pointer && a.Keyword == b.Keyword
	})
	if len(res.Findings) > maxFindings {
		// the cap never drops the finding that refuses: findings that only record
		// cannot crowd it out
		var refuse *Finding
		if r := res.Refused(); r != nil {
			f := *r
			refuse = &f
		}
		res.Findings = res.Findings[:maxFindings]
		if refuse != nil && res.Refused() == nil {
			res.Findings[maxFindings-1] = *refuse
		}
	}
	return res
}

// handleName reports an argument name that names a handle: its last word is id or
// handle ("basket_id", "sessionHandle", "cartId").
func handleName(name string) bool {
	w := splitWords(name)
	return len(w) > 0 && (w[len(w)-1] == "id" || w[len(w)-1] == "handle")
}

// guessableHandle reports a value a caller could enumerate: a lower-case ASCII word
// of 2 to 16 letters, '_' or '-', then 1 to 9 decimal digits ("basket_1002",
// "session-17"). Random handles ("bsk_4f9a2c7e-...", UUIDs, "cus_9s6XKzkNRiz8i3"),
// project keys ("PROJ-123") and plain numbers are not.
func guessableHandle(v string) bool {
	i := 0
	for i < len(v) && v[i] >= 'a' && v[i] <= 'z' {
		i++
	}
	if i < 2 || i > 16 || i >= len(v) || v[i] != '_' && v[i] != '-' {
		return false
	}
	d := v[i+1:]
	if len(d) < 1 || len(d) > 9 {
		return false
	}
	for j := 0; j < len(d); j++ {
		if d[j] < '0' || d[j] > '9' {
			return false
		}
	}
	return true
}

// maxDepth bounds the walk into nested arguments.
const maxDepth = 32

// walk runs the string checks over every string leaf of v, each judged by the class
// of the top-level property it sits under.
func walk(out []Finding, v any, ptr string, cl class, roots []string, depth int) []Finding {
	if depth > maxDepth || len(out) > maxFindings && slices.ContainsFunc(out, func(f Finding) bool { return f.Refuse }) {
		return out
	}
	switch x := v.(type) {
	case string:
		fs := checkString(x, ptr, cl, roots)
		if len(out) > maxFindings { // past the cap only a refusing finding is kept
			fs = slices.DeleteFunc(fs, func(f Finding) bool { return !f.Refuse })
		}
		return append(out, fs...)
	case []any:
		for i, e := range x {
			out = walk(out, e, fmt.Sprintf("%s/%d", ptr, i), cl, roots, depth+1)
		}
	case map[string]any:
		for _, k := range sortedKeys(x) {
			out = walk(out, x[k], ptr+pointer(k), cl, roots, depth+1)
		}
	}
	return out
}

// schemaFindings turns the validator's error tree into one finding per failing leaf,
// with the pointer of the member and the keyword.
func schemaFindings(ve *jsonschema.ValidationError) []Finding {
	var out []Finding
	var visit func(e *jsonschema.ValidationError)
	visit = func(e *jsonschema.ValidationError) {
		if len(e.Causes) == 0 {
			kw := ""
			if e.ErrorKind != nil {
				if p := e.ErrorKind.KeywordPath(); len(p) > 0 {
					kw = p[len(p)-1]
				}
			}
			var b strings.Builder
			for _, tok := range e.InstanceLocation {
				b.WriteString(pointer(tok))
			}
			switch k := e.ErrorKind.(type) { // the member itself, by the name the schema or the object has
			case *kind.FalseSchema:
				kw = "false"
			case *kind.Required:
				if len(k.Missing) > 0 {
					b.WriteString(pointer(slices.Min(k.Missing)))
				}
			case *kind.AdditionalProperties:
				if len(k.Properties) > 0 { // the validator lists them in map order
					b.WriteString(pointer(slices.Min(k.Properties)))
				}
			}
			rule, refuse := RuleSchema, true
			switch kw {
			case "required", "dependentRequired", "dependencies", "minProperties":
				rule, refuse = RuleMissing, false // nothing rides on a missing member
			}
			out = append(out, Finding{Rule: rule, Pointer: b.String(), Keyword: kw, Refuse: refuse})
			return
		}
		for _, c := range e.Causes {
			visit(c)
		}
	}
	visit(ve)
	return out
}

// pointer is one RFC 6901 reference token, with its leading "/".
func pointer(tok string) string {
	tok = strings.ReplaceAll(tok, "~", "~0")
	return "/" + strings.ReplaceAll(tok, "/", "~1")
}

func sortedKeys(m map[string]any) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
