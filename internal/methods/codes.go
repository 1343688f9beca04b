package methods

// JSON-RPC error codes: those of JSON-RPC 2.0 itself (§5.1), and the server-error
// codes MCP and its SDKs define, which the gateway answers with or reads. No other
// package defines a code of its own (docs/decisions.md#method-table).
const (
	CodeParseError     = -32700
	CodeInvalidRequest = -32600
	CodeMethodNotFound = -32601
	CodeInvalidParams  = -32602
	CodeInternalError  = -32603

	// CodeUpstreamUnavailable (server-error range) means the upstream MCP server is not
	// running or exited while the request was in flight.
	CodeUpstreamUnavailable = -32000
	// CodeRequestTimeout matches the MCP SDKs' RequestTimeout code.
	CodeRequestTimeout = -32001
	// CodeSessionNotFound answers a request for an unknown or expired HTTP session (the
	// MCP SDKs' convention).
	CodeSessionNotFound = -32001
	// CodeResourceNotFound is MCP's code for an unknown resource (2025-11-25; 2026-07-28
	// answers -32602).
	CodeResourceNotFound = -32002
	// CodeHeaderMismatch (MCP 2026-07-28, schema.ts HeaderMismatch): a request's headers
	// (Mcp-Method, Mcp-Name) disagree with its body; over HTTP, 400 Bad Request.
	CodeHeaderMismatch = -32020
	// CodeMissingRequiredClientCapability (MCP 2026-07-28, schema.ts
	// MissingRequiredClientCapability): the request needs a capability its _meta
	// clientCapabilities do not declare; data is {requiredCapabilities}.
	CodeMissingRequiredClientCapability = -32021
	// CodeUserRejected answers a blocked server-to-client request: the code MCP's
	// sampling section uses for a request the user rejected.
	CodeUserRejected = -1
	// CodeUnsupportedProtocolVersion (MCP 2026-07-28, schema.ts
	// UNSUPPORTED_PROTOCOL_VERSION): the request's revision is not served.
	CodeUnsupportedProtocolVersion = -32022
)
