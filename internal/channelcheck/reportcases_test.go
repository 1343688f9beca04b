package channelcheck

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
)

// TestReportCasesElicitation reads the input_required cases of testdata/report-cases
// (copied from the public reports' set, docs/decisions.md#public-cases) and checks
// each elicitation/create entry: one the case expects withheld gets a High finding,
// a look-alike expected shown gets none. The binary's side of the same cases is
// the shared channel runner's.
func TestReportCasesElicitation(t *testing.T) {
	files, err := filepath.Glob("../../testdata/report-cases/*.json")
	if err != nil || len(files) == 0 {
		t.Fatalf("no report cases: %v", err)
	}
	n := 0
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		var c struct {
			Channel struct {
				Kind       string `json:"kind"`
				CallResult struct {
					InputRequests map[string]struct {
						Method string          `json:"method"`
						Params json.RawMessage `json:"params"`
					} `json:"inputRequests"`
				} `json:"callResult"`
				Expect json.RawMessage `json:"expect"`
			} `json:"channel"`
		}
		if err := json.Unmarshal(b, &c); err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		if c.Channel.Kind != "input_required" {
			continue
		}
		var expect struct {
			Withheld bool `json:"withheld"`
			Shown    bool `json:"shown"`
		}
		if err := json.Unmarshal(c.Channel.Expect, &expect); err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		for key, r := range c.Channel.CallResult.InputRequests {
			if r.Method != "elicitation/create" {
				continue
			}
			n++
			got := Elicitation(r.Params)
			switch {
			case expect.Withheld && len(got) == 0:
				t.Errorf("%s %s: no finding, want the request withheld", filepath.Base(f), key)
			case expect.Shown && len(got) != 0:
				t.Errorf("%s %s: findings %v, want none (a look-alike)", filepath.Base(f), key, got)
			}
		}
	}
	if n < 3 {
		t.Errorf("only %d elicitation entries read", n)
	}
}
