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
// either direction; guarded by Conn.mu.
type round struct {
	method string
	params json.RawMessage // a 2025-11-25 client's, for its retries
	// clientID is the id the client waits under (a 2026-07-28 client's last retry's);
	// upID the server's (nil while a 2025-11-25 client answers input requests).
	clientID, upID json.RawMessage
	pending        []*inputRequest            // not yet answered, in the order they came
	shown          []*inputRequest            // those the last input_required result carried
	answers        map[string]json.RawMessage // a 2025-11-25 client's, by inputRequests key
	// state is the requestState: the server's as written (JSON), or the gateway's sealed one.
	state  string
	count  int         // input rounds so far
	expiry *time.Timer // the round's bound, or a 2025-11-25 retry's pacing
	done   bool        // ended: answered, failed, cancelled or abandoned

	// A 2026-07-28 client's: the request's name and params binding as the server ran
	// them; asked once it got input_required, retried once a retry waits under
	// clientID; final is the server's response, kept until then.
	name, bound    string
	asked, retried bool
	final          *jsonrpc.Message
}

// inputRequest is one input request of a round: a 2025-11-25 server's request (its
// id), or a 2026-07-28 server's inputRequests entry asked of the client (an own id).
type inputRequest struct {
	key    string // its inputRequests key
	id     json.RawMessage
	method string
	params json.RawMessage
}

// roundTable finds a round by upID, clientID, requestState and its asked ids.
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
	unindex(t.byUp, jsonrpc.IDKey(r.upID), r)
	unindex(t.byClient, jsonrpc.IDKey(r.clientID), r)
	if r.state != "" {
		unindex(t.byState, r.state, r)
	}
	for _, q := range r.pending {
		unindex(t.byAsk, jsonrpc.IDKey(q.id), r)
	}
}

// unindex deletes key from index when it names r (and not another round since).
func unindex(index map[string]*round, key string, r *round) {
	if index[key] == r {
		delete(index, key)
	}
}

// endRound ends r: its timer stops, the table forgets it, and a 2025-11-25 client
// is told to cancel the requests it was asked and has not answered.
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

// expire runs f once after d with c.mu held, unless r ended or the hop closed first.
func (c *Conn) expire(r *round, d time.Duration, f func()) {
	r.expiry = c.afterLocked(d, func() {
		if !r.done {
			f()
		}
	})
}
