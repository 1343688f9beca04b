package engine

import (
	"math/rand/v2"
	"os"
	"regexp"
	"strings"
	"testing"
)

// testdata/engine/gitleaks/gitleaks-rules.toml holds, verbatim, the rules of the
// gitleaks release the catalogue pins (gitleaksVersion) that engine/secrets.go ports
// by hand. Moving to another release means copying its blocks anew and passing this test.

// gitleaksRule is one [[rules]] block of the pinned excerpt.
type gitleaksRule struct{ id, regex string }

func loadGitleaks(t *testing.T) (version string, rules []gitleaksRule) {
	t.Helper()
	b, err := os.ReadFile("../testdata/engine/gitleaks/gitleaks-rules.toml")
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		switch {
		case strings.HasPrefix(line, `version = "`):
			version = strings.Trim(strings.TrimPrefix(line, "version = "), `"`)
		case strings.HasPrefix(line, `id = "`):
			rules = append(rules, gitleaksRule{id: strings.Trim(strings.TrimPrefix(line, "id = "), `"`)})
		case strings.HasPrefix(line, "regex = '''") && len(rules) > 0:
			rules[len(rules)-1].regex = strings.TrimSuffix(strings.TrimPrefix(line, "regex = '''"), "'''")
		}
	}
	return version, rules
}

// TestGitleaksPorted: every rule of the pinned gitleaks excerpt has a mapping to one
// of our rules; for each, generated tokens that the gitleaks regex matches are found
// by our rule, and placeholders (too few distinct characters) are not.
func TestGitleaksPorted(t *testing.T) {
	version, rules := loadGitleaks(t)
	if version != gitleaksVersion {
		t.Fatalf("excerpt is gitleaks %s, the test pins %s", version, gitleaksVersion)
	}
	rng := rand.New(rand.NewPCG(1, 2))
	const (
		an  = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789"
		w   = an + "_-"
		lo  = "abcdefghijklmnopqrstuvwxyz0123456789"
		hx  = "0123456789abcdef"
		let = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
		b64 = an + "+/"
	)
	r := func(alphabet string, n int) string {
		var b strings.Builder
		for range n {
			b.WriteByte(alphabet[rng.IntN(len(alphabet))])
		}
		return b.String()
	}
	uuid := func() string { return r(lo, 8) + "-" + r(lo, 4) + "-" + r(lo, 4) + "-" + r(lo, 4) + "-" + r(lo, 12) }
	ported := map[string]struct {
		rule     string
		generate func() string // a token in the gitleaks format
		fake     string        // a placeholder in the same format
	}{
		"anthropic-admin-api-key":            {RuleAnthropicKey, func() string { return "sk-ant-admin01-" + r(w, 93) + "AA" }, "sk-ant-admin01-" + strings.Repeat("x", 93) + "AA"},
		"anthropic-api-key":                  {RuleAnthropicKey, func() string { return "sk-ant-api03-" + r(w, 93) + "AA" }, "sk-ant-api03-" + strings.Repeat("0", 93) + "AA"},
		"openai-api-key":                     {RuleOpenAIKey, func() string { return "sk-proj-" + r(w, 74) + "T3BlbkFJ" + r(w, 74) }, "sk-proj-" + strings.Repeat("a", 74) + "T3BlbkFJ" + strings.Repeat("a", 74)},
		"huggingface-access-token":           {RuleAIProviderKey, func() string { return "hf_" + r(let, 34) }, "hf_" + strings.Repeat("x", 34)},
		"huggingface-organization-api-token": {RuleAIProviderKey, func() string { return "api_org_" + r(let, 34) }, "api_org_" + strings.Repeat("x", 34)},
		"perplexity-api-key":                 {RuleAIProviderKey, func() string { return "pplx-" + r(an, 48) }, "pplx-" + strings.Repeat("0", 48)},
		"gcp-api-key":                        {RuleGoogleAPIKey, func() string { return "AIza" + r(w, 35) }, "AIza" + strings.Repeat("X", 35)},
		"gitlab-pat":                         {RuleGitLabToken, func() string { return "glpat-" + r(w, 20) }, "glpat-" + strings.Repeat("x", 20)},
		"gitlab-pat-routable":                {RuleGitLabToken, func() string { return "glpat-" + r(w, 27) + "." + r(lo, 9) }, "glpat-" + strings.Repeat("x", 27) + ".01xxxxxxx"},
		"gitlab-ptt":                         {RuleGitLabToken, func() string { return "glptt-" + r(hx, 40) }, "glptt-" + strings.Repeat("0", 40)},
		"gitlab-rrt":                         {RuleGitLabToken, func() string { return "GR1348941" + r(w, 20) }, "GR1348941" + strings.Repeat("x", 20)},
		"gitlab-deploy-token":                {RuleGitLabToken, func() string { return "gldt-" + r(w, 20) }, "gldt-" + strings.Repeat("x", 20)},
		"gitlab-runner-authentication-token": {RuleGitLabToken, func() string { return "glrt-" + r(w, 20) }, "glrt-" + strings.Repeat("x", 20)},
		"npm-access-token":                   {RuleNPMToken, func() string { return "npm_" + r(an, 36) }, "npm_" + strings.Repeat("x", 36)},
		"pypi-upload-token":                  {RulePyPIToken, func() string { return "pypi-AgEIcHlwaS5vcmc" + r(w, 70) }, "pypi-AgEIcHlwaS5vcmc" + strings.Repeat("x", 70)},
		"slack-webhook-url":                  {RuleChatWebhook, func() string { return "https://hooks.slack.com/services/" + r(b64, 48) }, "https://hooks.slack.com/services/" + strings.Repeat("X", 48)},
		"microsoft-teams-webhook": {RuleChatWebhook, func() string {
			return "https://" + r(lo, 8) + ".webhook.office.com/webhookb2/" + uuid() + "@" + uuid() + "/IncomingWebhook/" + r(lo, 32) + "/" + uuid()
		}, "https://x.webhook.office.com/webhookb2/xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx"},
	}
	a, _ := New(Options{})
	for _, gr := range rules {
		p, ok := ported[gr.id]
		if !ok {
			t.Errorf("gitleaks rule %s has no mapping: port it or drop it from the excerpt", gr.id)
			continue
		}
		re, err := regexp.Compile(gr.regex)
		if err != nil {
			t.Fatalf("%s: %v", gr.id, err)
		}
		for k := range 20 {
			tok := p.generate()
			text := "value: " + tok + "\n"
			if !re.MatchString(text) {
				t.Fatalf("%s: generated %q does not match the gitleaks regex", gr.id, tok)
			}
			if !slicesContains(a.AnalyzeText(text).RuleIDs(), p.rule) {
				t.Errorf("%s #%d: %s misses %q", gr.id, k, p.rule, tok)
			}
		}
		if ids := a.AnalyzeText("value: " + p.fake + "\n").RuleIDs(); slicesContains(ids, p.rule) {
			t.Errorf("%s: placeholder %q reported", gr.id, p.fake)
		}
		delete(ported, gr.id)
	}
	for id := range ported {
		t.Errorf("mapping for %s, which the excerpt lacks", id)
	}
}

func slicesContains(s []string, v string) bool {
	for _, x := range s {
		if x == v {
			return true
		}
	}
	return false
}
