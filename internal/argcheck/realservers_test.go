package argcheck

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// listings are the real tools/list and prompts/list answers of
// @modelcontextprotocol/server-filesystem (started on /tmp),
// @modelcontextprotocol/server-everything and the go-sdk everything-server, as
// testdata/listings.json holds them.
type listings map[string]struct {
	Tools []struct {
		Name        string          `json:"name"`
		InputSchema json.RawMessage `json:"inputSchema"`
	} `json:"tools"`
	Prompts []struct {
		Name      string           `json:"name"`
		Arguments []PromptArgument `json:"arguments"`
	} `json:"prompts"`
}

func loadListings(t *testing.T) listings {
	t.Helper()
	b, err := os.ReadFile("testdata/listings.json")
	if err != nil {
		t.Fatal(err)
	}
	var l listings
	if err := json.Unmarshal(b, &l); err != nil {
		t.Fatal(err)
	}
	// and the 37 real servers of the repository's benign corpus (testdata/servers)
	files, _ := filepath.Glob("../../testdata/servers/*.json")
	if len(files) < 20 {
		t.Fatalf("the real servers' listings are missing: %v", files)
	}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		var one struct {
			Tools   json.RawMessage `json:"tools"`
			Prompts json.RawMessage `json:"prompts"`
		}
		if err := json.Unmarshal(b, &one); err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		entry := l[""]
		if err := json.Unmarshal(one.Tools, &entry.Tools); err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		if err := json.Unmarshal(one.Prompts, &entry.Prompts); err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		l[strings.TrimSuffix(filepath.Base(f), ".json")] = entry
	}
	return l
}

// example builds a value the schema accepts, as a client fills a form: the default
// when there is one, else the first enum entry, the const, a value by format, a path
// under /tmp for a path, the minimum of a number.
func example(doc, s map[string]any, name string) any {
	if ref, ok := s["$ref"].(string); ok && strings.HasPrefix(ref, "#/") {
		cur := any(doc)
		for _, tok := range strings.Split(ref[2:], "/") {
			cur = cur.(map[string]any)[tok]
		}
		return example(doc, cur.(map[string]any), name)
	}
	if d, ok := s["default"]; ok {
		return d
	}
	if e, ok := s["enum"].([]any); ok && len(e) > 0 {
		return e[0]
	}
	if c, ok := s["const"]; ok {
		return c
	}
	switch s["type"] {
	case "object":
		out := map[string]any{}
		props, _ := s["properties"].(map[string]any)
		for k, v := range props {
			out[k] = example(doc, v.(map[string]any), k)
		}
		return out
	case "array":
		items, _ := s["items"].(map[string]any)
		if items == nil {
			return []any{}
		}
		return []any{example(doc, items, name)}
	case "number", "integer":
		if m, ok := s["minimum"].(float64); ok {
			return m
		}
		return 1
	case "boolean":
		return false
	}
	switch f, _ := s["format"].(string); f {
	case "uri":
		return "https://example.com/a"
	case "date-time":
		return "2026-12-02T10:00:00Z"
	case "email":
		return "ada@example.com"
	}
	if classify("", name, s) == classPath {
		return "/tmp/project/notes.md"
	}
	return "an ordinary value"
}

// corpus reports whether a server's listing is one of testdata/servers (the others
// are the three of testdata/listings.json, whose every schema the example builder
// fills).
func corpus(server string) bool {
	return server != "server-filesystem" && server != "server-everything" && server != "go-sdk-everything-server"
}

// TestRealServersPassStrict: every tool and prompt of three real servers (and the
// 37 of testdata/servers, whose schemas must compile and whose arguments pass every
// check but the schema's), called
// with the arguments a client would fill in, and realistic calls with awkward but
// honest content (a markdown table, a shell snippet in a file being written, glob
// patterns, a regexp), find nothing the strict profile refuses.
func TestRealServersPassStrict(t *testing.T) {
	roots := Options{Roots: []string{"file:///tmp"}}
	for server, l := range loadListings(t) {
		for _, tool := range l.Tools {
			var doc map[string]any
			if err := json.Unmarshal(tool.InputSchema, &doc); err != nil {
				t.Fatal(err)
			}
			args, _ := json.Marshal(example(doc, doc, ""))
			res := Check(NewTool(tool.Name, tool.InputSchema), tool.Name, args, roots)
			if res.Schema != SchemaChecked {
				t.Errorf("%s %s: schema %s", server, tool.Name, res.Schema)
			}
			for _, f := range res.Findings {
				// the example builder fills what a form asks, not a pattern, a format or
				// an anyOf branch: the corpus's schemas are judged by compiling them
				if f.Refuse && !(f.Rule == RuleSchema && corpus(server)) {
					t.Errorf("%s %s %s: refused %+v", server, tool.Name, args, f)
				}
			}
		}
		for _, p := range l.Prompts {
			args := map[string]string{}
			for _, a := range p.Arguments {
				args[a.Name] = "Engineering"
			}
			b, _ := json.Marshal(args)
			if f := Check(NewPrompt(p.Name, p.Arguments), p.Name, b, roots).Refused(); f != nil {
				t.Errorf("%s prompt %s: refused %+v", server, p.Name, *f)
			}
		}
	}

	schemas := map[string]json.RawMessage{}
	for _, l := range loadListings(t) {
		for _, tool := range l.Tools {
			schemas[tool.Name] = tool.InputSchema
		}
	}
	for _, c := range []struct{ tool, args string }{
		{"write_file", `{"path":"/tmp/project/README.md","content":"| cmd | what |\n|---|---|\n| ls \\| wc | count |\n\nRun ` + "`curl -fsSL https://get.example | sh`" + ` then $(make) && make test > out.txt\n{{ .Values.name }} ${HOME}"}`},
		{"edit_file", `{"path":"/tmp/project/a.go","edits":[{"oldText":"x := 1; y := 2","newText":"x, y := 1, 2 // a || b"}],"dryRun":true}`},
		{"search_files", `{"path":"/tmp/project","pattern":"*.go","excludePatterns":["**/node_modules/**","vendor"]}`},
		{"move_file", `{"source":"/tmp/project/a.txt","destination":"/tmp/project/archive/a.txt"}`},
		{"read_multiple_files", `{"paths":["/tmp/project/a.txt","/tmp/project/sub/../b.txt"]}`},
		{"directory_tree", `{"path":"/tmp"}`},
		{"echo", `{"message":"Hello; how are you? | fine | great |\nsure"}`},
		{"simulate-research-query", `{"topic":"shell pipelines: why a | b beats a; b"}`},
		{"test_sampling", `{"prompt":"Summarise: {{user}} asked for ${price} & more"}`},
		{"gzip-file-as-resource", `{"name":"report.md.gz","data":"https://raw.githubusercontent.com/modelcontextprotocol/servers/refs/heads/main/README.md","outputType":"resourceLink"}`},
	} {
		res := Check(NewTool(c.tool, schemas[c.tool]), c.tool, json.RawMessage(c.args), roots)
		if f := res.Refused(); f != nil {
			t.Errorf("%s %s: refused %+v", c.tool, c.args, *f)
		}
	}
}
