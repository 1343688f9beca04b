// Package e2e drives the real mcpgate binary with real MCP clients (mcp-go, the
// official TypeScript SDK, and a raw JSON-RPC client for byte comparisons) against
// real MCP servers (server-filesystem, server-everything, the go-sdk
// everything-server, and testdata/e2e/upstream.mjs).
package e2e
