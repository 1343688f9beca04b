package admin

import (
	"context"
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/mcpgate/mcpgate/internal/audit"
	"github.com/mcpgate/mcpgate/internal/connlimit"
	"github.com/mcpgate/mcpgate/internal/loopback"
)

//go:embed static
var static embed.FS

// Options configure the admin listener.
type Options struct {
	Addr         string      // listen address, such as 127.0.0.1:9090 (port 0 picks one)
	Token        string      // bearer token; required when Addr is not loopback (or TokenSHA256)
	TokenSHA256  string      // the token's sha256 in hex, instead of Token
	AllowedHosts []string    // extra Host/Origin names besides localhost, 127.0.0.1, ::1 and Addr's host
	Store        audit.Store // what /api/audit and the console read
	Metrics      *Metrics    // nil: /metrics answers 404
	Logger       *slog.Logger
	Now          func() time.Time // for since=; time.Now when nil
	// Status, when set, is served as JSON at GET /api/status: the policy set's
	// generation, hash, files and last reload error, and the audit counters.
	Status func() any
}

// Server is a running admin listener.
type Server struct {
	ln  net.Listener
	srv *http.Server
	log *slog.Logger
}

// New checks the options, binds Addr and starts serving. Errors: ErrNoToken off
// loopback without a token, ErrShortToken, ErrNoStore, ErrBadAddr (no port), or the
// listen error.
func New(o Options) (*Server, error) {
	if o.Store == nil {
		return nil, ErrNoStore
	}
	if _, _, err := net.SplitHostPort(o.Addr); err != nil {
		return nil, fmt.Errorf("--admin %q: %w: want HOST:PORT, e.g. 127.0.0.1:9464 (%v)", o.Addr, ErrBadAddr, err)
	}
	var digest []byte
	switch {
	case o.Token != "":
		if len(o.Token) < 16 {
			return nil, ErrShortToken
		}
		d := sha256.Sum256([]byte(o.Token))
		digest = d[:]
	case o.TokenSHA256 != "":
		d, err := hex.DecodeString(o.TokenSHA256)
		if err != nil || len(d) != sha256.Size {
			return nil, ErrBadDigest
		}
		digest = d
	case !loopback.Addr(o.Addr):
		return nil, fmt.Errorf("--admin %s: %w", o.Addr, ErrNoToken)
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	hosts := append([]string{}, o.AllowedHosts...)
	if h, _, err := net.SplitHostPort(o.Addr); err == nil && h != "" && h != "0.0.0.0" && h != "::" {
		hosts = append(hosts, h)
	}
	raw, err := net.Listen("tcp", o.Addr)
	if err != nil {
		return nil, fmt.Errorf("admin: %w", err)
	}
	// connections per remote address and in all, as on the MCP listener (docs/http.md#held-open)
	ln := connlimit.Wrap(raw, connlimit.Options{HTTP: true, Logger: o.Logger, What: "admin"})
	s := &Server{ln: ln, log: o.Logger}
	s.srv = &http.Server{
		Handler:           Handler(o, newGuard(hosts, digest)),
		ReadHeaderTimeout: 10 * time.Second,
		ReadTimeout:       30 * time.Second,
		WriteTimeout:      60 * time.Second,
		IdleTimeout:       2 * time.Minute,
		MaxHeaderBytes:    64 << 10,
		ErrorLog:          slog.NewLogLogger(o.Logger.Handler(), slog.LevelWarn),
	}
	go func() {
		if err := s.srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			o.Logger.Error("admin listener stopped", "err", err)
		}
	}()
	return s, nil
}

// Addr is the bound address (the real port when Options.Addr asked for 0).
func (s *Server) Addr() string { return s.ln.Addr().String() }

// Close stops the listener, letting requests in flight finish until ctx ends.
func (s *Server) Close(ctx context.Context) error { return s.srv.Shutdown(ctx) }

// Handler is the admin mux behind g: the console (no token: it holds no data),
// /api/audit, /api/traffic, /api/status and /metrics (token when g requires one) and
// /healthz.
func Handler(o Options, g *Guard) http.Handler {
	now := o.Now
	if now == nil {
		now = time.Now
	}
	mux := http.NewServeMux()
	sub, _ := fs.Sub(static, "static")
	files := http.FileServerFS(sub)
	mux.Handle("GET /{$}", g.Wrap(noStore(files), false))
	mux.Handle("GET /static/", g.Wrap(http.StripPrefix("/static/", noStore(files)), false))
	mux.Handle("GET /healthz", g.Wrap(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		w.Write([]byte("ok\n"))
	}), false))
	mux.Handle("GET /api/audit", g.Wrap(auditHandler(o.Store, now, o.Logger), true))
	mux.Handle("GET /api/traffic", g.Wrap(trafficHandler(o.Store, now, o.Logger), true))
	if o.Status != nil {
		mux.Handle("GET /api/status", g.Wrap(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
			writeJSON(w, http.StatusOK, o.Status())
		}), true))
	}
	if o.Metrics != nil {
		mux.Handle("GET /metrics", g.Wrap(promhttp.HandlerFor(o.Metrics.Registry, promhttp.HandlerOpts{}), true))
	}
	return secureHeaders(mux)
}

// AuditResponse is the body of GET /api/audit: the newest matching records, newest
// first, and the count tiles over the filter's tool and since.
type AuditResponse struct {
	Records []audit.Record `json:"records"`
	Counts  audit.Counts   `json:"counts"`
}

func auditHandler(st audit.Store, now func() time.Time, log *slog.Logger) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		q := r.URL.Query()
		f, err := audit.ParseFilter(q.Get("status"), q.Get("tool"), q.Get("since"), q.Get("limit"), now())
		f.Method = q.Get("method")
		if err == nil {
			err = f.SetCaller(q.Get("caller"), q.Get("event_id"))
		}
		if err != nil {
			writeJSON(w, http.StatusBadRequest, map[string]string{"error": strings.TrimPrefix(err.Error(), "bad filter: ")})
			return
		}
		switch q.Get("shadow") {
		case "":
		case "differs":
			f.ShadowDiffers = true
		default:
			writeJSON(w, http.StatusBadRequest, map[string]string{"error": `shadow: want "differs"`})
			return
		}
		recs, err := st.Query(r.Context(), f)
		var c audit.Counts
		if err == nil {
			c, err = st.Count(r.Context(), f)
		}
		if err != nil {
			log.Error("admin: audit query failed", "err", err)
			writeJSON(w, http.StatusInternalServerError, map[string]string{"error": "audit store query failed; see the gateway log"})
			return
		}
		writeJSON(w, http.StatusOK, AuditResponse{Records: recs, Counts: c})
	})
}

func writeJSON(w http.ResponseWriter, code int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(code)
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(true)
	_ = enc.Encode(v)
}

func noStore(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Cache-Control", "no-store")
		h.ServeHTTP(w, r)
	})
}

// secureHeaders keeps the console same-origin only: no framing, no foreign scripts.
func secureHeaders(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hd := w.Header()
		hd.Set("Content-Security-Policy", "default-src 'self'; connect-src 'self'; img-src 'self' data:; frame-ancestors 'none'; base-uri 'none'; form-action 'none'")
		hd.Set("X-Content-Type-Options", "nosniff")
		hd.Set("X-Frame-Options", "DENY")
		hd.Set("Referrer-Policy", "no-referrer")
		h.ServeHTTP(w, r)
	})
}
