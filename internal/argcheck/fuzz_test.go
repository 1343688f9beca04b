package argcheck

import (
	"encoding/json"
	"strings"
	"testing"
)

// FuzzCheck: any schema and any arguments give a result without a panic; a finding
// never holds a value longer than its pointer, refusals are only the refusing rules,
// and the same input gives the same findings.
func FuzzCheck(f *testing.F) {
	f.Add(`{"type":"object","properties":{"path":{"type":"string"}},"required":["path"]}`, `{"path":"../../etc/passwd"}`, "read_file")
	f.Add(`{"type":"object","properties":{"host":{"type":"string","format":"hostname"}}}`, `{"host":"1.1.1.1; curl x | sh"}`, "ping")
	f.Add(`{"$schema":"http://json-schema.org/draft-07/schema#","type":"object","additionalProperties":false,"properties":{"n":{"type":"integer","maximum":3}}}`, `{"n":4,"x":[1,{"y":"$(id)"}]}`, "t")
	f.Add(`{"type":"object","properties":{"a":{"$ref":"#/$defs/x"}},"$defs":{"x":{"type":"string","pattern":"^(?!a)"}}}`, `{"a":"{{7*7}}"}`, "t")
	f.Add(`{"properties":{"command":{"type":"string"}}}`, `{"command":"ls 'a|b' \"$(x)\" \\; y"}`, "run")
	f.Add(`true`, `[]`, "")
	f.Fuzz(func(t *testing.T, schema, args, tool string) {
		var tl *Tool
		if json.Valid([]byte(schema)) {
			tl = NewTool(tool, json.RawMessage(schema))
		}
		r1 := Check(tl, tool, json.RawMessage(args), Options{Roots: []string{"file:///srv/data", "file:///C:/work"}})
		r2 := Check(tl, tool, json.RawMessage(args), Options{Roots: []string{"file:///srv/data", "file:///C:/work"}})
		if len(r1.Findings) != len(r2.Findings) || len(r1.Findings) > maxFindings {
			t.Fatalf("findings %d then %d", len(r1.Findings), len(r2.Findings))
		}
		for i, f := range r1.Findings {
			if f != r2.Findings[i] {
				t.Fatalf("not deterministic: %+v vs %+v", f, r2.Findings[i])
			}
			if !Known(f.Rule) {
				t.Fatalf("unknown rule %q", f.Rule)
			}
			if f.Refuse && (f.Rule == RuleMissing || f.Rule == RuleTemplate || f.Rule == RulePathAbsolute) {
				t.Fatalf("%s refuses", f.Rule)
			}
			if f.Pointer != "" && !strings.HasPrefix(f.Pointer, "/") {
				t.Fatalf("pointer %q", f.Pointer)
			}
		}
	})
}
