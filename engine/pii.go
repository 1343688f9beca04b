package engine

import (
	"encoding/base64"
	"net/netip"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/mcpgate/mcpgate/internal/jsonscan"
)

// PII and secret matchers. Each validates what it finds (Luhn, mod-97, SSA rules,
// octet ranges, a decodable JWT header) instead of trusting the shape alone.

func isWordByte(c byte) bool { return wordBytes[c] }

// wordBytes holds [A-Za-z0-9_-]: one load instead of five compares in the matchers' loops.
var wordBytes = func() (t [256]bool) {
	for c := range t {
		t[c] = isAlnum(byte(c)) || c == '_' || c == '-'
	}
	return
}()

// word handles a pre-scan hit on a digit, 'A', 'J', '_' or '-': it finds the whole
// word ([A-Za-z0-9_-]+) around s[i] and runs the number, secret and IBAN matchers on
// it once, returning where scanning resumes.
func (t *textScan) word(i int) int {
	s := t.s
	n := len(s)
	ws := i
	for ws > t.done && isWordByte(s[ws-1]) {
		ws--
	}
	we := i + 1
	for we < n && isWordByte(s[we]) {
		we++
	}
	end := we
	if ws == t.done && ws > 0 && isWordByte(s[ws-1]) {
		// the rest of a word an earlier matcher consumed
		t.done = end
		return end
	}
	c := s[ws]
	if we-ws >= 16 && !t.piiOnly && ws >= t.b64Done {
		t.encodedOrders(ws) // base64 or hex that decodes to orders (directive.go)
	}
	before := t.k.count()
	if ws >= 7 {
		// quick byte tests first: "Bearer "/"Token " end in "r "/"n ", Slack paths in "s/"
		switch p := s[ws-2] | 0x20; s[ws-1] {
		case ' ':
			if (p == 'r' || p == 'n') && afterBearer(s, ws) {
				if e := t.bearerToken(ws); e > ws {
					t.done = max(e, end)
					return t.done
				}
			}
		case '/':
			if p == 's' {
				if e := t.slackHookBare(ws); e > 0 {
					t.done = e
					return e
				}
			}
		}
	}
	switch {
	case isDigit(c):
		// quick reject: a short number that no separator continues can match nothing
		d := ws + 1
		for d < n && isDigit(s[d]) {
			d++
		}
		if d-ws < 13 && !numberContinues(s, d) && (ws == 0 || s[ws-1] != '(' && s[ws-1] != '+') {
			if d < n && (s[d] == ':' || s[d] == '/') || d-ws == 9 {
				end = max(end, t.shortNumber(ws, d))
			}
			break
		}
		if numberBoundary(s, ws) {
			end = max(end, t.numeric(ws))
		} else if s[ws-1] == '=' {
			end = max(end, t.assignedIPv4(ws)) // host=10.0.0.1
		}
	case c == '-':
		if strings.HasPrefix(s[ws:], "-----BEGIN ") {
			end = max(end, t.privateKey(ws))
		}
	default:
		end = max(end, t.secret(ws, we))
	}
	if we-ws >= 10 && t.k.count() == before {
		t.noteToken(ws, we)
	}
	t.done = end
	return end
}

// shortNumber handles the short numbers that start a token of their own: a Telegram
// bot id before ":AA", a bare nine-digit SSN after a cue, a Google refresh token
// ("1//"). The digits are s[ws:d]; it returns the end of what it reported, or d.
func (t *textScan) shortNumber(ws, d int) int {
	s := t.s
	n := len(s)
	switch {
	case d < n && s[d] == ':':
		if t.telegramAhead(ws, d) {
			return t.telegram(ws, d)
		}
	case d < n && s[d] == '/':
		if s[ws] == '1' && d == ws+1 && d+2 < n && s[d+1] == '/' {
			if e := t.googleRefresh(ws); e > ws {
				return e
			}
		}
	case d-ws == 9:
		if (d == n || !isWordByte(s[d])) && t.ssnCue(ws) && validSSN([]byte(s[ws:d])) && numberBoundary(s, ws) {
			t.k.add(rSSN, "ssn", ws, d)
		}
	}
	return d
}

// numberContinues reports whether the digit group ending at s[d] may continue into a
// longer number run: a separator (space, '-', '.') followed by a digit, "space (",
// ')', or a word byte. "port 8080 with" stops at the space; "415 555" goes on.
func numberContinues(s string, d int) bool {
	if d >= len(s) {
		return false
	}
	switch c := s[d]; {
	case c == ' ' || c == '-' || c == '.' || c == '/':
		return d+1 < len(s) && (isDigit(s[d+1]) || c == ' ' && s[d+1] == '(')
	case c == ')' || c == '_':
		return true
	default:
		return isAlpha(c)
	}
}

// numberBoundary reports whether a number may start at s[i]: not inside an
// identifier, version, date, time or thousands-grouped number.
func numberBoundary(s string, i int) bool {
	if i == 0 {
		return true
	}
	c := s[i-1]
	if isWordByte(c) {
		return false
	}
	switch c {
	case '.', ',', ':', '/', '#', '=':
		if i >= 2 && isAlnum(s[i-2]) {
			return false
		}
	}
	return true
}

// assignedIPv4 reports a dotted quad at s[i] that a "name=" assignment precedes
// (numbers after '=' are otherwise not at a number boundary), unless the name is a
// version's. It returns where scanning resumes.
func (t *textScan) assignedIPv4(i int) int {
	s := t.s
	j := i
	var r numRun
	for r.n < 4 {
		st := j
		for j < len(s) && isDigit(s[j]) && j-st < 4 {
			j++
		}
		if j == st {
			return j
		}
		r.gs[r.n], r.ge[r.n] = st, j
		r.n++
		if r.n < 4 {
			if j+1 >= len(s) || s[j] != '.' || !isDigit(s[j+1]) {
				return j
			}
			j++
		}
	}
	if j < len(s) && (isWordByte(s[j]) || s[j] == '.' && j+1 < len(s) && isDigit(s[j+1])) {
		return skipWord(s, j)
	}
	if validIPv4(s, &r, 0) && !afterVersionWord(s, i) && !versionName(t.k.key) {
		t.k.add(rIP, "ipv4", i, j)
	}
	return j
}

// sign handles '+' and '(' that may open a phone number.
func (t *textScan) sign(i int) int {
	s := t.s
	if s[i] == '(' && i >= 3 && s[i-1]|0x20 == 'l' && !t.piiOnly {
		t.cssURL(i) // CSS url(...) (renderfetch.go)
	}
	if i+1 < len(s) && isDigit(s[i+1]) && numberBoundary(s, i) && i >= t.done {
		end := t.numeric(i)
		t.done = max(t.done, end)
		return max(end, i+1)
	}
	return i + 1
}

// numRun is a run of digit groups and the single separators between them.
type numRun struct {
	n     int
	plus  bool
	gs    [8]int
	ge    [8]int
	paren [8]bool
	sep   [8]byte // separator after group k; ')' marks "(415)555"
	// extEnd is the end of an attached extension ("x12", "ext12", "ext.12") after the
	// last group, or the end of the last group
	extEnd int
}

// attachedExtension returns the end of a phone extension attached at s[i] ("x12",
// "X12", "ext12", "ext.12", "#12": 1–6 digits, then no word byte), or i.
func attachedExtension(s string, i int) int {
	j := i
	switch {
	case j < len(s) && (s[j] == 'x' || s[j] == 'X' || s[j] == '#'):
		j++
	case hasPrefixFold(s[j:], "ext."):
		j += 4
	case hasPrefixFold(s[j:], "ext"):
		j += 3
	default:
		return i
	}
	d := j
	for d < len(s) && isDigit(s[d]) && d-j < 7 {
		d++
	}
	if d == j || d-j > 6 || d < len(s) && (isWordByte(s[d]) || s[d] == '.' && d+1 < len(s) && isDigit(s[d+1])) {
		return i
	}
	return d
}

// numeric parses the number run starting at s[i] (a digit, '+' or '(') and reports
// IPv4 addresses, SSNs, payment cards and phone numbers among its group spans.
func (t *textScan) numeric(i int) int {
	s := t.s
	n := len(s)
	var r numRun
	j := i
	if s[j] == '+' {
		r.plus = true
		j++
	}
	for r.n < len(r.gs) {
		open := false
		if j < n && s[j] == '(' {
			open = true
			j++
		}
		st := j
		for j < n && isDigit(s[j]) {
			j++
		}
		if j == st || j-st > 19 {
			return skipWord(s, j)
		}
		if open {
			if j >= n || s[j] != ')' {
				return skipWord(s, j)
			}
			j++
		}
		r.gs[r.n], r.ge[r.n], r.paren[r.n] = st, j, open
		if open {
			r.ge[r.n] = j - 1
		}
		r.n++
		if j >= n {
			break
		}
		c := s[j]
		if (c == ' ' || c == '-' || c == '.' || c == '/') && j+1 < n && (isDigit(s[j+1]) || (c == ' ' && s[j+1] == '(' && j+2 < n && isDigit(s[j+2]))) {
			r.sep[r.n-1] = c
			j++
			continue
		}
		if open && isDigit(c) {
			r.sep[r.n-1] = ')'
			continue
		}
		break
	}
	end := j
	r.extEnd = end
	if e := attachedExtension(s, end); e > end {
		r.extEnd = e
		end = e
	} else if end < n {
		c := s[end]
		if isWordByte(c) || c == '@' {
			return skipWord(s, end)
		}
		if (c == '.' || c == ',' || c == ':') && end+1 < n && isDigit(s[end+1]) {
			dottedQuad := r.n == 4 && r.sep[0] == '.' && r.sep[1] == '.' && r.sep[2] == '.'
			if c != ':' || !dottedQuad { // 192.168.0.1:80 keeps its address
				return skipWord(s, end+1)
			}
		}
	}
	// try spans [a,b) of groups, longest first; spans start and end at spaces. Without
	// '+', fewer than four groups ("3.14", "2026-12-02") and nine digits match nothing:
	// IPv4 needs four groups, an SSN nine digits, a card 13, a phone 10
	nd := 0
	for g := 0; g < r.n; g++ {
		nd += r.ge[g] - r.gs[g]
	}
	if !r.plus && r.n < 4 && nd < 9 {
		return end
	}
	for a := 0; a < r.n; {
		matched := false
		for b := r.n; b > a; b-- {
			if b < r.n && r.sep[b-1] != ' ' {
				continue
			}
			if t.numberSpan(&r, a, b, i) {
				a = b
				matched = true
				break
			}
		}
		if !matched {
			a++
			for a < r.n && r.sep[a-1] != ' ' {
				a++
			}
		}
	}
	return end
}

func skipWord(s string, j int) int {
	for j < len(s) && (isWordByte(s[j]) || s[j] == '.') {
		j++
	}
	return j
}

// numberSpan tests groups [a,b) of r against the numeric matchers.
func (t *textScan) numberSpan(r *numRun, a, b, runStart int) bool {
	s := t.s
	plus := r.plus && a == 0
	start := r.gs[a]
	if r.paren[a] {
		start--
	}
	if plus {
		start = runStart
	}
	end := r.ge[b-1]
	if r.paren[b-1] {
		end++
	}
	k := b - a
	var digits [24]byte
	nd := 0
	anyParen := false
	for g := a; g < b; g++ {
		if r.ge[g]-r.gs[g] > len(digits)-nd {
			return false
		}
		nd += copy(digits[nd:], s[r.gs[g]:r.ge[g]])
		anyParen = anyParen || r.paren[g]
	}
	glen := func(g int) int { return r.ge[a+g] - r.gs[a+g] }
	sepsAll := func(c byte) bool {
		for g := a; g < b-1; g++ {
			if r.sep[g] != c {
				return false
			}
		}
		return true
	}
	slash := false
	for g := a; g < b-1; g++ {
		slash = slash || r.sep[g] == '/'
	}
	if slash {
		// only a card is written with slashes ("5555/5555/5555/4444"); dates,
		// fractions and paths are not numbers of ours
		if !plus && !anyParen && nd >= 13 && nd <= 19 && cardGrouping(r, a, b) && validCard(digits[:nd]) {
			t.k.add(rCard, "card", start, end)
			return true
		}
		return false
	}
	if !plus && !anyParen {
		// IPv4: four dotted octets
		if k == 4 && sepsAll('.') && validIPv4(s, r, a) && !afterVersionWord(s, start) && !versionName(t.k.key) {
			t.k.add(rIP, "ipv4", start, end)
			return true
		}
		// US SSN: AAA-GG-SSSS, or with spaces or dots when the three groups are the
		// whole number run ("SSN 321 54 9876", "321.54.9876")
		if k == 3 && glen(0) == 3 && glen(1) == 2 && glen(2) == 4 && validSSN(digits[:9]) &&
			(sepsAll('-') || (sepsAll(' ') || sepsAll('.')) && a == 0 && b == r.n) {
			t.k.add(rSSN, "ssn", start, end)
			return true
		}
		// payment card
		if nd >= 13 && nd <= 19 && cardGrouping(r, a, b) && validCard(digits[:nd]) {
			t.k.add(rCard, "card", start, end)
			return true
		}
	}
	if isPhone(r, a, b, plus, digits[:nd]) {
		if b == r.n {
			end = max(end, r.extEnd) // "415-555-0182x12": the extension belongs to the number
		}
		t.k.add(rPhone, "phone", start, end)
		return true
	}
	return false
}

func validIPv4(s string, r *numRun, a int) bool {
	for g := a; g < a+4; g++ {
		o := s[r.gs[g]:r.ge[g]]
		if len(o) > 3 || (len(o) > 1 && o[0] == '0') {
			return false
		}
		v := 0
		for i := 0; i < len(o); i++ {
			v = v*10 + int(o[i]-'0')
		}
		if v > 255 {
			return false
		}
	}
	return true
}

// afterVersionWord reports whether the dotted quad at s[i] follows a version operator
// ('@', '^', '~', "==", ">=", "~=") or a version name:
// "version", "ver", "v", "build", "release", or an assignment to a name ending in
// "version" or "_ver" ("app_version=1.2.3.4", "\"appVersion\": \"1.2.3.4\"").
func afterVersionWord(s string, i int) bool {
	if i > 0 && (s[i-1] == '@' || s[i-1] == '^' || s[i-1] == '~') {
		return true // pkg@1.2.3.4, ^1.2.3.4, ~1.2.3.4: a package version or range
	}
	if i > 1 && s[i-1] == '=' && strings.IndexByte("=<>~!", s[i-2]) >= 0 {
		return true // pkg==1.2.3.4, >=1.2.3.4: a requirement specifier
	}
	j := i
	for j > 0 && (s[j-1] == ' ' || s[j-1] == '"' || s[j-1] == '\'' || s[j-1] == '\t') {
		j--
	}
	// an assignment (=, :), a table cell (|) or an element (<app_version>)
	if j > 0 && (s[j-1] == '=' || s[j-1] == ':' || s[j-1] == '|' || s[j-1] == '>') {
		j--
		for j > 0 && (s[j-1] == ' ' || s[j-1] == '"' || s[j-1] == '\'' || s[j-1] == '\t') {
			j--
		}
	}
	w := j
	for w > 0 && j-w < 64 && (isAlnum(s[w-1]) || s[w-1] == '_' || s[w-1] == '-' || s[w-1] == '.') {
		w--
	}
	return versionName(s[w:j])
}

// versionName reports whether a name (a word or a JSON member name) names a version:
// "version", "ver", "v", "build", "release", "firmware", or a name ending in
// "_ver" or "-ver", or holding "version", in any case ("app_version", "appVersion",
// "OS-Version", "version_code").
func versionName(name string) bool {
	if name == "" || len(name) > 64 {
		return false
	}
	var buf [64]byte
	l := lowerInto(buf[:0], name)
	ls := string(l)
	switch ls {
	case "v", "ver", "version", "build", "release", "firmware", "fw":
		return true
	}
	return strings.Contains(ls, "version") || strings.HasSuffix(ls, "_ver") || strings.HasSuffix(ls, "-ver") || strings.HasSuffix(ls, "_build")
}

// ssnCue reports a bare nine-digit number at s[ws] named an SSN: under a member
// named ssn (social_security_number, us_ssn, ...), or after "SSN", "social
// security number", "SS#" or "soc. sec." on the same line within 40 bytes.
func (t *textScan) ssnCue(ws int) bool {
	var buf [40]byte
	if k := normName(buf[:0], t.k.key); len(k) > 0 {
		switch string(k) {
		case "ssn", "usssn", "ssnnumber", "socialsecuritynumber", "socialsecurity", "socialsecurityno", "ssno", "taxpayerssn":
			return true
		}
	}
	s := t.s
	a := max(0, ws-40)
	if nl := strings.LastIndexByte(s[a:ws], '\n'); nl >= 0 {
		a += nl + 1
	}
	l := lowerInto(buf[:0], s[a:ws])
	for _, cue := range [...]string{"ssn", "social security", "social-security", "social_security", "ss#", "soc. sec", "soc sec", "sozialversicherungs"} {
		if k := strings.Index(string(l), cue); k >= 0 && (k == 0 || !isAlpha(l[k-1])) {
			return true
		}
	}
	return false
}

// validSSN applies the SSA rules: area not 000, 666 or 900–999; group not 00; serial
// not 0000; and not the two numbers published in advertising (078-05-1120, 219-09-9999).
func validSSN(d []byte) bool {
	area := string(d[:3])
	if area == "000" || area == "666" || d[0] == '9' {
		return false
	}
	if string(d[3:5]) == "00" || string(d[5:9]) == "0000" {
		return false
	}
	return string(d) != "078051120" && string(d) != "219099999"
}

// cardGrouping accepts a card written as one group, or in groups of 4 (the last 1–4),
// 4-6-5 (American Express) or 4-6-4 (Diners), with one kind of separator.
func cardGrouping(r *numRun, a, b int) bool {
	k := b - a
	if k == 1 {
		return true
	}
	sep := r.sep[a]
	if sep != ' ' && sep != '-' && sep != '.' && sep != '/' {
		return false
	}
	if sep == '.' || sep == '/' {
		// dots and slashes group a card only in fours ("4111.1111.1111.1111")
		for g := a; g < b-1; g++ {
			if r.ge[g]-r.gs[g] != 4 {
				return false
			}
		}
	}
	for g := a; g < b-1; g++ {
		if r.sep[g] != sep {
			return false
		}
	}
	l := func(g int) int { return r.ge[a+g] - r.gs[a+g] }
	if k == 3 && l(0) == 4 && l(1) == 6 && (l(2) == 5 || l(2) == 4) {
		return true
	}
	for g := 0; g < k-1; g++ {
		if l(g) != 4 {
			return false
		}
	}
	return l(k-1) >= 1 && l(k-1) <= 4
}

// validCard checks the issuer prefix (IIN) against the card length, then Luhn.
func validCard(d []byte) bool {
	n := len(d)
	p2 := int(d[0]-'0')*10 + int(d[1]-'0')
	p3 := p2*10 + int(d[2]-'0')
	p4 := p3*10 + int(d[3]-'0')
	p6 := p4*100 + int(d[4]-'0')*10 + int(d[5]-'0')
	ok := false
	switch {
	case d[0] == '4': // Visa
		ok = n == 13 || n == 16 || n == 19
	case p2 >= 51 && p2 <= 55, p4 >= 2221 && p4 <= 2720: // Mastercard
		ok = n == 16
	case p2 == 34 || p2 == 37: // American Express
		ok = n == 15
	case p4 == 6011, p2 == 65, p3 >= 644 && p3 <= 649, p6 >= 622126 && p6 <= 622925: // Discover
		ok = n >= 16 && n <= 19
	case p4 >= 3528 && p4 <= 3589: // JCB
		ok = n >= 16 && n <= 19
	case p3 >= 300 && p3 <= 305, p2 == 36, p2 == 38, p2 == 39: // Diners Club
		ok = n >= 14 && n <= 19
	case p2 == 62: // UnionPay
		ok = n >= 16 && n <= 19
	case p2 == 50, p2 >= 56 && p2 <= 58, p2 == 67: // Maestro
		ok = n >= 12 && n <= 19
	}
	return ok && luhn(d)
}

func luhn(d []byte) bool {
	sum := 0
	double := false
	for i := len(d) - 1; i >= 0; i-- {
		v := int(d[i] - '0')
		if double {
			v *= 2
			if v > 9 {
				v -= 9
			}
		}
		sum += v
		double = !double
	}
	return sum%10 == 0
}

// isPhone accepts E.164 ("+" and 8–15 digits, grouped freely) and two national
// groupings: NANP 3-3-4 (optionally after a "1" group, area code in parentheses
// allowed) and trunk-prefix numbers (first group starts with 0, 2–5 groups of at
// least 2 digits, 10–11 digits). Ungrouped national digit strings are not phones.
func isPhone(r *numRun, a, b int, plus bool, d []byte) bool {
	k := b - a
	nd := len(d)
	l := func(g int) int { return r.ge[a+g] - r.gs[a+g] }
	if plus {
		if nd < 8 || nd > 15 || d[0] == '0' {
			return false
		}
		for g := a; g < b-1; g++ {
			if r.sep[g] == '.' && k < 3 {
				return false
			}
		}
		return true
	}
	consistent := func(from int) bool {
		var sep byte
		for g := a + from; g < b-1; g++ {
			c := r.sep[g]
			if c == ')' {
				continue
			}
			if r.paren[g] && c == ' ' {
				continue
			}
			if sep == 0 {
				sep = c
			} else if c != sep {
				return false
			}
		}
		return true
	}
	// NANP
	off := 0
	if k == 4 && l(0) == 1 && d[0] == '1' {
		off = 1
	}
	if k-off == 3 && l(off) == 3 && l(off+1) == 3 && l(off+2) == 4 {
		area := d[off]
		exch := d[off+3]
		if area >= '2' && exch >= '2' && consistent(off) && !r.paren[a+off+1] && !r.paren[a+off+2] {
			return true
		}
	}
	// trunk prefix 0
	if k >= 2 && k <= 5 && d[0] == '0' && nd >= 10 && nd <= 11 && l(0) >= 2 && l(0) <= 5 && consistent(0) {
		for g := 0; g < k; g++ {
			if l(g) < 2 || (g > 0 && r.paren[a+g]) {
				return false
			}
		}
		for g := a; g < b-1; g++ {
			if r.sep[g] == '.' {
				return false
			}
		}
		return true
	}
	return false
}

// ---- e-mail ----

func isLocalByte(c byte) bool {
	return isAlnum(c) || c == '.' || c == '_' || c == '%' || c == '+' || c == '-'
}

// localStart returns where the local part ending at s[i] (the '@') starts, or -1:
// a dot-atom of ASCII letters, digits and ._%+-, internal apostrophes ("o'connor"),
// and non-ASCII letters, marks and digits (RFC 6531: "jörg.müller", "zoë"); or a
// quoted string ("\"john doe\""). At most 64 bytes; it never starts with a dot or an
// apostrophe, so "'bob@example.com'" and "x.'y@z" give the address alone.
func localStart(s string, i int) int {
	if i > 0 && s[i-1] == '"' {
		// quoted local part: back to the opening quote on the same line
		for j := i - 2; j >= 0 && i-j <= 66; j-- {
			switch c := s[j]; {
			case c == '\n' || c == '\r':
				return -1
			case c == '"' && (j == 0 || s[j-1] != '\\'):
				if j+1 == i-1 || j > 0 && (isWordByte(s[j-1]) || s[j-1] == '"' || isLetterBefore(s, j)) {
					return -1
				}
				return j
			}
		}
		return -1
	}
	j := i
	for j > 0 && i-j <= 64 {
		c := s[j-1]
		if c < 0x80 {
			if isLocalByte(c) || localSpecial(c) || c == '\'' && j >= 2 && isAlnum(s[j-2]) && isAlnum(s[j]) {
				j--
				continue
			}
			break
		}
		r, sz := utf8.DecodeLastRuneInString(s[:j])
		if r == utf8.RuneError || !(unicode.IsLetter(r) || unicode.IsMark(r) || unicode.IsDigit(r) || innerPunct(r) && j-sz > 0 && j < i && isLetterAt(s, j) && isLetterBefore(s, j-sz)) {
			break
		}
		j -= sz
	}
	for j < i && (s[j] == '.' || s[j] == '\'' || s[j] == '{') {
		j++ // a local part never starts with a dot; an apostrophe or brace there is a quote
	}
	if j == i || i-j > 64 || s[i-1] == '.' || j > 0 && s[j-1] == '@' {
		return -1
	}
	return j
}

// innerPunct reports non-ASCII punctuation that joins letters inside a name:
// U+2019 RIGHT SINGLE QUOTATION MARK ("o’connor") and U+00B7 MIDDLE DOT ("col·legi").
func innerPunct(r rune) bool { return r == 0x2019 || r == 0xB7 }

// isLetterAt reports whether a letter (or digit) starts at s[j].
func isLetterAt(s string, j int) bool {
	r, _ := utf8.DecodeRuneInString(s[j:])
	return unicode.IsLetter(r) || unicode.IsDigit(r)
}

// isLetterBefore reports whether a letter (or digit) ends at s[j].
func isLetterBefore(s string, j int) bool {
	r, _ := utf8.DecodeLastRuneInString(s[:j])
	return unicode.IsLetter(r) || unicode.IsDigit(r)
}

// localSpecial reports the RFC 5322 atext specials that join a local part
// ("user!tag", "#ops", "a{b}c"); '/', '=', '|' and '\” delimit in running text instead.
func localSpecial(c byte) bool {
	switch c {
	case '!', '#', '$', '&', '*', '?', '^', '{', '}', '~':
		return true
	}
	return false
}

// domainLabel returns the end of a domain label starting at s[k]: ASCII letters,
// digits and '-', or non-ASCII letters, marks and digits (an IDN), at most 63 bytes.
func domainLabel(s string, k int) int {
	ls := k
	for k < len(s) && k-ls < 63 {
		c := s[k]
		if c < 0x80 {
			if isAlnum(c) || c == '-' {
				k++
				continue
			}
			break
		}
		r, sz := utf8.DecodeRuneInString(s[k:])
		if r == utf8.RuneError || !(unicode.IsLetter(r) || unicode.IsMark(r) || unicode.IsDigit(r)) {
			break
		}
		k += sz
	}
	return k
}

func isLabelStart(s string, k int) bool {
	if k >= len(s) {
		return false
	}
	if s[k] < 0x80 {
		return isAlnum(s[k])
	}
	r, _ := utf8.DecodeRuneInString(s[k:])
	return r != utf8.RuneError && unicode.IsLetter(r)
}

// email handles '@' at s[i]: a local part of up to 64 bytes before it (localStart)
// and a dotted domain with an alphabetic TLD after it. An address is reported whole
// or not at all.
func (t *textScan) email(i int) int {
	s := t.s
	n := len(s)
	if i < t.done {
		return i + 1
	}
	j := localStart(s, i)
	if j < 0 {
		return i + 1
	}
	// domain labels
	k := i + 1
	labels := 0
	lastDot := -1
	firstEnd := -1
	for {
		ls := k
		k = domainLabel(s, k)
		if k == ls || s[ls] == '-' || s[k-1] == '-' {
			if labels > 0 && k == ls {
				k-- // the trailing dot is not part of the address
			}
			break
		}
		labels++
		if firstEnd < 0 {
			firstEnd = k
		}
		if k+1 < n && s[k] == '.' && isLabelStart(s, k+1) {
			lastDot = k
			k++
			continue
		}
		break
	}
	if labels < 2 || lastDot < 0 || k-i > 254 {
		return max(k, i+1)
	}
	end := domainLabel(s, lastDot+1)
	if isLabelStart(s, end) || end < n && s[end] == '-' {
		return end // a label longer than 63 bytes: no address, rather than part of one
	}
	tld := s[lastDot+1 : end]
	if len(tld) < 2 {
		return end
	}
	for x := 0; x < len(tld); x++ {
		if tld[x] < 0x80 && !isAlpha(tld[x]) {
			return end
		}
	}
	if end < n && (s[end] == '_' || s[end] == '@' || (s[end] == ':' && end+1 < n && s[end+1] != ' ' && s[end+1] != '\n')) {
		return end // scp-style git@host:path, or not an address
	}
	// "icon@2x.png": a density suffix, not a domain
	first := s[i+1 : firstEnd]
	if len(first) >= 2 && first[len(first)-1] == 'x' && strings.Trim(first[:len(first)-1], "0123456789") == "" {
		return end
	}
	t.k.add(rEmail, "email", j, end)
	t.done = max(t.done, end)
	return end
}

// ---- IPv6 ----

func isHex(c byte) bool { return isDigit(c) || (c|0x20 >= 'a' && c|0x20 <= 'f') }

// v6Bytes is 1 for a hex digit or ':', 2 for '.': one load per byte in ipv6's scans
// instead of three or four chained compares (every timestamp's colon runs them).
var v6Bytes = func() (t [256]uint8) {
	for c := range t {
		if isHex(byte(c)) || c == ':' {
			t[c] = 1
		}
	}
	t['.'] = 2
	return
}()

// ipv6 handles ':' at s[i]: the surrounding run of hex digits, colons and dots must
// parse as an IPv6 address with at least two colons and one digit.
func (t *textScan) ipv6(i int) int {
	s := t.s
	n := len(s)
	prevHex := i > 0 && isHex(s[i-1])
	if !prevHex && !(i+1 < n && s[i+1] == ':') {
		return i + 1
	}
	j := i
	for j > 0 && v6Bytes[s[j-1]] == 1 && i-j < 40 {
		j--
	}
	if j > 0 && (isWordByte(s[j-1]) || s[j-1] == '.' || s[j-1] == ':') {
		return i + 1
	}
	k := i
	for k < n && v6Bytes[s[k]] != 0 && k-j < 46 {
		k++
	}
	for k > i && s[k-1] == '.' {
		k--
	}
	if k < n && (isWordByte(s[k]) || s[k] == ':' || s[k] == '.') {
		return k
	}
	cand := s[j:k]
	colons, dots, digit := 0, 0, false
	for x := 0; x < len(cand); x++ {
		switch {
		case cand[x] == ':':
			colons++
		case cand[x] == '.':
			dots++
		case isDigit(cand[x]):
			digit = true
		}
	}
	// RFC 4291 §2.2: eight groups (7 colons), six and a dotted IPv4 tail (6 colons, 3
	// dots), or fewer with "::"; anything else (a timestamp 14:51:07.113) ParseAddr
	// would refuse, after allocating its error
	if colons < 2 || !digit || dots != 0 && dots != 3 ||
		colons != 7 && !(colons == 6 && dots == 3) && !strings.Contains(cand, "::") || !ipv6Context(s, j, k) {
		return k
	}
	if a, err := netip.ParseAddr(cand); err == nil && a.Is6() && plausibleIPv6(cand, a) {
		t.k.add(rIP, "ipv6", j, k)
		t.done = max(t.done, k)
	}
	return max(k, i+1)
}

// ipv6Context rejects candidates that code syntax explains: a call or template
// ("Cafe::Add1()", "a::b<T>"), a subscript or slice ("arr[1::2]", "grid[0::3]"; a URL
// host "http://[2001:db8::1]" keeps its brackets), a path segment after another "::".
func ipv6Context(s string, j, k int) bool {
	if k < len(s) && (s[k] == '(' || s[k] == '<' || s[k] == '{') {
		return false
	}
	if j > 0 && s[j-1] == '[' && k < len(s) && s[k] == ']' {
		// subscript when '[' follows an expression: an identifier, ')' or ']'
		if j >= 2 && (isWordByte(s[j-2]) || s[j-2] == ')' || s[j-2] == ']') {
			return false
		}
	}
	return true
}

// plausibleIPv6 keeps addresses as written in real text: one letter case throughout,
// and a "::"-compressed address starts in an allocated range (2000::/3 global
// unicast, fc00::/7 unique local, fe80::/10 link-local, ff00::/8 multicast) or is the
// IPv4-mapped form; "::1" and "::" are not personal data. A full eight-group address
// is always kept.
func plausibleIPv6(cand string, a netip.Addr) bool {
	up, low := false, false
	for i := 0; i < len(cand); i++ {
		switch c := cand[i]; {
		case c >= 'a' && c <= 'f':
			low = true
		case c >= 'A' && c <= 'F':
			up = true
		}
	}
	if up && low {
		return false
	}
	if !strings.Contains(cand, "::") {
		return true
	}
	if a.Is4In6() {
		return true
	}
	b := a.As16()
	switch {
	case b[0]>>5 == 1: // 2000::/3
		return true
	case b[0]&0xFE == 0xFC: // fc00::/7
		return true
	case b[0] == 0xFE && b[1]&0xC0 == 0x80: // fe80::/10
		return true
	case b[0] == 0xFF:
		return true
	}
	return false
}

// ---- secrets and IBAN ----

// secret runs the token matchers on the word s[ws:we] (it starts with a letter, '_'
// or '-') and returns where scanning resumes.
func (t *textScan) secret(ws, we int) int {
	s := t.s
	w := s[ws:we]
	if t.providerToken(ws, we) {
		return we
	}
	switch {
	case len(w) >= 9 && (w[0] == 'a' || w[0] == 'A' || w[0] == 's' || w[0] == 'S') && isAWSSecretName(w):
		if v := valueAfter(s, we); v >= 0 {
			return max(we, t.awsSecretAt(v))
		}
	case len(w) == 20 && (strings.HasPrefix(w, "AKIA") || strings.HasPrefix(w, "ASIA") || strings.HasPrefix(w, "ABIA") || strings.HasPrefix(w, "ACCA") || strings.HasPrefix(w, "A3T") && w[3] != '_'):
		if allIn(w[4:], upperDigit) && varied(w[4:]) {
			t.k.add(rAWS, "aws_access_key", ws, we)
		}
	case len(w) == 39 && strings.HasPrefix(w, "AIza"):
		if allIn(w[4:], base64URL) && varied(w[4:]) {
			t.k.add(rGoogle, "google_api_key", ws, we)
		}
	case w == "ya29" && we+1 < len(s) && s[we] == '.':
		return max(we, t.googleAccess(ws))
	case len(w) >= 4 && strings.HasPrefix(w, "bot") && isDigit(w[3]) && we < len(s) && s[we] == ':':
		return max(we, t.telegram(ws+3, we)) // a Bot API URL: /bot<id>:<secret>/
	case len(w) >= 20 && strings.HasPrefix(w, "ghs_") && isDigit(w[4]):
		return max(we, t.githubStateless(ws, we))
	case len(w) >= 40 && w[0] == 'g' && w[1] == 'h' && strings.IndexByte("pousr", w[2]) >= 0 && w[3] == '_':
		if allIn(w[4:], alnum) && varied(w[4:]) {
			t.k.add(rGitHub, "github_token", ws, we)
		}
	case len(w) >= 11+30 && strings.HasPrefix(w, "github_pat_"):
		if allIn(w[11:], alnumUnderscore) && varied(w[11:]) {
			t.k.add(rGitHub, "github_token", ws, we)
		}
	case len(w) >= 25 && strings.HasPrefix(w, "xox") && strings.IndexByte("baprse", w[3]) >= 0 && w[4] == '-',
		len(w) >= 15 && (strings.HasPrefix(w, "xoxa-") || strings.HasPrefix(w, "xoxr-")), // legacy workspace tokens are short
		len(w) >= 25 && strings.HasPrefix(w, "xapp-"):
		// real tokens are 40+ characters; "xoxb-12345-abcd234" and
		// "xoxp-1-SlackAppConfigurationAccessTokenHere" are documentation's
		if allIn(w[5:], slackBody) && varied(w[5:]) && !slackPlaceholder(w[5:]) {
			t.k.add(rSlack, "slack_token", ws, we)
		}
	case len(w) >= 8+16 && (strings.HasPrefix(w, "sk_live_") || strings.HasPrefix(w, "sk_test_") || strings.HasPrefix(w, "rk_live_") || strings.HasPrefix(w, "rk_test_") || strings.HasPrefix(w, "sk_prod_") || strings.HasPrefix(w, "rk_prod_")):
		if allIn(w[8:], alnum) && varied(w[8:]) {
			t.k.add(rStripe, "stripe_key", ws, we)
		}
	case len(w) >= 10 && strings.HasPrefix(w, "eyJ"):
		return max(we, t.jwt(ws, we))
	case len(w) >= 4 && isAlpha(w[0]) && isAlpha(w[1]) && isDigit(w[2]) && isDigit(w[3]):
		return max(we, t.iban(ws))
	}
	return we
}

// slackPlaceholder reports documentation's Slack tokens ("…AccessTokenHere").
func slackPlaceholder(body string) bool {
	l := strings.ToLower(body)
	return strings.Contains(l, "here") || strings.Contains(l, "example") || strings.Contains(l, "xxxx") || strings.Contains(l, "your")
}

// varied rejects placeholders such as "xxxxxxxx" or "0000…": a real token has at
// least 8 distinct characters.
func varied(s string) bool {
	var seen [256]bool
	d := 0
	for i := 0; i < len(s); i++ {
		if !seen[s[i]] {
			seen[s[i]] = true
			d++
			if d >= 8 {
				return true
			}
		}
	}
	return false
}

type byteSet [256]bool

func mkSet(chars string) *byteSet {
	var b byteSet
	for i := 0; i < len(chars); i++ {
		b[chars[i]] = true
	}
	return &b
}

const (
	digitChars = "0123456789"
	upperChars = "ABCDEFGHIJKLMNOPQRSTUVWXYZ"
	lowerChars = "abcdefghijklmnopqrstuvwxyz"
)

var (
	upperDigit      = mkSet(upperChars + digitChars)
	alnum           = mkSet(upperChars + lowerChars + digitChars)
	alnumUnderscore = mkSet(upperChars + lowerChars + digitChars + "_")
	base64URL       = mkSet(upperChars + lowerChars + digitChars + "_-")
	slackBody       = mkSet(upperChars + lowerChars + digitChars + "-")
)

func allIn(s string, set *byteSet) bool {
	for i := 0; i < len(s); i++ {
		if !set[s[i]] {
			return false
		}
	}
	return true
}

// jwt matches header.payload.signature whose header is base64url JSON with "alg".
func (t *textScan) jwt(ws, we int) int {
	s := t.s
	n := len(s)
	if we >= n || s[we] != '.' {
		return we
	}
	p := we + 1
	for p < n && base64URL[s[p]] {
		p++
	}
	if p-(we+1) < 2 || p >= n || s[p] != '.' {
		return p
	}
	q := p + 1
	for q < n && base64URL[s[q]] {
		q++
	}
	if q < n && (isWordByte(s[q]) || s[q] == '.') {
		return q
	}
	header := s[ws:we]
	if len(header) > 1024 {
		return q
	}
	var buf [768]byte
	dn, err := base64.RawURLEncoding.Decode(buf[:], []byte(strings.TrimRight(header, "=")))
	if err != nil {
		return q
	}
	h := buf[:dn]
	if len(h) < 2 || h[0] != '{' || !jsonscan.MayHold(h, `"alg"`) { // "\u0061lg" too, as a JWT library reads it
		return q
	}
	t.k.add(rJWT, "jwt", ws, q)
	return q
}

// privateKeyWindow bounds how far the END line of a private-key block is looked for.
const privateKeyWindow = 64 << 10

// privateKey matches a PEM, OpenSSH or PGP private-key block starting at s[i]
// ("-----BEGIN "): the whole block through its END line, or, when the END line is
// missing, through the last line of key body.
func (t *textScan) privateKey(i int) int {
	s := t.s
	rest := s[i+len("-----BEGIN "):]
	e := strings.Index(rest[:min(len(rest), 80)], "-----")
	if e < 0 {
		return i + 11
	}
	label := rest[:e]
	if !strings.HasSuffix(label, "PRIVATE KEY") && !strings.HasSuffix(label, "PRIVATE KEY BLOCK") {
		return i + 11 + e + 5
	}
	bodyStart := i + 11 + e + 5
	win := s[bodyStart:min(len(s), bodyStart+privateKeyWindow)]
	if k := strings.Index(win, "-----END "); k >= 0 {
		tail := win[k+9:]
		if m := strings.Index(tail[:min(len(tail), 80)], "-----"); m >= 0 {
			end := bodyStart + k + 9 + m + 5
			t.k.add(rPrivateKey, "private_key", i, end)
			return end
		}
	}
	// unterminated: the key body (base64, whitespace, escaped newlines, headers)
	j := bodyStart
	for j < len(s) && j-bodyStart < privateKeyWindow {
		c := s[j]
		if isAlnum(c) || c == '+' || c == '/' || c == '=' || c == '\n' || c == '\r' || c == ' ' || c == '\\' || c == ':' || c == '-' || c == ',' {
			j++
			continue
		}
		break
	}
	t.k.add(rPrivateKey, "private_key", i, j)
	return j
}

func boolByte(b bool) byte {
	if b {
		return 1
	}
	return 0
}

// ibanLength is the IBAN length per country (SWIFT IBAN registry).
var ibanLength = map[string]int{
	"AD": 24, "AE": 23, "AL": 28, "AT": 20, "AZ": 28, "BA": 20, "BE": 16, "BG": 22,
	"BH": 22, "BR": 29, "BY": 28, "CH": 21, "CR": 22, "CY": 28, "CZ": 24, "DE": 22,
	"DK": 18, "DO": 28, "EE": 20, "EG": 29, "ES": 24, "FI": 18, "FO": 18, "FR": 27,
	"GB": 22, "GE": 22, "GI": 23, "GL": 18, "GR": 27, "GT": 28, "HR": 21, "HU": 28,
	"IE": 22, "IL": 23, "IQ": 23, "IS": 26, "IT": 27, "JO": 30, "KW": 30, "KZ": 20,
	"LB": 28, "LC": 32, "LI": 21, "LT": 20, "LU": 20, "LV": 21, "MC": 27, "MD": 24,
	"ME": 22, "MK": 19, "MR": 27, "MT": 31, "MU": 30, "NL": 18, "NO": 15, "PK": 24,
	"PL": 28, "PS": 29, "PT": 25, "QA": 29, "RO": 24, "RS": 22, "SA": 24, "SC": 31,
	"SE": 24, "SI": 19, "SK": 24, "SM": 27, "ST": 25, "SV": 28, "TL": 23, "TN": 24,
	"TR": 26, "UA": 29, "VA": 22, "VG": 24, "XK": 20,
}

// iban matches an IBAN at s[i], compact or printed in groups of four, with the
// country's length and a mod-97 remainder of 1.
func (t *textScan) iban(i int) int {
	s := t.s
	n := len(s)
	cc := [2]byte{s[i] &^ 0x20, s[i+1] &^ 0x20}
	want, ok := ibanLength[string(cc[:])]
	if !ok {
		return i + 4
	}
	// any letter case, groups of 4 split by spaces or '-'; mod-97 decides
	var buf [34]byte
	nb := 0
	j := i
	for j < n && nb < want {
		c := s[j]
		if isAlnum(c) {
			buf[nb] = c &^ (boolByte(isLower(c)) << 5)
			nb++
			j++
			continue
		}
		if (c == ' ' || c == '-') && nb%4 == 0 && nb > 0 && j+1 < n && isAlnum(s[j+1]) {
			j++
			continue
		}
		break
	}
	if nb != want || (j < n && isWordByte(s[j])) {
		return j
	}
	// mod 97 of BBAN + country + check digits, letters as 10–35
	rem := 0
	for k := 0; k < nb; k++ {
		c := buf[(k+4)%nb]
		if isDigit(c) {
			rem = (rem*10 + int(c-'0')) % 97
		} else {
			rem = (rem*100 + int(c-'A'+10)) % 97
		}
	}
	if rem == 1 {
		t.k.add(rIBAN, "iban", i, j)
	}
	return j
}
