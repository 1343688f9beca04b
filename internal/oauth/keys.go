package oauth

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"sync"
	"time"

	"github.com/lestrrat-go/jwx/v3/jwk"
	"golang.org/x/sync/singleflight"
)

// Key-set timing defaults (Options override them).
const (
	DefaultKeysMaxAge     = time.Hour        // a key set older than this is fetched again
	DefaultKeysMinRefresh = 10 * time.Second // fetches (on an unknown kid, or after a failure) at most this often
	DefaultFetchTimeout   = 5 * time.Second  // one metadata, JWKS or introspection request
)

var (
	errKeysUnavailable = errors.New("the issuer's signing keys could not be fetched")
	errUnknownKey      = errors.New("no key of the issuer's key set has the token's kid")
)

// keyCache holds the issuer's JWKS. A lookup of a kid the set lacks fetches the set
// again (a rotation), but at most once per minRefresh, so tokens naming made-up kids
// cannot make the gateway hammer the issuer. A failed fetch keeps the keys it had.
type keyCache struct {
	fetch      func(ctx context.Context) (jwk.Set, error)
	minRefresh time.Duration
	maxAge     time.Duration
	timeout    time.Duration
	now        func() time.Time

	mu      sync.Mutex
	set     jwk.Set
	fetched time.Time // last successful fetch
	tried   time.Time // last attempt
	sf      singleflight.Group
}

// key returns the key named kid ("" picks the only key of a one-key set).
func (k *keyCache) key(ctx context.Context, kid string) (jwk.Key, error) {
	k.mu.Lock()
	set, now := k.set, k.now()
	stale := set == nil || now.Sub(k.fetched) >= k.maxAge
	mayFetch := now.Sub(k.tried) >= k.minRefresh || k.tried.IsZero()
	k.mu.Unlock()
	if stale && mayFetch {
		if s, err := k.refresh(ctx); err == nil {
			set = s
		} else if set == nil {
			return nil, err
		}
	}
	if set == nil {
		return nil, errKeysUnavailable
	}
	if key, ok := find(set, kid); ok {
		return key, nil
	}
	k.mu.Lock()
	mayFetch = k.now().Sub(k.tried) >= k.minRefresh
	k.mu.Unlock()
	if !mayFetch {
		return nil, errUnknownKey
	}
	s, err := k.refresh(ctx)
	if err != nil {
		return nil, err
	}
	if key, ok := find(s, kid); ok {
		return key, nil
	}
	return nil, errUnknownKey
}

func find(set jwk.Set, kid string) (jwk.Key, bool) {
	if kid == "" {
		if set.Len() != 1 {
			return nil, false
		}
		return set.Key(0)
	}
	return set.LookupKeyID(kid)
}

// refresh fetches the set once for every caller waiting on it, under a context of
// its own: a caller that gives up does not cancel the fetch for the others.
func (k *keyCache) refresh(ctx context.Context) (jwk.Set, error) {
	ch := k.sf.DoChan("jwks", func() (any, error) {
		k.mu.Lock()
		k.tried = k.now()
		k.mu.Unlock()
		fctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), k.timeout)
		defer cancel()
		s, err := k.fetch(fctx)
		if err != nil {
			return nil, err
		}
		k.mu.Lock()
		k.set, k.fetched = s, k.now()
		k.mu.Unlock()
		return s, nil
	})
	select {
	case r := <-ch:
		if r.Err != nil {
			return nil, fmt.Errorf("%w: %w", errKeysUnavailable, r.Err)
		}
		return r.Val.(jwk.Set), nil
	case <-ctx.Done():
		return nil, fmt.Errorf("%w: %w", errKeysUnavailable, ctx.Err())
	}
}

// fetchKeySet GETs a JWKS and keeps its signature keys (use "sig" or unset).
func fetchKeySet(ctx context.Context, c *http.Client, u string) (jwk.Set, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Accept", "application/jwk-set+json, application/json")
	resp, err := c.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	var raw rawJSON
	if err := decodeBody(resp, u, &raw); err != nil {
		return nil, err
	}
	set, err := jwk.Parse(raw)
	if err != nil {
		return nil, fmt.Errorf("%s: not a JWK set", u)
	}
	out := jwk.NewSet()
	for i := range set.Len() {
		key, _ := set.Key(i)
		if use, ok := key.KeyUsage(); ok && use != "" && use != jwk.ForSignature.String() {
			continue
		}
		if _, ok := key.(jwk.UnsupportedKey); ok {
			continue
		}
		if key.KeyType().String() == "oct" { // a shared secret never verifies an access token
			continue
		}
		_ = out.AddKey(key)
	}
	if out.Len() == 0 {
		return nil, fmt.Errorf("%s: no signature key in the set", u)
	}
	return out, nil
}

// rawJSON keeps a JSON value's bytes (decodeBody checks it is JSON).
type rawJSON []byte

func (r *rawJSON) UnmarshalJSON(b []byte) error { *r = append((*r)[:0], b...); return nil }
