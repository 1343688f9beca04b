package engine

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strings"
	"unicode/utf8"
)

func errNotObject() error {
	return fmt.Errorf("%w: a CallToolResult must be a JSON object", ErrUndecodable)
}

// Strategy says how Redact replaces a detected value.
type Strategy string

// Redaction strategies (docs/policies.md): a typed placeholder, keep-last-4, or a short hash.
const (
	StrategyRedact Strategy = "redact" // "[REDACTED:EMAIL]"
	StrategyMask   Strategy = "mask"   // "************1234"
	StrategyHash   Strategy = "hash"   // "[HASH:EMAIL:1a2b3c4d]"
)

// Redact replaces every PII or secret value in s whose entity kind, rule id or rule
// family ("secret", "pii") is in kinds (all PII and secret kinds when kinds is empty), and returns the new text and
// the number of replacements. The whole string is searched (no scan cap), severity
// overrides do not apply, and an unknown strategy counts as StrategyRedact. Redact:
// "[REDACTED:EMAIL]"; mask: every character but the last 4 becomes '*'; hash:
// "[HASH:EMAIL:" + the first 8 hex digits of SHA-256 of the value + "]".
func (a *Analyzer) Redact(s string, strategy Strategy, kinds []string) (string, int) {
	return a.RedactMember(s, "", strategy, kinds)
}

// RedactMember is Redact for the value of a JSON object member named member (the
// nearest member name: an array element's is its array's; "" for plain text). The
// name is the context AnalyzeResult gives that value: a bare nine-digit number under
// "ssn" or "social_security_number" is an SSN, the value of "Authorization" or
// "aws_secret_access_key" a credential, an address under "version" no IP address.
func (a *Analyzer) RedactMember(s, member string, strategy Strategy, kinds []string) (string, int) {
	if len(s) == 0 {
		return s, 0
	}
	st := a.getState()
	defer putState(st)
	ms := redactMatches(st, s, member, kinds)
	if len(ms) == 0 {
		return s, 0
	}
	var b strings.Builder
	b.Grow(len(s) + 16)
	last := 0
	for _, m := range ms {
		b.WriteString(s[last:m.start])
		var buf [64]byte
		b.Write(appendReplacement(buf[:0], s[m.start:m.end], m.entity, strategy))
		last = m.end
	}
	b.WriteString(s[last:])
	return b.String(), len(ms)
}

// AppendRedact appends to dst the text Redact(s, strategy, kinds) returns, and the
// number of replacements; with none, dst comes back as it was (s is not appended).
// It saves the copy of the new text when the caller builds a larger buffer (a JSON
// document) around it.
func (a *Analyzer) AppendRedact(dst []byte, s string, strategy Strategy, kinds []string) ([]byte, int) {
	return a.AppendRedactMember(dst, s, "", strategy, kinds)
}

// AppendRedactMember is AppendRedact for the value of a JSON object member named
// member, as RedactMember. member is only read during the call.
func (a *Analyzer) AppendRedactMember(dst []byte, s, member string, strategy Strategy, kinds []string) ([]byte, int) {
	if len(s) == 0 {
		return dst, 0
	}
	st := a.getState()
	defer putState(st)
	ms := redactMatches(st, s, member, kinds)
	if len(ms) == 0 {
		return dst, 0
	}
	last := 0
	for _, m := range ms {
		dst = append(dst, s[last:m.start]...)
		dst = appendReplacement(dst, s[m.start:m.end], m.entity, strategy)
		last = m.end
	}
	return append(dst, s[last:]...), len(ms)
}

// redactMatches scans s and returns the matches Redact replaces, in order: wanted by
// kinds, none overlapping an earlier one; member is the value's member name (the
// context AnalyzeResult's scan gives it). The slice lives in st.
func redactMatches(st *state, s, member string, kinds []string) []match {
	st.k.collect = true
	st.k.noCatalogue = !catalogueWanted(kinds)
	st.k.matches = st.k.matches[:0]
	st.k.key = member
	scanText(&st.k, s, true, false)
	st.k.key, st.k.noCatalogue = "", false // the state goes back to the pool: keep no caller's text
	ms := sortMatches(st.k.matches)
	keep, last := ms[:0], 0
	for _, m := range ms {
		if m.start < last || !wanted(m, kinds) {
			continue // overlaps an earlier replacement, or not asked for
		}
		keep = append(keep, m)
		last = m.end
	}
	return keep
}

// catalogueWanted reports whether kinds (as wanted reads them) can ask for a catalogue
// rule's match: none (all kinds), the family "secret", a rule id "secret_…" or a
// catalogue entity in any case. A catalogue match displaces only secret matches
// (claim), so skipping it when none is wanted changes nothing Redact returns.
func catalogueWanted(kinds []string) bool {
	if len(kinds) == 0 {
		return true
	}
	for _, k := range kinds {
		if k == FamilySecret || strings.HasPrefix(k, "secret_") || catEntities[strings.ToLower(k)] {
			return true
		}
	}
	return false
}

// sortMatches orders matches by start, longer first on ties.
func sortMatches(m []match) []match {
	for i := 1; i < len(m); i++ {
		for j := i; j > 0 && (m[j].start < m[j-1].start || m[j].start == m[j-1].start && m[j].end > m[j-1].end); j-- {
			m[j], m[j-1] = m[j-1], m[j]
		}
	}
	return m
}

func wanted(m match, kinds []string) bool {
	if len(kinds) == 0 {
		return true
	}
	r := &ruleTable[m.rule]
	for _, k := range kinds {
		if k == m.entity || k == r.ID || k == r.Family || strings.EqualFold(k, m.entity) {
			return true
		}
	}
	return false
}

func appendReplacement(b []byte, v, entity string, strategy Strategy) []byte {
	switch strategy {
	case StrategyMask:
		n := utf8.RuneCountInString(v)
		keep := 4
		if n <= keep {
			keep = 0
		}
		i := 0
		for k := 0; k < n-keep; k++ {
			_, sz := utf8.DecodeRuneInString(v[i:])
			i += sz
			b = append(b, '*')
		}
		return append(b, v[i:]...)
	case StrategyHash:
		sum := sha256.Sum256([]byte(v))
		var h [8]byte
		hex.Encode(h[:], sum[:4])
		b = append(b, "[HASH:"...)
		b = appendUpper(b, entity)
		b = append(b, ':')
		b = append(b, h[:]...)
		return append(b, ']')
	default:
		b = append(b, "[REDACTED:"...)
		b = appendUpper(b, entity)
		return append(b, ']')
	}
}

// appendUpper appends strings.ToUpper(s) without allocating when s is ASCII (every
// entity name is).
func appendUpper(b []byte, s string) []byte {
	for i := 0; i < len(s); i++ {
		if s[i] >= utf8.RuneSelf {
			return append(b, strings.ToUpper(s)...)
		}
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if 'a' <= c && c <= 'z' {
			c -= 'a' - 'A'
		}
		b = append(b, c)
	}
	return b
}
