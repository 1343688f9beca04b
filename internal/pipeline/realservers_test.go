package pipeline

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestRealListingsPassStrict: the listings of 22 real servers (testdata/servers:
// 368 tools and their prompts, written by the teams that ship them) go through the
// strict profile's listing filter untouched: no entry withheld or sanitized, the
// decision allow. Their descriptions address the model ("Note to LLM: if unsure,
// use the collection-indexes tool") as definitions do; that is recorded, never acted
// on (docs/decisions.md#definitions-address-the-model).
func TestRealListingsPassStrict(t *testing.T) {
	files, err := filepath.Glob("../../testdata/servers/*.json")
	if err != nil || len(files) < 20 {
		t.Fatalf("the real servers' listings are missing: %v %v", files, err)
	}
	n := 0
	for _, file := range files {
		b, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		var l struct {
			Tools   []json.RawMessage `json:"tools"`
			Prompts []json.RawMessage `json:"prompts"`
		}
		if err := json.Unmarshal(b, &l); err != nil {
			t.Fatalf("%s: %v", file, err)
		}
		n += len(l.Tools)
		for method, entries := range map[string][]json.RawMessage{"tools/list": l.Tools, "prompts/list": l.Prompts} {
			if len(entries) == 0 {
				continue
			}
			key := map[string]string{"tools/list": "tools", "prompts/list": "prompts"}[method]
			result, _ := json.Marshal(map[string]any{key: entries})
			p, rec := newPipeline(t, nil, true, false)
			p.Strict = true
			r := p.Response(context.Background(), Channel{Method: method, Server: "real"}, response(t, string(result)))
			got := rec.recs[len(rec.recs)-1]
			if len(r.Hidden) > 0 || r.HiddenAll != nil || r.Original == nil || got.Decision != "allow" {
				t.Errorf("%s %s: strict changed a real listing: %d withheld, decision %s, rules %v", filepath.Base(file), method, len(r.Hidden), got.Decision, got.RuleIDs)
			}
		}
	}
	if n < 350 {
		t.Fatalf("%d tools read, want the corpus's 368", n)
	}

	// and all 22 behind one gateway, as several servers, where two GitHub servers
	// list the same tool names: the cross-server checks withhold nothing either
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
