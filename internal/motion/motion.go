// Package motion finds secrets in motion: a secret-shaped or PII value that a result
// showed the agent and that a later call then sends on in its arguments, above all to
// another server, the shape of cross-tool exfiltration (docs/decisions.md#secrets-in-motion).
//
// A Scope (one per session and caller) remembers, for each such value, only a keyed
// hash: HMAC-SHA-256 under a random key drawn once per process, plus a maphash of its
// first 8 bytes under a random seed to find candidates. Neither the value nor a hash
// that outlives the process is kept, in memory or on disk. Entries live for TTL and a
// Scope holds at most MaxEntries, the oldest dropped first. Values shorter than
// MinValueBytes are not remembered.
package motion

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"hash/maphash"
	"sync"
	"time"

	"github.com/mcpgate/mcpgate/engine"
)

// Bounds of a Scope.
const (
	// MinValueBytes: a shorter value (a two-digit number, an IP address fragment) is
	// too common to mean it moved.
	MinValueBytes = 8
	// MaxValueBytes: a longer value is remembered by its first MaxValueBytes bytes.
	MaxValueBytes = 512
	// MaxEntries bounds the values one Scope remembers.
	MaxEntries = 4096
	// MaxPerResult bounds the values one result adds.
	MaxPerResult = 256
	// TTL is how long a value is remembered after the result that showed it.
	TTL = time.Hour
	// MaxSearchBytes bounds the argument text (decoded forms included) one Find reads.
	MaxSearchBytes = 4 << 20
)

const prefixLen = MinValueBytes

// key and seed are drawn once per process: a hash proves nothing outside it.
var (
	key  = func() []byte { b := make([]byte, 32); _, _ = rand.Read(b); return b }()
	seed = maphash.MakeSeed()
)

// Source says which result showed a value: its record's event id, its server and
// tool, and the rule that found the value (a rule id, or "sensitive_file" for a line
// of a file whose path names credentials).
type Source struct {
	EventID string
	Server  string
	Tool    string
	Rule    string
}

type entry struct {
	mac     [sha256.Size]byte
	start   uint64 // the maphash of the first prefixLen bytes: its byStart key
	n       int
	src     *Source
	expires time.Time
}

// Scope is the memory of one session and caller. The zero value is not usable: use
// NewScope. It is safe for concurrent use.
type Scope struct {
	mu      sync.Mutex
	byStart map[uint64][]*entry
	order   []*entry // oldest first
	now     func() time.Time
}

// NewScope returns an empty Scope.
func NewScope() *Scope {
	return &Scope{byStart: map[uint64][]*entry{}, now: time.Now}
}

func mac(v []byte) (m [sha256.Size]byte) {
	h := hmac.New(sha256.New, key)
	h.Write(v)
	copy(m[:], h.Sum(nil))
	return m
}

// Remember adds the values a result showed (each cut to MaxValueBytes; shorter than
// MinValueBytes skipped), at most MaxPerResult of them, under src. values are only
// read during the call.
func (s *Scope) Remember(src Source, values [][]byte) {
	if s == nil || len(values) == 0 {
		return
	}
	p := &src
	now := s.now()
	s.mu.Lock()
	defer s.mu.Unlock()
	s.expire(now)
	added := 0
	for _, v := range values {
		if len(v) < MinValueBytes {
			continue
		}
		if len(v) > MaxValueBytes {
			v = v[:MaxValueBytes]
		}
		if added == MaxPerResult {
			break
		}
		h := maphash.Bytes(seed, v[:prefixLen])
		e := &entry{mac: mac(v), start: h, n: len(v), src: p, expires: now.Add(TTL)}
		if s.replace(h, e) {
			continue
		}
		added++
		s.byStart[h] = append(s.byStart[h], e)
		s.order = append(s.order, e)
		for len(s.order) > MaxEntries {
			s.drop(s.order[0])
			s.order = s.order[1:]
		}
	}
}

// replace renews an entry for the same value (the latest source wins); it reports
// whether one was there.
func (s *Scope) replace(h uint64, e *entry) bool {
	for i, old := range s.byStart[h] {
		if old.n == e.n && old.mac == e.mac {
			s.byStart[h][i] = e
			for k, o := range s.order {
				if o == old {
					s.order = append(s.order[:k], s.order[k+1:]...)
					break
				}
			}
			s.order = append(s.order, e)
			return true
		}
	}
	return false
}

func (s *Scope) drop(e *entry) {
	list := s.byStart[e.start]
	for i, x := range list {
		if x == e {
			list = append(list[:i], list[i+1:]...)
			if len(list) == 0 {
				delete(s.byStart, e.start)
			} else {
				s.byStart[e.start] = list
			}
			return
		}
	}
}

func (s *Scope) expire(now time.Time) {
	k := 0
	for k < len(s.order) && !now.Before(s.order[k].expires) {
		s.drop(s.order[k])
		k++
	}
	s.order = s.order[k:]
}

// Len is the number of values remembered.
func (s *Scope) Len() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.order)
}

// Match is a remembered value found in arguments: where the value came from, and how
// the argument carried it ("" as written, or engine.DecodedBase64, DecodedHex,
// DecodedURL).
type Match struct {
	Source
	Encoding string
}

// Find looks for any remembered value in the texts (an arguments document's string
// leaves), as written and in their base64, hex and percent-encoded runs decoded
// (engine.EachDecoded). It returns the first match, the latest-remembered source
// first when several values match, or nil.
func (s *Scope) Find(texts []string) *Match {
	if s == nil {
		return nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.expire(s.now())
	if len(s.order) == 0 {
		return nil
	}
	budget := MaxSearchBytes
	var found *Match
	for _, t := range texts {
		if found != nil || budget <= 0 {
			break
		}
		if len(t) > budget {
			t = t[:budget]
		}
		budget -= len(t)
		if e := s.search([]byte(t)); e != nil {
			return &Match{Source: *e.src}
		}
		engine.EachDecoded(t, func(enc string, text []byte) {
			if found != nil || budget <= 0 {
				return
			}
			budget -= len(text)
			if e := s.search(text); e != nil {
				found = &Match{Source: *e.src, Encoding: enc}
			}
		})
	}
	return found
}

// search returns the entry of a remembered value that occurs in b, or nil.
func (s *Scope) search(b []byte) *entry {
	for i := 0; i+prefixLen <= len(b); i++ {
		list := s.byStart[maphash.Bytes(seed, b[i:i+prefixLen])]
		for k := len(list) - 1; k >= 0; k-- {
			e := list[k]
			if i+e.n <= len(b) && mac(b[i:i+e.n]) == e.mac {
				return e
			}
		}
	}
	return nil
}
