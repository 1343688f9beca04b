// Package engine is mcpgate's detection core: the built-in rules that find terminal
// escapes, hidden text, prompt-injection markers, PII and secrets in MCP tool results
// and tools/call arguments, the Warn-path sanitizer, and the redaction helpers the
// JavaScript gate calls.
//
// An Analyzer (New) is built once and is safe for concurrent use:
//
//   - AnalyzeResult scans every text-bearing part of a CallToolResult (content[].text,
//     resource text and text/* blobs, resource_link metadata, structuredContent values
//     and member names) with a hand-written JSON walker that allocates nothing on a
//     clean result. Findings carry a rule id, severity, entity kind, an RFC 6901 JSON
//     Pointer and byte offsets, never the matched value.
//   - AnalyzeArguments scans the string leaves and member names of tools/call arguments.
//   - AnalyzeText scans one plain text.
//   - Redact replaces PII and secrets (redact, mask or hash).
//
// Sanitize and SanitizeResult implement the Warn transform
// (docs/decisions.md#warn-sanitizing); SanitizeResult cleans every
// string AnalyzeResult scans, and SanitizeJSON every string of any JSON value (for
// free-form values such as a JSON-RPC error's data). Verdicts follow docs/decisions.md#severities:
// High blocks, Medium warns, Info and Low are audited only; the verdict looks at the
// first MaxScanBytes (1 MiB) bytes of text. Rules lists the rule set; docs/engine.md
// describes each rule, its thresholds, measured precision and recall, and speed.
//
// Terms follow ECMA-48: CSI (Control Sequence Introducer), OSC (Operating System
// Command), DCS, APC, PM, SOS, ST (String Terminator), SGR (Select Graphic Rendition)
// and C1 (the 8-bit controls U+0080–U+009F, which are only ever read as code points:
// a UTF-8 continuation byte is never a C1 control).
package engine
