package httpfront

import (
	"errors"
	"io"
	"net"
	"net/http"
	"sync"
	"time"
)

// Defaults of the request-body budget (docs/http.md#held-open).
const (
	// DefaultMaxBodyBytesInFlight bounds the bytes of request bodies being read or
	// held by the POSTs in flight, all callers together.
	DefaultMaxBodyBytesInFlight = 256 << 20
	// DefaultMaxBodyBytesPerCaller bounds one caller's (Identity.Key); never below
	// MaxMessageBytes, so one message of the largest size always fits.
	DefaultMaxBodyBytesPerCaller = 128 << 20
)

// Errors of the body budget: the caller's share is taken (HTTP 429), or all of it
// (HTTP 503).
var (
	errCallerBodies = errors.New("this caller has as many request bytes in flight as it may (the gateway's --max-body-bytes-per-caller); retry when its requests end")
	errAllBodies    = errors.New("the gateway has as many request bytes in flight as it may (--max-body-bytes-in-flight); retry later")
)

// bodyBudget counts request-body bytes in flight, in all and per caller key.
type bodyBudget struct {
	total, perCaller int64 // ≤ 0: no bound

	mu   sync.Mutex
	used int64
	by   map[string]int64
}

func newBodyBudget(total, perCaller int64) *bodyBudget {
	return &bodyBudget{total: total, perCaller: perCaller, by: map[string]int64{}}
}

// take reserves n bytes for key, or returns errCallerBodies or errAllBodies and
// reserves nothing.
func (b *bodyBudget) take(key string, n int64) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.perCaller > 0 && b.by[key]+n > b.perCaller {
		return errCallerBodies
	}
	if b.total > 0 && b.used+n > b.total {
		return errAllBodies
	}
	b.used += n
	b.by[key] += n
	return nil
}

// give returns n bytes of key's.
func (b *bodyBudget) give(key string, n int64) {
	if n == 0 {
		return
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	b.used -= n
	if b.by[key] -= n; b.by[key] <= 0 {
		delete(b.by, key)
	}
}

// inFlight returns the bytes reserved in all.
func (b *bodyBudget) inFlight() int64 {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.used
}

// budgetReader reserves a body's bytes before they are read into p (a body without
// Content-Length): io.ReadAll's buffer is what a body costs, so what is reserved
// follows it. held is what it reserved.
type budgetReader struct {
	r    io.Reader
	b    *bodyBudget
	key  string
	read int64
	held int64
}

func (br *budgetReader) Read(p []byte) (int, error) {
	p = p[:min(len(p), 1<<20)] // reserve close to what arrived
	if need := br.read + int64(len(p)) - br.held; need > 0 {
		if err := br.b.take(br.key, need); err != nil {
			return 0, err
		}
		br.held += need
	}
	n, err := br.r.Read(p)
	br.read += int64(n)
	return n, err
}

// readBody reads a POST body within the budget, the body read timeout and
// MaxMessageBytes; it returns the body and a release func to call when the request
// ends, or the HTTP status and text of the refusal (413, 429, 503, 408, 400).
func (f *Front) readBody(w http.ResponseWriter, r *http.Request, key string) (body []byte, release func(), status int, text string) {
	max := int64(f.opts.MaxMessageBytes)
	var held int64
	release = func() { f.bodies.give(key, held) }
	if r.ContentLength > 0 {
		if err := f.bodies.take(key, r.ContentLength); err != nil {
			return nil, func() {}, budgetStatus(err), "mcpgate: " + err.Error()
		}
		held = r.ContentLength
	}
	rc := http.NewResponseController(w)
	if f.opts.BodyReadTimeout > 0 {
		_ = rc.SetReadDeadline(time.Now().Add(f.opts.BodyReadTimeout)) // not every ResponseWriter can
	}
	src := io.Reader(http.MaxBytesReader(w, r.Body, max))
	var err error
	if r.ContentLength > 0 {
		body = make([]byte, r.ContentLength)
		_, err = io.ReadFull(src, body)
	} else {
		br := &budgetReader{r: src, b: f.bodies, key: key}
		body, err = io.ReadAll(br)
		held = br.held
	}
	if f.opts.BodyReadTimeout > 0 {
		_ = rc.SetReadDeadline(time.Time{})
	}
	var tooLarge *http.MaxBytesError
	var ne net.Error
	switch {
	case err == nil:
		return body, release, 0, ""
	case errors.As(err, &tooLarge):
		return nil, release, http.StatusRequestEntityTooLarge, ""
	case errors.Is(err, errCallerBodies) || errors.Is(err, errAllBodies):
		return nil, release, budgetStatus(err), "mcpgate: " + err.Error()
	case errors.As(err, &ne) && ne.Timeout():
		return nil, release, http.StatusRequestTimeout, "mcpgate: the request body did not arrive within the gateway's --body-read-timeout"
	}
	return nil, release, http.StatusBadRequest, "mcpgate: could not read the request body"
}

// budgetStatus is the HTTP status of a budget refusal: 429 for the caller's share, 503
// for the whole.
func budgetStatus(err error) int {
	if errors.Is(err, errCallerBodies) {
		return http.StatusTooManyRequests
	}
	return http.StatusServiceUnavailable
}
