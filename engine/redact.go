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

// Redact replaces every PII or secret value in s whose entity kind or rule id is in
// kinds (all PII and secret kinds when kinds is empty), and returns the new text and
// the number of replacements. The whole string is searched (no scan cap), severity
// overrides do not apply, and an unknown strategy counts as StrategyRedact. Redact:
// "[REDACTED:EMAIL]"; mask: every character but the last 4 becomes '*'; hash:
// "[HASH:EMAIL:" + the first 8 hex digits of SHA-256 of the value + "]".
func (a *Analyzer) Redact(s string, strategy Strategy, kinds []string) (string, int) {
	if len(s) == 0 {
		return s, 0
	}
	st := a.getState()
	defer putState(st)
	st.k.collect = true
	st.k.matches = st.k.matches[:0]
	scanText(&st.k, s, true, false)
	if len(st.k.matches) == 0 {
		return s, 0
	}
	var b strings.Builder
	b.Grow(len(s) + 16)
	last, count := 0, 0
	for _, m := range sortMatches(st.k.matches) {
		if m.start < last || !wanted(m, kinds) {
			continue // overlaps an earlier replacement, or not asked for
		}
		b.WriteString(s[last:m.start])
		writeReplacement(&b, s[m.start:m.end], m.entity, strategy)
		last = m.end
		count++
	}
	if count == 0 {
		return s, 0
	}
	b.WriteString(s[last:])
	return b.String(), count
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
	id := ruleTable[m.rule].ID
	for _, k := range kinds {
		if k == m.entity || k == id || strings.EqualFold(k, m.entity) {
			return true
		}
	}
	return false
}

func writeReplacement(b *strings.Builder, v, entity string, strategy Strategy) {
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
			b.WriteByte('*')
		}
		b.WriteString(v[i:])
	case StrategyHash:
		sum := sha256.Sum256([]byte(v))
		var h [8]byte
		hex.Encode(h[:], sum[:4])
		b.WriteString("[HASH:")
		b.WriteString(strings.ToUpper(entity))
		b.WriteByte(':')
		b.Write(h[:])
		b.WriteByte(']')
	default:
		b.WriteString("[REDACTED:")
		b.WriteString(strings.ToUpper(entity))
		b.WriteByte(']')
	}
}
