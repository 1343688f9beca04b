package oauth

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/lestrrat-go/jwx/v3/jwa"
	"github.com/lestrrat-go/jwx/v3/jwk"
	"github.com/lestrrat-go/jwx/v3/jws"
	"github.com/lestrrat-go/jwx/v3/jwt"
)

// jwtCacheTTL bounds how long a verified JWT is taken on its hash without verifying
// it again: a client sends the same token with every request, and an ES256 or RS256
// verification costs far more than the rest of the gateway's work on a call.
const jwtCacheTTL = time.Minute

// Options configure a Validator. Zero durations take the defaults.
type Options struct {
	Config     Config
	HTTPClient *http.Client // default: one with FetchTimeout
	Logger     *slog.Logger
	Now        func() time.Time

	FetchTimeout   time.Duration // DefaultFetchTimeout
	KeysMinRefresh time.Duration // DefaultKeysMinRefresh
	KeysMaxAge     time.Duration // DefaultKeysMaxAge
}

// Principal is who a valid token speaks for. Every string is bounded (claims.go).
type Principal struct {
	Subject  string // sub
	ClientID string // the OAuth client the token was issued to
	Scopes   []string
	Roles    []string // the roles claim
	Tenant   string   // the Claims.Tenant claim; "" when unset or not a string
	Expiry   time.Time
}

// Validator checks access tokens for one issuer and audience. It is safe for
// concurrent use.
type Validator struct {
	cfg    Config
	algs   []string
	skew   time.Duration
	client *http.Client
	log    *slog.Logger
	now    func() time.Time
	keys   *keyCache
	intro  *introspector         // nil without an introspection client
	jwts   *expiring[introEntry] // verified JWTs' claims, for at most jwtCacheTTL and never past exp

	metaMu    sync.Mutex
	meta      *serverMetadata
	metaTried time.Time
	minFetch  time.Duration
	timeout   time.Duration
}

// New checks the configuration and returns a Validator. It fetches nothing: the
// issuer's metadata and keys are fetched on the first token, so the gateway starts
// while the authorization server is down.
func New(o Options) (*Validator, error) {
	c := o.Config
	if c.Issuer == "" {
		return nil, errors.New("oauth: no issuer: give --oauth-issuer or mcpgate.oauth.issuer")
	}
	if err := checkURL("oauth issuer", c.Issuer); err != nil {
		return nil, err
	}
	if err := checkURL("oauth audience (the resource URI)", c.Audience); err != nil {
		return nil, err
	}
	if err := c.Validate(); err != nil {
		return nil, err
	}
	skew, _ := c.skew()
	v := &Validator{cfg: c, algs: c.algorithms(), skew: skew, client: o.HTTPClient, log: o.Logger, now: o.Now,
		minFetch: o.KeysMinRefresh, timeout: o.FetchTimeout}
	if v.timeout <= 0 {
		v.timeout = DefaultFetchTimeout
	}
	if v.minFetch <= 0 {
		v.minFetch = DefaultKeysMinRefresh
	}
	if v.client == nil {
		v.client = &http.Client{Timeout: v.timeout}
	}
	if v.log == nil {
		v.log = slog.New(slog.DiscardHandler)
	}
	if v.now == nil {
		v.now = time.Now
	}
	maxAge := o.KeysMaxAge
	if maxAge <= 0 {
		maxAge = DefaultKeysMaxAge
	}
	v.jwts = newExpiring[introEntry](v.now, maxCachedTokens)
	v.keys = &keyCache{fetch: v.fetchKeys, minRefresh: v.minFetch, maxAge: maxAge, timeout: v.timeout, now: v.now}
	if c.Introspection != nil {
		ttl, _ := c.Introspection.ttl()
		v.intro = newIntrospector(v, ttl)
	}
	return v, nil
}

// Config returns the configuration the Validator was built with.
func (v *Validator) Config() Config { return v.cfg }

// metadata returns the issuer's metadata, fetching it at most once per minFetch
// until it succeeds.
func (v *Validator) metadata(ctx context.Context) (*serverMetadata, error) {
	v.metaMu.Lock()
	defer v.metaMu.Unlock()
	if v.meta != nil {
		return v.meta, nil
	}
	if !v.metaTried.IsZero() && v.now().Sub(v.metaTried) < v.minFetch {
		return nil, errors.New("authorization server metadata: the last fetch failed; retrying later")
	}
	v.metaTried = v.now()
	fctx, cancel := context.WithTimeout(ctx, v.timeout)
	defer cancel()
	m, err := discover(fctx, v.client, v.cfg.Issuer)
	if err != nil {
		v.log.Warn("oauth: could not fetch the authorization server's metadata", "issuer", v.cfg.Issuer, "err", err)
		return nil, err
	}
	v.meta = m
	return m, nil
}

func (v *Validator) fetchKeys(ctx context.Context) (jwk.Set, error) {
	u := v.cfg.JWKSURL
	if u == "" {
		m, err := v.metadata(ctx)
		if err != nil {
			return nil, err
		}
		if m.JWKSURI == "" {
			return nil, errors.New("the issuer's metadata names no jwks_uri")
		}
		u = m.JWKSURI
	}
	s, err := fetchKeySet(ctx, v.client, u)
	if err != nil {
		v.log.Warn("oauth: could not fetch the issuer's key set", "jwks_uri", u, "err", err)
		return nil, err
	}
	v.log.Info("oauth: fetched the issuer's key set", "jwks_uri", u, "keys", s.Len())
	return s, nil
}

// Validate checks an access token and returns its Principal, or an *Error. It
// needs the configured scopes: a valid token lacking one is insufficient_scope.
func (v *Validator) Validate(ctx context.Context, token string) (Principal, error) {
	if len(token) > MaxTokenBytes {
		return Principal{}, invalid("token_too_long", fmt.Sprintf("the token is longer than %d bytes", MaxTokenBytes))
	}
	var claims map[string]any
	if hdr, payload, ok := splitJWT(token); ok {
		key := sha256.Sum256([]byte(token))
		if e, ok := v.jwts.get(key); ok {
			claims = e.claims
		} else {
			c, err := v.checkJWT(ctx, token, hdr, payload)
			if err != nil {
				return Principal{}, err
			}
			claims = c
			until := v.now().Add(jwtCacheTTL)
			if exp, ok := numericDate(c["exp"]); ok && exp.Before(until) {
				until = exp
			}
			v.jwts.put(key, introEntry{claims: c, until: until}, until)
		}
	} else if v.intro != nil {
		c, err := v.intro.check(ctx, token)
		if err != nil {
			return Principal{}, err
		}
		claims = c
	} else {
		return Principal{}, invalid("malformed", "the token is not a JWT, and no introspection is configured")
	}
	p, err := v.principal(claims)
	if err != nil {
		return Principal{}, err
	}
	if missing := missingScopes(p.Scopes, v.cfg.Scopes); len(missing) > 0 {
		return p, &Error{Code: CodeInsufficientScope, Reason: "insufficient_scope",
			Description: "the token lacks a scope this resource needs", Scope: strings.Join(v.cfg.Scopes, " ")}
	}
	return p, nil
}

func missingScopes(have, need []string) []string {
	var out []string
	for _, s := range need {
		if !slices.Contains(have, s) {
			out = append(out, s)
		}
	}
	return out
}

type jwtHeader struct {
	Alg  string   `json:"alg"`
	Kid  string   `json:"kid"`
	Crit []string `json:"crit"`
}

// splitJWT reports whether token has a JWS compact form's shape (three base64url
// parts, the first a JSON object), and returns the decoded header and payload.
func splitJWT(token string) (jwtHeader, []byte, bool) {
	var h jwtHeader
	parts := strings.Split(token, ".")
	if len(parts) != 3 {
		return h, nil, false
	}
	hb, err := base64.RawURLEncoding.DecodeString(parts[0])
	if err != nil || len(hb) == 0 || hb[0] != '{' || json.Unmarshal(hb, &h) != nil {
		return h, nil, false
	}
	pb, err := base64.RawURLEncoding.DecodeString(parts[1])
	if err != nil {
		pb = nil
	}
	return h, pb, true
}

// ktyFor is the key type an algorithm's key must have.
func ktyFor(alg string) string {
	switch alg[:2] {
	case "RS", "PS":
		return "RSA"
	case "ES":
		return "EC"
	}
	return "OKP" // EdDSA
}

var errKeyMismatch = errors.New("the key named by kid is not for the token's algorithm")

func (v *Validator) checkJWT(ctx context.Context, token string, hdr jwtHeader, payload []byte) (map[string]any, error) {
	if strings.EqualFold(hdr.Alg, "none") || hdr.Alg == "" {
		return nil, invalid("alg_none", "unsigned tokens (alg none) are not accepted")
	}
	if !slices.Contains(v.algs, hdr.Alg) {
		return nil, invalid("alg_not_allowed", "the token's signing algorithm is not accepted")
	}
	if len(hdr.Crit) > 0 {
		return nil, invalid("malformed", "the token names critical header parameters the gateway does not understand")
	}
	if payload == nil {
		return nil, invalid("malformed", "the token is not a well-formed JWT")
	}
	var keyErr error
	kp := jws.KeyProviderFunc(func(_ context.Context, sink jws.KeySink, _ *jws.Signature, _ *jws.Message) error {
		key, err := v.keys.key(ctx, hdr.Kid)
		if err != nil {
			keyErr = err
			return err
		}
		if a, ok := key.Algorithm(); ok && a.String() != hdr.Alg {
			keyErr = errKeyMismatch
			return keyErr
		}
		if key.KeyType().String() != ktyFor(hdr.Alg) {
			keyErr = errKeyMismatch
			return keyErr
		}
		alg, _ := jwa.LookupSignatureAlgorithm(hdr.Alg)
		sink.Key(alg, key)
		return nil
	})
	_, err := jwt.Parse([]byte(token), jwt.WithKeyProvider(kp), jwt.WithValidate(true),
		jwt.WithIssuer(v.cfg.Issuer), jwt.WithAcceptableSkew(v.skew),
		jwt.WithClock(jwt.ClockFunc(v.now)), jwt.WithRequiredClaim("exp"), jwt.WithRequiredClaim("sub"))
	if err != nil {
		return nil, jwtError(keyErr, err)
	}
	var claims map[string]any
	d := json.NewDecoder(strings.NewReader(string(payload)))
	d.UseNumber()
	if d.Decode(&claims) != nil {
		return nil, invalid("malformed", "the token's claims are not a JSON object")
	}
	// RFC 9068 §4: aud must name this resource; a JWT access token without aud is
	// never accepted (AcceptMissingAudience is for introspection answers only).
	switch jwtAudience(claims, v.cfg.Audience) {
	case audienceOther:
		return nil, errWrongAudience
	case audienceMissing:
		return nil, errAudienceNotConfirmed
	}
	return claims, nil
}

// jwtError maps a verification failure to a fixed description (never the library's
// text, which may quote claim values).
func jwtError(keyErr, err error) *Error {
	switch {
	case errors.Is(keyErr, errUnknownKey):
		return invalid("unknown_key", "the token is signed by a key the issuer does not publish")
	case errors.Is(keyErr, errKeyMismatch):
		return invalid("key_mismatch", "the key the token names is not for its signing algorithm")
	case keyErr != nil:
		return invalid("keys_unavailable", "the issuer's signing keys could not be fetched; try again later")
	case errors.Is(err, jwt.TokenExpiredError()):
		return invalid("token_expired", "the token has expired")
	case errors.Is(err, jwt.TokenNotYetValidError()):
		return invalid("token_not_yet_valid", "the token is not valid yet (nbf)")
	case errors.Is(err, jwt.InvalidIssuerError()):
		return invalid("wrong_issuer", "the token was issued by another issuer")
	case errors.Is(err, jwt.InvalidAudienceError()):
		return invalid("wrong_audience", "the token is not for this resource (aud)")
	case errors.Is(err, jwt.MissingRequiredClaimError()):
		return invalid("missing_claim", "the token lacks a required claim (exp, sub)")
	case errors.Is(err, jwt.ValidateError()):
		return invalid("invalid_claims", "the token's claims do not validate")
	}
	return invalid("bad_signature", "the token's signature does not verify")
}
