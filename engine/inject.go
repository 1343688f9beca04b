package engine

import (
	"bytes"
	"strings"
	"unicode/utf8"
	"unsafe"

	"golang.org/x/text/unicode/norm"

	"golang.org/x/net/publicsuffix"
)

// ---- prompt-injection markers ----

// atLineStart checks for a forged chat turn ("Human:", "Assistant:") at line start.
func (t *textScan) atLineStart(i int) {
	s := t.s
	if i < len(s) && (s[i] == 0xEF || s[i] == 0xF0) {
		t.wideTurn(i) // "Ｈｕｍａｎ:", "𝐀𝐬𝐬𝐢𝐬𝐭𝐚𝐧𝐭:"
		return
	}
	if i >= len(s) || (s[i] != 'H' && s[i] != 'A') {
		return
	}
	for _, w := range [...]string{"Human:", "Assistant:"} {
		if strings.HasPrefix(s[i:], w) {
			e := i + len(w)
			if e == len(s) || s[e] == ' ' || s[e] == '\t' || s[e] == '\n' || s[e] == '\r' {
				t.k.add(rInjection, "role_turn", i, e)
			}
			return
		}
	}
}

// wideTurn checks a line that starts with a fullwidth or mathematical character for a
// "Human:" or "Assistant:" turn after NFKC.
func (t *textScan) wideTurn(i int) {
	s := t.s
	e := min(len(s), i+96)
	for e > i && e < len(s) && !utf8.RuneStart(s[e]) {
		e--
	}
	var buf [256]byte
	n := norm.NFKC.AppendString(buf[:0], s[i:e])
	for _, w := range [...]string{"Human:", "Assistant:"} {
		if len(n) >= len(w) && string(n[:len(w)]) == w && (len(n) == len(w) || n[len(w)] == ' ' || n[len(w)] == '\t' || n[len(w)] == '\n') {
			// the original span: runes until their NFKC form covers the word
			end, got := i, 0
			for end < e && got < len(w) {
				_, sz := utf8.DecodeRuneInString(s[end:])
				got += len(norm.NFKC.AppendString(buf[:0], s[end:end+sz]))
				end += sz
			}
			t.k.add(rInjection, "role_turn", i, end)
			return
		}
	}
}

// roleTags are tag names (compared case-insensitively) that no tool output has a
// reason to contain: model role markup and the delimiters agent harnesses wrap tool
// results in. A closing form is matched too.
var roleTags = map[string]string{
	"system":           "role_tag",
	"system-reminder":  "role_tag",
	"system_reminder":  "role_tag",
	"system-prompt":    "role_tag",
	"system_prompt":    "role_tag",
	"human":            "role_tag",
	"assistant":        "role_tag",
	"tool_result":      "fence_sentinel",
	"tool_results":     "fence_sentinel",
	"tool_use":         "fence_sentinel",
	"tool_call":        "fence_sentinel",
	"function_results": "fence_sentinel",
	"function_calls":   "fence_sentinel",
	"function_call":    "fence_sentinel",
	"untrusted_data":   "fence_sentinel",
	"untrusted-data":   "fence_sentinel",
	"untrusted_input":  "fence_sentinel",
	"tool_output":      "fence_sentinel",
	"start_of_turn":    "role_tag", // Gemma
	"end_of_turn":      "role_tag",
}

// angle checks the '<' at s[i] for <|token|>, <<SYS>>, and role or fence tags; a
// compatibility form ("<｜User｜>", fullwidth letters) is matched after NFKC.
func (t *textScan) angle(i int) int {
	if t.piiOnly || i+2 >= len(t.s) {
		return i + 1
	}
	if t.s[i+1] >= 0x80 {
		return t.normalizedToken(i)
	}
	if ent, end := angleToken(t.s, i); end > i {
		t.k.add(rInjection, ent, i, end)
		return end
	}
	if wideBeforeClose(t.s, i+1, '>') {
		return t.normalizedToken(i) // "<|im＿start|>": a compatibility form inside
	}
	return t.markupAngle(i)
}

// wideBeforeClose reports whether a non-ASCII byte comes before the closing byte (or
// a line end) within 64 bytes of s[i]: a token may be written partly in
// compatibility characters.
func wideBeforeClose(s string, i int, closing byte) bool {
	for k := i; k < len(s) && k < i+64; k++ {
		switch c := s[k]; {
		case c >= 0x80:
			return true
		case c == closing || c == '\n' || c == ' ':
			return false
		}
	}
	return false
}

// angleToken matches the '<' at s[i]: a special token "<|name|>" (ChatML, Llama 3
// and 4, Harmony, Phi, Command R, DeepSeek after NFKC: any name of letters, digits
// and '_' starting with a letter), "<<SYS>>", or a role or fence tag. It returns the
// entity and the end, or end == i.
func angleToken(s string, i int) (string, int) {
	if i+2 >= len(s) {
		return "", i
	}
	rest := s[i+1:]
	switch {
	case rest[0] == '|':
		j := 1
		for j < len(rest) && j < 48 && (isAlnum(rest[j]) || rest[j] == '_') {
			j++
		}
		if j >= 3 && isAlpha(rest[1]) && j+1 < len(rest) && rest[j] == '|' && rest[j+1] == '>' {
			return "role_tag", i + 1 + j + 2
		}
		return "", i
	case strings.HasPrefix(rest, "<SYS>>"):
		return "role_tag", i + 7
	case strings.HasPrefix(rest, "</SYS>>"):
		return "role_tag", i + 8
	}
	j := 0
	if rest[0] == '/' {
		j = 1
	}
	nameStart := j
	for j < len(rest) && j < 48 && (isAlnum(rest[j]) || rest[j] == '_' || rest[j] == '-' || rest[j] == ':') {
		j++
	}
	if j == nameStart || j >= len(rest) || (rest[j] != '>' && rest[j] != ' ' && rest[j] != '/') {
		return "", i
	}
	var low [48]byte
	name := lowerInto(low[:0], rest[nameStart:j])
	if len(name) > 6 && string(name[:6]) == "antml:" {
		return "fence_sentinel", i + 1 + j
	}
	if ent, ok := roleTags[string(name)]; ok {
		end := i + 1 + j
		if k := strings.IndexByte(rest[j:min(len(rest), j+200)], '>'); k >= 0 {
			end = i + 1 + j + k + 1
		}
		return ent, end
	}
	return "", i
}

// bracket checks the '[' at s[i] for [INST], Mistral's [SYSTEM_PROMPT] family and
// forged gateway notices; a compatibility form ("［INST］") is matched after NFKC.
func (t *textScan) bracket(i int) int {
	if t.piiOnly {
		return i + 1
	}
	if i == 0 && t.notice {
		return len(noticeOpen) // a gateway's own notice, whole (GatewayNotice)
	}
	if i+1 < len(t.s) && t.s[i+1] >= 0x80 {
		return t.normalizedToken(i)
	}
	if ent, end := bracketToken(t.s, i); end > i {
		t.k.add(rInjection, ent, i, end)
		return end
	}
	if wideBeforeClose(t.s, i+1, ']') {
		return t.normalizedToken(i)
	}
	return t.markupBracket(i)
}

// mistralTokens are the control tokens of Mistral's chat templates, written
// "[NAME]" or "[/NAME]" in upper case.
var mistralTokens = map[string]bool{
	"INST": true, "SYSTEM_PROMPT": true, "AVAILABLE_TOOLS": true, "TOOL_CALLS": true,
	"TOOL_RESULTS": true, "TOOL_CONTENT": true, "THINK": true, "ARGS": true, "CALL_ID": true,
}

// bracketToken matches the '[' at s[i]; see bracket. It returns the entity and the
// end, or end == i.
func bracketToken(s string, i int) (string, int) {
	rest := s[i+1:]
	if strings.HasPrefix(rest, "mcpgate:") || strings.HasPrefix(rest, "tirith:") {
		return "fence_sentinel", i + 1 + strings.IndexByte(rest, ':') + 1
	}
	j := 0
	if len(rest) > 0 && rest[0] == '/' {
		j = 1
	}
	k := j
	for k < len(rest) && k < 24 && (isUpper(rest[k]) || rest[k] == '_') {
		k++
	}
	if k < len(rest) && rest[k] == ']' && mistralTokens[rest[j:k]] {
		return "role_tag", i + 1 + k + 1
	}
	return "", i
}

// normalizedToken matches a chat-template token at s[i] written with compatibility
// characters (fullwidth "＜｜", U+FF5C FULLWIDTH VERTICAL LINE as DeepSeek writes it,
// mathematical letters): up to 192 bytes are NFKC-normalized, U+2581 LOWER ONE EIGHTH
// BLOCK (DeepSeek's word separator) reads as '_', and the token matchers run on the
// result. It returns where scanning resumes.
func (t *textScan) normalizedToken(i int) int {
	s := t.s
	e := min(len(s), i+192)
	for e > i && e < len(s) && !utf8.RuneStart(s[e]) {
		e--
	}
	var buf [512]byte
	ns := norm.NFKC.AppendString(buf[:0], s[i:e])
	ns = bytes.ReplaceAll(ns, []byte("\u2581"), []byte("_"))
	n := unsafe.String(unsafe.SliceData(ns), len(ns))
	var ent string
	var ne int
	switch {
	case len(n) > 0 && n[0] == '<':
		ent, ne = angleToken(n, 0)
	case len(n) > 0 && n[0] == '[':
		ent, ne = bracketToken(n, 0)
	}
	if ne == 0 {
		_, sz := utf8.DecodeRuneInString(s[i:])
		return i + sz
	}
	// map the normalized end back: the shortest prefix whose NFKC form is that long
	end, got := i, 0
	for end < e && got < ne {
		_, sz := utf8.DecodeRuneInString(s[end:])
		one := norm.NFKC.AppendString(buf[:0], s[end:end+sz])
		one = bytes.ReplaceAll(one, []byte("\u2581"), []byte("_"))
		got += len(one)
		end += sz
	}
	t.k.add(rInjection, ent, i, end)
	return end
}

// ---- fake prompts ----

// atLineEnd checks whether the line ending at s[end] is nothing but a shell prompt of
// another session: "[root@host ~]# ", "user@host:~$ ", "bash-5.2# ", "PS C:\> ".
// A prompt followed by a command (a tutorial's "$ npm install") is not reported.
func (t *textScan) atLineEnd(end int) {
	s := t.s
	start := t.lineStart
	if end-start < 2 || end-start > 512 {
		return
	}
	// quick reject: the last non-blank byte must be a prompt character
	k := end - 1
	for k > start && (s[k] == ' ' || s[k] == '\r' || s[k] == '\t') {
		k--
	}
	switch s[k] {
	case '#', '$', '%', '>':
	default:
		if s[k] != 'm' || strings.LastIndexByte(s[max(start, k-12):k], 0x1B) < 0 { // prompt, then an SGR
			return
		}
	}
	var buf [512]byte
	line := visibleText(buf[:0], lastSegment(s[start:end]))
	if isPromptLine(string(line)) {
		t.k.add(rFakePrompt, "shell_prompt", start, end)
	}
}

// isPromptLine matches the visible text of a whole line against the prompt grammar.
func isPromptLine(l string) bool {
	l = strings.TrimRight(l, " \t\r")
	if len(l) < 2 {
		return false
	}
	term := l[len(l)-1]
	body := l[:len(l)-1]
	if term != '#' && term != '$' && term != '%' && term != '>' {
		return false
	}
	if term == '>' {
		// PowerShell: PS C:\path>
		return strings.HasPrefix(body, "PS ") && len(body) >= 6 && isUpper(body[3]) && body[4] == ':' && body[5] == '\\'
	}
	body = strings.TrimRight(body, " ")
	// bash-5.2# sh-5.1$ zsh-5.9%
	for _, sh := range [...]string{"bash-", "sh-", "zsh-", "ksh-"} {
		if strings.HasPrefix(body, sh) {
			v := body[len(sh):]
			return len(v) > 0 && strings.Trim(v, "0123456789.") == ""
		}
	}
	if body == "root" {
		return true
	}
	bracket := strings.HasPrefix(body, "[") && strings.HasSuffix(body, "]")
	if bracket {
		body = body[1 : len(body)-1]
	}
	at := strings.IndexByte(body, '@')
	if at <= 0 || !isUserName(body[:at]) {
		return false
	}
	rest := body[at+1:]
	h := 0
	for h < len(rest) && (isAlnum(rest[h]) || rest[h] == '-' || rest[h] == '.' || rest[h] == '_') {
		h++
	}
	if h == 0 || !isAlnum(rest[0]) {
		return false
	}
	path := rest[h:]
	if bracket {
		// [user@host path]
		return path == "" || (path[0] == ' ' && isPath(path[1:]))
	}
	switch {
	case path == "":
		return true
	case path[0] == ':':
		return isPath(path[1:])
	case path[0] == ' ':
		return isPath(strings.TrimSpace(path))
	}
	return false
}

func isUserName(u string) bool {
	if len(u) == 0 || len(u) > 32 || !(isLower(u[0]) || u[0] == '_') {
		return false
	}
	for i := 0; i < len(u); i++ {
		c := u[i]
		if !(isLower(c) || isDigit(c) || c == '_' || c == '-' || c == '.') {
			return false
		}
	}
	return true
}

func isPath(p string) bool {
	if p == "" {
		return true
	}
	if p[0] != '~' && p[0] != '/' && !isAlnum(p[0]) {
		return false
	}
	for i := 0; i < len(p); i++ {
		c := p[i]
		if c == ' ' || c == '#' || c == '$' || c == '@' || c < 0x20 {
			return false
		}
	}
	return true
}

// ---- hosts, for OSC 8 ----

// urlHost returns the lower-cased host of an absolute URI ("" when it has none).
func urlHost(uri string) string {
	k := strings.Index(uri, "://")
	if k < 0 {
		return ""
	}
	h := uri[k+3:]
	if e := strings.IndexAny(h, "/?#"); e >= 0 {
		h = h[:e]
	}
	if at := strings.LastIndexByte(h, '@'); at >= 0 {
		h = h[at+1:]
	}
	if strings.HasPrefix(h, "[") {
		if e := strings.IndexByte(h, ']'); e >= 0 {
			return strings.ToLower(h[1:e])
		}
	}
	if c := strings.LastIndexByte(h, ':'); c >= 0 {
		h = h[:c]
	}
	return strings.ToLower(strings.TrimSuffix(h, "."))
}

// commonTLDs are the top-level domains a label must end with to count as naming a
// host when it has neither a scheme nor "www.". File extensions that are also ccTLDs
// (md, rs, py, sh, pl, ts) are left out on purpose.
var commonTLDs = map[string]bool{
	"com": true, "org": true, "net": true, "io": true, "dev": true, "app": true, "ai": true,
	"co": true, "gov": true, "edu": true, "mil": true, "int": true, "me": true, "info": true,
	"biz": true, "xyz": true, "cloud": true, "tech": true, "site": true, "online": true,
	"uk": true, "de": true, "fr": true, "nl": true, "ru": true, "cn": true, "jp": true,
	"us": true, "ca": true, "au": true, "in": true, "br": true, "es": true, "it": true,
	"ch": true, "se": true, "no": true, "fi": true, "dk": true, "be": true, "at": true,
	"kr": true, "tw": true, "hk": true, "sg": true, "nz": true, "ie": true, "eu": true,
	"cz": true, "gg": true, "ly": true, "so": true, "to": true, "tv": true, "cc": true,
	"page": true, "link": true, "live": true, "zip": true, "mov": true, "example": true,
	"test": true, "local": true, "internal": true, "shop": true, "store": true, "pro": true,
}

// labelHost finds a host named by a link's visible label: the first word that is a
// URL, starts with "www.", or is a dotted name ending in a common TLD.
func labelHost(label []byte) (string, bool) {
	for _, w := range strings.Fields(string(label)) {
		w = strings.Trim(w, "<>()[]\"'.,;!?")
		hadScheme := false
		if k := strings.Index(w, "://"); k >= 0 {
			w = w[k+3:]
			hadScheme = true
		}
		if e := strings.IndexAny(w, "/?#:"); e >= 0 {
			w = w[:e]
		}
		if at := strings.LastIndexByte(w, '@'); at >= 0 {
			if hadScheme {
				w = w[at+1:]
			} else {
				continue // an e-mail address, not a host
			}
		}
		w = strings.ToLower(w)
		dot := strings.LastIndexByte(w, '.')
		if dot <= 0 || dot == len(w)-1 {
			continue
		}
		tld := w[dot+1:]
		okTLD := len(tld) >= 2
		for i := 0; i < len(tld); i++ {
			if tld[i] < 0x80 && !isLower(tld[i]) {
				okTLD = false
			}
		}
		if !okTLD || !validHostChars(w) {
			continue
		}
		if hadScheme || strings.HasPrefix(w, "www.") || commonTLDs[tld] || icannSuffix(w, tld) {
			return w, true
		}
	}
	return "", false
}

// fileExtensions are ICANN top-level domains that are far more often file name
// extensions in a label ("README.md", "main.rs").
var fileExtensions = map[string]bool{
	"md": true, "rs": true, "py": true, "sh": true, "pl": true, "ts": true, "pm": true,
	"tf": true, "ps": true, "am": true, "mk": true, "cs": true, "fs": true, "ml": true,
	"hs": true, "ko": true, "so": true, "gz": true, "rb": true, "cc": true,
	"mp": true, "sc": true, "ci": true, "lk": true,
}

// icannSuffix reports whether w ends in a public suffix of the ICANN section of the
// public suffix list (golang.org/x/net/publicsuffix) whose last label tld is not a
// common file extension, and has a label before it.
func icannSuffix(w, tld string) bool {
	if fileExtensions[tld] {
		return false
	}
	ps, icann := publicsuffix.PublicSuffix(w)
	return icann && len(ps) < len(w) && ps != w
}

func validHostChars(h string) bool {
	for i := 0; i < len(h); i++ {
		c := h[i]
		if !(c >= 0x80 || isLower(c) || isDigit(c) || c == '-' || c == '.') {
			return false
		}
	}
	return true
}

// sameSite reports whether a label host and a link host name the same site: equal
// once "www." is dropped, or both under the same registrable domain (eTLD+1 by the
// public suffix list, golang.org/x/net/publicsuffix). A label that is itself a public
// suffix ("github.io", "co.uk") matches only itself: "evil.github.io" belongs to
// someone else.
func sameSite(a, b string) bool {
	a = strings.TrimPrefix(a, "www.")
	b = strings.TrimPrefix(b, "www.")
	if a == b {
		return true
	}
	if a == "" || b == "" {
		return false
	}
	ra, err1 := publicsuffix.EffectiveTLDPlusOne(a)
	rb, err2 := publicsuffix.EffectiveTLDPlusOne(b)
	if err1 != nil || err2 != nil {
		return false // a public suffix itself, an IP literal or a malformed name
	}
	return ra == rb
}

func isLower(c byte) bool { return c >= 'a' && c <= 'z' }
func isUpper(c byte) bool { return c >= 'A' && c <= 'Z' }
func isDigit(c byte) bool { return c >= '0' && c <= '9' }
func isAlpha(c byte) bool { return isLower(c | 0x20) }
func isAlnum(c byte) bool { return isDigit(c) || isAlpha(c) }

func lowerInto(dst []byte, s string) []byte {
	for i := 0; i < len(s) && len(dst) < cap(dst); i++ {
		c := s[i]
		if isUpper(c) {
			c += 'a' - 'A'
		}
		dst = append(dst, c)
	}
	return dst
}
