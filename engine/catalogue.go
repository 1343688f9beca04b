package engine

import (
	"math"
	"regexp"
	"strings"
	"sync"
)

// The catalogue: gitleaks' default rules (catalogue_gitleaks.go, generated from the
// module go.mod pins; docs/engine.md#the-catalogue). The hand-written rules cover
// what they port (handPorted) faster and with fewer false positives; the rest run
// here, behind two prefilters so clean text pays nothing for them:
//
//  1. a token: the word matchers of the main scan note every word of 10 or more
//     bytes holding a letter and a digit (or of 20 or more holding '_' or '-') that
//     no hand rule claimed;
//  2. a keyword: one Aho–Corasick pass over a window around each token (96 bytes
//     before it, the token's run of secret bytes after it) finds the rules' own
//     keywords, and only those rules' regexes run, on that window only. Entropy is
//     checked only where the rule has it; the rule's and the global allowlists apply.

// catRule is one gitleaks rule as its configuration gives it.
type catRule struct {
	id          string
	regex       string
	secretGroup int
	entropy     float64
	keywords    []string // lower case
	pathOnly    bool     // matches file paths only: never runs on content
	composite   bool     // needs other rules' findings nearby (gitleaks "required")
	allow       []catAllow
}

// catAllow is one gitleaks allowlist: regexes (against the secret, the match or the
// line, by target) or stop words (in the secret) that make a finding allowed. paths
// says it has path or commit criteria, which content never meets.
type catAllow struct {
	and       bool
	target    string
	paths     bool
	regexes   []string
	stopwords []string
}

// handPorted maps the gitleaks rules that hand-written rules implement to those
// rules; the catalogue does not run them (TestGitleaksExamples checks the hand rule
// against the gitleaks rule's own examples).
var handPorted = map[string]ruleIndex{
	"aws-access-token":                   rAWS,
	"github-pat":                         rGitHub,
	"github-oauth":                       rGitHub,
	"github-app-token":                   rGitHub,
	"github-refresh-token":               rGitHub,
	"github-fine-grained-pat":            rGitHub,
	"slack-bot-token":                    rSlack,
	"slack-user-token":                   rSlack,
	"slack-app-token":                    rSlack,
	"slack-config-access-token":          rSlack,
	"slack-config-refresh-token":         rSlack,
	"slack-legacy-bot-token":             rSlack,
	"slack-legacy-token":                 rSlack,
	"slack-legacy-workspace-token":       rSlack,
	"slack-webhook-url":                  rWebhook,
	"stripe-access-token":                rStripe,
	"gcp-api-key":                        rGoogle,
	"jwt":                                rJWT,
	"private-key":                        rPrivateKey,
	"anthropic-api-key":                  rAnthropic,
	"anthropic-admin-api-key":            rAnthropic,
	"openai-api-key":                     rOpenAI,
	"huggingface-access-token":           rAIProvider,
	"huggingface-organization-api-token": rAIProvider,
	"perplexity-api-key":                 rAIProvider,
	"gitlab-pat":                         rGitLab,
	"gitlab-pat-routable":                rGitLab,
	"gitlab-ptt":                         rGitLab,
	"gitlab-rrt":                         rGitLab,
	"gitlab-deploy-token":                rGitLab,
	"gitlab-runner-authentication-token": rGitLab,
	"gitlab-cicd-job-token":              rGitLab,
	"gitlab-feed-token":                  rGitLab,
	"gitlab-incoming-mail-token":         rGitLab,
	"gitlab-kubernetes-agent-token":      rGitLab,
	"gitlab-oauth-app-secret":            rGitLab,
	"gitlab-scim-token":                  rGitLab,
	"npm-access-token":                   rNPM,
	"pypi-upload-token":                  rPyPI,
	"microsoft-teams-webhook":            rWebhook,
}

// catActive is one catalogue rule that runs: its gitleaks rule, its index in
// ruleTable, and its regexes, compiled on first use.
type catActive struct {
	r       *catRule
	idx     ruleIndex
	entity  string
	generic bool // generic-api-key: the least specific rule of all
	once    sync.Once
	re      *regexp.Regexp
	allow   []compiledAllow
}

type compiledAllow struct {
	catAllow
	re *regexp.Regexp // the regexes joined, or nil
}

var (
	catGeneric    ruleIndex           = ^ruleIndex(0) // generic-api-key's index
	catalogue     []*catActive                        // by ruleIndex - numRules
	catKeywords   acMachine                           // keyword → rules
	catEntities   = map[string]bool{}                 // the active rules' entities, lower case
	catGlobal     []compiledAllow
	catGlobalOnce sync.Once
)

// catalogueRuleTable builds the active catalogue and returns its rule descriptions,
// which ruleTable appends after the built-in rules.
func catalogueRuleTable() []Rule {
	var out []Rule
	var kws []string
	var kwRule []int
	for i := range gitleaksRules {
		r := &gitleaksRules[i]
		if r.pathOnly || r.composite || r.regex == "" {
			continue
		}
		if _, ok := handPorted[r.id]; ok {
			continue
		}
		entity := strings.ReplaceAll(r.id, "-", "_")
		catEntities[strings.ToLower(entity)] = true
		a := &catActive{r: r, idx: numRules + ruleIndex(len(catalogue)), entity: entity, generic: r.id == "generic-api-key"}
		for _, k := range r.keywords {
			kws = append(kws, k)
			kwRule = append(kwRule, len(catalogue))
		}
		if a.generic {
			catGeneric = a.idx
		}
		catalogue = append(catalogue, a)
		out = append(out, Rule{ID: "secret_" + entity, Family: FamilySecret, Severity: SeverityInfo,
			Summary: "gitleaks " + gitleaksVersion + " rule " + r.id + " (the catalogue, docs/engine.md#the-catalogue)"})
	}
	catKeywords = buildAC(kws, kwRule)
	return out
}

func (a *catActive) compile() {
	a.once.Do(func() {
		a.re = regexp.MustCompile(a.r.regex)
		a.allow = compileAllow(a.r.allow)
	})
}

func compileAllow(as []catAllow) []compiledAllow {
	out := make([]compiledAllow, 0, len(as))
	for _, al := range as {
		c := compiledAllow{catAllow: al}
		if len(al.regexes) > 0 {
			c.re = regexp.MustCompile("(?:" + strings.Join(al.regexes, ")|(?:") + ")")
		}
		out = append(out, c)
	}
	return out
}

// allowed reports whether an allowlist lets a finding with this secret, match and
// line pass, as gitleaks decides it (OR of the criteria, or AND of those present).
func (c *compiledAllow) allowed(secret, match, line string) bool {
	target := secret
	switch c.target {
	case "match":
		target = match
	case "line":
		target = line
	}
	regexHit := c.re != nil && target != "" && c.re.MatchString(target)
	stopHit := false
	if len(c.stopwords) > 0 && secret != "" {
		ls := strings.ToLower(secret)
		for _, w := range c.stopwords {
			if strings.Contains(ls, w) {
				stopHit = true
				break
			}
		}
	}
	if c.and {
		if c.paths {
			return false // a path or commit criterion content never meets
		}
		ok := c.re != nil || len(c.stopwords) > 0
		if c.re != nil {
			ok = ok && regexHit
		}
		if len(c.stopwords) > 0 {
			ok = ok && stopHit
		}
		return ok
	}
	return regexHit || stopHit
}

// shannon is the Shannon entropy of s in bits per byte, as gitleaks computes it.
func shannon(s string) float64 {
	if s == "" {
		return 0
	}
	var counts [256]int
	for i := 0; i < len(s); i++ {
		counts[s[i]]++
	}
	n := float64(len(s))
	e := 0.0
	for _, c := range counts {
		if c > 0 {
			p := float64(c) / n
			e -= p * math.Log2(p)
		}
	}
	return e
}

// ---- tokens noted by the main scan ----

// catToken is a word the main scan noted for the catalogue.
type catToken struct{ start, end int }

// maxCatTokens bounds the windows one string keeps noted at a time: past it, the
// windows well behind the scan (catFlushMargin) are scanned and dropped, so memory
// stays bounded and no window grows (docs/engine.md, "Limits").
const maxCatTokens = 4096

// catMaxWindow bounds one window: a token further than this from its window's start
// opens a window of its own, so text with a token on every line (JSON with ids, logs)
// is scanned in small windows instead of one that spans it all.
const catMaxWindow = 1024

// catFlushMargin is how far behind the current token a window must end before it is
// scanned early: no hand rule's match reaches back that far, so the claims it makes
// later cannot overlap.
const catFlushMargin = 4096

// noteToken records the word s[ws:we] for the catalogue when it can be part of a
// secret: 10+ bytes with a letter and a digit, 20+ with '_' or '-', or 16+ digits.
func (t *textScan) noteToken(ws, we int) {
	n := we - ws
	if n < 10 || t.k.noCatalogue {
		return
	}
	if w := t.s[ws:we]; n >= 10 && isDigit(w[0]) && isDigit(w[3]) && w[4] == '-' && isDigit(w[5]) && w[7] == '-' {
		return // an ISO 8601 date ("2026-11-29T19"): no rule's secret
	}
	digit, letter, sep := false, false, false
	for i := ws; i < we && !(digit && letter); i++ { // a letter and a digit decide
		switch c := t.s[i]; {
		case c >= '0' && c <= '9':
			digit = true
		case c == '_' || c == '-':
			sep = true
		default:
			letter = true
		}
	}
	if !(letter && (digit || sep && n >= 20) || !letter && !sep && n >= 16) {
		return
	}
	if k := len(t.cat); k > 0 && ws <= t.cat[k-1].end+catBefore && we-t.cat[k-1].start <= catMaxWindow {
		t.cat[k-1].end = max(t.cat[k-1].end, we) // the same window
		return
	}
	if len(t.cat) >= maxCatTokens {
		n := 0 // the windows that end well behind this token
		for n < len(t.cat) && t.cat[n].end+catFlushMargin < ws {
			n++
		}
		if n == 0 {
			return // cannot happen: 4096 windows of 10+ bytes span more than the margin
		}
		t.catalogueWindows(t.cat[:n])
		t.cat = t.cat[:copy(t.cat, t.cat[n:])]
	}
	t.cat = append(t.cat, catToken{ws, we})
}

// catBefore is how far before a token the window reaches: the keyword of a
// "keyword … = secret" rule starts at most about 50 bytes before the secret (20 of
// identifier after it, 3 of quotes, the operator, 5 of quotes and spaces), and slack.
const catBefore = 64

// secretByte reports bytes a secret may hold past its first word.
func secretByte(c byte) bool {
	return isAlnum(c) || c == '_' || c == '-' || c == '.' || c == '/' || c == '+' || c == '=' || c == '~' || c == ':' || c == '%'
}

// catalogueScan runs the catalogue over the windows of the noted tokens.
func (t *textScan) catalogueScan() { t.catalogueWindows(t.cat) }

// catalogueWindows runs the catalogue over the windows of cat.
func (t *textScan) catalogueWindows(cat []catToken) {
	catGlobalOnce.Do(func() { catGlobal = compileAllow(gitleaksGlobalAllow[:]) })
	s := t.s
	hits := t.k.catHits // rule bitset
	if len(hits) != (len(catalogue)+31)/32 {
		hits = make([]uint32, (len(catalogue)+31)/32)
		t.k.catHits = hits
	}
	for i := 0; i < len(cat); {
		ws := max(0, cat[i].start-catBefore)
		we := cat[i].end
		for {
			for we < len(s) && we-cat[i].end < 1024 && secretByte(s[we]) {
				we++
			}
			if i+1 < len(cat) && cat[i+1].start-catBefore <= we && cat[i+1].end-ws <= catMaxWindow+catBefore {
				i++
				we = max(we, cat[i].end)
				continue
			}
			break
		}
		i++
		we = min(len(s), we+4) // a closing quote or ';' the regexes' suffix wants
		clear(hits)
		if !catKeywords.match(s[ws:we], hits) {
			continue
		}
		for w, bits := range hits {
			for bits != 0 {
				b := trailingZeros32(bits)
				bits &^= 1 << b
				t.catalogueRule(catalogue[w*32+b], ws, we)
			}
		}
	}
}

func trailingZeros32(x uint32) int {
	n := 0
	for x&1 == 0 {
		x >>= 1
		n++
	}
	return n
}

// catalogueRule runs one rule's regex over s[ws:we] and reports what passes its
// entropy and allowlists.
func (t *textScan) catalogueRule(a *catActive, ws, we int) {
	a.compile()
	s := t.s
	win := s[ws:we]
	for _, m := range a.re.FindAllStringSubmatchIndex(win, -1) {
		ms, me := m[0], m[1]
		match := strings.Trim(win[ms:me], "\n")
		if match == "" {
			continue
		}
		ms += strings.Index(win[ms:me], match)
		me = ms + len(match)
		// the secret: the rule's group, else the first non-empty group, else the
		// match (gitleaks re-matches the trimmed match; so do we)
		sub := a.re.FindStringSubmatchIndex(match)
		ss, se := 0, len(match)
		if len(sub) >= 4 {
			if g := a.r.secretGroup; g > 0 {
				if 2*g+1 >= len(sub) || sub[2*g] < 0 {
					continue
				}
				ss, se = sub[2*g], sub[2*g+1]
			} else {
				for g := 1; 2*g+1 < len(sub); g++ {
					if sub[2*g] >= 0 && sub[2*g+1] > sub[2*g] {
						ss, se = sub[2*g], sub[2*g+1]
						break
					}
				}
			}
		}
		secret := match[ss:se]
		if a.r.entropy != 0 && shannon(secret) <= a.r.entropy {
			continue
		}
		start, end := ws+ms+ss, ws+ms+se
		line := lineAround(s, ws+ms, ws+me)
		if allowedBy(catGlobal, secret, match, line) || allowedBy(a.allow, secret, match, line) {
			continue
		}
		if !t.claim(a, start, end) {
			continue
		}
		t.k.add(a.idx, a.entity, start, end)
	}
}

func allowedBy(as []compiledAllow, secret, match, line string) bool {
	for i := range as {
		if as[i].allowed(secret, match, line) {
			return true
		}
	}
	return false
}

// lineAround returns the line(s) holding s[a:b].
func lineAround(s string, a, b int) string {
	ls := strings.LastIndexByte(s[:a], '\n') + 1
	le := strings.IndexByte(s[b:], '\n')
	if le < 0 {
		le = len(s)
	} else {
		le += b
	}
	return s[ls:le]
}

// claim decides whether a catalogue finding at [start, end) is reported beside what
// the current string already holds: a value a hand rule named stays named by it,
// except that a rule naming a provider replaces a credential named only by its
// position (Authorization, Cookie); generic-api-key never replaces anything.
func (t *textScan) claim(a *catActive, start, end int) bool {
	k := t.k
	if k.collect {
		for i := 0; i < len(k.matches); i++ {
			m := k.matches[i]
			if m.start < end && start < m.end {
				if a.generic || !positional(m.rule) {
					return false
				}
				k.matches = append(k.matches[:i], k.matches[i+1:]...)
				i--
			}
		}
		return true
	}
	for i := k.first; i < len(k.findings); i++ {
		f := k.findings[i]
		if f.Start < end && start < f.End && ruleTable[ruleByID[f.RuleID]].Family == FamilySecret {
			if a.generic || !positional(ruleByID[f.RuleID]) {
				return false
			}
			k.findings = append(k.findings[:i], k.findings[i+1:]...)
			i--
		}
	}
	return true
}

// positional reports rules that name a credential by where it stands, not by what
// it is (generic-api-key included: it names a value by the word before it).
func positional(r ruleIndex) bool { return r == rAuthorization || r == rCookie || r == catGeneric }

// ---- Aho–Corasick over lower-case ASCII keywords ----

// acMachine is a dense Aho–Corasick automaton over byte classes: class folds case
// and maps every byte no keyword holds to class 0, so the table is states × classes
// uint16s (about 88 KiB for gitleaks' keywords, not 256 int32s per state). A state is
// held as the offset of its row (state × classes), so the inner loop makes two loads
// and an add per input byte, no multiply; the states where a keyword ends are
// numbered last, from outFrom on, and out[offset/classes] lists the rule numbers
// whose keyword ends there (suffix outputs merged).
type acMachine struct {
	class   [256]uint8
	classes int
	next    []uint16 // row offset + class → row offset
	outFrom int      // the row offset of the first state where a keyword ends
	out     [][]int32
}

func buildAC(words []string, rule []int) acMachine {
	var m acMachine
	m.classes = 1
	for _, w := range words {
		for j := 0; j < len(w); j++ {
			c := w[j]
			if m.class[c] == 0 {
				m.class[c] = uint8(m.classes)
				if c >= 'a' && c <= 'z' {
					m.class[c-'a'+'A'] = uint8(m.classes)
				}
				m.classes++
			}
		}
	}
	nc := m.classes
	type node struct{ next []int32 }
	trie := []node{{make([]int32, nc)}}
	outs := [][]int32{nil}
	for i, w := range words {
		if w == "" {
			panic("engine: an empty catalogue keyword") // the root must stay the start state
		}
		st := int32(0)
		for j := 0; j < len(w); j++ {
			c := m.class[w[j]]
			if trie[st].next[c] == 0 {
				trie = append(trie, node{make([]int32, nc)})
				outs = append(outs, nil)
				trie[st].next[c] = int32(len(trie) - 1)
			}
			st = trie[st].next[c]
		}
		outs[st] = append(outs[st], int32(rule[i]))
	}
	// breadth-first failure links, folded into the transition table
	fail := make([]int32, len(trie))
	queue := make([]int32, 0, len(trie))
	for c := 0; c < nc; c++ {
		if s := trie[0].next[c]; s != 0 {
			queue = append(queue, s)
		}
	}
	for len(queue) > 0 {
		st := queue[0]
		queue = queue[1:]
		outs[st] = append(outs[st], outs[fail[st]]...)
		for c := 0; c < nc; c++ {
			s := trie[st].next[c]
			if s == 0 {
				trie[st].next[c] = trie[fail[st]].next[c]
				continue
			}
			fail[s] = trie[fail[st]].next[c]
			queue = append(queue, s)
		}
	}
	if len(trie)*nc > 1<<16 {
		panic("engine: catalogue keywords exceed the automaton's 65536 uint16 table entries")
	}
	// number the states without outputs first (the root, which has none, stays 0)
	num := make([]int, len(trie))
	k := 0
	for pass := 0; pass < 2; pass++ {
		for st := range trie {
			if (len(outs[st]) > 0) == (pass == 1) {
				num[st] = k
				k++
			}
		}
		if pass == 0 {
			m.outFrom = k * nc
		}
	}
	m.next = make([]uint16, len(trie)*nc)
	m.out = make([][]int32, len(trie))
	for st, n := range trie {
		for c, to := range n.next {
			m.next[num[st]*nc+c] = uint16(num[to] * nc)
		}
		m.out[num[st]] = outs[st]
	}
	return m
}

// match runs the automaton over s (any case) and sets the bit of every rule a
// keyword of which occurs; it reports whether any did.
func (m *acMachine) match(s string, hits []uint32) bool {
	any := false
	st := 0
	next, class, from, nc := m.next, &m.class, m.outFrom, uint32(m.classes)
	for i := 0; i < len(s); i++ {
		st = int(next[st+int(class[s[i]])])
		if st >= from {
			for _, r := range m.out[uint32(st)/nc] {
				hits[r>>5] |= 1 << (r & 31)
			}
			any = true
		}
	}
	return any
}
