package vet

import (
	"bufio"
	_ "embed"
	"strconv"
	"strings"
	"unicode/utf8"

	"go.mau.fi/util/confusable"
)

//go:embed known.txt
var knownText string

// KnownNames is the shipped list of well-known server, package and image names
// (known.txt), as lower case.
func KnownNames() []string {
	var out []string
	sc := bufio.NewScanner(strings.NewReader(knownText))
	for sc.Scan() {
		l := strings.TrimSpace(sc.Text())
		if l != "" && !strings.HasPrefix(l, "#") {
			out = append(out, strings.ToLower(l))
		}
	}
	return out
}

// lookalikes compares names with a known list.
type lookalikes struct {
	known map[string]bool
	list  []string
	skel  map[string]string // skeleton → known name
}

func newLookalikes(extra []string) *lookalikes {
	l := &lookalikes{known: map[string]bool{}, skel: map[string]string{}}
	for _, n := range append(KnownNames(), extra...) {
		n = strings.ToLower(strings.TrimSpace(n))
		if n == "" || l.known[n] {
			continue
		}
		l.known[n] = true
		l.list = append(l.list, n)
		l.skel[skeleton(n)] = n
	}
	return l
}

// Of returns the known name that name imitates, or "": a name that is not itself
// known, whose UTS #39 skeleton equals a known name's, or within an edit distance
// (with transpositions) of 1 of a known name of 5 to 11 characters, 2 of a longer
// one. Names under 5 characters are only compared by skeleton.
func (l *lookalikes) Of(name string) string {
	n := strings.ToLower(name)
	if n == "" || l.known[n] || utf8.RuneCountInString(n) > 256 {
		return ""
	}
	if k, ok := l.skel[skeleton(n)]; ok {
		return k
	}
	best, bestD := "", 99
	for _, k := range l.list {
		lim := 0
		switch kl := len(k); {
		case kl >= 12:
			lim = 2
		case kl >= 5:
			lim = 1
		}
		if lim == 0 || abs(len(k)-len(n)) > lim {
			continue
		}
		if d := osa(n, k, lim); d <= lim && d < bestD {
			best, bestD = k, d
		}
	}
	return best
}

func abs(x int) int {
	if x < 0 {
		return -x
	}
	return x
}

func skeleton(s string) string { return strings.ToLower(confusable.Skeleton(s)) }

// osa is the optimal string alignment distance between a and b (insertions,
// deletions, substitutions and transpositions of adjacent characters, each 1), by
// rune; past limit it returns limit+1.
func osa(a, b string, limit int) int {
	ra, rb := []rune(a), []rune(b)
	prev2 := make([]int, len(rb)+1)
	prev := make([]int, len(rb)+1)
	cur := make([]int, len(rb)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(ra); i++ {
		cur[0] = i
		rowMin := cur[0]
		for j := 1; j <= len(rb); j++ {
			cost := 1
			if ra[i-1] == rb[j-1] {
				cost = 0
			}
			v := min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
			if i > 1 && j > 1 && ra[i-1] == rb[j-2] && ra[i-2] == rb[j-1] {
				v = min(v, prev2[j-2]+1)
			}
			cur[j] = v
			rowMin = min(rowMin, v)
		}
		if rowMin > limit {
			return limit + 1
		}
		prev2, prev, cur = prev, cur, prev2
	}
	return prev[len(rb)]
}

// samePyPI reports whether name, normalized as PEP 503 says, is a known name so
// normalized: the index serves both as one project.
func (l *lookalikes) samePyPI(name string) bool {
	n := pypiNorm(name)
	for k := range l.known {
		if pypiNorm(k) == n {
			return true
		}
	}
	return false
}

// checkNames gives vet_lookalike_name for a server's packages.
func checkNames(s Server, l *lookalikes) []Finding {
	var out []Finding
	for _, p := range Packages(s) {
		if p.Ecosystem == "pypi" && l.samePyPI(p.Name) {
			continue // "MCP_Server.Fetch" is mcp-server-fetch (PEP 503)
		}
		if k := l.Of(p.Name); k != "" {
			out = append(out, newFinding(RuleLookalikeName, s.Name, s.Pointer+"/args/"+strconv.Itoa(p.Arg),
				kindOf(p)+" "+strconv.Quote(p.Name)+" looks like the well-known "+strconv.Quote(k)+" but is not it; if it is the one you mean, add it to mcpgate.allowedServers"))
		}
	}
	return out
}

// officialWords are how a display name claims to be the real thing.
var officialWords = []string{"official", "verified", "authentic", "genuine"}

// checkEntryNames gives vet_lookalike_name for an entry's name and packages, and
// vet_unverified_official_claim for a claim of being official by an entry the
// registry did not verify whose name is not a well-known one.
func checkEntryNames(e *Entry, l *lookalikes) []Finding {
	var out []Finding
	if k := l.Of(e.Name); k != "" {
		out = append(out, newFinding(RuleLookalikeName, e.Name, "/name",
			"registry name "+strconv.Quote(e.Name)+" looks like the well-known "+strconv.Quote(k)+" but is not it"))
	}
	for i, p := range e.Packages {
		name := strings.ToLower(p.Identifier)
		if p.RegistryType == "oci" {
			if r, ok := ociRef(p.Identifier, 0); ok {
				name = r.Name
			}
		}
		if k := l.Of(name); k != "" {
			out = append(out, newFinding(RuleLookalikeName, e.Name, "/packages/"+strconv.Itoa(i)+"/identifier",
				p.RegistryType+" package "+strconv.Quote(p.Identifier)+" looks like the well-known "+strconv.Quote(k)+" but is not it"))
		}
	}
	if e.Verified || l.known[strings.ToLower(e.Name)] {
		return out
	}
	for _, f := range []struct{ key, text string }{{"displayName", e.DisplayName}, {"title", e.Title}, {"description", e.Description}} {
		low := strings.ToLower(f.text)
		for _, w := range officialWords {
			if i := strings.Index(low, w); i >= 0 && !negated(low[:i]) {
				out = append(out, newFinding(RuleOfficialClaim, e.Name, "/"+f.key,
					f.key+" claims to be "+w+", but the entry's publisher is not verified and its name is not a well-known one"))
				break
			}
		}
	}
	return out
}

// negated reports whether the text before a word negates it ("not official", "unofficial").
func negated(before string) bool {
	before = strings.TrimRight(before, " ")
	return strings.HasSuffix(before, "un") || strings.HasSuffix(before, "not") || strings.HasSuffix(before, "non") || strings.HasSuffix(before, "non-") || strings.HasSuffix(before, "no")
}
