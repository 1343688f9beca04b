package guardrail

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net/url"
	"os"
	"slices"
	"time"

	"github.com/mcpgate/mcpgate/internal/methods"
)

// Kinds of guardrail.
const (
	KindGeneric = "generic" // LiteLLM Generic Guardrail API (content)
	KindAuthZEN = "authzen" // AuthZEN 1.0 evaluation API (authorization)
	KindOPA     = "opa"     // OPA data API, {"input": ...} (authorization)
)

// Fail modes.
const (
	FailOpen   = "open"
	FailClosed = "closed"
)

// Defaults.
const (
	DefaultTimeout   = time.Second
	DefaultMaxBytes  = 1 << 20 // what one guardrail is sent, like the scan cap
	MaxAnswerBytes   = 1 << 20 // a larger answer is an error
	DefaultFailures  = 5       // consecutive failures that open the breaker
	DefaultCooldown  = 30 * time.Second
	defaultArguments = "shape"
)

// Methods a content guardrail may name.
var Methods = []string{methods.ToolsCall, methods.ResourcesRead, methods.PromptsGet, methods.ToolsList, methods.SamplingCreateMessage, methods.ElicitationCreate}

// AuthzMethods are the methods an authorization guardrail may name: the client's
// requests that name a tool, a prompt or a resource.
var AuthzMethods = []string{methods.ToolsCall, methods.PromptsGet, methods.ResourcesRead}

// Spec is one entry of "mcpgate": {"guardrails": {"<name>": Spec}}.
type Spec struct {
	// Kind is generic, authzen or opa.
	Kind string `json:"kind"`
	// URL is the service's endpoint: http:// or https://.
	URL string `json:"url"`
	// Preset maps a generic guardrail onto a named vendor's API (presets.go):
	// lakera, azure-prompt-shields, presidio or nemo. "" speaks the Generic Guardrail API.
	Preset string `json:"preset,omitempty"`
	// NeMo names what the nemo preset's checks request carries; required with it.
	NeMo *NeMo `json:"nemo,omitempty"`
	// Methods are the MCP methods the guardrail is asked about; default ["tools/call"].
	Methods []string `json:"methods,omitempty"`
	// FailMode is open or closed: what a timeout, a 5xx, a malformed or oversized
	// answer or an open breaker decides. Default closed.
	FailMode string `json:"failMode,omitempty"`
	// Timeout is a Go duration ("1500ms"); default 1s.
	Timeout string `json:"timeout,omitempty"`
	// MaxBytes bounds the text bytes one request carries; default 1 MiB. Texts past it
	// are not sent, which follows the fail mode like the scan cap.
	MaxBytes int `json:"maxBytes,omitempty"`
	// HMACSecret signs each body: X-Mcpgate-Timestamp (Unix seconds) and
	// X-Mcpgate-Signature: sha256=hex(HMAC-SHA256(secret, timestamp "." body)).
	HMACSecret string `json:"hmacSecret,omitempty"`
	// Headers are sent as they are: the service's own API key, never the caller's.
	Headers map[string]string `json:"headers,omitempty"`
	// Arguments is what an authorization request's context carries of the arguments:
	// "shape" (member names and JSON types; the default) or "values".
	Arguments string `json:"arguments,omitempty"`
	// TLS configures https:// services: a CA bundle and a client certificate (mTLS).
	TLS *TLS `json:"tls,omitempty"`
	// Breaker opens after Failures consecutive failures and stays open Cooldown.
	Breaker *Breaker `json:"breaker,omitempty"`
	// CacheTTL is how long a content guardrail's NONE or BLOCKED answer is reused for
	// an identical request, by method: a Go duration, "0" off, at most 24h. Default
	// {"tools/list": "5m"} when the guardrail takes tools/list; other methods are off.
	CacheTTL map[string]string `json:"cacheTTL,omitempty"`
	// CacheEntries bounds the verdicts cached; default 1024, at most 65536.
	CacheEntries int `json:"cacheEntries,omitempty"`
}

// TLS is a guardrail's TLS client configuration; files are PEM.
type TLS struct {
	CAFile   string `json:"caFile,omitempty"`
	CertFile string `json:"certFile,omitempty"`
	KeyFile  string `json:"keyFile,omitempty"`
}

// NeMo is the nemo preset's part of a check request: the guardrails configuration
// (config_id; "" leaves it to the server's default) and the model the request names
// (the server requires one; only self-check rails consult it).
type NeMo struct {
	ConfigID string `json:"configId,omitempty"`
	Model    string `json:"model"`
}

// Breaker is a guardrail's circuit breaker.
type Breaker struct {
	Failures int    `json:"failures,omitempty"` // default 5
	Cooldown string `json:"cooldown,omitempty"` // Go duration; default 30s
}

// Authorizes reports whether the kind is an authorization service.
func (s Spec) Authorizes() bool { return s.Kind == KindAuthZEN || s.Kind == KindOPA }

// Validate checks a Spec without reading its TLS files.
func (s Spec) Validate() error {
	_, err := s.compile(false)
	return err
}

// compiled is a Spec with its defaults applied.
type compiled struct {
	kind       string
	preset     string
	nemo       NeMo
	url        string
	methods    []string
	failClosed bool
	timeout    time.Duration
	maxBytes   int
	secret     []byte
	headers    map[string]string
	values     bool
	tls        *tls.Config
	failures   int
	cooldown   time.Duration
	cacheTTL   map[string]time.Duration // by method; absent or 0: not cached
	cacheMax   int
}

func (s Spec) compile(readFiles bool) (*compiled, error) {
	c := &compiled{kind: s.Kind, url: s.URL, headers: s.Headers, maxBytes: s.MaxBytes,
		timeout: DefaultTimeout, failures: DefaultFailures, cooldown: DefaultCooldown}
	var errs []error
	switch s.Kind {
	case KindGeneric, KindAuthZEN, KindOPA:
	case "":
		errs = append(errs, errors.New(`"kind" is required: generic, authzen or opa`))
	default:
		errs = append(errs, fmt.Errorf(`"kind" %q: want generic, authzen or opa`, s.Kind))
	}
	if u, err := url.Parse(s.URL); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		errs = append(errs, fmt.Errorf(`"url" %q: want an http:// or https:// URL`, s.URL))
	} else if u.User != nil {
		errs = append(errs, errors.New(`"url": no user:password in the URL; use "headers"`))
	}
	c.preset = s.Preset
	switch {
	case s.Preset == "":
	case s.Kind != KindGeneric:
		errs = append(errs, errors.New(`"preset" applies to kind generic only`))
	case !slices.Contains(Presets, s.Preset):
		errs = append(errs, fmt.Errorf(`"preset" %q: want one of %v`, s.Preset, Presets))
	case s.Preset == PresetNeMo && (s.NeMo == nil || s.NeMo.Model == ""):
		errs = append(errs, errors.New(`"preset" nemo needs "nemo": {"model": …, "configId": …}: the server's check request requires a model`))
	}
	switch {
	case s.NeMo != nil && s.Preset != PresetNeMo:
		errs = append(errs, errors.New(`"nemo" applies to "preset": "nemo" only`))
	case s.NeMo != nil:
		c.nemo = *s.NeMo
	}
	c.methods = s.Methods
	if len(c.methods) == 0 {
		c.methods = []string{methods.ToolsCall}
	}
	for _, m := range c.methods {
		switch {
		case !slices.Contains(Methods, m):
			errs = append(errs, fmt.Errorf(`"methods": %q is none of %v`, m, Methods))
		case s.Authorizes() && !slices.Contains(AuthzMethods, m):
			errs = append(errs, fmt.Errorf(`"methods": an authorization guardrail takes %v, not %q`, AuthzMethods, m))
		}
	}
	switch s.FailMode {
	case "", FailClosed:
		c.failClosed = true
	case FailOpen:
	default:
		errs = append(errs, fmt.Errorf(`"failMode" %q: want open or closed`, s.FailMode))
	}
	if s.Timeout != "" {
		d, err := time.ParseDuration(s.Timeout)
		if err != nil || d <= 0 {
			errs = append(errs, fmt.Errorf(`"timeout" %q: want a positive Go duration such as "1500ms"`, s.Timeout))
		}
		c.timeout = d
	}
	switch {
	case s.MaxBytes < 0:
		errs = append(errs, errors.New(`"maxBytes" must not be negative`))
	case s.MaxBytes == 0:
		c.maxBytes = DefaultMaxBytes
	}
	if s.HMACSecret != "" {
		c.secret = []byte(s.HMACSecret)
	}
	switch s.Arguments {
	case "", defaultArguments:
	case "values":
		c.values = true
	default:
		errs = append(errs, fmt.Errorf(`"arguments" %q: want shape or values`, s.Arguments))
	}
	if s.Arguments != "" && !s.Authorizes() {
		errs = append(errs, errors.New(`"arguments" applies to authzen and opa only`))
	}
	if b := s.Breaker; b != nil {
		if b.Failures < 0 {
			errs = append(errs, errors.New(`"breaker.failures" must not be negative`))
		} else if b.Failures > 0 {
			c.failures = b.Failures
		}
		if b.Cooldown != "" {
			d, err := time.ParseDuration(b.Cooldown)
			if err != nil || d <= 0 {
				errs = append(errs, fmt.Errorf(`"breaker.cooldown" %q: want a positive Go duration`, b.Cooldown))
			}
			c.cooldown = d
		}
	}
	errs = append(errs, c.compileCache(s)...)
	if t := s.TLS; t != nil {
		if (t.CertFile == "") != (t.KeyFile == "") {
			errs = append(errs, errors.New(`"tls": certFile and keyFile go together`))
		}
		if readFiles && len(errs) == 0 {
			cfg, err := t.config()
			if err != nil {
				errs = append(errs, fmt.Errorf(`"tls": %w`, err))
			}
			c.tls = cfg
		}
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	return c, nil
}

func (t *TLS) config() (*tls.Config, error) {
	cfg := &tls.Config{MinVersion: tls.VersionTLS12}
	if t.CAFile != "" {
		pem, err := os.ReadFile(t.CAFile)
		if err != nil {
			return nil, err
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("%s: no PEM certificate", t.CAFile)
		}
		cfg.RootCAs = pool
	}
	if t.CertFile != "" {
		cert, err := tls.LoadX509KeyPair(t.CertFile, t.KeyFile)
		if err != nil {
			return nil, err
		}
		cfg.Certificates = []tls.Certificate{cert}
	}
	return cfg, nil
}

// compileCache applies cacheTTL and cacheEntries: content guardrails only, methods
// the guardrail takes, durations from 0 to MaxCacheTTL.
func (c *compiled) compileCache(s Spec) []error {
	var errs []error
	if s.Kind != KindGeneric && (s.CacheTTL != nil || s.CacheEntries != 0) {
		return []error{errors.New(`"cacheTTL" and "cacheEntries" apply to content guardrails (kind generic) only`)}
	}
	c.cacheTTL = map[string]time.Duration{}
	if s.CacheTTL == nil && slices.Contains(c.methods, methods.ToolsList) {
		c.cacheTTL[methods.ToolsList] = DefaultListingTTL
	}
	for m, v := range s.CacheTTL {
		d, err := time.ParseDuration(v)
		switch {
		case !slices.Contains(c.methods, m):
			errs = append(errs, fmt.Errorf(`"cacheTTL": %q is not one of the guardrail's methods %v`, m, c.methods))
		case err != nil || d < 0 || d > MaxCacheTTL:
			errs = append(errs, fmt.Errorf(`"cacheTTL" of %q: %q: want a Go duration from "0" (off) to "24h"`, m, v))
		default:
			c.cacheTTL[m] = d
		}
	}
	switch {
	case s.CacheEntries < 0 || s.CacheEntries > MaxCacheEntries:
		errs = append(errs, fmt.Errorf(`"cacheEntries" %d: want 1 to %d`, s.CacheEntries, MaxCacheEntries))
	case s.CacheEntries == 0:
		c.cacheMax = DefaultCacheEntries
	default:
		c.cacheMax = s.CacheEntries
	}
	return errs
}
