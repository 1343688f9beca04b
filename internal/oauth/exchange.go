package oauth

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"sync/atomic"
	"time"

	"golang.org/x/sync/singleflight"
)

// RFC 8693 §2.1 and §3: the grant type and the token type of an access token.
const (
	GrantTokenExchange  = "urn:ietf:params:oauth:grant-type:token-exchange"
	TokenTypeAccess     = "urn:ietf:params:oauth:token-type:access_token"
	maxExchangeBytes    = 64 << 10 // a token endpoint's answer
	maxExchangeEntries  = 4096     // cached exchanged tokens, one per subject (the caller's grant)
	exchangeEarly       = 30 * time.Second
	exchangeDefaultLife = time.Minute    // kept this long when the answer has no expires_in
	maxExchangeLife     = 24 * time.Hour // and at most this long (an expires_in that overflows)
)

// ExchangeConfig names one url server's token exchange (RFC 8693 §2.1): the token
// endpoint, the gateway's client there (HTTP Basic, RFC 6749 §2.3.1), and the
// audience, resource and scopes the server's token is asked for.
type ExchangeConfig struct {
	TokenURL, ClientID, ClientSecret string
	Audience, Resource               string
	Scopes                           []string
}

// Exchanger trades a caller's validated access token for one scoped to a url server
// (docs/http.md#token-exchange, docs/decisions.md#token-exchange). It caches each
// answer per subject until shortly before it expires, asks once for concurrent
// callers of one subject, and never forwards or logs the caller's token. Safe for
// concurrent use.
type Exchanger struct {
	cfg    ExchangeConfig
	client *http.Client
	now    func() time.Time
	sf     singleflight.Group
	cache  *expiring[string] // the exchanged token under the SHA-256 of the subject
}

type exchanged struct {
	token   string
	expires time.Time
}

// NewExchanger returns an Exchanger for cfg; client nil uses one with
// DefaultFetchTimeout. Redirects are never followed: a 307 or 308 would post the
// caller's token to wherever it points, so a redirect is a refusal (HTTP 3xx).
func NewExchanger(cfg ExchangeConfig, client *http.Client) *Exchanger {
	c := http.Client{Timeout: DefaultFetchTimeout}
	if client != nil {
		c = *client
	}
	c.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	e := &Exchanger{cfg: cfg, client: &c, now: time.Now}
	e.cache = newExpiring[string](func() time.Time { return e.now() }, maxExchangeEntries)
	return e
}

// Token returns the server's token for subject, made from subjectToken (the token
// the caller presented, already validated). subject is the key the answer is kept
// by: the gateway passes the caller's whole grant, not the sub claim alone. Errors
// name the endpoint's OAuth error code (RFC 6749 §5.2) and never a token.
func (e *Exchanger) Token(ctx context.Context, subject, subjectToken string) (string, error) {
	if subjectToken == "" {
		return "", errors.New("token exchange: the caller presented no OAuth access token to exchange (a static token, a client certificate or the stdio front has none)")
	}
	key := sha256.Sum256([]byte(subject))
	if tok, ok := e.cache.get(key); ok {
		return tok, nil
	}
	ch := e.sf.DoChan(string(key[:]), func() (any, error) {
		fctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), DefaultFetchTimeout)
		defer cancel()
		got, err := e.ask(fctx, subjectToken)
		if err != nil {
			return nil, err
		}
		e.cache.put(key, got.token, got.expires)
		return got.token, nil
	})
	select {
	case r := <-ch:
		if r.Err != nil {
			return "", r.Err
		}
		return r.Val.(string), nil
	case <-ctx.Done():
		return "", ctx.Err()
	}
}

// ask posts one token exchange request (RFC 8693 §2.1) and reads its answer (§2.2).
func (e *Exchanger) ask(ctx context.Context, subjectToken string) (exchanged, error) {
	form := url.Values{"grant_type": {GrantTokenExchange}, "subject_token": {subjectToken},
		"subject_token_type": {TokenTypeAccess}, "requested_token_type": {TokenTypeAccess}}
	if e.cfg.Audience != "" {
		form.Set("audience", e.cfg.Audience)
	}
	if e.cfg.Resource != "" {
		form.Set("resource", e.cfg.Resource)
	}
	if len(e.cfg.Scopes) > 0 {
		form.Set("scope", strings.Join(e.cfg.Scopes, " "))
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, e.cfg.TokenURL, strings.NewReader(form.Encode()))
	if err != nil {
		return exchanged{}, fmt.Errorf("token exchange: %w", err)
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Accept", "application/json")
	req.SetBasicAuth(url.QueryEscape(e.cfg.ClientID), url.QueryEscape(e.cfg.ClientSecret))
	resp, err := e.client.Do(req)
	if err != nil {
		return exchanged{}, fmt.Errorf("token exchange at %s: %w", e.cfg.TokenURL, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxExchangeBytes+1))
	if err != nil || len(body) > maxExchangeBytes {
		return exchanged{}, fmt.Errorf("token exchange at %s: the answer could not be read or exceeds %d bytes", e.cfg.TokenURL, maxExchangeBytes)
	}
	return parseExchange(resp.StatusCode, body, e.cfg.TokenURL, e.now())
}

// parseExchange reads a token endpoint's answer (RFC 8693 §2.2, errors RFC 6749 §5.2)
// received at now: a bearer access_token and when to ask again.
func parseExchange(status int, body []byte, endpoint string, now time.Time) (exchanged, error) {
	var out struct {
		AccessToken string `json:"access_token"`
		TokenType   string `json:"token_type"`
		ExpiresIn   *int64 `json:"expires_in"`
		Error       string `json:"error"`
	}
	_ = json.Unmarshal(body, &out)
	if status != http.StatusOK {
		code := out.Error
		if code == "" || len(code) > 64 || strings.ContainsFunc(code, func(r rune) bool { return r < 0x20 || r > 0x7E }) {
			code = "no OAuth error code"
		}
		return exchanged{}, fmt.Errorf("token exchange at %s refused: HTTP %d, %s", endpoint, status, code)
	}
	if out.AccessToken == "" || (out.TokenType != "" && !strings.EqualFold(out.TokenType, "bearer") && !strings.EqualFold(out.TokenType, "N_A")) {
		return exchanged{}, fmt.Errorf("token exchange at %s: the answer carries no bearer access_token", endpoint)
	}
	life := exchangeDefaultLife
	if out.ExpiresIn != nil {
		life = min(time.Duration(max(*out.ExpiresIn, 0)), maxExchangeLife/time.Second)*time.Second - exchangeEarly
	}
	return exchanged{token: out.AccessToken, expires: now.Add(life)}, nil
}

// SubjectToken holds the access token a session's caller presented last, for the
// exchange of its url servers' tokens; the front sets it on every request.
type SubjectToken struct{ v atomic.Pointer[string] }

// Set keeps tok (an empty one too: the caller presented none).
func (s *SubjectToken) Set(tok string) {
	if s != nil {
		s.v.Store(&tok)
	}
}

// Get returns the last token Set, or "".
func (s *SubjectToken) Get() string {
	if s == nil {
		return ""
	}
	if p := s.v.Load(); p != nil {
		return *p
	}
	return ""
}

type subjectTokenKey struct{}

// WithSubjectToken returns ctx carrying h (a session's start context).
func WithSubjectToken(ctx context.Context, h *SubjectToken) context.Context {
	return context.WithValue(ctx, subjectTokenKey{}, h)
}

// SubjectTokenFrom returns the holder WithSubjectToken put in ctx, or nil.
func SubjectTokenFrom(ctx context.Context) *SubjectToken {
	h, _ := ctx.Value(subjectTokenKey{}).(*SubjectToken)
	return h
}

// ExchangeTransport sends each request with the token Exchanger gets for subject from
// the holder's token, in place of any Authorization the request carries.
type ExchangeTransport struct {
	Base      http.RoundTripper
	Exchanger *Exchanger
	Subject   string
	Holder    *SubjectToken
}

// RoundTrip implements http.RoundTripper; an exchange that fails fails the request.
func (t *ExchangeTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	tok, err := t.Exchanger.Token(r.Context(), t.Subject, t.Holder.Get())
	if err != nil {
		if r.Body != nil {
			r.Body.Close()
		}
		return nil, &TokenError{Err: err}
	}
	r2 := r.Clone(r.Context())
	r2.Header.Set("Authorization", "Bearer "+tok)
	base := t.Base
	if base == nil {
		base = http.DefaultTransport
	}
	return base.RoundTrip(r2)
}

// TokenError is an upstream token the gateway could not get, so the server was never
// asked; its text is the cause's (no token in it).
type TokenError struct{ Err error }

func (e *TokenError) Error() string { return e.Err.Error() }
func (e *TokenError) Unwrap() error { return e.Err }

// UpstreamToken marks the error for packages that match it by this method alone.
func (*TokenError) UpstreamToken() {}
