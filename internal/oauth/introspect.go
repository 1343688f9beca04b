package oauth

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"net/http"
	"net/url"
	"strings"
	"time"

	"golang.org/x/sync/singleflight"
)

// inactiveTTL is how long an inactive answer is reused at most.
const inactiveTTL = 10 * time.Second

// introspector asks the issuer about tokens that are not JWTs (RFC 7662) and keeps
// each answer under the token's SHA-256 (never the token) for at most ttl, and never
// past the token's exp.
type introspector struct {
	v     *Validator
	ttl   time.Duration
	sf    singleflight.Group
	cache *expiring[introEntry]
}

func newIntrospector(v *Validator, ttl time.Duration) *introspector {
	return &introspector{v: v, ttl: ttl, cache: newExpiring[introEntry](v.now, maxCachedTokens)}
}

func (in *introspector) check(ctx context.Context, token string) (map[string]any, error) {
	key := sha256.Sum256([]byte(token))
	if e, ok := in.cache.get(key); ok {
		if e.err != nil {
			return nil, e.err
		}
		return e.claims, nil
	}
	ch := in.sf.DoChan(string(key[:]), func() (any, error) {
		fctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), in.v.timeout)
		defer cancel()
		e, err := in.ask(fctx, token)
		if err != nil {
			return nil, err
		}
		in.cache.put(key, e, e.until)
		return e, nil
	})
	select {
	case r := <-ch:
		if r.Err != nil {
			in.v.log.Warn("oauth: token introspection failed", "err", r.Err)
			return nil, invalid("introspection_unavailable", "the token could not be checked with the issuer; try again later")
		}
		e := r.Val.(introEntry)
		if e.err != nil {
			return nil, e.err
		}
		return e.claims, nil
	case <-ctx.Done():
		return nil, invalid("introspection_unavailable", "the token could not be checked with the issuer; try again later")
	}
}

// ask posts the token to the introspection endpoint and judges the answer. A
// transport failure is an error (not cached); a judgement is an entry.
func (in *introspector) ask(ctx context.Context, token string) (introEntry, error) {
	cfg := in.v.cfg.Introspection
	endpoint := cfg.Endpoint
	if endpoint == "" {
		m, err := in.v.metadata(ctx)
		if err != nil {
			return introEntry{}, err
		}
		if m.IntrospectionEndpoint == "" {
			return introEntry{}, errors.New("the issuer's metadata names no introspection_endpoint")
		}
		endpoint = m.IntrospectionEndpoint
	}
	form := url.Values{"token": {token}, "token_type_hint": {"access_token"}}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, endpoint, strings.NewReader(form.Encode()))
	if err != nil {
		return introEntry{}, err
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Accept", "application/json")
	// RFC 6749 §2.3.1: client_secret_basic form-encodes both parts first.
	req.SetBasicAuth(url.QueryEscape(cfg.ClientID), url.QueryEscape(cfg.ClientSecret))
	resp, err := in.v.client.Do(req)
	if err != nil {
		return introEntry{}, errors.New("the introspection request failed: " + redactURLError(err))
	}
	defer resp.Body.Close()
	var raw rawJSON
	if err := decodeBody(resp, endpoint, &raw); err != nil {
		return introEntry{}, err
	}
	var claims map[string]any
	d := json.NewDecoder(strings.NewReader(string(raw)))
	d.UseNumber()
	if d.Decode(&claims) != nil || claims == nil {
		return introEntry{}, errors.New(endpoint + ": the answer is not a JSON object")
	}
	return in.judge(claims), nil
}

// judge reads an introspection answer: active, then exp, nbf and iss when given, and
// the audience: aud (or the RFC 8707 resource the provider answers with) must name
// the gateway's resource URI. An answer that names no audience is refused as
// audience_not_confirmed — two resources that introspect as one client would accept
// each other's tokens — unless AcceptMissingAudience is set (docs/http.md#audience).
func (in *introspector) judge(c map[string]any) introEntry {
	now := in.v.now()
	bad := func(e *Error) introEntry { return introEntry{err: e, until: now.Add(min(in.ttl, inactiveTTL))} }
	if active, _ := c["active"].(bool); !active {
		return bad(invalid("token_inactive", "the issuer says the token is not active (expired, revoked or unknown)"))
	}
	until := now.Add(in.ttl)
	if exp, ok := numericDate(c["exp"]); ok {
		if now.After(exp.Add(in.v.skew)) {
			return bad(invalid("token_expired", "the token has expired"))
		}
		if exp.Before(until) {
			until = exp
		}
	}
	if nbf, ok := numericDate(c["nbf"]); ok && now.Before(nbf.Add(-in.v.skew)) {
		return bad(invalid("token_not_yet_valid", "the token is not valid yet (nbf)"))
	}
	if iss, ok := c["iss"]; ok && iss != in.v.cfg.Issuer {
		return bad(invalid("wrong_issuer", "the token was issued by another issuer"))
	}
	switch audience(c, in.v.cfg.Audience) {
	case audienceOther:
		return bad(errWrongAudience)
	case audienceMissing:
		if !in.v.cfg.AcceptMissingAudience {
			return bad(errAudienceNotConfirmed)
		}
	}
	return introEntry{claims: c, until: until}
}

func numericDate(v any) (time.Time, bool) {
	n, ok := v.(json.Number)
	if !ok {
		return time.Time{}, false
	}
	f, err := n.Float64()
	if err != nil {
		return time.Time{}, false
	}
	return time.Unix(int64(f), 0), true
}

// redactURLError drops the request from a *url.Error: its text is the endpoint and
// the cause, never the body, but keep only the cause to be sure.
func redactURLError(err error) string {
	var ue *url.Error
	if errors.As(err, &ue) {
		return ue.Err.Error()
	}
	return err.Error()
}
