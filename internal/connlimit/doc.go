// Package connlimit bounds the connections a listener holds open: per remote address
// (IP, whatever the port) and in all, so one caller holding idle or slow connections
// can neither take every file descriptor nor keep other callers out
// (docs/http.md#held-open).
//
// A connection past a bound is accepted and answered at once — on a plain HTTP
// listener with HTTP 429 (its address holds its share) or 503 (the listener is full)
// and a JSON-RPC error body, Connection: close; on a TLS listener by closing it — and
// never reaches the server. The default total is half the process's file-descriptor
// limit, so upstream processes, pipes and files keep the other half.
package connlimit
