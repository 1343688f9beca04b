// Package motion finds secrets in motion: a secret-shaped or PII value that a result
// showed the agent and that a later call then sends on in its arguments, above all to
// another server, the shape of cross-tool exfiltration (docs/decisions.md#secrets-in-motion).
//
// A Scope (one per session and caller) remembers, for each such value, only keyed
// hashes: HMAC-SHA-256 under a random key drawn once per process, and a polynomial hash
// modulo 2^61-1 under a random base of the value and of its first 8 bytes. Neither the
// value nor a hash that outlives the process is kept, in memory or on disk. Entries
// live for TTL and a Scope holds at most MaxEntries (MaxPerPrefix of one start); past
// a bound the oldest value of the source (server and tool) that holds the most is
// dropped, so one source's flood evicts only its own values. Values shorter than
// MinValueBytes are not remembered.
//
// Find reads every string of the arguments whole, in time linear in their length (the
// message size limit bounds it; docs/decisions.md#motion-scan): a bitset over a keyed
// mix of each 8-byte window rules out almost every position, and a candidate is checked
// in constant time per remembered value of its start by the polynomial hash of the
// window; the HMAC confirms only a window whose polynomial hash already matched.
package motion

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/binary"
	"math/bits"
	"sync"
	"sync/atomic"
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
	// MaxEntries bounds the values one Scope remembers; past it the source (server and
	// tool) holding the most loses its oldest.
	MaxEntries = 4096
	// MaxPerResult bounds the values one result adds.
	MaxPerResult = 256
	// MaxPerPrefix bounds the values one Scope remembers that begin with the same
	// MinValueBytes bytes (the oldest of the source holding the most of them dropped
	// first): it bounds the work at each position of an argument that carries such a
	// beginning.
	MaxPerPrefix = 64
	// TTL is how long a value is remembered after the result that showed it.
	TTL = time.Hour
)

const (
	prefixLen = MinValueBytes
	// mersenne is the modulus of the polynomial hash, 2^61-1.
	mersenne = 1<<61 - 1
	// filterBits: the candidate bitset has 1<<filterBits bits (8 KiB per Scope).
	filterBits = 16
	// chunk is how many positions share one table of prefix hashes in Find (the table
	// holds chunk+MaxValueBytes+1 words).
	chunk = 16 << 10
)

// The keys are drawn once per process: a hash proves nothing outside it.
var (
	key              = randomBytes(32)
	base             = randomBelow(mersenne-(1<<32)) + 1<<32 // of the polynomial hash
	mixK0            = binary.LittleEndian.Uint64(randomBytes(8))
	mixK1            = binary.LittleEndian.Uint64(randomBytes(8)) | 1 // odd: a bijection
	pow              = powers()
	prefixHashesPool = sync.Pool{New: func() any { b := make([]uint64, 0, chunk+MaxValueBytes+1); return &b }}
)

func randomBytes(n int) []byte {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return b
}

func randomBelow(n uint64) uint64 {
	return binary.LittleEndian.Uint64(randomBytes(8)) % n
}

// powers returns base^L mod 2^61-1 for L up to MaxValueBytes.
func powers() (p [MaxValueBytes + 1]uint64) {
	p[0] = 1
	for i := 1; i < len(p); i++ {
		p[i] = mulmod(p[i-1], base)
	}
	return p
}

// mulmod is a*b mod 2^61-1 for a, b < 2^61-1.
func mulmod(a, b uint64) uint64 {
	hi, lo := bits.Mul64(a, b) // < 2^122: hi < 2^58
	r := (lo & mersenne) + (lo >> 61) + (hi << 3)
	r = (r & mersenne) + (r >> 61)
	if r >= mersenne {
		r -= mersenne
	}
	return r
}

// poly is the polynomial hash of b: each byte plus one, in base `base`, mod 2^61-1.
func poly[T string | []byte](b T) uint64 {
	var h uint64
	for i := 0; i < len(b); i++ {
		h = mulmod(h, base) + uint64(b[i]) + 1
		if h >= mersenne {
			h -= mersenne
		}
	}
	return h
}

// prefixHashes appends to h the polynomial hashes of every prefix of b (h[k] of
// b[:k], so len(b)+1 of them).
func prefixHashes[T string | []byte](b T, h []uint64) []uint64 {
	var x uint64
	h = append(h, 0)
	for i := 0; i < len(b); i++ {
		x = mulmod(x, base) + uint64(b[i]) + 1
		if x >= mersenne {
			x -= mersenne
		}
		h = append(h, x)
	}
	return h
}

// window is the polynomial hash of b[i:j] from b's prefix hashes h (j-i ≤ MaxValueBytes).
func window(h []uint64, i, j int) uint64 {
	r := h[j] + mersenne - mulmod(h[i], pow[j-i])
	if r >= mersenne {
		r -= mersenne
	}
	return r
}

// load8 is the 8 bytes of b at i, little-endian.
func load8[T string | []byte](b T, i int) uint64 {
	return uint64(b[i]) | uint64(b[i+1])<<8 | uint64(b[i+2])<<16 | uint64(b[i+3])<<24 |
		uint64(b[i+4])<<32 | uint64(b[i+5])<<40 | uint64(b[i+6])<<48 | uint64(b[i+7])<<56
}

// slot is the candidate bitset's index of an 8-byte window: the top bits of a keyed
// multiply, which every bit of the window reaches.
func slot(x uint64) uint64 {
	return ((x ^ mixK0) * mixK1) >> (64 - filterBits)
}

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
	start   uint64 // the polynomial hash of the first prefixLen bytes: its byStart key
	poly    uint64 // the polynomial hash of the whole value
	slot    uint64 // the bitset index of its first prefixLen bytes
	n       int
	src     *Source
	owner   string // the source's server and tool: whose share it counts in
	expires time.Time
}

// Scope is the memory of one session and caller. The zero value is not usable: use
// NewScope. It is safe for concurrent use; Finds run side by side.
type Scope struct {
	mu      sync.RWMutex
	byStart map[uint64][]*entry // each list oldest first
	order   []*entry            // oldest first
	owned   map[string]int      // how many of order each owner holds
	// filter has the slot bit of every remembered value set; a dropped value's bit
	// stays set (a wasted lookup) until stale passes MaxEntries/4 and it is rebuilt.
	filter []uint64
	stale  int
	now    func() time.Time
}

// NewScope returns an empty Scope.
func NewScope() *Scope {
	return &Scope{byStart: map[uint64][]*entry{}, owned: map[string]int{}, now: time.Now}
}

// macs counts the HMACs computed, for the tests that bound them.
var macs atomic.Int64

func mac(v []byte) (m [sha256.Size]byte) {
	macs.Add(1)
	h := hmac.New(sha256.New, key)
	h.Write(v)
	copy(m[:], h.Sum(nil))
	return m
}

// Remember adds the values a result showed (each cut to MaxValueBytes; shorter than
// MinValueBytes skipped), at most MaxPerResult of them, under src. values are only
// read during the call. The hashes are computed before the Scope is locked.
func (s *Scope) Remember(src Source, values [][]byte) {
	if s == nil || len(values) == 0 {
		return
	}
	p := &src
	owner := src.Server + "\x00" + src.Tool
	now := s.now()
	var add []*entry
	for _, v := range values {
		if len(v) < MinValueBytes {
			continue
		}
		if len(add) == MaxPerResult {
			break
		}
		if len(v) > MaxValueBytes {
			v = v[:MaxValueBytes]
		}
		add = append(add, &entry{mac: mac(v), start: poly(v[:prefixLen]), poly: poly(v), slot: slot(load8(v, 0)),
			n: len(v), src: p, owner: owner, expires: now.Add(TTL)})
	}
	if len(add) == 0 {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.expire(now)
	if s.filter == nil {
		s.filter = make([]uint64, 1<<filterBits/64)
	}
	for _, e := range add {
		s.filter[e.slot>>6] |= 1 << (e.slot & 63)
		if s.replace(e) {
			continue
		}
		s.add(e)
		if list := s.byStart[e.start]; len(list) > MaxPerPrefix {
			s.remove(s.evictee(list))
		}
		for len(s.order) > MaxEntries {
			s.remove(s.evictee(s.order))
		}
	}
	if s.stale > MaxEntries/4 {
		clear(s.filter)
		for _, e := range s.order {
			s.filter[e.slot>>6] |= 1 << (e.slot & 63)
		}
		s.stale = 0
	}
}

// replace renews an entry for the same value (the latest source wins); it reports
// whether one was there.
func (s *Scope) replace(e *entry) bool {
	for _, old := range s.byStart[e.start] {
		if old.n == e.n && old.mac == e.mac {
			s.remove(old)
			s.stale-- // the same slot stays in use
			s.add(e)
			return true
		}
	}
	return false
}

// add appends e to byStart and to order.
func (s *Scope) add(e *entry) {
	s.byStart[e.start] = append(s.byStart[e.start], e)
	s.order = append(s.order, e)
	s.owned[e.owner]++
}

// evictee is the entry of list (order, or one start's list; oldest first) to drop
// past its bound: the oldest of the owner that holds the most of list (ties: the
// least name).
func (s *Scope) evictee(list []*entry) *entry {
	counts := s.owned
	if len(list) < len(s.order) {
		counts = map[string]int{}
		for _, e := range list {
			counts[e.owner]++
		}
	}
	heaviest, most := "", 0
	for o, n := range counts {
		if n > most || n == most && o < heaviest {
			heaviest, most = o, n
		}
	}
	for _, e := range list {
		if e.owner == heaviest {
			return e
		}
	}
	return list[0]
}

// remove drops e from byStart and from order.
func (s *Scope) remove(e *entry) {
	s.drop(e)
	for k, o := range s.order {
		if o == e {
			s.order = append(s.order[:k], s.order[k+1:]...)
			break
		}
	}
}

// drop removes e from byStart and its owner's count (the caller removes it from
// order).
func (s *Scope) drop(e *entry) {
	s.stale++
	if s.owned[e.owner]--; s.owned[e.owner] == 0 {
		delete(s.owned, e.owner)
	}
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
	s.mu.RLock()
	defer s.mu.RUnlock()
	return len(s.order)
}

// Match is a remembered value found in arguments: where the value came from, and how
// the argument carried it ("" as written, or engine.DecodedBase64, DecodedHex,
// DecodedURL).
type Match struct {
	Source
	Encoding string
}

// Find looks for any remembered value in the texts (an arguments document's strings,
// Strings), each read whole, as written and in its base64, hex and percent-encoded runs
// decoded (engine.EachDecoded). It returns the first match, the latest-remembered
// source first when several values of one start match, or nil. Its time is linear in
// the texts' length (docs/decisions.md#motion-scan).
func (s *Scope) Find(texts []string) *Match {
	if s == nil {
		return nil
	}
	s.mu.Lock()
	s.expire(s.now())
	empty := len(s.order) == 0
	s.mu.Unlock()
	if empty {
		return nil
	}
	s.mu.RLock()
	defer s.mu.RUnlock()
	h := prefixHashesPool.Get().(*[]uint64)
	defer prefixHashesPool.Put(h)
	for _, t := range texts {
		if e := search(s, t, h); e != nil {
			return &Match{Source: *e.src}
		}
		var found *Match
		engine.EachDecoded(t, func(enc string, text []byte) {
			if found != nil {
				return
			}
			if e := search(s, text, h); e != nil {
				found = &Match{Source: *e.src, Encoding: enc}
			}
		})
		if found != nil {
			return found
		}
	}
	return nil
}

// search returns the entry of a remembered value that occurs in b, or nil; the caller
// holds s.mu (read). Positions go in chunks: a chunk's prefix hashes (into *h) are
// computed only once a position of it begins like a remembered value.
func search[T string | []byte](s *Scope, b T, h *[]uint64) *entry {
	n := len(b)
	for c := 0; c+prefixLen <= n; c += chunk {
		end := min(c+chunk, n-prefixLen+1)
		built := false
		for i := c; i < end; i++ {
			sl := slot(load8(b, i))
			if s.filter[sl>>6]&(1<<(sl&63)) == 0 {
				continue
			}
			k := i - c
			var start uint64
			if built {
				start = window(*h, k, k+prefixLen)
			} else {
				start = poly(b[i : i+prefixLen])
			}
			list := s.byStart[start]
			if len(list) == 0 { // the bitset's false positive: no table needed
				continue
			}
			if !built {
				*h = prefixHashes(b[c:min(c+chunk+MaxValueBytes, n)], (*h)[:0])
				built = true
			}
			hs := *h
			for j := len(list) - 1; j >= 0; j-- {
				e := list[j]
				if k+e.n < len(hs) && window(hs, k, k+e.n) == e.poly && mac([]byte(b[i:i+e.n])) == e.mac {
					return e
				}
			}
		}
	}
	return nil
}
