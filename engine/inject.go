package engine

import "strings"

// ---- prompt-injection markers ----

// atLineStart checks for a forged chat turn ("Human:", "Assistant:") at line start.
func (t *textScan) atLineStart(i int) {
	s := t.s
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
}

// chatTokens are special tokens written "<|name|>" by ChatML, Llama 3 and others.
var chatTokens = map[string]bool{
	"im_start": true, "im_end": true, "im_sep": true, "endoftext": true, "system": true,
	"user": true, "assistant": true, "start_header_id": true, "end_header_id": true,
	"eot_id": true, "begin_of_text": true, "end_of_text": true, "eom_id": true,
	"start_of_turn": true, "end_of_turn": true, "tool_call": true, "im_middle": true,
}

// angle checks the '<' at s[i] for <|token|>, <<SYS>>, and role or fence tags.
func (t *textScan) angle(i int) int {
	s := t.s
	if t.piiOnly || i+2 >= len(s) {
		return i + 1
	}
	rest := s[i+1:]
	switch {
	case rest[0] == '|':
		j := 1
		for j < len(rest) && j < 40 && (isLower(rest[j]) || rest[j] == '_') {
			j++
		}
		if j+1 < len(rest) && rest[j] == '|' && rest[j+1] == '>' && chatTokens[rest[1:j]] {
			t.k.add(rInjection, "role_tag", i, i+1+j+2)
			return i + 1 + j + 2
		}
	case strings.HasPrefix(rest, "<SYS>>"):
		t.k.add(rInjection, "role_tag", i, i+7)
		return i + 7
	case strings.HasPrefix(rest, "</SYS>>"):
		t.k.add(rInjection, "role_tag", i, i+8)
		return i + 8
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
		return i + 1
	}
	var low [48]byte
	name := lowerInto(low[:0], rest[nameStart:j])
	if len(name) > 6 && string(name[:6]) == "antml:" {
		t.k.add(rInjection, "fence_sentinel", i, i+1+j)
		return i + 1 + j
	}
	if ent, ok := roleTags[string(name)]; ok {
		end := i + 1 + j
		if k := strings.IndexByte(rest[j:min(len(rest), j+200)], '>'); k >= 0 {
			end = i + 1 + j + k + 1
		}
		t.k.add(rInjection, ent, i, end)
		return end
	}
	return i + 1
}

// bracket checks the '[' at s[i] for [INST], [/INST] and forged gateway notices.
func (t *textScan) bracket(i int) int {
	s := t.s
	if t.piiOnly {
		return i + 1
	}
	rest := s[i+1:]
	switch {
	case strings.HasPrefix(rest, "INST]"):
		t.k.add(rInjection, "role_tag", i, i+6)
		return i + 6
	case strings.HasPrefix(rest, "/INST]"):
		t.k.add(rInjection, "role_tag", i, i+7)
		return i + 7
	case strings.HasPrefix(rest, "mcpgate:"), strings.HasPrefix(rest, "tirith:"):
		e := i + 1 + strings.IndexByte(rest, ':') + 1
		t.k.add(rInjection, "fence_sentinel", i, e)
		return e
	}
	return i + 1
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
		if hadScheme || strings.HasPrefix(w, "www.") || commonTLDs[tld] {
			return w, true
		}
	}
	return "", false
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
// once "www." is dropped, or one a subdomain of the other.
func sameSite(a, b string) bool {
	a = strings.TrimPrefix(a, "www.")
	b = strings.TrimPrefix(b, "www.")
	if a == b {
		return true
	}
	return a != "" && b != "" && (strings.HasSuffix(a, "."+b) || strings.HasSuffix(b, "."+a))
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
