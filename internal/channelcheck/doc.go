// Package channelcheck holds the rules of the MCP channels that read a message's
// structure rather than its text (docs/channels.md#structure): names in a listing
// (the tool-name character set, TR39 confusables, invisible endings), a tool
// description that steers another server's tool, and elicitation requests that ask
// for a credential or send the user to an unsafe URL. The text rules (escapes,
// hidden text, injection, secrets) are the engine's; these return engine.Finding
// values the pipeline merges into the same report.
//
// Confusable skeletons come from go.mau.fi/util/confusable (Unicode 17 confusables.txt,
// UTS #39 section 4; docs/decisions.md#confusables).
package channelcheck
