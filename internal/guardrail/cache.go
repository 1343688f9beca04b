package guardrail

import (
	"container/list"
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/binary"
	"slices"
	"strconv"
	"sync"
	"time"
)

// The verdict cache (docs/guardrails.md#verdict-cache): a content guardrail's NONE or
// BLOCKED answer is kept for its method's cacheTTL under a keyed hash of exactly what
// reached the service, so an identical listing is judged without a call. It keeps no
// text: the key is an HMAC-SHA-256 under a random key drawn once per process, and an
// entry holds the verdict, the indexes sent and the findings (rule ids, severities,
// pointers, offsets), never a text, a replacement or a blocked_reason. Failures and
// interventions (which carry replacement texts) are never cached.

// Cache bounds.
const (
	DefaultCacheEntries = 1024            // per guardrail
	MaxCacheEntries     = 1 << 16         // the largest cacheEntries
	MaxCacheTTL         = 24 * time.Hour  // the longest cacheTTL
	DefaultListingTTL   = 5 * time.Minute // tools/list's cacheTTL when none is configured
)

// cacheKeyMAC is the per-process key of the cache's hashes.
var cacheKeyMAC = func() []byte {
	b := make([]byte, 32)
	if _, err := rand.Read(b); err != nil {
		panic("guardrail: no randomness for the verdict cache key: " + err.Error())
	}
	return b
}()

type cacheKey [sha256.Size]byte

// verdictCache is one guardrail's cache: at most max entries, least recently used
// evicted first; an expired entry is dropped when read.
type verdictCache struct {
	mu    sync.Mutex
	max   int
	byKey map[cacheKey]*list.Element
	order *list.List // of *cached, most recently used first
}

type cached struct {
	key     cacheKey
	expires time.Time
	out     Outcome
}

func newVerdictCache(max int) *verdictCache {
	return &verdictCache{max: max, byKey: map[cacheKey]*list.Element{}, order: list.New()}
}

// get returns a copy of the outcome cached under k at now, marked Cached.
func (c *verdictCache) get(k cacheKey, now time.Time) (Outcome, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.byKey[k]
	if !ok {
		return Outcome{}, false
	}
	en := e.Value.(*cached)
	if !now.Before(en.expires) {
		c.order.Remove(e)
		delete(c.byKey, k)
		return Outcome{}, false
	}
	c.order.MoveToFront(e)
	o := en.out
	o.Sent, o.Findings, o.Cached = slices.Clone(o.Sent), slices.Clone(o.Findings), true
	return o, true
}

// put keeps o under k until expires when it is a verdict worth keeping: NONE or
// BLOCKED. Its blocked_reason is not kept.
func (c *verdictCache) put(k cacheKey, o Outcome, expires time.Time) {
	if o.Failure != "" || (o.Verdict != None && o.Verdict != Block) {
		return
	}
	en := &cached{key: k, expires: expires, out: Outcome{Verdict: o.Verdict,
		Sent: slices.Clone(o.Sent), Findings: slices.Clone(o.Findings)}}
	c.mu.Lock()
	defer c.mu.Unlock()
	if e, ok := c.byKey[k]; ok {
		e.Value = en
		c.order.MoveToFront(e)
		return
	}
	c.byKey[k] = c.order.PushFront(en)
	for c.order.Len() > c.max {
		old := c.order.Back()
		c.order.Remove(old)
		delete(c.byKey, old.Value.(*cached).key)
	}
}

// len is the number of entries held, expired ones included until read.
func (c *verdictCache) len() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.order.Len()
}

// key hashes everything of c that reaches g's service and could change its answer:
// the guardrail (name, URL, preset), the method, the phase (and so input_type), the
// server, the tool, the MCP revision, every text with its pointer (the texts sent
// follow from them and maxBytes), the built-in findings, and the caller (user id and
// client id) when the request carries it (request_data of the Generic Guardrail API;
// no preset sends the caller). The event id (litellm_call_id) is left out: it
// correlates, it does not judge.
func (g *guard) key(c *Content) cacheKey {
	h := hmac.New(sha256.New, cacheKeyMAC)
	var n [binary.MaxVarintLen64]byte
	field := func(s string) {
		h.Write(n[:binary.PutUvarint(n[:], uint64(len(s)))])
		h.Write([]byte(s))
	}
	num := func(i int) { field(strconv.Itoa(i)) }
	field(g.name)
	field(g.c.url)
	field(g.c.preset)
	field(g.c.nemo.ConfigID)
	field(g.c.nemo.Model)
	num(g.c.maxBytes)
	field(c.Method)
	field(c.Phase)
	field(c.Server)
	field(c.Tool)
	field(c.ProtocolVersion)
	if g.c.preset == "" {
		field("caller")
		field(c.User.UserID)
		field(c.User.CallerID)
	} else {
		field("")
	}
	num(len(c.Texts))
	for _, t := range c.Texts {
		field(t.Pointer)
		field(t.Value)
	}
	num(len(c.Findings))
	for _, f := range c.Findings {
		field(f.RuleID)
		field(f.Severity.String())
		field(f.Entity)
		field(f.Pointer)
		num(f.Start)
		num(f.End)
	}
	var k cacheKey
	copy(k[:], h.Sum(nil))
	return k
}

// judge asks g about c, or answers from the cache when c.Method has a cacheTTL and
// an identical request was judged within it.
func (g *guard) judge(ctx context.Context, now func() time.Time, c *Content) Outcome {
	ttl := g.c.cacheTTL[c.Method]
	if ttl <= 0 || g.cache == nil {
		return g.content(ctx, now, c)
	}
	k := g.key(c)
	if o, ok := g.cache.get(k, now()); ok {
		return o
	}
	o := g.content(ctx, now, c)
	if ctx.Err() == nil {
		g.cache.put(k, o, now().Add(ttl))
	}
	return o
}
