package engine

import "strings"

// The notices mcpgate writes in place of, or before, a result
// (docs/decisions.md#block-shape, #warn-shape; the dash is U+2014 EM DASH).
const (
	noticeOpen   = "[mcpgate: "
	noticeEntry  = " — see audit log entry "
	warnOpen     = noticeOpen + "WARNING — "
	warnFindings = " findings; see audit log entry "
)

// noticeBlocked are the fixed "<what> blocked" placeholders, each with what follows
// its event id.
var noticeBlocked = map[string]string{
	"tool output":  " for details]",
	"resource":     "]",
	"prompt":       "]",
	"text":         "]",
	"request":      "]",
	"instructions": "]",
}

// GatewayNotice reports whether s, whole, is one of the gateway's own notices that
// carry no free text: the Warn notice "[mcpgate: WARNING — N findings; see audit log
// entry <UUIDv4>]" (N ≥ 1, no leading zero) or a block placeholder "[mcpgate: <what>
// blocked — see audit log entry <UUIDv4>]" (tool output: "… for details]"). Such a
// text is not a forged notice: its "[mcpgate:" is no fence_sentinel, so a gateway
// behind another is not judged for the first one's notices
// (docs/decisions.md#gateway-chain). Texts with a policy's message (rejections,
// withheld results) are not notices here.
func GatewayNotice(s string) bool {
	if rest, ok := strings.CutPrefix(s, warnOpen); ok {
		n := 0
		for n < len(rest) && n < 9 && rest[n] >= '0' && rest[n] <= '9' {
			n++
		}
		if n == 0 || rest[0] == '0' {
			return false
		}
		rest, ok = strings.CutPrefix(rest[n:], warnFindings)
		return ok && eventIDThen(rest, "]")
	}
	rest, ok := strings.CutPrefix(s, noticeOpen)
	if !ok {
		return false
	}
	what, rest, ok := strings.Cut(rest, " blocked"+noticeEntry)
	tail, known := noticeBlocked[what]
	return ok && known && eventIDThen(rest, tail)
}

// eventIDThen reports whether s is a lowercase UUIDv4 (as the pipeline's event ids are
// written, RFC 9562 §5.4) followed by exactly tail.
func eventIDThen(s, tail string) bool {
	const n = 36
	if len(s) != n+len(tail) || s[n:] != tail {
		return false
	}
	for i := range n {
		c := s[i]
		switch {
		case i == 8 || i == 13 || i == 18 || i == 23:
			if c != '-' {
				return false
			}
		case i == 14:
			if c != '4' {
				return false
			}
		case i == 19:
			if c != '8' && c != '9' && c != 'a' && c != 'b' {
				return false
			}
		case (c < '0' || c > '9') && (c < 'a' || c > 'f'):
			return false
		}
	}
	return true
}
