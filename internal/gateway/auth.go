package gateway

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"os"
	"strings"
	"sync"
	"time"

	"golang.org/x/oauth2"
	"golang.org/x/oauth2/clientcredentials"

	"github.com/mcpgate/mcpgate/ctxapi"
	"github.com/mcpgate/mcpgate/internal/config"
	"github.com/mcpgate/mcpgate/internal/httpfront"
	"github.com/mcpgate/mcpgate/internal/loopback"
	"github.com/mcpgate/mcpgate/internal/oauth"
)

// OAuth and TLS of the HTTP front (docs/http.md#oauth, docs/http.md#tls): flags that
// win over the configuration file's mcpgate.oauth.
type OAuth struct {
	Issuer   string // --oauth-issuer
	Audience string // --oauth-audience; default the front's public URL of /mcp
	// AcceptMissingAudience is --oauth-accept-missing-audience: it sets
	// mcpgate.oauth.acceptMissingAudience (docs/http.md#audience).
	AcceptMissingAudience bool
}

// TLS is --tls-cert, --tls-key and --tls-client-ca.
type TLS struct {
	Cert, Key string
	ClientCA  string // PEM CA bundle: verified client certificates name the caller
}

// httpAuth picks the caller identification: static bearer tokens, OAuth access
// tokens and client certificates, any combined; with none of them the configured
// local user, on a loopback listener only. It returns the OAuth validator too (nil
// without OAuth), whose metadata the front serves.
func httpAuth(file *config.Config, h HTTP, log *slog.Logger) (httpfront.Authenticator, *oauth.Validator, error) {
	host, _, err := net.SplitHostPort(h.Listen)
	if err != nil {
		return nil, nil, fmt.Errorf("--listen %q: want HOST:PORT, e.g. 127.0.0.1:8080 (%v)", h.Listen, err)
	}
	var cfg oauth.Config
	if file.Gate.OAuth != nil {
		cfg = *file.Gate.OAuth
	}
	if h.OAuth.Issuer != "" {
		cfg.Issuer = h.OAuth.Issuer
	}
	if h.OAuth.Audience != "" {
		cfg.Audience = h.OAuth.Audience
	}
	if h.OAuth.AcceptMissingAudience {
		cfg.AcceptMissingAudience = true
	}
	var v *oauth.Validator
	if cfg.Issuer != "" {
		if cfg.Audience == "" {
			if ip := net.ParseIP(host); host == "" || (ip != nil && ip.IsUnspecified()) {
				return nil, nil, fmt.Errorf("--listen %s names no host, so the resource URI cannot be guessed: give --oauth-audience https://YOUR-HOST/mcp (the URL clients use)", h.Listen)
			}
			scheme := "http"
			if h.TLS.Cert != "" {
				scheme = "https"
			}
			cfg.Audience = scheme + "://" + h.Listen + "/mcp"
		}
		if v, err = oauth.New(oauth.Options{Config: cfg, Logger: log}); err != nil {
			return nil, nil, err
		}
		log.Info("OAuth: accepting access tokens", "issuer", cfg.Issuer, "audience", cfg.Audience, "scopes", cfg.Scopes)
		if cfg.AcceptMissingAudience {
			log.Warn("OAuth: an introspected token whose answer names no audience is taken as meant for this gateway (--oauth-accept-missing-audience): "+
				"every other resource that introspects as the same client accepts the same tokens; turn it off once the issuer answers with aud (docs/http.md#audience)",
				"audience", cfg.Audience)
		}
	} else if cfg.Audience != "" || cfg.AcceptMissingAudience || file.Gate.OAuth != nil {
		return nil, nil, errors.New("OAuth is configured without an issuer: give --oauth-issuer URL or mcpgate.oauth.issuer")
	}
	if len(file.Gate.Tokens) > 0 || v != nil || h.TLS.ClientCA != "" {
		a, err := httpfront.NewAuth(httpfront.AuthConfig{Tokens: file.Gate.Tokens, OAuth: v, Certs: h.TLS.ClientCA != "", ClassFor: file.ClassFor})
		return a, v, err
	}
	if !loopback.Addr(h.Listen) {
		return nil, nil, fmt.Errorf("--listen %s is not a loopback address and no caller authentication is configured (mcpgate.tokens or --oauth-issuer): refusing to serve unauthenticated callers; listen on 127.0.0.1 or configure tokens", h.Listen)
	}
	return httpfront.LocalAuth(file.HTTPLocalUser()), nil, nil
}

// upstreamTokens holds one token source per url server's OAuth client, shared by
// every session, so a token is fetched once and reused until it nears expiry; for a
// token exchange, one *oauth.Exchanger, which keeps a token per caller grant (callerOf).
var upstreamTokens sync.Map // key: grant, server URL, client id, token URL, audience, resource, scopes → oauth2.TokenSource or *oauth.Exchanger

// caller is whom a session's upstreams act for: the OAuth subject and the holder of
// the token the caller presented last (docs/http.md#token-exchange); zero on stdio.
type caller struct {
	subject string // callerOf's
	token   *oauth.SubjectToken
}

// callerOf is the caller of a session opened for u, whose token the front keeps in
// ctx. Its subject, by which an exchanged token is kept, is u's whole grant (the
// OAuth subject, client id, caller class, roles, scopes, tenant), not the subject
// alone: a session whose token grants less never runs with a token exchanged from
// another of the subject's tokens that grants more, as a session never runs with it
// (docs/http.md#principal-per-token).
func callerOf(ctx context.Context, u ctxapi.User) caller {
	grant, _ := json.Marshal(u)
	return caller{subject: string(grant), token: oauth.SubjectTokenFrom(ctx)}
}

// exchangeServer names a server whose token is exchanged from the caller's, or "".
func exchangeServer(servers []Server) string {
	for _, sp := range servers {
		if sp.Server.OAuth != nil && sp.Server.OAuth.Grant == config.GrantTokenExchange {
			return sp.Name
		}
	}
	return ""
}

// upstreamClient is the HTTP client of a url server over base: nil (remote's default)
// when base is http.DefaultTransport and it has no OAuth client of its own, whose
// token otherwise replaces any Authorization header: the gateway's own, or one
// exchanged for who's. The caller's own token is never among them: MCP forbids
// passing it on.
func upstreamClient(s config.Server, base http.RoundTripper, who caller) *http.Client {
	o := s.OAuth
	if o == nil {
		if base == http.DefaultTransport {
			return nil
		}
		return &http.Client{Transport: base}
	}
	resource := o.Resource
	if resource == "" {
		resource = s.URL
	}
	// one source per everything that shapes the token asked for: two entries that
	// differ in scopes or resource never share one
	key := strings.Join(append([]string{o.Grant, s.URL, o.ClientID, o.TokenURL, o.Audience, resource}, o.Scopes...), "\x00")
	if o.Grant == config.GrantTokenExchange {
		ex, _ := upstreamTokens.LoadOrStore(key, oauth.NewExchanger(oauth.ExchangeConfig{TokenURL: o.TokenURL, ClientID: o.ClientID,
			ClientSecret: o.ClientSecret, Audience: o.Audience, Resource: resource, Scopes: o.Scopes}, nil))
		return &http.Client{Transport: &oauth.ExchangeTransport{Base: base, Exchanger: ex.(*oauth.Exchanger), Subject: who.subject, Holder: who.token}}
	}
	ts, ok := upstreamTokens.Load(key)
	if !ok {
		cc := &clientcredentials.Config{ClientID: o.ClientID, ClientSecret: o.ClientSecret, TokenURL: o.TokenURL,
			Scopes: o.Scopes, EndpointParams: url.Values{"resource": {resource}}, AuthStyle: oauth2.AuthStyleInHeader}
		tctx := context.WithValue(context.Background(), oauth2.HTTPClient, &http.Client{Timeout: oauth.DefaultFetchTimeout})
		ts, _ = upstreamTokens.LoadOrStore(key, oauth2.ReuseTokenSource(nil, cc.TokenSource(tctx)))
	}
	return &http.Client{Transport: &oauth2.Transport{Source: ts.(oauth2.TokenSource), Base: base}}
}

// allowHosts are the names the front accepts in Host and Origin besides loopback and
// the listen host: --allow-host, and with OAuth the resource URI's host, which is the
// name clients use by definition.
func allowHosts(h HTTP, v *oauth.Validator) []string {
	if v == nil || v.ResourceHost() == "" {
		return h.AllowHosts
	}
	return append(append([]string(nil), h.AllowHosts...), v.ResourceHost())
}

// tlsConfig builds the listener's TLS configuration, or nil without --tls-cert.
func tlsConfig(t TLS, log *slog.Logger) (*tls.Config, error) {
	if t.Cert == "" && t.Key == "" {
		if t.ClientCA != "" {
			return nil, errors.New("--tls-client-ca needs --tls-cert and --tls-key")
		}
		return nil, nil
	}
	if t.Cert == "" || t.Key == "" {
		return nil, errors.New("--tls-cert and --tls-key go together")
	}
	cr := &certReloader{certFile: t.Cert, keyFile: t.Key, log: log, every: certCheckEvery}
	if err := cr.load(); err != nil {
		return nil, err
	}
	c := &tls.Config{MinVersion: tls.VersionTLS12, GetCertificate: cr.get}
	if t.ClientCA != "" {
		pem, err := os.ReadFile(t.ClientCA)
		if err != nil {
			return nil, fmt.Errorf("--tls-client-ca: %w", err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("--tls-client-ca %s: no PEM certificate in the file", t.ClientCA)
		}
		c.ClientCAs, c.ClientAuth = pool, tls.VerifyClientCertIfGiven
	}
	return c, nil
}

// certCheckEvery is how often a handshake looks at the certificate files at most.
var certCheckEvery = time.Second

// certReloader serves the certificate and key files, loaded again when either
// file's size or modification time changes (looked at on a handshake, at most once
// per every). A pair that fails to load keeps the one in use, and says so.
type certReloader struct {
	certFile, keyFile string
	log               *slog.Logger
	every             time.Duration

	mu      sync.Mutex
	cert    *tls.Certificate
	stamp   string
	checked time.Time
}

func (c *certReloader) fileStamp() (string, error) {
	var s string
	for _, f := range []string{c.certFile, c.keyFile} {
		fi, err := os.Stat(f)
		if err != nil {
			return "", err
		}
		s += fmt.Sprintf("%d/%d;", fi.Size(), fi.ModTime().UnixNano())
	}
	return s, nil
}

func (c *certReloader) load() error {
	stamp, err := c.fileStamp()
	if err != nil {
		return fmt.Errorf("--tls-cert/--tls-key: %w", err)
	}
	cert, err := tls.LoadX509KeyPair(c.certFile, c.keyFile)
	if err != nil {
		return fmt.Errorf("--tls-cert/--tls-key: %w", err)
	}
	c.mu.Lock()
	c.cert, c.stamp, c.checked = &cert, stamp, time.Now()
	c.mu.Unlock()
	return nil
}

func (c *certReloader) get(*tls.ClientHelloInfo) (*tls.Certificate, error) {
	c.mu.Lock()
	cert, due := c.cert, time.Since(c.checked) >= c.every
	if due {
		c.checked = time.Now()
	}
	old := c.stamp
	c.mu.Unlock()
	if !due {
		return cert, nil
	}
	if stamp, err := c.fileStamp(); err == nil && stamp != old {
		if err := c.load(); err != nil {
			c.log.Warn("TLS: the changed certificate could not be loaded; serving the previous one", "err", err)
			c.mu.Lock()
			c.stamp = stamp // not again until the files change again
			c.mu.Unlock()
		} else {
			c.log.Info("TLS: certificate reloaded", "cert", c.certFile)
		}
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.cert, nil
}
