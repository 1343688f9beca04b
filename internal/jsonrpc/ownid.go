package jsonrpc

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"strconv"
	"strings"
)

// OwnIDPrefix begins the id of every request of the gateway's own (its tools
// listings, the multiplexer's requests, a restart's initialize): "mcpgate-", 16
// lowercase hex digits drawn once per process from crypto/rand, and "-". Another
// mcpgate in front of or behind this one has its own, so one gateway's requests
// are never taken for the next one's (docs/decisions.md#reserved-ids).
var OwnIDPrefix = newOwnIDPrefix()

func newOwnIDPrefix() string {
	var b [8]byte
	_, _ = rand.Read(b[:]) // never fails (crypto/rand, Go ≥ 1.24)
	return "mcpgate-" + hex.EncodeToString(b[:]) + "-"
}

// OwnID is the id of the gateway's own request number n of the given kind ("" for
// the relay's, "mux-", "reinit-"): the JSON string OwnIDPrefix+kind+n.
func OwnID(kind string, n uint64) json.RawMessage {
	return json.RawMessage(`"` + OwnIDPrefix + kind + strconv.FormatUint(n, 10) + `"`)
}

// IsOwnIDKey reports whether an id key (IDKey) is in this process's own namespace,
// whatever escapes its spelling used: a client request under such an id is refused.
func IsOwnIDKey(key string) bool { return strings.HasPrefix(key, `"`+OwnIDPrefix) }
