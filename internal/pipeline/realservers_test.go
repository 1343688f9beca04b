package pipeline

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestRealListingsPassStrict: the listings of 37 real servers (testdata/servers:
// 671 tools, their prompts, resources, resource templates and initialize
// instructions, written by the teams that ship them) go through the strict profile's
// filter untouched: no entry withheld or sanitized, the decision allow, so no
// finding at Medium or above. Their descriptions address the model ("Note to LLM: if
// unsure, use the collection-indexes tool") as definitions do; that is recorded at
// Info, never acted on (docs/decisions.md#definitions-address-the-model).
func TestRealListingsPassStrict(t *testing.T) {
	files, err := filepath.Glob("../../testdata/servers/*.json")
	if err != nil || len(files) < 37 {
		t.Fatalf("the real servers' listings are missing: %v %v", files, err)
	}
	n := 0
	for _, file := range files {
		b, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		var l struct {
			Instructions      string            `json:"instructions"`
			Tools             []json.RawMessage `json:"tools"`
			Prompts           []json.RawMessage `json:"prompts"`
			Resources         []json.RawMessage `json:"resources"`
			ResourceTemplates []json.RawMessage `json:"resourceTemplates"`
		}
		if err := json.Unmarshal(b, &l); err != nil {
			t.Fatalf("%s: %v", file, err)
		}
		n += len(l.Tools)
		for _, c := range []struct {
			method, key string
			entries     []json.RawMessage
		}{{"tools/list", "tools", l.Tools}, {"prompts/list", "prompts", l.Prompts}, {"resources/list", "resources", l.Resources}, {"resources/templates/list", "resourceTemplates", l.ResourceTemplates}} {
			if len(c.entries) == 0 {
				continue
			}
			result, _ := json.Marshal(map[string]any{c.key: c.entries})
			p, rec := newPipeline(t, nil, true, false)
			p.Strict = true
			r := p.Response(context.Background(), Channel{Method: c.method, Server: "real"}, response(t, string(result)))
			got := rec.recs[len(rec.recs)-1]
			if len(r.Hidden) > 0 || r.HiddenAll != nil || r.Original == nil || got.Decision != "allow" {
				t.Errorf("%s %s: strict changed a real listing: %d withheld, decision %s, rules %v", filepath.Base(file), c.method, len(r.Hidden), got.Decision, got.RuleIDs)
			}
		}
		if l.Instructions != "" {
			result, _ := json.Marshal(map[string]any{"protocolVersion": "2025-06-18", "capabilities": map[string]any{"tools": map[string]any{}},
				"serverInfo": map[string]any{"name": "real", "version": "1.0.0"}, "instructions": l.Instructions})
			p, rec := newPipeline(t, nil, true, false)
			p.Strict = true
			r := p.Response(context.Background(), Channel{Method: "initialize", Server: "real"}, response(t, string(result)))
			if len(rec.recs) > 0 {
				if got := rec.recs[len(rec.recs)-1]; got.Decision != "allow" {
					t.Errorf("%s initialize: strict judged real instructions: decision %s, rules %v", filepath.Base(file), got.Decision, got.RuleIDs)
				}
			}
			if r.Error != nil || r.Original == nil {
				t.Errorf("%s initialize: strict changed real instructions", filepath.Base(file))
			}
		}
	}
	if n < 650 {
		t.Fatalf("%d tools read, want the corpus's 671", n)
	}

	// and all 37 behind one gateway, as several servers, where two GitHub servers,
	// two file servers and Sentry beside GitHub list the same tool names: the cross-server checks withhold nothing either
	var merged []json.RawMessage
	for _, file := range files {
		b, _ := os.ReadFile(file)
		var l struct {
			Tools []map[string]any `json:"tools"`
		}
		_ = json.Unmarshal(b, &l)
		server := strings.TrimSuffix(filepath.Base(file), ".json")
		for _, tool := range l.Tools {
			tool["name"] = server + "_" + tool["name"].(string)
			e, _ := json.Marshal(tool)
			merged = append(merged, e)
		}
	}
	result, _ := json.Marshal(map[string]any{"tools": merged})
	p, rec := newPipeline(t, nil, true, false)
	p.Strict = true
	split := func(exposed string) (string, string, bool) { return strings.Cut(exposed, "_") }
	r := p.Response(context.Background(), Channel{Method: "tools/list", SplitName: split}, response(t, string(result)))
	got := rec.recs[len(rec.recs)-1]
	if len(r.Hidden) > 0 || r.HiddenAll != nil || got.Decision == "block" {
		t.Errorf("several real servers: %d withheld (%+v), decision %s, rules %v", len(r.Hidden), r.Hidden, got.Decision, got.RuleIDs)
	}
}
