// Package pipeline makes every decision mcpgate takes on a message and leaves its one
// audit record. Handle is the tools/call path, in one function that reads top to
// bottom:
//
//	input rules → pre policies → upstream → output rules → post policies → merge → audit
//
// Response, ServerRequest and Notification are the other channels (docs/channels.md):
// tools/list and the other listings (listing.go, with tool pinning and the tools a
// caller may not see), resources/read, prompts/get, server→client requests, the
// inputRequests of a 2026-07-28 input_required result (inputrequests.go), the
// instructions and the checks that read a message's structure (structure.go);
// Refused records a message refused before any stage ran, and the --shadow set runs
// beside the live one (shadow.go). Every decision is made in a named stage; the record
// (record.go) only records, and the wire shapes (wire.go) only build.
// docs/decisions.md#stage-order is the contract; docs/telemetry.md describes the record.
package pipeline
