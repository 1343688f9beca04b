// Package bound caps the strings a client chooses (tool names, clientInfo, session
// ids, header values) before mcpgate stores, logs or labels them, so a hostile
// client cannot grow the audit store, the console's memory or /metrics.
package bound

import "unicode/utf8"

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
