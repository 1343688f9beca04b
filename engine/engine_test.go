package engine

import (
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"testing"
	"unicode"
)

func TestRules(t *testing.T) {
	rules := Rules()
	if len(rules) != len(ruleTable) || len(ruleTable) <= int(numRules) {
		t.Fatalf("Rules() has %d rules, want %d (%d built-in and the catalogue's)", len(rules), len(ruleTable), numRules)
	}
	snake := regexp.MustCompile(`^[a-z][a-z0-9]*(_[a-z0-9]+)+$`)
	families := map[string]bool{FamilyTerminalEscape: true, FamilyHiddenText: true, FamilyPromptInjection: true, FamilyPII: true, FamilySecret: true, FamilyExfiltration: true, FamilyUnsafeTarget: true}
	for i, r := range rules {
		if i > 0 && rules[i-1].ID >= r.ID {
			t.Errorf("rules not sorted or duplicated at %s", r.ID)
		}
		if !snake.MatchString(r.ID) || !families[r.Family] || r.Summary == "" || r.Severity == SeverityNone {
			t.Errorf("bad rule %+v", r)
		}
		if (r.Family == FamilyPII || r.Family == FamilySecret) && r.Severity != SeverityInfo {
			t.Errorf("%s: PII and secret rules are Info by default (docs/decisions.md#severities)", r.ID)
		}
	}
	seed := map[string]Severity{
		RuleOSC52Clipboard: SeverityHigh, RuleHyperlinkMismatch: SeverityHigh,
		RuleHiddenText: SeverityMedium, RuleFakePrompt: SeverityMedium,
		RuleTitleManipulation: SeverityInfo, RuleClearScreen: SeverityInfo,
	}
	for id, sev := range seed {
		i := slices.IndexFunc(rules, func(r Rule) bool { return r.ID == id })
		if i < 0 || rules[i].Severity != sev {
			t.Errorf("core rule %s missing or not %v", id, sev)
		}
	}
}

func TestNewSeverities(t *testing.T) {
	if _, err := New(Options{Severities: map[string]Severity{"no_such_rule": SeverityHigh}}); err == nil {
		t.Error("New accepted an unknown rule id")
	}
	a, err := New(Options{Severities: map[string]Severity{RuleEmail: SeverityHigh, RuleTitleManipulation: SeverityNone}})
	if err != nil {
		t.Fatal(err)
	}
	r := a.AnalyzeText("x@example.com " + esc + "]0;t" + bel)
	if r.Verdict != Block || len(r.Findings) != 1 || r.Findings[0].Severity != SeverityHigh {
		t.Errorf("override not applied: %+v", r)
	}
	if sev, ok := a.Severity(RuleEmail); !ok || sev != SeverityHigh {
		t.Errorf("Severity(%s) = %v, %v", RuleEmail, sev, ok)
	}
	if _, ok := a.Severity("nope"); ok {
		t.Error("Severity accepted an unknown id")
	}
}

func TestAnalyzeResultPointers(t *testing.T) {
	a, _ := New(Options{})
	doc := `{"content":[{"type":"text","text":"ok"},{"type":"text","text":"mail a@b.io"},` +
		`{"type":"resource","resource":{"uri":"x","mimeType":"text/plain","blob":"eCBjQGQuaW8="}},` +
		`{"type":"resource","resource":{"uri":"x","blob":"eCBjQGQuaW8=","mimeType":"image/png"}},` +
		`{"type":"image","data":"ZUBmLmlv","mimeType":"text/plain"},` +
		`{"type":"resource_link","uri":"u","name":"n","title":"g@h.io"}],` +
		`"structuredContent":{"a/b~c":{"list":["k@l.io"]},"m@n.io":1},"_meta":{"note":"\u001b]52;c;eA==\u0007"}}`
	r, err := a.AnalyzeResult([]byte(doc))
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, f := range r.Findings {
		got = append(got, fmt.Sprintf("%s %s [%d,%d) key=%v", f.Entity, f.Pointer, f.Start, f.End, f.InKey))
	}
	want := []string{
		"email /content/1/text [5,11) key=false",
		"email /content/2/resource/blob [2,8) key=false",
		"email /content/5/title [0,6) key=false",
		"email /structuredContent/a~1b~0c/list/0 [0,6) key=false",
		"email /structuredContent/m@n.io [0,6) key=true",
		"osc52 /_meta/note [0,12) key=false",
	}
	if !slices.Equal(got, want) {
		t.Errorf("findings\n got  %q\n want %q", got, want)
	}
	if r.Verdict != Block {
		t.Errorf("verdict %v", r.Verdict)
	}
}

func TestAnalyzeErrors(t *testing.T) {
	a, _ := New(Options{})
	for _, bad := range []string{``, `null`, `[]`, `"x"`, `{`, `{"content":[}`, `{"a":1}{}`, `{"a":"\x"}`, `{"a":01}`, `{"a":tru}`,
		`{"a":` + strings.Repeat("[", maxDepth+1) + strings.Repeat("]", maxDepth+1) + `}`} {
		if _, err := a.AnalyzeResult([]byte(bad)); !errors.Is(err, ErrUndecodable) {
			t.Errorf("AnalyzeResult(%.40q) error = %v, want ErrUndecodable", bad, err)
		}
	}
	for _, args := range []string{``, `null`, ` null `} {
		if r, err := a.AnalyzeArguments([]byte(args)); err != nil || len(r.Findings) != 0 {
			t.Errorf("AnalyzeArguments(%q) = %v, %v", args, r, err)
		}
	}
	if _, err := a.AnalyzeArguments([]byte(`{"a":`)); !errors.Is(err, ErrUndecodable) {
		t.Errorf("AnalyzeArguments on bad JSON: %v", err)
	}
	r, err := a.AnalyzeArguments([]byte(`{"to":"a@b.io","x\u001b]52;c;eA==\u0007":[null,true,1.5e3]}`))
	if err != nil || !slices.Equal(kinds(r), []string{"output_osc52_clipboard_write/osc52", "pii_email/email"}) {
		t.Errorf("AnalyzeArguments = %v, %v", kinds(r), err)
	}
	if r.Findings[0].Pointer != "/to" || !r.Findings[1].InKey {
		t.Errorf("pointers: %+v", r.Findings)
	}
}

// TestScanCap: only the first MaxScanBytes bytes in total count for the verdict.
func TestScanCap(t *testing.T) {
	a, _ := New(Options{MaxScanBytes: 100})
	osc := esc + "]52;c;eA==" + bel
	r := a.AnalyzeText(strings.Repeat("x", 100) + osc)
	if r.Verdict != Allow || !r.Truncated {
		t.Errorf("past the cap: %+v", r)
	}
	r = a.AnalyzeText(strings.Repeat("x", 90) + osc)
	if r.Verdict != Block || !r.Truncated {
		t.Errorf("straddling the cap: %+v", r)
	}
	if r := a.AnalyzeText(strings.Repeat("x", 100)); r.Truncated {
		t.Error("exactly the cap is not truncated")
	}
	doc := `{"content":[{"type":"text","text":"` + strings.Repeat("y", 60) + `"},{"type":"text","text":"` + strings.Repeat("z", 60) + `"},{"type":"text","text":"\u001b]52;c;eA==\u0007"}]}`
	r, err := a.AnalyzeResult([]byte(doc))
	if err != nil || r.Verdict != Allow || !r.Truncated {
		t.Errorf("result past the cap: %+v %v", r, err)
	}
	a2, _ := New(Options{})
	if r, _ := a2.AnalyzeResult([]byte(doc)); r.Verdict != Block || r.Truncated {
		t.Errorf("default cap: %+v", r)
	}
}

// TestLargeResults: a 50 MiB result and 100,000 tiny items complete with the right
// verdict (bounded work: at most MaxScanBytes are scanned).
func TestLargeResults(t *testing.T) {
	if testing.Short() {
		t.Skip("large inputs")
	}
	a, _ := New(Options{})
	var b strings.Builder
	b.WriteString(`{"content":[{"type":"text","text":"` + esc + `]52;c;eA==` + bel + `"},{"type":"text","text":"`)
	for b.Len() < 50<<20 {
		b.WriteString(`log line with \u001b[32mcolour\u001b[0m and a@b.io\n`)
	}
	b.WriteString(`"}]}`)
	r, err := a.AnalyzeResult([]byte(b.String()))
	if err != nil || r.Verdict != Block || !r.Truncated {
		t.Errorf("50 MiB result: verdict %v truncated %v err %v", r.Verdict, r.Truncated, err)
	}
	if len(r.Findings) > maxFindings {
		t.Errorf("%d findings kept", len(r.Findings))
	}
	b.Reset()
	b.WriteString(`{"content":[`)
	for i := range 100000 {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(`{"type":"text","text":"ok"}`)
	}
	b.WriteString(`,{"type":"text","text":"\u202e"}]}`)
	r, err = a.AnalyzeResult([]byte(b.String()))
	if err != nil || r.Verdict != Warn || r.Truncated || len(r.Findings) != 1 || r.Findings[0].Pointer != "/content/100000/text" {
		t.Errorf("100,000 items: %+v %v", r.Findings, err)
	}
	out, err := SanitizeResult([]byte(b.String()))
	if err != nil || strings.Contains(string(out), `\u202e`) || strings.ContainsRune(string(out), 0x202E) {
		t.Errorf("SanitizeResult on 100,000 items: %v", err)
	}
}

func TestCleanResultNoAlloc(t *testing.T) {
	a, _ := New(Options{})
	doc := []byte(`{"content":[{"type":"text","text":"` + strings.Repeat(`The build finished in 4.2 s; 17 tests passed.\n`, 80) + `"}],"structuredContent":{"ok":true,"files":["a.go","b.go"]},"isError":false}`)
	a.AnalyzeResult(doc)
	if n := testing.AllocsPerRun(100, func() { a.AnalyzeResult(doc) }); n != 0 {
		t.Errorf("AnalyzeResult allocates %v times on a clean result", n)
	}
	if n := testing.AllocsPerRun(100, func() { a.AnalyzeText(cleanProse) }); n != 0 {
		t.Errorf("AnalyzeText allocates %v times on clean text", n)
	}
}

func TestConcurrentUse(t *testing.T) {
	a, _ := New(Options{})
	done := make(chan Report)
	for range 8 {
		go func() { done <- a.AnalyzeText("a@b.io " + esc + "]52;c;eA==" + bel) }()
	}
	for range 8 {
		if r := <-done; len(r.Findings) != 2 || r.Verdict != Block {
			t.Errorf("concurrent report %+v", r)
		}
	}
}

// TestRuleSummariesAreClean: explaining a rule (mcp-server's explain_rule, mcpgate
// rules) must not trip the rules it explains.
func TestRuleSummariesAreClean(t *testing.T) {
	a, _ := New(Options{})
	for _, r := range Rules() {
		if rep := a.AnalyzeText(r.ID + ": " + r.Summary); len(rep.Findings) != 0 {
			t.Errorf("summary of %s fires %v", r.ID, rep.RuleIDs())
		}
	}
}

// TestDefaultIgnorable pins the derived Default_Ignorable_Code_Point class against
// members and non-members named in DerivedCoreProperties.txt.
func TestDefaultIgnorable(t *testing.T) {
	in := []rune{0x00AD, 0x034F, 0x061C, 0x115F, 0x1160, 0x17B4, 0x17B5, 0x180B, 0x180E, 0x180F,
		0x200B, 0x200F, 0x202E, 0x2060, 0x206F, 0x3164, 0xFE00, 0xFE0F, 0xFEFF, 0xFFA0, 0xFFF0,
		0xFFF8, 0x1BCA0, 0x1BCA3, 0x1D173, 0x1D17A, 0xE0000, 0xE0001, 0xE007F, 0xE0100, 0xE0FFF}
	out := []rune{'a', ' ', 0x00A0, 0x0600, 0x06DD, 0x1680, 0x2000, 0x3000, 0xFFF9, 0xFFFB, 0x13430, 0x110BD, 0x1F600, 0xE1000}
	for _, r := range in {
		if !unicode.Is(defaultIgnorable, r) {
			t.Errorf("U+%04X is Default_Ignorable_Code_Point", r)
		}
	}
	for _, r := range out {
		if unicode.Is(defaultIgnorable, r) {
			t.Errorf("U+%04X is not Default_Ignorable_Code_Point", r)
		}
	}
	for r := rune(0); r < 0x10000; r++ {
		want := unicode.Is(defaultIgnorable, r) && r >= 0xAD && r != 0x200E && r != 0x200F && r != 0x061C
		if isCarrier(r) != want {
			t.Fatalf("isCarrier(U+%04X) = %v", r, !want)
		}
	}
}

// TestRuleCatalogue: every rule has a known family and a summary; PII and secret
// rules are Info by default (docs/decisions.md#severities) and redactable; nothing
// else is.
func TestRuleCatalogue(t *testing.T) {
	families := map[string]bool{FamilyTerminalEscape: true, FamilyHiddenText: true, FamilyPromptInjection: true, FamilyPII: true, FamilySecret: true, FamilyExfiltration: true, FamilyUnsafeTarget: true}
	for i, r := range ruleTable {
		if r.ID == "" || !families[r.Family] || r.Summary == "" || r.Severity == SeverityNone {
			t.Errorf("rule %d: %+v", i, r)
		}
		data := r.Family == FamilyPII || r.Family == FamilySecret
		if data && r.Severity != SeverityInfo {
			t.Errorf("%s: default %v, want INFO", r.ID, r.Severity)
		}
		if ruleIndex(i).isRedactable() != data {
			t.Errorf("%s: redactable %v", r.ID, !data)
		}
		if !strings.HasPrefix(r.ID, map[bool]string{true: r.Family[:3], false: "output_"}[data]) {
			t.Errorf("%s: id does not start with its family's prefix", r.ID)
		}
	}
}
