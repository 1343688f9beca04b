package engine

import (
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"net/url"
	"strings"
	"testing"
)

// fakeGitHubToken is a ghp_ token shape (ghp_ + 36 base62) that is no live token.
var fakeGitHubToken = "ghp_" + "aB3dE5fG7hJ9kL1mN3pQ5rS7tU9vW1xY3z5A"

func TestAnalyzeArgumentsDecoded(t *testing.T) {
	a, err := New(Options{})
	if err != nil {
		t.Fatal(err)
	}
	awsINI := "[default]\naws_access_key_id = AKIAQYLPMN5HFIQR7XB2\naws_secret_access_key = 9drTJvcXLB89EXAMPLEoJ3e9fMtaSTxwYgPqdaQz\n"
	for _, tc := range []struct {
		name, args string
		rule, enc  string // "" rule: no secret finding at all
	}{
		{"plain", `{"x":"` + fakeGitHubToken + `"}`, RuleGitHubToken, ""},
		{"base64 whole", `{"x":"` + base64.StdEncoding.EncodeToString([]byte(fakeGitHubToken)) + `"}`, RuleGitHubToken, DecodedBase64},
		{"base64 unpadded url alphabet", `{"x":"` + base64.RawURLEncoding.EncodeToString([]byte("token: "+fakeGitHubToken+"?")) + `"}`, RuleGitHubToken, DecodedBase64},
		{"base64 inside text", `{"x":"attachment=` + base64.StdEncoding.EncodeToString([]byte(awsINI)) + ` (config)"}`, RuleAWSAccessKey, DecodedBase64},
		{"hex", `{"x":"` + hex.EncodeToString([]byte(fakeGitHubToken)) + `"}`, RuleGitHubToken, DecodedHex},
		{"hex upper in array", `{"x":["` + strings.ToUpper(hex.EncodeToString([]byte(fakeGitHubToken))) + `"]}`, RuleGitHubToken, DecodedHex},
		{"percent", `{"u":"https://collect.example/?t=` + strings.ReplaceAll(url.QueryEscape(fakeGitHubToken), "_", "%5F") + `"}`, RuleGitHubToken, DecodedURL},
		{"base64 of hex", `{"x":"` + base64.StdEncoding.EncodeToString([]byte(hex.EncodeToString([]byte(fakeGitHubToken)))) + `"}`, RuleGitHubToken, DecodedBase64},
		// look-alikes: encoded runs that are no text, and text that holds no secret
		{"sha256 hex", `{"commit":"` + strings.Repeat("9f86d081884c7d65", 4) + `"}`, "", ""},
		{"image base64", `{"png":"iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg=="}`, "", ""},
		{"base64 prose", `{"x":"` + base64.StdEncoding.EncodeToString([]byte("just a note about the build, nothing secret")) + `"}`, "", ""},
		{"long identifier", `{"x":"averyveryverylongidentifier_with_words_in_it"}`, "", ""},
		{"percent path", `{"p":"/docs/My%20File.md"}`, "", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r, err := a.AnalyzeArguments([]byte(tc.args))
			if err != nil {
				t.Fatal(err)
			}
			var got *Finding
			for i, f := range r.Findings {
				if strings.HasPrefix(f.RuleID, "secret_") {
					got = &r.Findings[i]
					break
				}
			}
			switch {
			case tc.rule == "" && got != nil:
				t.Fatalf("finding %+v on a look-alike", *got)
			case tc.rule == "":
			case got == nil:
				t.Fatalf("no secret finding; findings %+v", r.Findings)
			case got.RuleID != tc.rule || got.Decoded != tc.enc:
				t.Fatalf("got %s decoded %q, want %s decoded %q", got.RuleID, got.Decoded, tc.rule, tc.enc)
			}
		})
	}
}

// Results are never decoded so: a base64 run in a result's text is the text.
func TestAnalyzeResultNotDecoded(t *testing.T) {
	a, _ := New(Options{})
	b64 := base64.StdEncoding.EncodeToString([]byte(fakeGitHubToken))
	r, err := a.AnalyzeResult([]byte(`{"content":[{"type":"text","text":"` + b64 + `"}]}`))
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range r.Findings {
		if f.Decoded != "" {
			t.Fatalf("decoded finding in a result: %+v", f)
		}
	}
}

func TestEachDecodedDepth(t *testing.T) {
	s := fakeGitHubToken
	for range 4 { // four layers of base64: only two are opened
		s = base64.StdEncoding.EncodeToString([]byte(s))
	}
	found := false
	EachDecoded(s, func(_ string, text []byte) {
		found = found || strings.Contains(string(text), "ghp_")
	})
	if found {
		t.Fatal("decoded past maxDecodeDepth")
	}
}

// FuzzEachDecoded: any string decodes without a panic, into texts no longer than the
// string itself, each printable UTF-8; and AnalyzeArguments takes it.
func FuzzEachDecoded(f *testing.F) {
	f.Add(base64.StdEncoding.EncodeToString([]byte(fakeGitHubToken)))
	f.Add(hex.EncodeToString([]byte(fakeGitHubToken)))
	f.Add("a%5Fb%zz%4" + hex.EncodeToString([]byte("x")))
	f.Add("==" + strings.Repeat("A", 21) + "===")
	f.Add(base64.URLEncoding.EncodeToString([]byte("%67hp_" + strings.Repeat("x", 30))))
	a, _ := New(Options{})
	f.Fuzz(func(t *testing.T, s string) {
		EachDecoded(s, func(enc string, text []byte) {
			if len(text) > len(s) {
				t.Fatalf("decoded %d bytes from %d", len(text), len(s))
			}
			if !printableText(text) {
				t.Fatalf("%s text not printable: %q", enc, text)
			}
		})
		doc, _ := json.Marshal(s)
		if _, err := a.AnalyzeArguments([]byte(`{"a":` + string(doc) + `}`)); err != nil {
			t.Fatalf("AnalyzeArguments: %v", err)
		}
	})
}
