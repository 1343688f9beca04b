package translate

import (
	"strings"
	"testing"

	"github.com/mcpgate/mcpgate/internal/jsonrpc"
)

// The prefixes as the process draws them, before init below sets the spellings the
// scripts use (package variables are initialised before init runs).
var drawnOwnPrefix, drawnIDPrefix = ownPrefix, idPrefix

// The scripts spell the translation's ids without the process's random part.
func init() { ownPrefix, idPrefix = "mcpgate-t-", "mcpgate-tr-" }

// TestOwnIDsInTheGatewaysNamespace: the translation's ids are in the namespace the
// relay refuses from clients, with this process's random part, so neither a client
// nor another gateway's translation can answer for them (docs/decisions.md#reserved-ids).
func TestOwnIDsInTheGatewaysNamespace(t *testing.T) {
	for _, p := range []string{drawnOwnPrefix, drawnIDPrefix} {
		if !strings.HasPrefix(p, jsonrpc.OwnIDPrefix) || !jsonrpc.IsOwnIDKey(jsonrpc.IDKey(jsonrpc.OwnID(strings.TrimPrefix(p, jsonrpc.OwnIDPrefix), 1))) {
			t.Errorf("prefix %q is not in the gateway's own namespace %q", p, jsonrpc.OwnIDPrefix)
		}
	}
}

// drawnAskNonce is the random part of input request ids, which init below takes out
// for the scripts.
var drawnAskNonce = askNonce

func init() { askNonce = func() string { return "" } }

// toClientOf pumps c's Recv into a channel of the given size, closed when Recv ends,
// so a test reads what the client would see with a timeout of its own.
func toClientOf(c *Conn, size int) <-chan *jsonrpc.Message {
	out := make(chan *jsonrpc.Message, size)
	go func() {
		defer close(out)
		for {
			m, err := c.Recv()
			if err != nil {
				return
			}
			out <- m
		}
	}()
	return out
}
