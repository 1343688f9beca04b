package gate

import (
	"regexp"
	"strings"
	"unicode/utf8"
)

// maxClientText bounds a policy's message to the client, in bytes.
const maxClientText = 1024

var (
	// eventIDLike matches what an audit event id looks like (a UUID).
	eventIDLike = regexp.MustCompile(`[0-9A-Fa-f]{8}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{12}`)
	// noticeWords match the words of mcpgate's notices that point at an audit entry.
	noticeWords   = regexp.MustCompile(`(?i)audit\s*log\s*entry`)
	quoteBrackets = strings.NewReplacer("[", "(", "]", ")")
)

// clientText makes policy text (a thrown message, a ctx.warn reason) safe to quote
// inside one of mcpgate's "[mcpgate: …]" notices: cut to 1 KiB of valid UTF-8 (marked
// with …), square brackets turned into parentheses, anything shaped like an event id
// replaced by "<id>" and the words "audit log entry" reworded, so it can neither close
// the notice, open a second one, nor name an audit entry (docs/policies.md#errors-and-limits).
func clientText(s string) string {
	if len(s) > maxClientText {
		s = s[:maxClientText]
		for !utf8.ValidString(s) {
			s = s[:len(s)-1]
		}
		s += "…"
	}
	if !utf8.ValidString(s) {
		s = strings.ToValidUTF8(s, "\uFFFD")
	}
	s = quoteBrackets.Replace(s)
	s = eventIDLike.ReplaceAllLiteralString(s, "<id>")
	return noticeWords.ReplaceAllLiteralString(s, "audit log text")
}
