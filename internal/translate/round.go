package translate

import (
	"encoding/json"
	"maps"
	"slices"
	"time"

	"github.com/mcpgate/mcpgate/internal/jsonrpc"
	"github.com/mcpgate/mcpgate/internal/methods"
)

// round is one client request carried through Multi Round-Trip input rounds, in
// either direction: its ids, the input requests of its open round, its
// requestState, its expiry and its count of rounds. All of it is guarded by Conn.mu.
type round struct {
	method string
	params json.RawMessage // the client's params (a 2025-11-25 client's, for its retries)
	// clientID is the id the client waits under: the original request's, then (a
	// 2026-07-28 client) each retry's. upID is the id the server has the request
	// under: the gateway's own (a 2026-07-28 client), or the client's and then each
	// retry's (a 2025-11-25 client; nil while the client answers).
	clientID json.RawMessage
	upID     json.RawMessage
	// pending are the input requests not yet answered, in the order they came;
	// shown, those the last input_required result carried (a 2026-07-28 client).
	pending []*inputRequest
	shown   []*inputRequest
	// answers are a 2025-11-25 client's results, by inputRequests key, for the retry.
	answers map[string]json.RawMessage
	// state is the round's requestState: the server's as it wrote it (JSON, sent back
	// byte for byte; "" when absent), or the gateway's sealed one (round.go's newState).
	state  string
	count  int         // input rounds so far
	expiry *time.Timer // the round's bound, or a 2025-11-25 retry's pacing
	done   bool        // ended: answered, failed, cancelled or abandoned

	// A 2026-07-28 client's round: name and bound are the request's name and params
	// as the server ran them (a retry must carry the same); asked is set once the
	// client got an input_required result (a retry is awaited) and retried once a
	// retry waits under clientID; final is the server's response, kept until then.
	name, bound    string
	asked, retried bool
	final          *jsonrpc.Message
}

// inputRequest is one request of a round's open input round: a 2025-11-25 server's
// request (id is the server's) or a 2026-07-28 server's inputRequests entry asked of
// the client (id is the translation's own).
type inputRequest struct {
	key    string // its inputRequests key
	id     json.RawMessage
	method string
	params json.RawMessage
}

// roundTable finds a round by the id the server has it under, the id the client
// waits under, the requestState it issued, and the ids of its input requests asked
// of the client.
type roundTable struct {
	byUp, byClient, byState, byAsk map[string]*round
}

func newRoundTable() roundTable {
	return roundTable{byUp: map[string]*round{}, byClient: map[string]*round{}, byState: map[string]*round{}, byAsk: map[string]*round{}}
}

// all is every round the table holds, each once.
func (t *roundTable) all() []*round {
	seen := map[*round]bool{}
	var out []*round
	for _, m := range []map[string]*round{t.byUp, t.byClient, t.byState, t.byAsk} {
		for _, r := range m {
			if !seen[r] {
				seen[r] = true
				out = append(out, r)
			}
		}
	}
	return out
}

// forget takes r out of every index.
func (t *roundTable) forget(r *round) {
	if t.byUp[jsonrpc.IDKey(r.upID)] == r {
		delete(t.byUp, jsonrpc.IDKey(r.upID))
	}
	if t.byClient[jsonrpc.IDKey(r.clientID)] == r {
		delete(t.byClient, jsonrpc.IDKey(r.clientID))
	}
	if r.state != "" && t.byState[r.state] == r {
		delete(t.byState, r.state)
	}
	for _, q := range r.pending {
		if t.byAsk[jsonrpc.IDKey(q.id)] == r {
			delete(t.byAsk, jsonrpc.IDKey(q.id))
		}
	}
}

// endRound ends r: its timer stops, the table forgets it, and the requests it asked
// a 2025-11-25 client and still waits on are cancelled (but on a closed
// connection), so nothing waits on them. The caller holds c.mu.
func (c *Conn) endRound(r *round) {
	if r.expiry != nil {
		r.expiry.Stop()
	}
	c.rounds.forget(r)
	asked := map[string]bool{}
	for _, q := range r.pending {
		asked[jsonrpc.IDKey(q.id)] = true
	}
	if !c.closed && c.mode == legacyClient {
		for _, id := range slices.Sorted(maps.Keys(asked)) {
			c.enqueueLocked(jsonrpc.NewNotification(methods.NotificationCancelled, map[string]any{
				"requestId": json.RawMessage(id), "reason": "mcpgate: the request that asked for this input has ended"}))
		}
	}
	r.pending, r.shown, r.done = nil, nil, true
}

// failRound ends r and returns the error response its client request gets.
func (c *Conn) failRound(r *round, code int, text string) *jsonrpc.Message {
	c.endRound(r)
	return jsonrpc.NewErrorResponse(r.clientID, code, text)
}

// expire runs f once after d, with c.mu held, unless r ended or the connection
// closed first.
func (c *Conn) expire(r *round, d time.Duration, f func()) {
	r.expiry = c.afterLocked(d, func() {
		if !r.done {
			f()
		}
	})
}
