package engine

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite the golden files under testdata/engine/")

// sample is one corpus entry: a plain text, a CallToolResult or tools/call arguments,
// with the rule ids it must trigger (none for the benign corpus).
type sample struct {
	Name      string          `json:"name"`
	Text      *string         `json:"text,omitempty"`
	Result    json.RawMessage `json:"result,omitempty"`
	Arguments json.RawMessage `json:"arguments,omitempty"`
	Rules     []string        `json:"rules"`
	file      string
}

func (s sample) analyze(t testing.TB, a *Analyzer) Report {
	t.Helper()
	switch {
	case s.Text != nil:
		return a.AnalyzeText(*s.Text)
	case s.Result != nil:
		r, err := a.AnalyzeResult(s.Result)
		if err != nil {
			t.Fatalf("%s: %v", s.file, err)
		}
		return r
	default:
		r, err := a.AnalyzeArguments(s.Arguments)
		if err != nil {
			t.Fatalf("%s: %v", s.file, err)
		}
		return r
	}
}

func loadHostile(t testing.TB) []sample {
	t.Helper()
	files, err := filepath.Glob("../testdata/engine/hostile/*.json")
	if err != nil || len(files) == 0 {
		t.Fatalf("no hostile corpus: %v", err)
	}
	var out []sample
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		var s sample
		if err := json.Unmarshal(b, &s); err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		if len(s.Rules) == 0 {
			t.Fatalf("%s: a hostile sample must name the rules it triggers", f)
		}
		for _, id := range s.Rules {
			if _, ok := ruleByID[id]; !ok {
				t.Fatalf("%s: unknown rule %q", f, id)
			}
		}
		s.file = filepath.Base(f)
		out = append(out, s)
	}
	return out
}

// loadBenign reads testdata/engine/benign: *.json as results, anything else as text.
func loadBenign(t testing.TB) []sample {
	t.Helper()
	files, err := filepath.Glob("../testdata/engine/benign/*")
	if err != nil || len(files) == 0 {
		t.Fatalf("no benign corpus: %v", err)
	}
	var out []sample
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		s := sample{Name: filepath.Base(f), file: filepath.Base(f)}
		if strings.HasSuffix(f, ".json") {
			s.Result = b
		} else {
			txt := string(b)
			s.Text = &txt
		}
		out = append(out, s)
	}
	return out
}

// publicCase is one file of testdata/cases (the public output-filter cases,
// docs/decisions.md#public-cases) or a tools/call case of testdata/report-cases (the
// classes of public reports; their other channels are tested where those are read).
type publicCase struct {
	Name   string          `json:"name"`
	Result json.RawMessage `json:"result"`
	Expect struct {
		Outcome      string   `json:"outcome"`
		Rule         string   `json:"rule"`
		RulePrefix   string   `json:"rule_prefix"`
		NoRulePrefix string   `json:"no_rule_prefix"`
		Absent       []string `json:"absent"`
		Present      []string `json:"present"`
	} `json:"expect"`
	file string
}

func loadPublicCases(t testing.TB) []publicCase {
	t.Helper()
	files, err := filepath.Glob("../testdata/cases/*.json")
	if err != nil || len(files) == 0 {
		t.Fatalf("no public cases: %v", err)
	}
	reports, err := filepath.Glob("../testdata/report-cases/*.json")
	if err != nil || len(reports) == 0 {
		t.Fatalf("no report cases: %v", err)
	}
	files = append(files, reports...)
	var out []publicCase
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		var c publicCase
		if err := json.Unmarshal(b, &c); err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		var tier struct {
			Tier string `json:"tier"`
		}
		if json.Unmarshal(b, &tier); tier.Tier == "channel" {
			continue // its result is only a control; the channel's own tests read it
		}
		c.file = filepath.Base(f)
		out = append(out, c)
	}
	return out
}

// TestPublicCases checks the verdict, rule id and Warn sanitizing of every public case.
func TestPublicCases(t *testing.T) {
	a, _ := New(Options{})
	for _, c := range loadPublicCases(t) {
		t.Run(c.file, func(t *testing.T) {
			r, err := a.AnalyzeResult(c.Result)
			if err != nil {
				t.Fatal(err)
			}
			switch c.Expect.Outcome {
			case "block":
				if r.Verdict != Block {
					t.Errorf("verdict %v, want block (%v)", r.Verdict, r.Findings)
				}
			case "warn":
				if r.Verdict != Warn {
					t.Errorf("verdict %v, want warn (%v)", r.Verdict, r.Findings)
				}
			case "warn-or-block":
				if r.Verdict == Allow {
					t.Errorf("verdict allow, want warn or block")
				}
			case "allow-unchanged":
				if r.Verdict != Allow {
					t.Errorf("verdict %v, want allow (%v)", r.Verdict, r.Findings)
				}
				if c.Expect.Rule == "" && len(r.Findings) != 0 {
					t.Errorf("want no finding at all, got %v", r.Findings)
				}
			case "not-block":
				if r.Verdict == Block {
					t.Errorf("verdict block, want anything else (%v)", r.Findings)
				}
			case "not-allow-unchanged":
				if r.Verdict == Allow {
					t.Errorf("verdict allow")
				}
			default:
				t.Fatalf("unknown outcome %q", c.Expect.Outcome)
			}
			if c.Expect.Rule != "" && !slices.Contains(r.RuleIDs(), c.Expect.Rule) {
				t.Errorf("rule ids %v lack %s", r.RuleIDs(), c.Expect.Rule)
			}
			hasPrefix := func(p string) bool {
				return slices.ContainsFunc(r.RuleIDs(), func(id string) bool { return strings.HasPrefix(id, p) })
			}
			if p := c.Expect.RulePrefix; p != "" && !hasPrefix(p) {
				t.Errorf("rule ids %v lack one starting %s", r.RuleIDs(), p)
			}
			if p := c.Expect.NoRulePrefix; p != "" && hasPrefix(p) {
				t.Errorf("rule ids %v hold one starting %s (a false positive)", r.RuleIDs(), p)
			}
			if c.Expect.Outcome != "warn" {
				return
			}
			clean, err := SanitizeResult(c.Result)
			if err != nil {
				t.Fatal(err)
			}
			texts := allStrings(t, clean)
			for _, s := range c.Expect.Absent {
				for _, x := range texts {
					if strings.Contains(x, s) {
						t.Errorf("sanitized result still holds %q", s)
					}
				}
			}
			for _, s := range c.Expect.Present {
				if !slices.ContainsFunc(texts, func(x string) bool { return strings.Contains(x, s) }) {
					t.Errorf("sanitized result lacks %q", s)
				}
			}
		})
	}
}

// allStrings returns every string value and member name of a JSON document.
func allStrings(t testing.TB, doc []byte) []string {
	t.Helper()
	var v any
	if err := json.Unmarshal(doc, &v); err != nil {
		t.Fatalf("not JSON: %v\n%s", err, doc)
	}
	var out []string
	var walk func(any)
	walk = func(v any) {
		switch x := v.(type) {
		case string:
			out = append(out, x)
		case []any:
			for _, e := range x {
				walk(e)
			}
		case map[string]any:
			for k, e := range x {
				out = append(out, k)
				walk(e)
			}
		}
	}
	walk(v)
	return out
}

// TestBenignCorpus: no benign sample may produce any finding, at any severity.
func TestBenignCorpus(t *testing.T) {
	a, _ := New(Options{})
	for _, s := range loadBenign(t) {
		if r := s.analyze(t, a); len(r.Findings) != 0 {
			t.Errorf("benign %s: %d findings, first %+v", s.file, len(r.Findings), r.Findings[0])
		}
	}
}

// TestHostileCorpus: every hostile sample triggers exactly the rules it names; the
// findings are compared with testdata/engine/hostile.golden.
func TestHostileCorpus(t *testing.T) {
	a, _ := New(Options{})
	var golden bytes.Buffer
	for _, s := range loadHostile(t) {
		r := s.analyze(t, a)
		want := slices.Clone(s.Rules)
		sort.Strings(want)
		if got := r.RuleIDs(); !slices.Equal(got, want) {
			t.Errorf("%s: rule ids %v, want %v\n%v", s.file, got, want, r.Findings)
		}
		fmt.Fprintf(&golden, "%s verdict=%s\n", s.file, r.Verdict)
		for _, f := range r.Findings {
			fmt.Fprintf(&golden, "  %s %s %s %q [%d,%d) key=%v\n", f.RuleID, f.Severity, f.Entity, f.Pointer, f.Start, f.End, f.InKey)
		}
	}
	checkGolden(t, "hostile.golden", golden.Bytes())
}

func checkGolden(t *testing.T, name string, got []byte) {
	t.Helper()
	path := filepath.Join("..", "testdata", "engine", name)
	if *update {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test ./engine/ -update)", err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("%s differs from the golden file; run go test ./engine/ -update and review git diff\n--- got\n%s", name, got)
	}
}

// publicCaseRules names the rule of public cases whose expect has none.
var publicCaseRules = map[string]string{
	"hidden-zero-width-run.json":   RuleHiddenText,
	"x-bidi-override.json":         RuleHiddenText,
	"x-chatml.json":                RulePromptInjection + "," + RuleDirectiveToModel,
	"x-image-rides-block.json":     RuleOSC52Clipboard,
	"x-system-reminder.json":       RulePromptInjection,
	"x-tags-smuggling.json":        RuleHiddenText,
	"x-warn-is-error-kept.json":    RuleHiddenText,
	"x-warn-keeps-crlf.json":       RuleHiddenText,
	"x-secret-canary.json":         RuleAWSAccessKey,
	"terminal-mouse-tracking.json": RuleTerminalInputMode,

	"html-comment-instructions.json":        RuleHiddenInstruction + "," + RuleDirectiveToModel,
	"html-img-exfil.json":                   RuleExfilURL,
	"osc7-osc1337-cwd-spoof.json":           RuleShellIntegration,
	"osc8-smb-scheme.json":                  RuleHyperlinkScheme,
	"resource-link-file-outside-roots.json": RuleSSRFTarget + "," + RuleIPAddress,
	"github-app-stateless-token.json":       RuleGitHubToken,
	"google-oauth-refresh-token.json":       RuleGoogleOAuth,
	"telegram-bot-token-in-env.json":        RuleTelegramBot,
	"cloudflare-token-json.json":            RuleCloudflareToken,
}

// TestPrecisionRecall computes precision and recall per rule family over the benign
// corpus, the hostile corpus and the public cases, writes the table to
// testdata/engine/metrics.golden (quoted in docs/engine.md), and requires both to be 1.
func TestPrecisionRecall(t *testing.T) {
	a, _ := New(Options{})
	type counts struct{ tp, fp, fn, samples int }
	per := map[string]*counts{}
	for _, r := range ruleTable {
		per[r.Family] = &counts{}
	}
	score := func(expected, fired []string, name string) {
		fam := func(ids []string) map[string]bool {
			m := map[string]bool{}
			for _, id := range ids {
				m[ruleTable[ruleByID[id]].Family] = true
			}
			return m
		}
		e, f := fam(expected), fam(fired)
		sampleName := name
		for name, c := range per {
			if e[name] {
				c.samples++
			}
			switch {
			case e[name] && f[name]:
				c.tp++
			case f[name]:
				c.fp++
				t.Logf("false positive: %s in %s", name, sampleName)
			case e[name]:
				c.fn++
			}
		}
	}
	nb, nh, np := 0, 0, 0
	for _, s := range loadBenign(t) {
		score(nil, s.analyze(t, a).RuleIDs(), s.file)
		nb++
	}
	for _, s := range loadHostile(t) {
		score(s.Rules, s.analyze(t, a).RuleIDs(), s.file)
		nh++
	}
	for _, c := range loadPublicCases(t) {
		r, err := a.AnalyzeResult(c.Result)
		if err != nil {
			t.Fatal(err)
		}
		var want []string
		if id, ok := publicCaseRules[c.file]; ok {
			want = append(want, strings.Split(id, ",")...)
		} else if c.Expect.Rule != "" {
			want = append(want, c.Expect.Rule)
		} else if p := c.Expect.RulePrefix; p != "" {
			for _, r := range ruleTable {
				if strings.HasPrefix(r.ID, p) {
					want = append(want, r.ID) // the family is what is scored
					break
				}
			}
		}
		score(want, r.RuleIDs(), c.file)
		np++
	}
	var b bytes.Buffer
	fmt.Fprintf(&b, "Corpora: %d benign, %d hostile, %d public cases.\n\n", nb, nh, np)
	fmt.Fprintf(&b, "| family | positive samples | TP | FP | FN | precision | recall |\n|---|---|---|---|---|---|---|\n")
	fams := make([]string, 0, len(per))
	for f := range per {
		fams = append(fams, f)
	}
	sort.Strings(fams)
	ratio := func(a, b int) string {
		if b == 0 {
			return "n/a"
		}
		return fmt.Sprintf("%.3f", float64(a)/float64(b))
	}
	for _, f := range fams {
		c := per[f]
		fmt.Fprintf(&b, "| %s | %d | %d | %d | %d | %s | %s |\n", f, c.samples, c.tp, c.fp, c.fn, ratio(c.tp, c.tp+c.fp), ratio(c.tp, c.tp+c.fn))
		if c.fp != 0 || c.fn != 0 {
			t.Errorf("family %s: %d false positives, %d false negatives", f, c.fp, c.fn)
		}
		if c.samples == 0 {
			t.Errorf("family %s has no positive sample", f)
		}
	}
	// per rule, for the rules added for the 2026 reports: the corpora and the public
	// cases above, plus TestClasses2026's positives and look-alikes
	type rc struct{ tp, fp, fn int }
	perRule := map[string]*rc{}
	newRules := []string{RuleExfilURL, RuleHiddenInstruction, RuleInjectedOrders, RuleSSRFTarget, RuleShellIntegration, RuleHyperlinkScheme,
		RuleUSSSN, RulePaymentCard, RuleGitHubToken, RuleGoogleOAuth, RuleTelegramBot, RuleSupabaseKey, RuleStripeWebhook,
		RuleCloudflareToken, RuleDirectiveToModel, RuleSecrecyOrder, RulePromptRequest, RuleEscalatingError, RuleEncodedOrders}
	for _, id := range newRules {
		perRule[id] = &rc{}
	}
	scoreRule := func(expected, fired []string) {
		for id, c := range perRule {
			e, f := slices.Contains(expected, id), slices.Contains(fired, id)
			switch {
			case e && f:
				c.tp++
			case f:
				c.fp++
			case e:
				c.fn++
			}
		}
	}
	for _, s := range loadBenign(t) {
		scoreRule(nil, s.analyze(t, a).RuleIDs())
	}
	for _, s := range loadHostile(t) {
		scoreRule(s.Rules, s.analyze(t, a).RuleIDs())
	}
	for _, c := range loadPublicCases(t) {
		r, _ := a.AnalyzeResult(c.Result)
		var want []string
		if id, ok := publicCaseRules[c.file]; ok {
			want = strings.Split(id, ",")
		} else if c.Expect.Rule != "" {
			want = []string{c.Expect.Rule}
		}
		scoreRule(want, r.RuleIDs())
	}
	nc := 0
	for _, c := range append(classes2026Cases(), contentClassCases()...) {
		scoreRule(c.want, a.AnalyzeText(c.text).RuleIDs())
		nc++
	}
	fmt.Fprintf(&b, "\nPer rule, the rules added for the 2026 reports (the corpora above and %d table cases, positives and look-alikes):\n\n", nc)
	fmt.Fprintf(&b, "| rule | TP | FP | FN | precision | recall |\n|---|---|---|---|---|---|\n")
	for _, id := range newRules {
		c := perRule[id]
		fmt.Fprintf(&b, "| %s | %d | %d | %d | %s | %s |\n", id, c.tp, c.fp, c.fn, ratio(c.tp, c.tp+c.fp), ratio(c.tp, c.tp+c.fn))
		if c.fp != 0 || c.fn != 0 {
			t.Logf("rule %s: %d false positives, %d false negatives", id, c.fp, c.fn)
		}
	}
	checkGolden(t, "metrics.golden", b.Bytes())
}
