package engine

import (
	"encoding/json"
	"flag"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"
)

// examplesFile holds every gitleaks default rule's own examples (the true and false
// positives its generator validates the rule with), extracted from the pinned
// module by TestGitleaksExamples -update.
const examplesFile = "../testdata/engine/gitleaks/examples.json"

// updateGitleaks re-extracts the examples (the generators draw random secrets, so
// -update alone leaves the file as it is).
var updateGitleaks = flag.Bool("update-gitleaks", false, "re-extract testdata/engine/gitleaks/examples.json from the pinned gitleaks module")

type gitleaksExamples struct {
	Version string                     `json:"version"`
	Rules   map[string]gitleaksExample `json:"rules"`
}

type gitleaksExample struct {
	TP []string `json:"tp"`
	FP []string `json:"fp"`
	// path-scoped examples (file name → content): the rule applies only to such
	// files, which a tool result is not, so they are kept but not asserted
	TPPaths map[string]string `json:"tp_paths,omitempty"`
	FPPaths map[string]string `json:"fp_paths,omitempty"`
}

// extractorRecord is the recorder that replaces utils.Validate in the copied rule
// sources: it keeps each rule's examples (gitleaks' own generator validates them).
const extractorRecord = `package rules

import "github.com/zricethezav/gitleaks/v8/config"

type Example struct {
	TP      []string          ` + "`json:\"tp\"`" + `
	FP      []string          ` + "`json:\"fp\"`" + `
	TPPaths map[string]string ` + "`json:\"tp_paths,omitempty\"`" + `
	FPPaths map[string]string ` + "`json:\"fp_paths,omitempty\"`" + `
}

var Recorded = map[string]Example{}

func validate(r config.Rule, tps, fps []string) *config.Rule {
	e := Recorded[r.RuleID]
	e.TP, e.FP = append(e.TP, tps...), append(e.FP, fps...)
	Recorded[r.RuleID] = e
	return &r
}

func validateWithPaths(r config.Rule, tps, fps map[string]string) *config.Rule {
	e := Recorded[r.RuleID]
	if e.TPPaths == nil {
		e.TPPaths, e.FPPaths = map[string]string{}, map[string]string{}
	}
	for k, v := range tps {
		e.TPPaths[k] = v
	}
	for k, v := range fps {
		e.FPPaths[k] = v
	}
	Recorded[r.RuleID] = e
	return &r
}
`

// extractGitleaksExamples copies the pinned module's rule generators into a
// scratch package of this module with utils.Validate swapped for the recorder,
// runs every rule the default configuration lists, and returns what was recorded.
func extractGitleaksExamples(t *testing.T, version string) gitleaksExamples {
	out, err := exec.Command("go", "list", "-m", "-f", "{{.Dir}}", "github.com/zricethezav/gitleaks/v8").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	src := filepath.Join(strings.TrimSpace(string(out)), "cmd", "generate", "config")
	dir := "_gitleaks_extract" // '_': never part of ./...
	os.RemoveAll(dir)
	defer os.RemoveAll(dir)
	if err := os.MkdirAll(filepath.Join(dir, "rules"), 0o755); err != nil {
		t.Fatal(err)
	}
	files, _ := filepath.Glob(filepath.Join(src, "rules", "*.go"))
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		s := strings.ReplaceAll(string(b), "utils.ValidateWithPaths(", "validateWithPaths(")
		s = strings.ReplaceAll(s, "utils.Validate(", "validate(")
		if strings.Contains(s, "config/utils\"") && !strings.Contains(s, "utils.") {
			s += "\nvar _ = utils.Validate\n" // the import stays used
		}
		if err := os.WriteFile(filepath.Join(dir, "rules", filepath.Base(f)), []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(dir, "rules", "zz_record.go"), []byte(extractorRecord), 0o644); err != nil {
		t.Fatal(err)
	}
	mainSrc, err := os.ReadFile(filepath.Join(src, "main.go"))
	if err != nil {
		t.Fatal(err)
	}
	calls := regexp.MustCompile(`(?m)^\s*rules\.[A-Za-z0-9_]+\(\)`).FindAllString(string(mainSrc), -1) // not the commented-out ones
	prog := "package main\n\nimport (\n\t\"encoding/json\"\n\t\"os\"\n\n\trules \"github.com/mcpgate/mcpgate/engine/_gitleaks_extract/rules\"\n)\n\nfunc main() {\n"
	for _, c := range calls {
		prog += "\t" + c + "\n"
	}
	prog += "\tjson.NewEncoder(os.Stdout).Encode(rules.Recorded)\n}\n"
	if err := os.WriteFile(filepath.Join(dir, "main.go"), []byte(prog), 0o644); err != nil {
		t.Fatal(err)
	}
	// -mod=mod lets the scratch program's imports resolve; go.mod and go.sum are
	// restored after it
	gomod, _ := os.ReadFile("../go.mod")
	gosum, _ := os.ReadFile("../go.sum")
	defer func() { os.WriteFile("../go.mod", gomod, 0o644); os.WriteFile("../go.sum", gosum, 0o644) }()
	cmd := exec.Command("go", "run", "-mod=mod", "./"+dir)
	cmd.Stderr = os.Stderr
	js, err := cmd.Output()
	if err != nil {
		t.Fatalf("extractor: %v", err)
	}
	ex := gitleaksExamples{Version: version}
	if err := json.Unmarshal(js, &ex.Rules); err != nil {
		t.Fatal(err)
	}
	return ex
}

// TestGitleaksExamples runs every gitleaks default rule's own examples through the
// analyzer: each true positive yields a secret finding (from the catalogue rule, or
// from the hand rule that ports it), and no false positive yields a finding of that
// rule. Rules scoped to file paths are skipped (a tool result has no path).
func TestGitleaksExamples(t *testing.T) {
	version := pinnedGitleaks(t)
	var ex gitleaksExamples
	if *updateGitleaks {
		ex = extractGitleaksExamples(t, version)
		b, _ := json.MarshalIndent(ex, "", " ")
		if err := os.WriteFile(examplesFile, append(b, '\n'), 0o644); err != nil {
			t.Fatal(err)
		}
	} else {
		b, err := os.ReadFile(examplesFile)
		if err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal(b, &ex); err != nil {
			t.Fatal(err)
		}
	}
	if ex.Version != version {
		t.Fatalf("%s is from gitleaks %s, go.mod pins %s: run go test ./engine -run TestGitleaksExamples -update-gitleaks", examplesFile, ex.Version, version)
	}
	byID := map[string]*catRule{}
	for i := range gitleaksRules {
		byID[gitleaksRules[i].id] = &gitleaksRules[i]
	}
	a, _ := New(Options{})
	ids := make([]string, 0, len(ex.Rules))
	for id := range ex.Rules {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	tpTotal, tpMissed, fpTotal, fpHit := 0, 0, 0, 0
	for _, id := range ids {
		e := ex.Rules[id]
		r := byID[id]
		if r == nil {
			t.Errorf("%s: examples for a rule the catalogue lacks", id)
			continue
		}
		if r.pathOnly || r.composite {
			continue
		}
		want := "secret_" + strings.ReplaceAll(id, "-", "_")
		if h, ok := handPorted[id]; ok {
			want = ruleTable[h].ID
		}
		for _, tp := range e.TP {
			tpTotal++
			found := false
			for _, f := range a.AnalyzeText(tp).Findings {
				if ruleTable[ruleByID[f.RuleID]].Family == FamilySecret {
					found = true
				}
			}
			if !found {
				tpMissed++
				if !knownMiss[id] {
					t.Errorf("%s: true positive not found: %q", id, tp)
				}
			}
		}
		for _, fp := range e.FP {
			fpTotal++
			for _, f := range a.AnalyzeText(fp).Findings {
				if f.RuleID == want {
					fpHit++
					if !knownFP[id] {
						t.Errorf("%s: false positive reported by %s: %q", id, want, fp)
					}
					break
				}
			}
		}
	}
	t.Logf("gitleaks %s examples: %d/%d true positives found, %d/%d false positives reported", version, tpTotal-tpMissed, tpTotal, fpHit, fpTotal)
}

// knownMiss and knownFP list the rules whose examples the hand rules judge
// differently from gitleaks on purpose (docs/engine.md#the-catalogue).
var knownMiss = map[string]bool{
	"jwt":                 true, // secret_jwt wants a header that decodes to JSON with "alg"; the samples are random
	"sidekiq-secret":      true, // "7f6e73ce:f4428877": words under 10 bytes are not noted
	"sumologic-access-id": true, // 14 letters, no digit: not noted
	"curl-auth-user":      true, // "elastic:P@ssw0rd$1": words under 10 bytes are not noted
	"curl-auth-header":    true, // "sha256~bRLFnzd5@=-.a+/hgdS": likewise
}

var knownFP = map[string]bool{
	"gcp-api-key":             true, // gitleaks allowlists published keys by value; a key is a key to us
	"anthropic-api-key":       true, // any sk-ant- key of 32+ characters counts: a truncated or re-formatted key is still one
	"anthropic-admin-api-key": true, // likewise
	"slack-user-token":        true, // "xoxp-1234-1234-1234-4ddbc…": the 32 hex characters are real-looking
	"aws-access-token":        true, // AKIAIOSFODNN7EXAMPLE, AWS's documentation key, is reported (a canary in tests)
	"private-key":             true, // any BEGIN … PRIVATE KEY block is redacted whole, a sample body too
}
