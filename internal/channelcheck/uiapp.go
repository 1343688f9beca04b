package channelcheck

import (
	"encoding/base64"
	"net/url"
	"regexp"
	"strings"

	"golang.org/x/net/html"

	"github.com/mcpgate/mcpgate/engine"
)

// MCP Apps (the ui:// resources a host renders in a sandboxed iframe, SEP-1865): the
// host's Content Security Policy allows only the origins the resource declares in
// _meta.ui.csp (connectDomains, resourceDomains), and a host that renders without
// one lets the app reach anywhere. App reads the HTML for what a sandbox is there to
// stop, so that the gateway can record it, and withhold it in the strict profile.

// maxAppHTML bounds the HTML App reads, in bytes.
const maxAppHTML = 1 << 20

// urlAttrs are the attributes whose value an element loads, sends to or navigates
// to, by element ("" for any element).
var urlAttrs = map[string][]string{
	"form": {"action"}, "button": {"formaction"}, "input": {"formaction", "src"},
	"script": {"src"}, "img": {"src", "srcset"}, "source": {"src", "srcset"}, "iframe": {"src"},
	"frame": {"src"}, "embed": {"src"}, "object": {"data"}, "video": {"src", "poster"},
	"audio": {"src"}, "track": {"src"}, "link": {"href"}, "image": {"href", "xlink:href"},
	"use": {"href", "xlink:href"}, "a": {"ping"}, "area": {"ping"}, "base": {"href"},
}

var (
	// egressCall: a script API that sends or loads (fetch, XMLHttpRequest, WebSocket,
	// EventSource, sendBeacon, an Image or a src/href/action assigned, a dynamic
	// import, window.open, a location change).
	egressCall = regexp.MustCompile(`(?i)\b(?:fetch|sendBeacon|XMLHttpRequest|WebSocket|EventSource|importScripts|import|open)\s*\(|\bnew\s+Image\b|\.(?:src|href|action|location)\s*=|\blocation\s*=|\blocation\.(?:assign|replace)\s*\(`)
	// absoluteURL: a URL with a host in script or CSS text.
	absoluteURL = regexp.MustCompile(`(?i)\b(?:https?|wss?|ftp)://[^\s"'` + "`" + `)<>\\]+|["'(]//[a-z0-9.-]+\.[a-z]{2,}[^\s"')]*`)
	// cssURL: url(…) and @import in CSS.
	cssURL = regexp.MustCompile(`(?i)(?:url\(\s*['"]?|@import\s+['"])\s*((?:https?:)?//[^'")\s]+)`)
	// literalJoin: two string literals joined by '+' ("'ht'+'tps://…'"), which joined
	// reads as the one string the script builds.
	literalJoin = regexp.MustCompile(`["'` + "`" + `]\s*\+\s*["'` + "`" + `]`)
	// atobLiteral: a base64 literal decoded in the script (atob('aHR0cHM6Ly9…')).
	atobLiteral = regexp.MustCompile(`\batob\s*\(\s*["'` + "`" + `]([A-Za-z0-9+/=\s]{8,})["'` + "`" + `]\s*\)`)
	// postMessageAny: postMessage(…, "*"), the target origin that lets any window read it.
	postMessageAny = regexp.MustCompile(`(?is)\bpostMessage\s*\((?:[^()]|\([^()]*\))*?,\s*["'` + "`" + `]\*["'` + "`" + `]`)
)

// App finds, in the HTML of an MCP App, what reaches outside the app: a form that
// posts, or an element that loads from or sends to, an origin that allowed (the
// resource's declared csp domains, origins or hosts, "*.x" for subdomains) does not
// name; a script (inline, or an on* handler) that calls fetch, XMLHttpRequest,
// WebSocket, EventSource, sendBeacon or the like with such a URL; CSS url() to one
// (ui_app_egress), a URL the script builds from string literals ('ht'+'tps://…') or
// decodes from base64 (atob) included; and postMessage with target origin "*" (ui_app_postmessage_any).
// Relative URLs, fragments, data: and blob: stay in the app. sev is each finding's
// severity; pointer is where the HTML is (/contents/0/text). One finding per rule.
func App(doc string, allowed []string, sev engine.Severity, pointer string) []engine.Finding {
	if len(doc) > maxAppHTML {
		doc = doc[:maxAppHTML]
	}
	egress, post := false, false
	offOrigin := func(raw string) bool { return offAppOrigin(raw, allowed) }
	scriptText := func(s string) {
		if postMessageAny.MatchString(s) {
			post = true
		}
		if !egress && egressCall.MatchString(s) {
			// the URLs as written, with string literals joined ("'ht'+'tps://…'",
			// "'https:/'+'/…'") and base64 literals decoded (atob)
			for _, text := range scriptURLTexts(s) {
				for _, u := range absoluteURL.FindAllString(text, -1) {
					if offOrigin(strings.TrimLeft(u, `"'(`)) {
						egress = true
						break
					}
				}
			}
		}
		if !egress {
			for _, m := range cssURL.FindAllStringSubmatch(s, -1) {
				if offOrigin(m[1]) {
					egress = true
					break
				}
			}
		}
	}
	z := html.NewTokenizer(strings.NewReader(doc))
	inRaw := "" // script or style whose text comes next
	for {
		tt := z.Next()
		if tt == html.ErrorToken {
			break
		}
		switch tt {
		case html.TextToken:
			if inRaw != "" {
				scriptText(string(z.Text()))
			}
		case html.EndTagToken:
			inRaw = ""
		case html.StartTagToken, html.SelfClosingTagToken:
			name, hasAttr := z.TagName()
			tag := string(name)
			inRaw = ""
			if (tag == "script" || tag == "style") && tt == html.StartTagToken {
				inRaw = tag
			}
			attrs := map[string]string{}
			for hasAttr {
				var k, v []byte
				k, v, hasAttr = z.TagAttr()
				attrs[string(k)] = string(v)
			}
			for _, a := range urlAttrs[tag] {
				v, ok := attrs[a]
				if !ok {
					continue
				}
				if a == "srcset" {
					for _, c := range strings.Split(v, ",") {
						if f := strings.Fields(c); len(f) > 0 && offOrigin(f[0]) {
							egress = true
						}
					}
				} else if offOrigin(v) {
					egress = true
				}
			}
			if tag == "meta" && strings.EqualFold(attrs["http-equiv"], "refresh") {
				if _, u, ok := strings.Cut(strings.ToLower(attrs["content"]), "url="); ok && offOrigin(strings.Trim(u, `'" `)) {
					egress = true
				}
			}
			for k, v := range attrs {
				if strings.HasPrefix(k, "on") || k == "style" {
					scriptText(v)
				} else if strings.HasPrefix(strings.ToLower(strings.TrimSpace(v)), "javascript:") {
					scriptText(v)
				}
			}
		}
	}
	var out []engine.Finding
	if egress {
		out = append(out, finding(RuleAppEgress, sev, pointer))
	}
	if post {
		out = append(out, finding(RuleAppPostMessageAny, sev, pointer))
	}
	return out
}

// scriptURLTexts returns the texts of script s to look for URLs in: s, s with its
// string literals joined where '+' joins two of them, and the base64 literals that
// atob decodes.
func scriptURLTexts(s string) []string {
	out := []string{s}
	if strings.IndexByte(s, '+') >= 0 && literalJoin.MatchString(s) {
		out = append(out, literalJoin.ReplaceAllString(s, ""))
	}
	if strings.Contains(s, "atob") {
		for _, m := range atobLiteral.FindAllStringSubmatch(s, -1) {
			// as atob reads it (forgiving-base64): white space ignored, padding optional
			if b, err := base64.RawStdEncoding.DecodeString(strings.TrimRight(strings.Join(strings.Fields(m[1]), ""), "=")); err == nil {
				out = append(out, "'"+string(b)+"'")
			}
		}
	}
	return out
}

// offAppOrigin reports whether a URL in an app leaves it: it names a host
// (scheme://host or //host) that allowed does not name. Relative URLs, fragments
// and data:, blob:, about: and javascript: (read as script elsewhere) stay.
func offAppOrigin(raw string, allowed []string) bool {
	s := strings.TrimSpace(raw)
	low := strings.ToLower(s)
	for _, p := range []string{"data:", "blob:", "about:", "javascript:", "#", "mailto:", "tel:"} {
		if strings.HasPrefix(low, p) {
			return false
		}
	}
	if !strings.Contains(low, "//") {
		return false // relative
	}
	if strings.HasPrefix(low, "//") {
		s = "https:" + s
	}
	u, err := url.Parse(s)
	if err != nil || u.Host == "" {
		return strings.Contains(low, "://") // unparseable with a scheme: assume it leaves
	}
	host := strings.ToLower(u.Hostname())
	for _, a := range allowed {
		a = strings.ToLower(strings.TrimSpace(a))
		if au, err := url.Parse(a); err == nil && au.Host != "" {
			a = strings.ToLower(au.Hostname())
		}
		if a == "" {
			continue
		}
		if a == host || strings.HasPrefix(a, "*.") && strings.HasSuffix(host, a[1:]) {
			return false
		}
	}
	return true
}
