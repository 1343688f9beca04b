package engine

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// classFile is one file of testdata/engine/classes: a class of inputs that public
// reports showed other detectors missing or getting wrong, with positives and
// look-alike negatives (docs/engine.md, "Quality").
type classFile struct {
	Class   string `json:"class"`
	Rules   string `json:"rules"` // a rule id or id prefix: a finding of it counts as "found"
	Samples []struct {
		Name     string          `json:"name"`
		Text     *string         `json:"text"`
		Result   json.RawMessage `json:"result"`
		Stream   *streamSample   `json:"stream"`
		Rule     string          `json:"rule"`     // positive: a rule id (or prefix) that must fire; "" negative
		Redacted *string         `json:"redacted"` // what Redact(text, redact, [Rules]) must return
	} `json:"samples"`
}

// streamSample is a long text for AnalyzeReader: size bytes of clean prose with
// insert placed at byte at.
type streamSample struct {
	Size   int    `json:"size"`
	At     int    `json:"at"`
	Insert string `json:"insert"`
}

func (s streamSample) text() string {
	clean := repeatTo(cleanProse, s.Size)
	return clean[:s.At] + s.Insert + clean[s.At:]
}

// TestClasses scores every class of testdata/engine/classes and writes the table to
// testdata/engine/classes.golden (quoted in docs/engine.md). Every positive must be
// found by its rule and no negative by the class's rules.
func TestClasses(t *testing.T) {
	files, err := filepath.Glob("../testdata/engine/classes/*.json")
	if err != nil || len(files) == 0 {
		t.Fatalf("no class files: %v", err)
	}
	a, _ := New(Options{MaxScanBytes: 1 << 30})
	var b bytes.Buffer
	b.WriteString("| class | rules | inputs | positives | TP | FP | FN | TN | precision | recall |\n|---|---|---|---|---|---|---|---|---|---|\n")
	for _, f := range files {
		raw, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		var c classFile
		if err := json.Unmarshal(raw, &c); err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		var tp, fp, fn, tn, pos int
		for _, s := range c.Samples {
			var rep Report
			switch {
			case s.Text != nil:
				rep = a.AnalyzeText(*s.Text)
			case s.Result != nil:
				if rep, err = a.AnalyzeResult(s.Result); err != nil {
					t.Fatalf("%s/%s: %v", c.Class, s.Name, err)
				}
			case s.Stream != nil:
				sr, err := a.AnalyzeReader(strings.NewReader(s.Stream.text()))
				if err != nil || sr.BytesRead != int64(s.Stream.Size+len(s.Stream.Insert)) {
					t.Fatalf("%s/%s: read %d, %v", c.Class, s.Name, sr.BytesRead, err)
				}
				rep = sr.Report
			default:
				t.Fatalf("%s/%s: no text, result or stream", c.Class, s.Name)
			}
			fired, named := false, false
			for _, fd := range rep.Findings {
				fired = fired || strings.HasPrefix(fd.RuleID, c.Rules)
				named = named || s.Rule != "" && strings.HasPrefix(fd.RuleID, s.Rule)
			}
			switch {
			case s.Rule != "" && named:
				tp++
			case s.Rule != "":
				fn++
				t.Errorf("%s: positive %q not found by %s: %v", c.Class, s.Name, s.Rule, rep.RuleIDs())
			case fired:
				fp++
				t.Errorf("%s: negative %q found: %v", c.Class, s.Name, rep.Findings)
			default:
				tn++
			}
			if s.Rule != "" {
				pos++
			}
			if s.Redacted != nil {
				if got, _ := a.Redact(*s.Text, StrategyRedact, []string{c.Rules}); got != *s.Redacted {
					t.Errorf("%s: %q redacted to %q, want %q", c.Class, s.Name, got, *s.Redacted)
				}
			}
		}
		if pos < 5 || len(c.Samples)-pos < 4 {
			t.Errorf("%s: %d positives and %d negatives; a class needs at least 5 and 4", c.Class, pos, len(c.Samples)-pos)
		}
		ratio := func(x, y int) string {
			if y == 0 {
				return "n/a"
			}
			return fmt.Sprintf("%.3f", float64(x)/float64(y))
		}
		fmt.Fprintf(&b, "| %s | `%s` | %d | %d | %d | %d | %d | %d | %s | %s |\n", c.Class, c.Rules, len(c.Samples), pos, tp, fp, fn, tn, ratio(tp, tp+fp), ratio(tp, tp+fn))
	}
	checkGolden(t, "classes.golden", b.Bytes())
}
