package engine

import (
	"strings"
)

// Markup a client renders: Markdown images and links, HTML <img>, comments and
// hidden elements (docs/engine.md#markup). The parsers are pure functions of the
// text so that the scanner (findings) and the Warn sanitizer (defanging) agree on
// every URL.

// maxMarkup bounds how far a Markdown label, an HTML tag or a hidden element's body
// is looked for.
const maxMarkup = 4096

// mdLink is a Markdown link or image at s[start:end]: the URL is s[us:ue]; ref is
// the label of a reference-style image ("![alt][ref]") whose URL a definition gives.
type mdLink struct {
	image      bool
	start, end int
	us, ue     int
	ref        string
}

// mdLinkAt parses the Markdown link or image whose '[' is at s[i].
func mdLinkAt(s string, i int) (mdLink, bool) {
	l := mdLink{image: i > 0 && s[i-1] == '!', start: i}
	if l.image {
		l.start = i - 1
	}
	j := i + 1
	depth := 0
	for ; j < len(s) && j-i < maxMarkup; j++ {
		c := s[j]
		if c == '\n' && j+1 < len(s) && s[j+1] == '\n' {
			return l, false
		}
		if c == '[' {
			depth++
		} else if c == ']' {
			if depth == 0 {
				break
			}
			depth--
		}
	}
	if j+1 >= len(s) || s[j] != ']' {
		return l, false
	}
	j++
	switch s[j] {
	case '(':
		k := j + 1
		for k < len(s) && (s[k] == ' ' || s[k] == '<') {
			k++
		}
		l.us = k
		for k < len(s) && k-j < maxMarkup && !urlStop(s[k]) && s[k] != ')' {
			k++
		}
		l.ue = k
		for k < len(s) && s[k] != ')' && s[k] != '\n' && k-j < maxMarkup {
			k++
		}
		l.end = min(len(s), k+1)
		return l, l.ue > l.us
	case '[':
		if !l.image {
			return l, false
		}
		k := strings.IndexByte(s[j+1:min(len(s), j+1+256)], ']')
		if k < 0 {
			return l, false
		}
		l.ref = s[j+1 : j+1+k]
		if l.ref == "" {
			l.ref = s[i+1 : j-1] // "![alt][]": the alt text is the label
		}
		l.end = j + 2 + k
		return l, true
	}
	return l, false
}

// refDefinition finds the URL of the reference definition "[ref]: URL" in s.
func refDefinition(s, ref string) (int, int, bool) {
	if ref == "" {
		return 0, 0, false
	}
	needle := "[" + ref + "]:"
	for off := 0; off < len(s); {
		k := strings.Index(s[off:], needle)
		if k < 0 {
			// labels match case-insensitively (CommonMark)
			k = indexFold(s[off:], needle)
			if k < 0 {
				return 0, 0, false
			}
		}
		k += off
		if k == 0 || s[k-1] == '\n' || s[k-1] == ' ' {
			u := k + len(needle)
			for u < len(s) && (s[u] == ' ' || s[u] == '<') {
				u++
			}
			e := u
			for e < len(s) && !urlStop(s[e]) {
				e++
			}
			return u, e, e > u
		}
		off = k + 1
	}
	return 0, 0, false
}

func indexFold(s, sub string) int {
	n := len(sub)
	for i := 0; i+n <= len(s); i++ {
		if strings.EqualFold(s[i:i+n], sub) {
			return i
		}
	}
	return -1
}

// imgTag is an HTML <img> at s[start:end] whose src is s[us:ue]; beacon says its
// width and height are at most 1 pixel (a tracking pixel).
type imgTag struct {
	start, end int
	us, ue     int
	beacon     bool
}

// imgTagAt parses the HTML <img> tag whose '<' is at s[i].
func imgTagAt(s string, i int) (imgTag, bool) {
	g := imgTag{start: i}
	if i+5 > len(s) || s[i] != '<' || !strings.EqualFold(s[i+1:i+4], "img") || !(isHTMLSpace(s[i+4]) || s[i+4] == '/') {
		return g, false
	}
	e := strings.IndexByte(s[i:min(len(s), i+maxMarkup)], '>')
	if e < 0 {
		return g, false
	}
	g.end = i + e + 1
	tag := s[i+4 : i+e]
	w, h := -1, -1
	htmlAttrs(tag, func(an string, vs, ve int) {
		v := tag[vs:ve]
		switch strings.ToLower(an) {
		case "src":
			g.us, g.ue = i+4+vs, i+4+ve
		case "width":
			w = pixels(v)
		case "height":
			h = pixels(v)
		case "style":
			lv := strings.ToLower(strings.ReplaceAll(v, " ", ""))
			if strings.Contains(lv, "width:1px") || strings.Contains(lv, "width:0") {
				w = 1
			}
			if strings.Contains(lv, "height:1px") || strings.Contains(lv, "height:0") {
				h = 1
			}
			if strings.Contains(lv, "display:none") || strings.Contains(lv, "visibility:hidden") {
				w, h = 0, 0
			}
		}
	})
	g.beacon = w >= 0 && w <= 1 && h >= 0 && h <= 1
	return g, g.ue > g.us
}

// isHTMLSpace reports whether c is ASCII whitespace as HTML reads it between a
// tag's name and attributes (tab, LF, FF, CR, space; WHATWG HTML §13.2.5.32).
func isHTMLSpace(c byte) bool {
	return c == ' ' || c == '\t' || c == '\n' || c == '\f' || c == '\r'
}

// htmlAttrs calls fn for each name=value attribute of tag, the text of a start
// tag after its name and before its '>': the name as written and the value's span
// tag[vs:ve], quotes excluded (an unclosed quote runs to the end of tag).
// Attributes are separated by HTML whitespace (isHTMLSpace) or '/' as the
// tokenizer reads them (§13.2.5.32-38); a name without '=' is skipped. Both the
// <img> parser and the fetching-attribute parser (fetchTagAt) read tags with it,
// so the scanner and the Warn sanitizer split a tag the same way.
func htmlAttrs(tag string, fn func(name string, vs, ve int)) {
	for k := 0; k < len(tag); {
		for k < len(tag) && (isHTMLSpace(tag[k]) || tag[k] == '/') {
			k++
		}
		ns := k
		for k < len(tag) && tag[k] != '=' && !isHTMLSpace(tag[k]) && tag[k] != '/' {
			k++
		}
		an := tag[ns:k]
		for k < len(tag) && isHTMLSpace(tag[k]) {
			k++
		}
		if k >= len(tag) || tag[k] != '=' || k == ns {
			if k == ns {
				k++
			}
			continue
		}
		k++
		for k < len(tag) && isHTMLSpace(tag[k]) {
			k++
		}
		vs, ve := k, k
		if k < len(tag) && (tag[k] == '"' || tag[k] == '\'') {
			q := tag[k]
			vs = k + 1
			ve = vs
			for ve < len(tag) && tag[ve] != q {
				ve++
			}
			k = ve + 1
		} else {
			for ve < len(tag) && !isHTMLSpace(tag[ve]) {
				ve++
			}
			k = ve
		}
		fn(an, vs, min(ve, len(tag)))
	}
}

// pixels reads "1", "1px" or "0"; anything else is -1.
func pixels(v string) int {
	v = strings.TrimSuffix(strings.TrimSpace(v), "px")
	if v == "0" || v == "1" {
		return int(v[0] - '0')
	}
	return -1
}

// ---- what a URL carries ----

// urlCarriesData reports whether a URL's query or path carries data out: for an
// image (fetched as soon as it renders), a query value of 12+ varied characters
// mixing letters and digits, an encoded or raw '@', three or more percent escapes,
// or a path segment of 32+ such characters in both letter cases; for a link (fetched
// on a click), the same with a 32-character threshold for query values.
func urlCarriesData(u string, image bool) bool {
	if !strings.HasPrefix(strings.ToLower(u), "http://") && !strings.HasPrefix(strings.ToLower(u), "https://") && !strings.HasPrefix(u, "//") {
		return false
	}
	rest := u[strings.Index(u, "//")+2:]
	path, query := rest, ""
	if q := strings.IndexByte(rest, '?'); q >= 0 {
		path, query = rest[:q], rest[q+1:]
	}
	if h := strings.IndexByte(query, '#'); h >= 0 {
		query = query[:h]
	}
	if s := strings.IndexByte(path, '/'); s >= 0 {
		path = path[s+1:]
	} else {
		path = ""
	}
	minQ := 32
	if image {
		minQ = 12
	}
	for _, kv := range strings.Split(query, "&") {
		v := kv
		if e := strings.IndexByte(kv, '='); e >= 0 {
			v = kv[e+1:]
		}
		if mailAt(v) || strings.Contains(strings.ToLower(v), "%40") || strings.Count(v, "%") >= 3 {
			return true
		}
		if len(v) >= minQ && dataLike(v) {
			return true
		}
	}
	for _, seg := range strings.Split(path, "/") {
		if len(seg) >= 32 && dataLike(seg) && hasBothCases(seg) {
			return true
		}
	}
	return false
}

// mailAt reports a raw '@' between a word byte and a letter, as in an address
// ("jane@corp.example"); a font axis ("wght@400") or a version ("pkg@1.2") is not one.
func mailAt(v string) bool {
	for k := strings.IndexByte(v, '@'); k >= 0; {
		if k > 0 && isWordByte(v[k-1]) && k+1 < len(v) && isAlpha(v[k+1]) {
			return true
		}
		n := strings.IndexByte(v[k+1:], '@')
		if n < 0 {
			return false
		}
		k += 1 + n
	}
	return false
}

// dataLike reports a value that reads as encoded data: 8 or more distinct
// characters, letters and digits mixed, and no run of 4 lower-case letters only
// between separators longer than half of it (words in a slug are not data).
func dataLike(v string) bool {
	if !varied(v) || !mixedClasses(v) {
		return false
	}
	letters := 0
	for i := 0; i < len(v); i++ {
		if isAlpha(v[i]) {
			letters++
		}
	}
	// a slug ("how-to-build-2024-release-notes") has separators between words
	seps := strings.Count(v, "-") + strings.Count(v, "_") + strings.Count(v, "+")
	return seps*6 < len(v)
}

func hasBothCases(s string) bool {
	u, l := false, false
	for i := 0; i < len(s); i++ {
		u = u || isUpper(s[i])
		l = l || isLower(s[i])
	}
	return u && l
}

// ---- the scanner's side ----

// markupBracket handles a '[' at s[i] that no token rule claimed: a Markdown image
// or link. It returns where scanning resumes.
func (t *textScan) markupBracket(i int) int {
	s := t.s
	if (i == 0 || s[i-1] == '\n') && t.mdComment(i) {
		return i + 1 // [//]: # (...) (hiddenplaces.go)
	}
	// quick reject ("[pipeline] ..."): a first ']' that no '[' nests before ends the
	// label, and only "](" or "][" after it makes a link
	if j := strings.IndexByte(s[i+1:min(len(s), i+1+maxMarkup)], ']'); j < 0 || i+2+j >= len(s) ||
		s[i+2+j] != '(' && s[i+2+j] != '[' && strings.IndexByte(s[i+1:i+1+j], '[') < 0 {
		return i + 1
	}
	l, ok := mdLinkAt(s, i)
	if !ok {
		return i + 1
	}
	us, ue := l.us, l.ue
	if l.ref != "" {
		if us, ue, ok = refDefinition(s, l.ref); !ok {
			return i + 1
		}
	}
	u := s[us:ue]
	if l.image {
		if c := strings.Index(s[i:l.end], "]"); c > 0 {
			t.altText(i+1, i+c, l.start, l.end)
		}
	}
	if urlCarriesData(u, l.image) {
		t.k.add(rExfil, map[bool]string{true: "markdown_image", false: "markdown_link"}[l.image], l.start, l.end)
	}
	if !l.image {
		t.targetCheck(u, l.start, l.end)
	}
	return i + 1 // the label is text: scan it too
}

// markupAngle handles a '<' at s[i] that no token rule claimed: an HTML <img>, a
// comment, a hidden element, or an <IMPORTANT>-style block. It returns where
// scanning resumes.
func (t *textScan) markupAngle(i int) int {
	s := t.s
	if i+1 >= len(s) {
		return i + 1
	}
	if isAlpha(s[i+1]) {
		t.fetchTag(i)    // <source srcset>, <video poster>, SVG <image href>, ... (renderfetch.go)
		t.hiddenAttrs(i) // JSON-LD, alt and title (hiddenplaces.go)
	}
	switch c := s[i+1] | 0x20; {
	case c == 'i':
		if g, ok := imgTagAt(s, i); ok {
			if g.beacon || urlCarriesData(s[g.us:g.ue], true) {
				ent := "html_img"
				if g.beacon {
					ent = "html_img_beacon"
				}
				t.k.add(rExfil, ent, g.start, g.end)
			}
			return i + 1
		}
	case s[i+1] == '!':
		if strings.HasPrefix(s[i:], "<!--") {
			e := strings.Index(s[i+4:min(len(s), i+4+maxMarkup)], "-->")
			body := s[i+4:]
			end := len(s)
			if e >= 0 {
				body, end = s[i+4:i+4+e], i+4+e+3
			} else if len(body) > maxMarkup {
				body = body[:maxMarkup]
			}
			if addressesModel(body) || directiveIn(body) != dirNone {
				t.k.add(rHiddenOrders, "html_comment", i, end)
			}
			return i + 4
		}
	}
	if name, end, ok := orderTag(s, i); ok {
		t.k.add(rInjectedOrders, name, i, end)
		return end
	}
	if end, bodyS, bodyE, ok := hiddenElement(s, i); ok {
		if addressesModel(s[bodyS:bodyE]) || directiveIn(s[bodyS:bodyE]) != dirNone {
			t.k.add(rHiddenOrders, "hidden_element", i, end)
		}
	}
	return i + 1
}

// orderTags are the tags tool-poisoning payloads wrap their orders in.
var orderTags = []string{"important", "critical", "instructions", "secret", "hidden"}

// orderTag matches "<IMPORTANT>" (any case, the tags of orderTags) at s[i].
func orderTag(s string, i int) (string, int, bool) {
	for _, n := range orderTags {
		e := i + 1 + len(n)
		if e < len(s) && s[e] == '>' && strings.EqualFold(s[i+1:e], n) {
			return "order_tag", e + 1, true
		}
	}
	return "", 0, false
}

// hiddenElement matches an HTML element at s[i] that renders invisibly (a hidden
// attribute, display:none, visibility:hidden, zero font size, zero opacity) and
// returns its end and its body.
func hiddenElement(s string, i int) (end, bs, be int, ok bool) {
	j := i + 1
	for j < len(s) && isAlnum(s[j]) {
		j++
	}
	if j == i+1 || j-i > 12 || j >= len(s) {
		return 0, 0, 0, false
	}
	name := strings.ToLower(s[i+1 : j])
	e := strings.IndexByte(s[j:min(len(s), j+maxMarkup)], '>')
	if e < 0 {
		return 0, 0, 0, false
	}
	attrs := strings.ToLower(strings.ReplaceAll(s[j:j+e], " ", ""))
	hidden := strings.Contains(attrs, "display:none") || strings.Contains(attrs, "visibility:hidden") ||
		zeroProp(attrs, "font-size:0") || zeroProp(attrs, "opacity:0") || containsWord(s[j:j+e], "hidden")
	if !hidden {
		return 0, 0, 0, false
	}
	bs = j + e + 1
	closeTag := "</" + name
	k := indexFold(s[bs:min(len(s), bs+maxMarkup)], closeTag)
	if k < 0 {
		be = min(len(s), bs+maxMarkup)
		return be, bs, be, true
	}
	be = bs + k
	end = be + len(closeTag)
	if end < len(s) && s[end] == '>' {
		end++
	}
	return end, bs, be, true
}

// zeroProp reports a CSS property set to zero ("font-size:0", "font-size:0px"), not
// to "0.8em".
func zeroProp(attrs, prop string) bool {
	k := strings.Index(attrs, prop)
	if k < 0 {
		return false
	}
	e := k + len(prop)
	return e >= len(attrs) || !(isDigit(attrs[e]) || attrs[e] == '.')
}

// containsWord reports the attribute word w (a boolean attribute such as hidden)
// among a tag's attributes.
func containsWord(attrs, w string) bool {
	for _, f := range strings.Fields(attrs) {
		if strings.EqualFold(f, w) || strings.EqualFold(strings.TrimSuffix(f, "/"), w) {
			return true
		}
	}
	return false
}

// ---- words aimed at the model ----

// strongOrders are phrases that only an instruction to a model uses.
var strongOrders = []string{
	"ignore previous", "ignore all previous", "ignore the previous instructions", "ignore all prior", "ignore prior instructions",
	"ignore the above", "ignore all above", "ignore the user", "ignore your", "ignore any previous", "ignore earlier",
	"disregard previous", "disregard all", "disregard the above", "disregard prior", "disregard your", "disregard the user",
	"forget all previous", "forget your instructions", "forget everything",
	"before answering", "before responding", "before you answer", "before you respond", "before replying",
	"do not tell the user", "don't tell the user", "do not tell them", "don't tell them", "do not inform the user",
	"do not mention this", "don't mention this", "do not mention that", "never mention", "do not reveal", "don't reveal",
	"without telling the user", "without informing the user", "without the user knowing", "keep this secret", "keep this hidden",
	"new instructions:", "updated instructions:", "system prompt", "system override", "you are now",
	"call the tool", "use the tool", "run the tool", "invoke the tool", "call this tool", "tool_call",
}

// modelNames name the reader an order addresses.
var modelNames = []string{
	"claude", "copilot", "cursor", "chatgpt", "gpt-", "gemini", "llm", "assistant", "ai agent", "coding agent",
	"the agent", "agents", "the model", "language model", "codex", "windsurf", "devin", "aider", "ai:", "ai,", "ai ", "bot:",
}

// imperatives are the verbs such an order uses.
var imperatives = []string{
	"ignore", "open ", "add ", "send ", "run ", "execute", "call ", "write ", "delete", "remove ", "say ", "tell ",
	"do not", "don't", "must", "always", "never", "instead", "forward", "upload", "read ", "fetch", "include ", "insert ",
	"reply", "respond", "answer", "pretend", "make sure",
}

// addressesModel reports text that addresses the model or agent: a strong order, or
// a model's name together with an imperative.
func addressesModel(body string) bool {
	var buf [maxMarkup]byte
	l := lowerInto(buf[:0], body[:min(len(body), maxMarkup)])
	b := string(l)
	for _, p := range strongOrders {
		if strings.Contains(b, p) {
			return true
		}
	}
	named := false
	for _, n := range modelNames {
		if strings.Contains(b, n) {
			named = true
			break
		}
	}
	if !named {
		return false
	}
	for _, v := range imperatives {
		if strings.Contains(b, v) {
			return true
		}
	}
	return false
}

// ordersIn reports injected instructions in plain text: a strong order outside
// markup (the text itself addresses the model).
func ordersIn(text string) (int, int, bool) {
	var buf [maxMarkup]byte
	for off := 0; off < len(text); off += maxMarkup - 64 {
		chunk := text[off:min(len(text), off+maxMarkup)]
		b := string(lowerInto(buf[:0], chunk))
		if !strings.Contains(b, "user") && !strings.Contains(b, "instruction") && !strings.Contains(b, "disregard") {
			// every phrase of injectedOrders holds one of the three (TestInjectedOrdersHints)
			if off+maxMarkup >= len(text) {
				break
			}
			continue
		}
		for _, p := range injectedOrders {
			if k := strings.Index(b, p); k >= 0 {
				return off + k, off + k + len(p), true
			}
		}
		if off+maxMarkup >= len(text) {
			break
		}
	}
	return 0, 0, false
}

// injectedOrders are the classic injection phrases reported in plain text (a subset
// of strongOrders that ordinary documentation does not use).
var injectedOrders = []string{
	"ignore all previous instructions", "ignore previous instructions", "ignore all prior instructions", "ignore prior instructions",
	"ignore the previous instructions", "ignore the above instructions", "ignore all above instructions", "ignore any previous instructions",
	"ignore your previous instructions", "ignore your instructions", "ignore all instructions", "ignore earlier instructions",
	"disregard all previous instructions", "disregard previous instructions", "disregard the above instructions", "disregard prior instructions",
	"disregard your instructions", "disregard all prior", "forget all previous instructions", "forget your instructions",
	"do not tell the user", "don't tell the user", "do not inform the user", "do not let the user know", "don't let the user know",
	"without telling the user", "without informing the user", "without the user knowing", "never tell the user",
	"do not mention this to the user", "don't mention this to the user", "hide this from the user",
}

// instructWord is "instruct" as a little-endian uint64, for an 8-byte compare.
var instructWord = load64("instruct", 0)

// orderHint looks at the 8 bytes at s[i], one of whose aligned pairs is "ru" or
// "uc" (any case): when "instruct" (any case) holds that pair, it looks for an
// injected order in the sentence around it.
func (t *textScan) orderHint(i int) {
	if t.orders {
		return
	}
	s := t.s
	for q := 0; q < 8; q += 2 {
		a, b := s[i+q]|0x20, s[i+q+1]|0x20
		k := -1
		switch {
		case a == 'r' && b == 'u':
			k = i + q - 4
		case a == 'u' && b == 'c':
			k = i + q - 5
		}
		if k < 0 || k+8 > len(s) || k < t.hintDone || load64(s, k)|0x2020202020202020 != instructWord {
			continue
		}
		t.hintDone = k + 8
		ws, we := max(0, k-64), min(len(s), k+24)
		if os, oe, ok := ordersIn(s[ws:we]); ok {
			t.orders = true
			t.k.add(rInjectedOrders, "injected_orders", ws+os, ws+oe)
			return
		}
		t.directiveWindow(k-400, k+400) // "Assistant instruction: ..." (directive.go)
	}
}

// shortOrders checks a short string whole (a description, a schema's, a short
// result) for the orders that need no "instruct": "do not tell the user" and kin.
func (t *textScan) shortOrders() {
	s := t.s
	if t.orders || len(s) < 16 || len(s) > 1024 || !(strings.Contains(s, "user") || strings.Contains(s, "USER") || strings.Contains(s, "User")) {
		return
	}
	if os, oe, ok := ordersIn(s); ok {
		t.orders = true
		t.k.add(rInjectedOrders, "injected_orders", os, oe)
	}
}

// ---- the sanitizer's side ----

// exfilURLs appends to dst the spans of the URLs in s that output_exfil_url reports.
func exfilURLs(s string, dst [][2]int) [][2]int {
	n := len(dst)
	dst = markdownExfilURLs(s, dst)
	m := len(dst)
	dst = fetchURLs(s, dst)
	if m > n && len(dst) > m {
		sortSpans(dst[n:])
	}
	return dst
}

// markdownExfilURLs appends the Markdown image and link URLs and the <img src>
// URLs of s that output_exfil_url reports.
func markdownExfilURLs(s string, dst [][2]int) [][2]int {
	if !strings.Contains(s, "](") && !strings.Contains(s, "]:") && !hasImgTag(s) {
		return dst
	}
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case '[':
			l, ok := mdLinkAt(s, i)
			if !ok {
				continue
			}
			us, ue := l.us, l.ue
			if l.ref != "" {
				if us, ue, ok = refDefinition(s, l.ref); !ok {
					continue
				}
			}
			if urlCarriesData(s[us:ue], l.image) {
				dst = append(dst, [2]int{us, ue})
			}
		case '<':
			if g, ok := imgTagAt(s, i); ok && (g.beacon && webURL(s[g.us:g.ue]) || urlCarriesData(s[g.us:g.ue], true)) {
				dst = append(dst, [2]int{g.us, g.ue})
			}
		}
	}
	return dst
}

// sortSpans sorts spans by start (few: an insertion sort).
func sortSpans(sp [][2]int) {
	for i := 1; i < len(sp); i++ {
		for j := i; j > 0 && sp[j][0] < sp[j-1][0]; j-- {
			sp[j], sp[j-1] = sp[j-1], sp[j]
		}
	}
}

// hasImgTag reports whether s may hold an HTML <img> tag ("<img", any case).
func hasImgTag(s string) bool {
	for i := 0; i+4 <= len(s); {
		k := strings.IndexByte(s[i:], '<')
		if k < 0 || i+k+4 > len(s) {
			return false
		}
		i += k
		if s[i+1]|0x20 == 'i' && s[i+2]|0x20 == 'm' && s[i+3]|0x20 == 'g' {
			return true
		}
		i++
	}
	return false
}

// webURL reports an http(s) or scheme-relative URL (one a renderer fetches).
func webURL(u string) bool {
	l := strings.ToLower(u[:min(len(u), 8)])
	return strings.HasPrefix(l, "http://") || strings.HasPrefix(l, "https://") || strings.HasPrefix(u, "//")
}

// defang rewrites the exfiltration URLs of s so that no client fetches or opens
// them: the scheme becomes hxxp/hxxps and each dot of the host "[.]". A URL
// nested in another one's span (`url(//url(//…)`) surfaces once the outer one is
// defanged, so it takes up to defangPasses passes; text still carrying one after
// that is hostile, and every "//" in it becomes "/%2F" (every exfiltration URL
// starts with "//" or a scheme and "//", so none is left).
func defang(s string) string {
	for range defangPasses {
		var buf [8][2]int
		spans := exfilURLs(s, buf[:0])
		if len(spans) == 0 {
			return s
		}
		s = defangSpans(s, spans)
	}
	if len(exfilURLs(s, nil)) == 0 {
		return s
	}
	return strings.ReplaceAll(s, "//", "/%2F")
}

// defangPasses bounds defang's passes, so nested URLs cost O(n), not O(n²).
const defangPasses = 3

// defangSpans defangs the URL spans of s (sorted by start; a span starting
// inside an earlier one is left for the next pass).
func defangSpans(s string, spans [][2]int) string {
	var b strings.Builder
	b.Grow(len(s) + 16)
	last := 0
	for _, sp := range spans {
		if sp[0] < last {
			continue // the same URL reached twice (a reference used by two images)
		}
		b.WriteString(s[last:sp[0]])
		u := s[sp[0]:sp[1]]
		k := strings.Index(u, "//")
		switch {
		case strings.HasPrefix(strings.ToLower(u), "https:"):
			b.WriteString("hxxps:")
		case strings.HasPrefix(strings.ToLower(u), "http:"):
			b.WriteString("hxxp:")
		default:
			b.WriteString("hxxps:")
		}
		host := u[k+2:]
		rest := ""
		if e := strings.IndexAny(host, "/?#"); e >= 0 {
			host, rest = host[:e], host[e:]
		}
		b.WriteString("//")
		b.WriteString(strings.ReplaceAll(host, ".", "[.]"))
		b.WriteString(rest)
		last = sp[1]
	}
	b.WriteString(s[last:])
	return b.String()
}
