// Package audit defines mcpgate's audit record and the places it is kept.
//
// A Record is written once per tools/call (docs/decisions.md#record-fields). It holds names, codes,
// counts and timings only: never an argument value and never any text of a result.
//
// Records reach their sinks through an Emitter: Emit is a non-blocking channel send
// on the call's hot path, and one goroutine hands each record to every Sink. A full
// buffer drops the record and a failing sink loses it; both are counted in Stats and
// logged, and neither fails or stalls the call (docs/decisions.md#fail-modes).
//
// Sinks:
//   - JSONL: one JSON object per line on stderr (the default) or any io.Writer.
//   - NewRotatingFile: JSONL into a size-rotated file (lumberjack).
//   - SQLite: an embedded, pure-Go store that batches inserts in transactions and
//     indexes ts, action_taken and tool.
//   - Ring: the last N records in memory, so the admin console works without a store.
//
// Readers: SQLite.Query, Ring.Query and ReadJSONL answer a Filter (status, tool,
// since, limit) newest first, and Count gives the console's tiles.
package audit
