// Package reqstate seals the requestState of MCP 2026-07-28 Multi Round-Trip
// requests ("Multi Round-Trip Requests": an input_required result's requestState
// comes back unchanged in the client's retry) in an envelope of the gateway's own,
// so that what a client presents is exactly what the gateway handed that caller, on
// that session, for that request, in time (docs/decisions.md#request-state).
//
// A sealed state is the string
//
//	"mcpgate:v1." base64url(payload) "." base64url(HMAC-SHA256(key, binding ‖ payload))
//
// where payload is {"s": <the inner state>, "e": <expiry, Unix ms>, "n": <nonce>}
// and binding is the caller, the session, the method, the name (tools/call's and
// prompts/get's name, resources/read's uri) and a digest of the arguments. The
// binding is not in the token: Open recomputes it from the retry, so a state
// presented by another caller, on another session, for another tool or with other
// arguments fails the MAC. The key is random per process (Default), so a state means
// nothing to another process or after a restart. Each state opens once: a replayed
// one is refused until it expires. HMAC-SHA256 is the standard library's
// (crypto/hmac, crypto/sha256); no value of the state is ever logged.
package reqstate

import (
	"bytes"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"errors"
	"strings"
	"sync"
	"time"
)

// Prefix begins every sealed state.
const Prefix = "mcpgate:v1."

// DefaultTTL is how long a sealed state may be presented: the Multi Round-Trip
// retry of a user who answers a form.
const DefaultTTL = 10 * time.Minute

// MaxInner bounds the inner state Seal accepts, in bytes (a server's requestState
// is opaque but not a payload channel).
const MaxInner = 256 << 10

// maxUsed bounds the opened states remembered against replay.
const maxUsed = 1 << 16

// Errors of Open; each is answered -32602 by the caller.
var (
	// ErrMalformed: not a state this package sealed (another format, bad base64,
	// bad JSON).
	ErrMalformed = errors.New("requestState is not one the gateway issued")
	// ErrForged: the MAC does not match: the state was changed, or it was issued
	// to another caller, session, method, name or arguments.
	ErrForged = errors.New("requestState was not issued for this caller, session and request")
	// ErrExpired: the state's time ran out.
	ErrExpired = errors.New("requestState has expired")
	// ErrReplayed: the state was already presented once.
	ErrReplayed = errors.New("requestState was already used")
	// ErrTooLarge: Seal's inner state is over MaxInner.
	ErrTooLarge = errors.New("requestState is too large to seal")
)

// Binding is what a state is bound to. Every field is compared exactly.
type Binding struct {
	Caller  string // who: the caller's identity (user and caller ids), "" on stdio without one
	Session string // the relay session or connection that issued it
	Method  string // the request's method
	Name    string // the request's name (methods.Method.NameParam's value), "" when none
	// Arguments is the request's arguments member as sent (any JSON; nil when
	// absent); it is read canonically (object keys sorted, white space ignored).
	Arguments json.RawMessage
}

// Sealer seals and opens states under one key.
type Sealer struct {
	key []byte
	ttl time.Duration
	now func() time.Time

	mu   sync.Mutex
	used map[string]int64 // nonce → expiry (Unix ms) of each state opened
}

// New returns a Sealer with key (at least 32 bytes), ttl (DefaultTTL when ≤ 0) and
// clock now (time.Now when nil).
func New(key []byte, ttl time.Duration, now func() time.Time) *Sealer {
	if ttl <= 0 {
		ttl = DefaultTTL
	}
	if now == nil {
		now = time.Now
	}
	return &Sealer{key: append([]byte(nil), key...), ttl: ttl, now: now, used: map[string]int64{}}
}

var (
	defOnce sync.Once
	def     *Sealer
)

// Default is the process's Sealer: a random 256-bit key drawn once, DefaultTTL.
func Default() *Sealer {
	defOnce.Do(func() {
		key := make([]byte, 32)
		_, _ = rand.Read(key)
		def = New(key, DefaultTTL, nil)
	})
	return def
}

type payload struct {
	State string `json:"s"`
	Exp   int64  `json:"e"`
	Nonce string `json:"n"`
}

// Seal wraps inner for b; the result is valid until the Sealer's ttl passes.
func (s *Sealer) Seal(b Binding, inner string) (string, error) {
	if len(inner) > MaxInner {
		return "", ErrTooLarge
	}
	var n [16]byte
	_, _ = rand.Read(n[:])
	p, err := json.Marshal(payload{State: inner, Exp: s.now().Add(s.ttl).UnixMilli(), Nonce: base64.RawURLEncoding.EncodeToString(n[:])})
	if err != nil {
		return "", err
	}
	enc := base64.RawURLEncoding.EncodeToString(p)
	return Prefix + enc + "." + base64.RawURLEncoding.EncodeToString(s.mac(b, p)), nil
}

// Open checks token against b and returns the inner state it sealed; a state opens
// once. Its errors are ErrMalformed, ErrForged, ErrExpired and ErrReplayed.
func (s *Sealer) Open(b Binding, token string) (string, error) {
	p, err := s.verify(b, token)
	if err != nil {
		return "", err
	}
	now := s.now().UnixMilli()
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, seen := s.used[p.Nonce]; seen {
		return "", ErrReplayed
	}
	if len(s.used) >= maxUsed {
		for k, exp := range s.used {
			if exp < now {
				delete(s.used, k)
			}
		}
		if len(s.used) >= maxUsed { // every remembered state is still live: refuse rather than forget one
			return "", ErrReplayed
		}
	}
	s.used[p.Nonce] = p.Exp
	return p.State, nil
}

// Check is Open without using the state up: for a peek that must not consume it.
func (s *Sealer) Check(b Binding, token string) error {
	_, err := s.verify(b, token)
	return err
}

func (s *Sealer) verify(b Binding, token string) (payload, error) {
	var p payload
	rest, ok := strings.CutPrefix(token, Prefix)
	if !ok {
		return p, ErrMalformed
	}
	encP, encM, ok := strings.Cut(rest, ".")
	if !ok {
		return p, ErrMalformed
	}
	raw, err1 := base64.RawURLEncoding.DecodeString(encP)
	mac, err2 := base64.RawURLEncoding.DecodeString(encM)
	if err1 != nil || err2 != nil || len(mac) != sha256.Size {
		return p, ErrMalformed
	}
	if !hmac.Equal(mac, s.mac(b, raw)) {
		return p, ErrForged
	}
	if json.Unmarshal(raw, &p) != nil || p.Nonce == "" {
		return p, ErrMalformed // a MAC of ours over bytes we never wrote: not reachable without the key
	}
	if s.now().UnixMilli() > p.Exp {
		return p, ErrExpired
	}
	return p, nil
}

// mac is HMAC-SHA256 over the binding's fields, each length-prefixed, then the
// payload.
func (s *Sealer) mac(b Binding, p []byte) []byte {
	h := hmac.New(sha256.New, s.key)
	for _, f := range []string{"mcpgate requestState v1", b.Caller, b.Session, b.Method, b.Name, string(Canonical(b.Arguments))} {
		var n [8]byte
		binary.BigEndian.PutUint64(n[:], uint64(len(f)))
		h.Write(n[:])
		h.Write([]byte(f))
	}
	h.Write(p)
	return h.Sum(nil)
}

// Canonical is a JSON value re-encoded with object keys sorted and no white space,
// numbers as written; nil for nil or "null", and the bytes themselves when they are
// not JSON (they are then compared as they are).
func Canonical(v json.RawMessage) []byte {
	t := bytes.TrimSpace(v)
	if len(t) == 0 || string(t) == "null" {
		return nil
	}
	d := json.NewDecoder(bytes.NewReader(t))
	d.UseNumber()
	var x any
	if d.Decode(&x) != nil {
		return t
	}
	out, err := json.Marshal(x)
	if err != nil {
		return t
	}
	return out
}
