package engine

import (
	"encoding/base64"
	"strings"
)

// Secret matchers beyond the prefix rules of pii.go: provider keys ported from the
// gitleaks default configuration (docs/engine.md, "Secrets"), and credentials that
// are secret by position: an Authorization header's credential, Cookie and
// Set-Cookie values, the AWS secret access key after its name, and a URL's password.

// tokenRule is one prefix-shaped provider token: prefix, then a body of at least min
// (and at most max, 0 = unbounded) bytes of set.
type tokenRule struct {
	prefix   string
	min, max int
	set      *byteSet
	rule     ruleIndex
	entity   string
}

var (
	hexLower = mkSet(digitChars + "abcdef")
	token68  = mkSet(upperChars + lowerChars + digitChars + "-._~+/")
	awsBody  = mkSet(upperChars + lowerChars + digitChars + "/+")
)

// tokenRules are checked in order against a word (a run of [A-Za-z0-9_-]); the first
// matching prefix decides. Lengths follow gitleaks v8.30.1 and the providers' docs.
var tokenRules = [...]tokenRule{
	{"sk-ant-api03-", 32, 0, base64URL, rAnthropic, "anthropic_api_key"},
	{"sk-ant-admin01-", 32, 0, base64URL, rAnthropic, "anthropic_admin_key"},
	{"sk-ant-", 32, 0, base64URL, rAnthropic, "anthropic_api_key"},
	{"sk-proj-", 40, 0, base64URL, rOpenAI, "openai_api_key"},
	{"sk-svcacct-", 40, 0, base64URL, rOpenAI, "openai_api_key"},
	{"sk-admin-", 40, 0, base64URL, rOpenAI, "openai_api_key"},
	{"sk-or-v1-", 64, 64, hexLower, rAIProvider, "openrouter_api_key"},
	{"gsk_", 40, 64, alnum, rAIProvider, "groq_api_key"},
	{"xai-", 60, 100, alnumUnderscore, rAIProvider, "xai_api_key"},
	{"hf_", 30, 40, alnum, rAIProvider, "huggingface_token"},
	{"api_org_", 30, 40, alnum, rAIProvider, "huggingface_token"},
	{"pplx-", 48, 48, alnum, rAIProvider, "perplexity_api_key"},
	{"r8_", 37, 37, alnum, rAIProvider, "replicate_api_token"},
	{"glpat-", 20, 0, base64URL, rGitLab, "gitlab_token"},
	{"gldt-", 20, 0, base64URL, rGitLab, "gitlab_token"},
	{"glrt-", 20, 0, base64URL, rGitLab, "gitlab_token"},
	{"glptt-", 40, 40, hexLower, rGitLab, "gitlab_token"},
	{"glcbt-", 20, 0, base64URL, rGitLab, "gitlab_token"},
	{"glft-", 20, 0, base64URL, rGitLab, "gitlab_token"},
	{"glimt-", 25, 0, base64URL, rGitLab, "gitlab_token"},
	{"glsoat-", 20, 0, base64URL, rGitLab, "gitlab_token"},
	{"glagent-", 50, 0, base64URL, rGitLab, "gitlab_token"},
	{"gloas-", 64, 0, base64URL, rGitLab, "gitlab_token"},
	{"GR1348941", 20, 0, base64URL, rGitLab, "gitlab_token"},
	{"npm_", 36, 36, alnum, rNPM, "npm_token"},
	{"pypi-AgEIcHlwaS5vcmc", 50, 0, base64URL, rPyPI, "pypi_token"},
	{"GOCSPX-", 24, 40, base64URL, rGoogleOAuth, "google_oauth_client_secret"},
	{"sbp_", 40, 40, hexLower, rSupabase, "supabase_token"},
	{"sb_secret_", 20, 0, base64URL, rSupabase, "supabase_secret_key"},
	{"whsec_", 16, 0, alnum, rStripeWebhook, "stripe_webhook_secret"},
	// Cloudflare's scannable formats: 40 characters, then an 8-hex-digit checksum
	// (developers.cloudflare.com/fundamentals/api/get-started/token-formats)
	{"cfut_", 48, 48, alnum, rCloudflare, "cloudflare_user_api_token"},
	{"cfat_", 48, 48, alnum, rCloudflare, "cloudflare_account_api_token"},
	{"cfk_", 48, 48, alnum, rCloudflare, "cloudflare_global_api_key"},
}

// tokenRulesByFirst lists, by the first byte of a prefix, the indexes of the
// tokenRules with that first byte (in table order), so most words skip the table.
var tokenRulesByFirst = func() (t [256][]uint8) {
	for i, r := range tokenRules {
		t[r.prefix[0]] = append(t[r.prefix[0]], uint8(i))
	}
	return
}()

// providerToken matches the word w = s[ws:we] against tokenRules; it reports the
// token and returns true when one matched.
func (t *textScan) providerToken(ws, we int) bool {
	w := t.s[ws:we]
	cand := tokenRulesByFirst[w[0]]
	if len(cand) == 0 || len(w) < 24 {
		return false // shorter than any prefix and its body ("glpat-" + 20 is 26)
	}
	for _, i := range cand {
		r := &tokenRules[i]
		if !strings.HasPrefix(w, r.prefix) {
			continue
		}
		body := w[len(r.prefix):]
		// the OpenAI marker is no randomness: a placeholder around it stays one
		if len(body) < r.min || r.max > 0 && len(body) > r.max || !allIn(body, r.set) || !varied(strings.Replace(body, "T3BlbkFJ", "", 1)) {
			return false
		}
		if r.rule == rCloudflare && (!allIn(body[40:], hexLower) || !mixedClasses(body[:40])) {
			return false // the checksum is lower-case hex; the body is random
		}
		end := we
		if r.rule == rStripeWebhook {
			// the secret is base64: '+', '/' and '=' end the word, not the secret
			for end < len(t.s) && (isAlnum(t.s[end]) || t.s[end] == '+' || t.s[end] == '/' || t.s[end] == '=') {
				end++
			}
		}
		if r.rule == rGitLab && end+1 < len(t.s) && t.s[end] == '.' && isAlnum(t.s[end+1]) {
			// routable GitLab tokens end in ".<2><7>" base-36 digits
			for end < len(t.s) && (isAlnum(t.s[end]) || t.s[end] == '.') {
				end++
			}
		}
		t.k.add(r.rule, r.entity, ws, end)
		return true
	}
	// "sk-" keys: OpenAI's carry "T3BlbkFJ" (base64 of "OpenAI") mid-key or, legacy,
	// 48 alphanumerics; other providers (DeepSeek, Moonshot, ...) use "sk-" and 32 or
	// more random characters
	if strings.HasPrefix(w, "sk-") && len(w) >= 3+32 {
		body := w[3:]
		switch {
		case !allIn(body, base64URL) || !varied(strings.Replace(body, "T3BlbkFJ", "", 1)) || !mixedClasses(body):
		case strings.Contains(body, "T3BlbkFJ") || len(body) == 48 && allIn(body, alnum):
			t.k.add(rOpenAI, "openai_api_key", ws, we)
			return true
		default:
			t.k.add(rAIProvider, "sk_api_key", ws, we)
			return true
		}
	}
	return false
}

// ---- AWS secret access key, found by its name ----

// isAWSSecretName reports whether name (any case, '_' or '-' or nothing between the
// words) names an AWS secret access key.
func isAWSSecretName(name string) bool {
	var buf [32]byte
	n := normName(buf[:0], name)
	switch string(n) {
	case "awssecretaccesskey", "secretaccesskey", "awssecretkey", "awssecret":
		return true
	}
	return false
}

// normName lower-cases name and drops '_', '-' and '.' (up to dst's capacity).
func normName(dst []byte, name string) []byte {
	for i := 0; i < len(name); i++ {
		c := name[i]
		if c == '_' || c == '-' || c == '.' || c == ' ' {
			continue
		}
		if len(dst) == cap(dst) {
			return dst[:0]
		}
		if isUpper(c) {
			c += 'a' - 'A'
		}
		dst = append(dst, c)
	}
	return dst
}

// valueAfter skips an assignment after a name ending at s[i]: spaces, one closing
// quote, '=' or ':' (or ":="), spaces and one opening quote. It returns where the
// value starts, or -1 when no assignment follows.
func valueAfter(s string, i int) int {
	n := len(s)
	if i < n && (s[i] == '"' || s[i] == '\'') {
		i++
	}
	for i < n && (s[i] == ' ' || s[i] == '\t') {
		i++
	}
	if i >= n || s[i] != '=' && s[i] != ':' {
		return -1
	}
	i++
	if i < n && s[i] == '=' {
		i++
	}
	for i < n && (s[i] == ' ' || s[i] == '\t') {
		i++
	}
	if i < n && (s[i] == '"' || s[i] == '\'') {
		i++
	}
	return i
}

// awsSecretAt reports an AWS secret access key at s[v:]: exactly 40 characters of
// [A-Za-z0-9/+], mixed, not followed by another such character. It returns the end.
func (t *textScan) awsSecretAt(v int) int {
	s := t.s
	e := v
	for e < len(s) && awsBody[s[e]] {
		e++
	}
	if e-v != 40 || e < len(s) && s[e] == '=' || !varied(s[v:e]) || !mixedClasses(s[v:e]) {
		return v
	}
	t.k.add(rAWSSecret, "aws_secret_access_key", v, e)
	return e
}

// mixedClasses reports whether s holds a digit and a letter (real keys do; words,
// placeholders and hex-free names rarely do).
func mixedClasses(s string) bool {
	d, l := false, false
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case isDigit(c):
			d = true
		case isAlpha(c):
			l = true
		}
	}
	return d && l
}

// ---- credentials by position: Authorization, Cookie, Set-Cookie ----

// headerKind names the header whose name is name (any case), or 0.
const (
	hdrNone = iota
	hdrAuthorization
	hdrCookie
	hdrSetCookie
	hdrAWSSecret
)

func headerKind(name string) int {
	var buf [32]byte
	switch string(normName(buf[:0], name)) {
	case "authorization", "proxyauthorization":
		return hdrAuthorization
	case "cookie", "cookies":
		return hdrCookie
	case "setcookie":
		return hdrSetCookie
	case "awssecretaccesskey", "secretaccesskey", "awssecretkey":
		return hdrAWSSecret
	}
	return hdrNone
}

// header handles ':' at s[i] after a header or member name ("Authorization:",
// "\"Cookie\":"): it reports the credential in the value and returns where scanning
// resumes, or i when the name is not one of ours.
func (t *textScan) header(i int) int {
	s := t.s
	k := i
	if k > 0 && (s[k-1] == '"' || s[k-1] == '\'') {
		k--
	}
	// quick reject: our names end in 'n' (authorization), 'e' (cookie) or 'y' (key)
	if k < 6 {
		return i
	}
	if c := s[k-1] | 0x20; c != 'n' && c != 'e' && c != 'y' {
		return i
	}
	e := k
	for k > 0 && e-k < 24 && (isAlpha(s[k-1]) || s[k-1] == '-' || s[k-1] == '_') {
		k--
	}
	if k == e || k > 0 && (isAlnum(s[k-1]) || s[k-1] == '-' || s[k-1] == '_') {
		return i
	}
	kind := headerKind(s[k:e])
	if kind == hdrNone {
		return i
	}
	v := valueAfter(s, e)
	if v < 0 {
		return i
	}
	return max(i, t.headerValue(kind, v))
}

// headerValue reports the credential of a header of kind whose value starts at s[v];
// it returns the end of what it consumed.
func (t *textScan) headerValue(kind, v int) int {
	switch kind {
	case hdrAuthorization:
		return t.authorization(v)
	case hdrCookie:
		return t.cookies(v, false)
	case hdrSetCookie:
		return t.cookies(v, true)
	case hdrAWSSecret:
		return t.awsSecretAt(v)
	}
	return v
}

// authorization reports the credential after "Bearer", "Token" or "Basic" at s[v].
func (t *textScan) authorization(v int) int {
	s := t.s
	w := v
	for w < len(s) && isAlpha(s[w]) {
		w++
	}
	scheme := s[v:w]
	if w >= len(s) || s[w] != ' ' {
		return v
	}
	c := w
	for c < len(s) && s[c] == ' ' {
		c++
	}
	switch {
	case strings.EqualFold(scheme, "bearer"), strings.EqualFold(scheme, "token"):
		return max(v, t.bearer(c, true))
	case strings.EqualFold(scheme, "basic"):
		e := c
		for e < len(s) && (isAlnum(s[e]) || s[e] == '+' || s[e] == '/') {
			e++
		}
		for e < len(s) && s[e] == '=' {
			e++
		}
		if e-c < 8 || e < len(s) && isWordByte(s[e]) {
			return v
		}
		var buf [192]byte
		if e-c > 256 {
			return e
		}
		m, err := base64.StdEncoding.Decode(buf[:], []byte(s[c:e]))
		if err != nil {
			m, err = base64.RawStdEncoding.Decode(buf[:], []byte(strings.TrimRight(s[c:e], "=")))
		}
		if err == nil && strings.IndexByte(string(buf[:m]), ':') > 0 {
			t.k.add(rAuthorization, "basic_credentials", c, e)
			return e
		}
	}
	return v
}

// bearerToken reports a bearer token (RFC 6750 token68) at s[c]: at least 16
// characters, 8 distinct, with a digit and a letter (after an Authorization header
// name, bearerHeader, a letters-only token counts too); placeholders ("<token>",
// "$TOKEN", "YOUR_ACCESS_TOKEN", "your-token-here") never do.
func (t *textScan) bearerToken(c int) int { return t.bearer(c, false) }

func (t *textScan) bearer(c int, header bool) int {
	s := t.s
	if we := wordEnd(s, c); we-c >= 10 && t.namedToken(c, min(len(s), we+1024)) {
		return we // "token ghp_…": the provider's rule names it (the most specific)
	}
	e := c
	for e < len(s) && token68[s[e]] {
		e++
	}
	for e < len(s) && s[e] == '=' {
		e++
	}
	if e < len(s) && (s[e] == '$' || s[e] == '{' || s[e] == '<' || s[e] == '%') {
		return c
	}
	tok := s[c:e]
	if strings.HasPrefix(tok, "eyJ") {
		// a JWT: the JWT rule names it more precisely when its header decodes
		we := c
		for we < e && base64URL[s[we]] {
			we++
		}
		before := t.k.count()
		if q := t.jwt(c, we); t.k.count() > before {
			return q
		}
	}
	if len(tok) < 16 || !varied(tok) || !(mixedClasses(tok) || header) || placeholderToken(tok) {
		return c
	}
	t.k.add(rAuthorization, "bearer_token", c, e)
	return e
}

// placeholderToken reports tokens that documentation writes instead of a real one:
// SCREAMING_SNAKE_CASE names, or words such as "your", "token", "example", "xxxx".
func placeholderToken(tok string) bool {
	upperSnake := true
	for i := 0; i < len(tok); i++ {
		if c := tok[i]; !(isUpper(c) || c == '_' || c == '-') {
			upperSnake = false
			break
		}
	}
	if upperSnake {
		return true
	}
	l := strings.ToLower(tok)
	for _, w := range [...]string{"your", "token", "example", "placeholder", "redacted", "xxxx", "changeme", "secret", "dummy"} {
		if strings.Contains(l, w) {
			return true
		}
	}
	return false
}

// afterBearer reports whether the word at s[ws] follows "Bearer " or "Token " (any
// case): the credential of an Authorization value quoted without its header.
func afterBearer(s string, ws int) bool {
	if ws < 6 || s[ws-2]|0x20 != 'r' && s[ws-2]|0x20 != 'n' {
		return false
	}
	return ws >= 7 && s[ws-1] == ' ' && (strings.EqualFold(s[ws-7:ws-1], "bearer") || ws >= 6 && strings.EqualFold(s[ws-6:ws-1], "token") && (ws == 6 || !isAlnum(s[ws-7])))
}

// cookies reports the session values of a Cookie header ("a=1; sid=…") or, when set
// is true, the first pair of a Set-Cookie header (the rest are attributes). A value
// counts when it has at least 16 characters, 8 distinct, a digit and a letter, or
// at least 6 (4 distinct) under a session-like name (sid, session, token, auth, jwt).
func (t *textScan) cookies(v int, set bool) int {
	s := t.s
	i := v
	for i < len(s) {
		ns := i
		for i < len(s) && s[i] != '=' && s[i] != ';' && s[i] != '\n' && s[i] != '"' && i-ns < 128 {
			i++
		}
		if i >= len(s) || s[i] != '=' {
			return i
		}
		name := strings.TrimSpace(s[ns:i])
		vs := i + 1
		if vs < len(s) && s[vs] == '"' {
			vs++ // a quoted cookie-value
		}
		ve := vs
		for ve < len(s) && s[ve] > ' ' && s[ve] != ';' && s[ve] != '"' && s[ve] != ',' && s[ve] != '\\' && s[ve] < 0x7F {
			ve++
		}
		val := s[vs:ve]
		if len(val) >= 16 && varied(val) && mixedClasses(val) || len(val) >= 6 && sessionName(name) && distinct(val) >= 4 {
			t.k.add(rCookie, "cookie_value", vs, ve)
		}
		i = ve
		if set || i >= len(s) || s[i] != ';' {
			return i
		}
		i++
		for i < len(s) && s[i] == ' ' {
			i++
		}
	}
	return i
}

// distinct counts the distinct bytes of s, up to 16.
func distinct(s string) int {
	var seen [256]bool
	d := 0
	for i := 0; i < len(s) && d < 16; i++ {
		if !seen[s[i]] {
			seen[s[i]] = true
			d++
		}
	}
	return d
}

func sessionName(name string) bool {
	l := strings.ToLower(name)
	for _, w := range [...]string{"sid", "sess", "token", "auth", "jwt", "login", "remember"} {
		if strings.Contains(l, w) {
			return true
		}
	}
	return false
}

// keyContext runs the value rules of a JSON member's value by its member name: an
// "Authorization" value's credential, a "Cookie" or "Set-Cookie" value's session
// values, an "aws_secret_access_key" value.
func (t *textScan) keyContext() int {
	kind := headerKind(t.k.key)
	if kind == hdrNone {
		return 0
	}
	v := 0
	for v < len(t.s) && t.s[v] == ' ' {
		v++
	}
	return t.headerValue(kind, v)
}

// ---- URLs: user-info passwords and chat webhooks ----

// placeholderPassword reports user-info passwords that are a template, not a value:
// "${PASSWORD}", "<password>", "{{pass}}", "%s", "****", "xxxx", or empty. A literal
// word such as "password" is reported: it may be the real one, and a finding on a
// documentation URL costs an Info record at most.
// url handles "://" at s[i] (i is the ':'): a password in the user-info, or a chat
// webhook URL. It returns where scanning resumes: past the URL when the whole URL is
// a secret, past the user-info when it held a password, else i+1.
func (t *textScan) url(i int) int {
	s := t.s
	n := len(s)
	ss := i
	for ss > 0 && i-ss < 10 && (isAlpha(s[ss-1]) || s[ss-1] == '+' || s[ss-1] == '-' || s[ss-1] == '.') {
		ss--
	}
	if ss == i {
		return i + 1
	}
	a := i + 3
	e := a
	for e < n && !urlStop(s[e]) && s[e] != '/' && s[e] != '?' && s[e] != '#' && e-a < 512 {
		e++
	}
	auth := s[a:e]
	host := auth
	if at := strings.LastIndexByte(auth, '@'); at >= 0 {
		host = auth[at+1:]
		ui := auth[:at]
		if c := strings.IndexByte(ui, ':'); c >= 0 {
			// user:password@host is a credential, not an e-mail address: report the
			// password (placeholders aside) and skip the user-info either way
			if pw := ui[c+1:]; !placeholderPassword(pw) && !t.namedToken(a+c+1, a+at) {
				t.k.add(rURLPassword, "url_password", a+c+1, a+at)
			}
			return a + at + 1
		}
	}
	host = strings.ToLower(host)
	if p := strings.LastIndexByte(host, ':'); p >= 0 && !strings.Contains(host, "]") {
		host = host[:p]
	}
	if end, ent := webhookURL(s, host, e); end > 0 {
		t.k.add(rWebhook, ent, ss, end)
		return end
	}
	return i + 1
}

// urlStop reports whether c ends a URL in running text.
func urlStop(c byte) bool {
	return c <= ' ' || c == '"' || c == '\'' || c == '<' || c == '>' || c == '`' || c == '\\' || c == 0x7F
}

func placeholderPassword(pw string) bool {
	if pw == "" {
		return true
	}
	if strings.ContainsAny(pw, "$<{%*") {
		return true // ${PASSWORD}, <password>, {{pass}}, %s, ****
	}
	for i := 1; i < len(pw); i++ {
		if pw[i] != pw[0] {
			return false
		}
	}
	return true // "xxxx"
}

// webhookURL reports whether the URL with host whose path starts at s[p] is a chat
// incoming webhook (the URL is the credential): Slack, Discord, Microsoft Teams,
// Google Chat. It returns the URL's end and the entity, or 0.
func webhookURL(s, host string, p int) (int, string) {
	e := p
	for e < len(s) && !urlStop(s[e]) && s[e] != ')' && s[e] != ']' && e-p < 1024 {
		e++
	}
	for e > p && (s[e-1] == '.' || s[e-1] == ',' || s[e-1] == ';') {
		e--
	}
	path := s[p:e]
	secretPart := func(prefix string, min int) bool {
		if !strings.HasPrefix(path, prefix) {
			return false
		}
		rest := path[len(prefix):]
		return len(rest) >= min && varied(rest)
	}
	switch {
	case host == "hooks.slack.com":
		// the T…/B…/secret shape is specific enough that even Slack's own
		// documentation example (T00000000/B00000000/XXXX…) counts
		if secretPart("/services/", 40) || secretPart("/workflows/", 40) || secretPart("/triggers/", 40) || slackServicePath(path) {
			return e, "slack_webhook"
		}
	case host == "discord.com" || host == "discordapp.com" || strings.HasSuffix(host, ".discord.com"):
		if secretPart("/api/webhooks/", 60) {
			return e, "discord_webhook"
		}
	case strings.HasSuffix(host, ".webhook.office.com"):
		if secretPart("/webhookb2/", 60) {
			return e, "teams_webhook"
		}
	case strings.HasSuffix(host, ".logic.azure.com") || strings.HasSuffix(host, ".environment.api.powerplatform.com"):
		// Teams Workflows: the sig parameter signs the trigger URL
		if strings.Contains(path, "/workflows/") && strings.Contains(path, "sig=") {
			return e, "teams_webhook"
		}
	case host == "chat.googleapis.com":
		if strings.HasPrefix(path, "/v1/spaces/") && strings.Contains(path, "key=") && strings.Contains(path, "token=") {
			return e, "google_chat_webhook"
		}
	}
	if k := strings.Index(path, "/hooks/"); k >= 0 {
		// Mattermost and Rocket.Chat incoming webhooks: /hooks/<26+ random characters>
		tok := path[k+len("/hooks/"):]
		if q := strings.IndexAny(tok, "?#"); q >= 0 {
			tok = tok[:q]
		}
		if len(tok) >= 24 && allIn(strings.ReplaceAll(tok, "/", ""), alnum) && varied(tok) && mixedClasses(tok) {
			return e, "chat_webhook"
		}
	}
	return 0, ""
}

// slackServicePath reports a Slack incoming-webhook path
// "/services/T<team>/B<hook>/<24 alphanumerics>".
func slackServicePath(path string) bool {
	parts := strings.Split(strings.TrimPrefix(path, "/services/"), "/")
	if !strings.HasPrefix(path, "/services/") || len(parts) != 3 {
		return false
	}
	return len(parts[0]) >= 9 && parts[0][0] == 'T' && allIn(parts[0], upperDigit) &&
		len(parts[1]) >= 9 && parts[1][0] == 'B' && allIn(parts[1], upperDigit) &&
		len(parts[2]) >= 24 && allIn(parts[2], alnum)
}

// slackHookBare handles a Slack webhook written without a scheme
// ("hooks.slack.com/services/T…/B…/…"): the word at s[ws] follows the path prefix.
func (t *textScan) slackHookBare(ws int) int {
	s := t.s
	for _, p := range [...]string{"hooks.slack.com/services/", "hooks.slack.com/workflows/", "hooks.slack.com/triggers/"} {
		if ws >= len(p) && s[ws-len(p):ws] == p {
			start := ws - len(p)
			if end, ent := webhookURL(s, "hooks.slack.com", start+len("hooks.slack.com")); end > 0 {
				t.k.add(rWebhook, ent, start, end)
				return end
			}
		}
	}
	return 0
}

// colon handles ':' at s[i]: a URL's "://", a header or member name before it
// (Authorization, Cookie, Set-Cookie, SecretAccessKey), else an IPv6 address.
func (t *textScan) colon(i int) int {
	s := t.s
	if i+2 < len(s) && s[i+1] == '/' && s[i+2] == '/' {
		return t.url(i)
	}
	if i >= 2 && isAlpha(s[i-1]) && !t.piiOnly {
		if s[i-1]|0x20 == 'g' {
			t.mermaidImg(i) // a Mermaid node's img: (renderfetch.go)
		}
		t.colonLabel(i) // "Note to the assistant:" in a long text (directive.go)
	}
	if i > 0 && (isAlpha(s[i-1]) || s[i-1] == '"' || s[i-1] == '\'') {
		if j := t.header(i); j > i {
			t.done = max(t.done, j)
			return j
		}
	}
	return t.ipv6(i)
}

// wordEnd returns the end of the word ([A-Za-z0-9_-]) starting at s[i].
func wordEnd(s string, i int) int {
	for i < len(s) && isWordByte(s[i]) {
		i++
	}
	return i
}

// namedToken runs the provider-token rules on the word at s[c] (within s[:lim]) and
// reports whether one of them named it; a value some provider's rule knows is named
// by that rule, not by where it stands (an Authorization header, a URL's password).
func (t *textScan) namedToken(c, lim int) bool {
	s := t.s
	we := wordEnd(s[:lim], c)
	if we == c || isDigit(s[c]) && !t.telegramAhead(c, we) {
		return false
	}
	before := t.k.count()
	if isDigit(s[c]) {
		t.telegram(c, we)
	} else {
		t.secret(c, we)
	}
	return t.k.count() > before
}

// ---- Telegram bot tokens and Google OAuth tokens ----

// telegramAhead reports whether the digits s[ds:de] are a bot id followed by ":AA".
func (t *textScan) telegramAhead(ds, de int) bool {
	s := t.s
	n := de - ds
	return n >= 6 && n <= 12 && de+3 < len(s) && s[de] == ':' && s[de+1] == 'A' && s[de+2] == 'A'
}

// telegram reports a Telegram bot token whose bot id is s[ds:de]: ':' and 35
// characters of [A-Za-z0-9_-] starting "AA". It returns the end, or de.
func (t *textScan) telegram(ds, de int) int {
	s := t.s
	if !t.telegramAhead(ds, de) {
		return de
	}
	e := wordEnd(s, de+1)
	if e-(de+1) != 35 || !allDigits(s[ds:de]) || !varied(s[de+1:e]) {
		return de
	}
	t.k.add(rTelegram, "telegram_bot_token", ds, e)
	return e
}

func allDigits(s string) bool {
	for i := 0; i < len(s); i++ {
		if !isDigit(s[i]) {
			return false
		}
	}
	return s != ""
}

// googleAccess reports a Google OAuth access token at s[ws] ("ya29." or "ya29.c.",
// then 20 or more of [A-Za-z0-9_.-]); it returns the end, or ws.
func (t *textScan) googleAccess(ws int) int {
	s := t.s
	b := ws + len("ya29.")
	e := b
	for e < len(s) && (isWordByte(s[e]) || s[e] == '.') {
		e++
	}
	for e > b && s[e-1] == '.' {
		e--
	}
	body := strings.TrimPrefix(s[b:e], "c.")
	if len(body) < 20 || !varied(body) || !mixedClasses(body) {
		return ws
	}
	t.k.add(rGoogleOAuth, "google_oauth_access_token", ws, e)
	return e
}

// googleRefresh reports a Google OAuth refresh token at s[ws] ("1//", then 30 or
// more of [A-Za-z0-9_-]); it returns the end, or ws.
func (t *textScan) googleRefresh(ws int) int {
	s := t.s
	if ws > 0 && (s[ws-1] == ':' || isWordByte(s[ws-1]) || s[ws-1] == '/') {
		return ws // "file:1//", a path
	}
	b := ws + 3
	e := wordEnd(s, b)
	if e-b < 30 || !varied(s[b:e]) || !mixedClasses(s[b:e]) {
		return ws
	}
	t.k.add(rGoogleOAuth, "google_oauth_refresh_token", ws, e)
	return e
}

// githubStateless reports a GitHub App installation token in the stateless format
// ("ghs_" + app id + "_" + a JWT) at s[ws]; it returns the end, or ws.
func (t *textScan) githubStateless(ws, we int) int {
	s := t.s
	w := s[ws:we]
	k := 4
	for k < len(w) && isDigit(w[k]) {
		k++
	}
	if k == 4 || k+4 > len(w) || w[k] != '_' || !strings.HasPrefix(w[k+1:], "eyJ") || we >= len(s) || s[we] != '.' {
		return ws
	}
	e := we
	for dots := 0; e < len(s) && (base64URL[s[e]] || s[e] == '.' && dots < 2); e++ {
		if s[e] == '.' {
			dots++
		}
	}
	if e-ws < 100 {
		return ws
	}
	t.k.add(rGitHub, "github_token", ws, e)
	return e
}
