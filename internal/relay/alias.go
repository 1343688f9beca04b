package relay

import (
	"encoding/json"
	"sync"

	"github.com/mcpgate/mcpgate/internal/jsonrpc"
)

// aliases holds the client requests in flight whose ids are in a fixed own namespace
// (jsonrpc.IsFixedOwnIDKey: another gateway's translation in front of this one uses
// it, and so does this one's): each goes upstream under an id of this process's own,
// so it is neither refused nor taken for a request of this process's translation, and
// its answer gets the client's id back (docs/decisions.md#reserved-ids).
type aliases struct {
	mu       sync.Mutex
	byAlias  map[string]json.RawMessage // alias id key → the client's id
	byClient map[string]json.RawMessage // client id key → alias id
}

// alias returns msg under a fresh id of this process's own, or false when a request
// under the same client id is still in flight.
func (s *Session) alias(msg *jsonrpc.Message) (*jsonrpc.Message, bool) {
	a := &s.aliased
	a.mu.Lock()
	defer a.mu.Unlock()
	key := msg.IDKey()
	if _, busy := a.byClient[key]; busy {
		return nil, false
	}
	if a.byAlias == nil {
		a.byAlias, a.byClient = map[string]json.RawMessage{}, map[string]json.RawMessage{}
	}
	id := jsonrpc.OwnID("c-", s.ownSeq.Add(1))
	a.byAlias[jsonrpc.IDKey(id)], a.byClient[key] = msg.ID, id
	return msg.WithID(id), true
}

// aliasOf returns the alias of a client id key in flight, or nil.
func (s *Session) aliasOf(key string) json.RawMessage {
	s.aliased.mu.Lock()
	defer s.aliased.mu.Unlock()
	return s.aliased.byClient[key]
}

// unalias gives a response to an aliased request the client's id back, and forgets
// the alias; any other message comes back as it is.
func (s *Session) unalias(msg *jsonrpc.Message) *jsonrpc.Message {
	if msg.Kind != jsonrpc.KindResponse || !jsonrpc.IsOwnIDKey(msg.IDKey()) {
		return msg
	}
	a := &s.aliased
	a.mu.Lock()
	id, ok := a.byAlias[msg.IDKey()]
	if ok {
		delete(a.byAlias, msg.IDKey())
		delete(a.byClient, jsonrpc.IDKey(id))
	}
	a.mu.Unlock()
	if !ok {
		return msg
	}
	return msg.WithID(id)
}
