// Package bound caps the strings a client chooses (tool names, clientInfo, session
// ids, header values) before mcpgate stores, logs or labels them, so a hostile
// client cannot grow the audit store, the console's memory or /metrics.
package bound

import (
	"fmt"
	"unicode/utf8"
)

// Limits, in bytes unless named otherwise.
const (
	// ToolName is the longest tool name accepted, in characters: MCP 2025-11-25
	// "Tool names" (1 to 128 characters). A longer name is refused as invalid params.
	ToolName = 128
	// ClientInfo is the longest clientInfo name or version kept for audit records.
	ClientInfo = 256
	// SessionID is the longest Mcp-Session-Id or Last-Event-ID looked up; ours are
	// 32 hex digits, so anything longer names no session.
	SessionID = 128
	// Header is the longest header value put into a log line or an error message.
	Header = 256
)

// Truncate returns s cut to at most max bytes, at a UTF-8 character boundary, with
// "…" (U+2026) in place of what was cut; s itself when it fits.
func Truncate(s string, max int) string {
	if len(s) <= max {
		return s
	}
	const ellipsis = "…"
	cut := max - len(ellipsis)
	if cut < 0 {
		cut = 0
	}
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + ellipsis
}

// ToolNameOK reports whether name is within the MCP length limit for tool names
// (1 to ToolName characters).
func ToolNameOK(name string) bool {
	return name != "" && (len(name) <= ToolName ||
		len(name) <= utf8.UTFMax*ToolName && utf8.RuneCountInString(name) <= ToolName)
}

// isHidingControl reports whether r is a C1 control (U+0080–U+009F) or a bidi control
// (U+061C, U+200E, U+200F, U+202A–U+202E, U+2066–U+2069): characters a terminal or a
// viewer acts on instead of showing, so that a logged name could read as another.
func isHidingControl(r rune) bool {
	switch {
	case r >= 0x80 && r <= 0x9f, r == 0x061c, r == 0x200e, r == 0x200f,
		r >= 0x202a && r <= 0x202e, r >= 0x2066 && r <= 0x2069:
		return true
	}
	return false
}

// EscapeControls rewrites every C1 and bidi control in b as the six bytes \uXXXX and
// leaves everything else as it is. Inside a JSON string that is the same character
// (a decoder reads it back unchanged); anywhere else it shows as text. It returns b
// itself when there is nothing to escape.
func EscapeControls(b []byte) []byte {
	i := 0
	for i < len(b) {
		if b[i] < utf8.RuneSelf {
			i++
			continue
		}
		r, n := utf8.DecodeRune(b[i:])
		if isHidingControl(r) {
			break
		}
		i += n
	}
	if i == len(b) {
		return b
	}
	out := make([]byte, 0, len(b)+16)
	out = append(out, b[:i]...)
	for i < len(b) {
		r, n := utf8.DecodeRune(b[i:])
		if isHidingControl(r) {
			out = append(out, fmt.Sprintf(`\u%04x`, r)...)
		} else {
			out = append(out, b[i:i+n]...)
		}
		i += n
	}
	return out
}
