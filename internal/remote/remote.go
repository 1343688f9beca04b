// Package remote is an MCP client for a remote server over Streamable HTTP (MCP
// 2025-11-25, "Transports: Streamable HTTP"), shaped like a stdio process: Send one
// parsed JSON-RPC message, Recv the server's messages (a jsonrpc.Conn). It implements
// upstream.Conn, so the relay, the supervisor and the multiplexer use a remote server
// exactly like a local one.
//
// Each request is POSTed on its own goroutine and its answer (application/json or an
// SSE stream) is queued for Recv; notifications and responses are POSTed in order.
// After initialize, the GET stream carries server-initiated messages; it is reopened
// with Last-Event-ID when it drops. A failed request is answered with a JSON-RPC
// error for its id, so the caller never waits forever.
//
// Session loss: when the server answers HTTP 404 for the session (the server
// restarted or expired it; MCP "Session Management": the client must start a new
// session), or HTTP 400 naming a missing or uninitialized session (the TypeScript
// SDK's answer after a restart), Recv ends with ErrSessionExpired. The restart
// supervisor above then dials a new Client and replays the client's initialize,
// notifications/initialized and subscriptions on it.
package remote

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/mcpgate/mcpgate/internal/jsonrpc"
	"github.com/mcpgate/mcpgate/internal/mcpparam"
	"github.com/mcpgate/mcpgate/internal/methods"
)

// Options configure Dial.
type Options struct {
	URL             string
	Headers         map[string]string // sent on every request (e.g. Authorization)
	MaxMessageBytes int
	Logger          *slog.Logger
	Client          *http.Client // http.DefaultClient's transport when nil
}

// Client is one session with a remote MCP server.
type Client struct {
	opts Options
	log  *slog.Logger
	hc   *http.Client
	out  chan item
	gone chan struct{} // closed when the session expired

	ctx    context.Context
	cancel context.CancelFunc
	sendMu sync.Mutex // keeps notifications and responses in order

	mu        sync.Mutex
	sessionID string
	version   string
	getOn     bool
	closed    bool
	expired   bool
	wg        sync.WaitGroup
}

type item struct {
	msg *jsonrpc.Message
	err error
}

// ErrSessionExpired ends Recv when the server no longer knows the session.
var ErrSessionExpired = errors.New("remote: the server no longer knows the session (it restarted or expired it)")

// Dial prepares a client; nothing is sent until the first message.
func Dial(opts Options) (*Client, error) {
	if !strings.HasPrefix(opts.URL, "http://") && !strings.HasPrefix(opts.URL, "https://") {
		return nil, fmt.Errorf("remote: url %q must be http:// or https://", opts.URL)
	}
	if opts.MaxMessageBytes <= 0 {
		opts.MaxMessageBytes = jsonrpc.DefaultMaxMessageBytes
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	hc := opts.Client
	if hc == nil {
		hc = &http.Client{}
	}
	ctx, cancel := context.WithCancel(context.Background())
	return &Client{opts: opts, log: opts.Logger, hc: hc, out: make(chan item, 64), gone: make(chan struct{}), ctx: ctx, cancel: cancel}, nil
}

// Send delivers one client message to the server.
func (c *Client) Send(m *jsonrpc.Message) error {
	if c.ctx.Err() != nil {
		return errors.New("remote: closed")
	}
	msg := m.Raw
	if m.Kind != jsonrpc.KindRequest {
		c.sendMu.Lock()
		defer c.sendMu.Unlock()
		c.post(m, msg)
		if m.Method == methods.NotificationInitialized {
			c.startGet()
		}
		return nil
	}
	if m.Method == methods.Initialize { // synchronous: later messages need the session id
		c.sendMu.Lock()
		defer c.sendMu.Unlock()
		c.post(m, msg)
		return nil
	}
	c.wg.Add(1)
	go func() {
		defer c.wg.Done()
		c.post(m, msg)
	}()
	return nil
}

// post sends one message and queues whatever comes back.
func (c *Client) post(m *jsonrpc.Message, body []byte) {
	req, err := http.NewRequestWithContext(c.ctx, http.MethodPost, c.opts.URL, bytes.NewReader(body))
	if err != nil {
		c.fail(m, err.Error())
		return
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	c.headers(req)
	modernHeaders(req, m)
	resp, err := c.hc.Do(req)
	var noToken interface {
		error
		UpstreamToken()
	}
	switch {
	case errors.As(err, &noToken): // the server was never asked: say so, not "unreachable"
		c.fail(m, "remote MCP server not called: no upstream token for it: "+noToken.Error())
		return
	case err != nil:
		c.fail(m, "remote MCP server unreachable: "+err.Error())
		return
	}
	defer resp.Body.Close()
	if sid := resp.Header.Get("Mcp-Session-Id"); sid != "" && m.Method == methods.Initialize {
		c.mu.Lock()
		c.sessionID = sid
		c.mu.Unlock()
	}
	switch {
	case resp.StatusCode == http.StatusAccepted || resp.StatusCode == http.StatusNoContent:
		return
	case resp.StatusCode >= 300:
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
		if m.Method != methods.Initialize && c.sessionLost(resp.StatusCode, b) {
			c.expire(resp.StatusCode)
			return
		}
		// A JSON-RPC error body for our id is the server's own answer: pass it on.
		if r, err := jsonrpc.Parse(bytes.TrimSpace(b)); err == nil && r.Kind == jsonrpc.KindResponse && m.Kind == jsonrpc.KindRequest && r.IDKey() == m.IDKey() {
			c.queue(r)
			return
		}
		c.fail(m, fmt.Sprintf("remote MCP server answered HTTP %d", resp.StatusCode))
		return
	}
	ct := strings.ToLower(resp.Header.Get("Content-Type"))
	if strings.HasPrefix(ct, "text/event-stream") {
		got := c.readSSE(resp.Body, m.ID, nil)
		if !got && m.Kind == jsonrpc.KindRequest {
			c.fail(m, "remote MCP server closed the stream before answering")
		}
		return
	}
	b, err := io.ReadAll(io.LimitReader(resp.Body, int64(c.opts.MaxMessageBytes)+1))
	if err != nil || len(b) > c.opts.MaxMessageBytes {
		c.fail(m, "remote MCP server sent an unreadable or oversized response")
		return
	}
	if len(bytes.TrimSpace(b)) > 0 {
		c.queueRaw(b)
	}
}

// sessionLost reports whether an HTTP error means the server no longer knows our
// session: 404 (MCP "Session Management"), or 400 whose body names a missing or
// uninitialized session (the TypeScript SDK after a restart).
func (c *Client) sessionLost(status int, body []byte) bool {
	c.mu.Lock()
	sid := c.sessionID
	c.mu.Unlock()
	if sid == "" {
		return false
	}
	if status == http.StatusNotFound {
		return true
	}
	low := strings.ToLower(string(body))
	return status == http.StatusBadRequest && (strings.Contains(low, "not initialized") || strings.Contains(low, "session"))
}

// expire ends the stream with ErrSessionExpired, once.
func (c *Client) expire(status int) {
	c.mu.Lock()
	if c.expired {
		c.mu.Unlock()
		return
	}
	c.expired = true
	c.mu.Unlock()
	c.log.Warn("remote MCP server no longer knows the session; a new session will be started", "status", status)
	close(c.gone)
}

// readSSE queues each event's data; it reports whether the response with id arrived.
// The server requests and notifications of a request's stream (id not nil) are
// related to that request.
func (c *Client) readSSE(body io.Reader, reqID json.RawMessage, lastID *string) bool {
	id := ""
	if reqID != nil {
		id = jsonrpc.IDKey(reqID)
	}
	br := bufio.NewReaderSize(body, 64<<10)
	var data bytes.Buffer
	got := false
	for {
		line, err := br.ReadString('\n')
		line = strings.TrimRight(line, "\r\n")
		switch {
		case line == "":
			if data.Len() > 0 {
				b := append([]byte(nil), data.Bytes()...)
				if m := c.queueRawRelated(b, reqID); m != nil && m.Kind == jsonrpc.KindResponse && m.IDKey() == id {
					got = true
				}
				data.Reset()
			}
		case strings.HasPrefix(line, "data:"):
			if data.Len() > 0 {
				data.WriteByte('\n')
			}
			data.WriteString(strings.TrimPrefix(strings.TrimPrefix(line, "data:"), " "))
			if data.Len() > c.opts.MaxMessageBytes {
				c.log.Warn("remote SSE event over the size limit dropped")
				data.Reset()
			}
		case strings.HasPrefix(line, "id:") && lastID != nil:
			*lastID = strings.TrimSpace(strings.TrimPrefix(line, "id:"))
		}
		if err != nil {
			return got
		}
	}
}

// startGet opens the GET stream for server-initiated messages, once.
func (c *Client) startGet() {
	c.mu.Lock()
	if c.getOn || c.sessionID == "" {
		c.mu.Unlock()
		return
	}
	c.getOn = true
	c.mu.Unlock()
	c.wg.Add(1)
	go func() {
		defer c.wg.Done()
		last, backoff := "", 200*time.Millisecond
		for c.ctx.Err() == nil {
			req, _ := http.NewRequestWithContext(c.ctx, http.MethodGet, c.opts.URL, nil)
			req.Header.Set("Accept", "text/event-stream")
			if last != "" {
				req.Header.Set("Last-Event-ID", last)
			}
			c.headers(req)
			resp, err := c.hc.Do(req)
			if err == nil && resp.StatusCode == http.StatusMethodNotAllowed {
				resp.Body.Close()
				return // the server offers no GET stream
			}
			if err == nil && resp.StatusCode >= 400 {
				b, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
				if c.sessionLost(resp.StatusCode, b) {
					resp.Body.Close()
					c.expire(resp.StatusCode)
					return
				}
			}
			if err == nil && resp.StatusCode == http.StatusOK {
				c.readSSE(resp.Body, nil, &last)
				resp.Body.Close()
				backoff = 200 * time.Millisecond
			} else if err == nil {
				resp.Body.Close()
			}
			select {
			case <-c.ctx.Done():
				return
			case <-time.After(backoff):
			}
			backoff = min(backoff*2, 30*time.Second)
		}
	}()
}

func (c *Client) headers(req *http.Request) {
	for k, v := range c.opts.Headers {
		req.Header.Set(k, v)
	}
	c.mu.Lock()
	if c.sessionID != "" {
		req.Header.Set("Mcp-Session-Id", c.sessionID)
	}
	if c.version != "" {
		req.Header.Set("Mcp-Protocol-Version", c.version)
	}
	c.mu.Unlock()
}

// modernHeaders sets the standard headers of a 2026-07-28 message (SEP-2243
// "Standard Request Headers"): MCP-Protocol-Version from its _meta envelope,
// Mcp-Method, and Mcp-Name from the params member its method names (the server's own
// name: a multiplexer has already taken off its prefix), as "=?base64?…?=" when it is
// not visible ASCII; a tools/call's Mcp-Param-* headers (jsonrpc.Message.ParamHeaders).
// Such a message carries no session, so Mcp-Session-Id goes.
func modernHeaders(req *http.Request, m *jsonrpc.Message) {
	e, ok := methods.EnvelopeOf(m.Params)
	if !ok || methods.RevisionOf(e.ProtocolVersion) != methods.Rev20260728 {
		return
	}
	req.Header.Del("Mcp-Session-Id")
	req.Header.Set("Mcp-Protocol-Version", e.ProtocolVersion)
	for k, v := range m.ParamHeaders { // a tools/call's x-mcp-header arguments, as the relay built them
		req.Header[k] = v
	}
	if m.Method == "" {
		return
	}
	req.Header.Set("Mcp-Method", headerValue(m.Method))
	row := methods.Of(m.Method)
	if row == nil || row.NameParam == "" {
		return
	}
	var p map[string]json.RawMessage
	var name string
	if json.Unmarshal(m.Params, &p) == nil && json.Unmarshal(p[row.NameParam], &name) == nil {
		req.Header.Set("Mcp-Name", headerValue(name))
	}
}

// headerValue is v as a header value (mcpparam.Encode).
func headerValue(v string) string { return mcpparam.Encode(v) }

// queueRaw parses one server message (compacted to one line when it is not) and
// queues it; it returns the message, or nil when it was dropped as malformed.
func (c *Client) queueRaw(b []byte) *jsonrpc.Message { return c.queueRawRelated(b, nil) }

// queueRawRelated is queueRaw for a message that came on the response stream of the
// request with id related (nil: none); a server request or notification is marked so.
func (c *Client) queueRawRelated(b []byte, related json.RawMessage) *jsonrpc.Message {
	b = bytes.TrimSpace(b)
	if bytes.ContainsAny(b, "\n\r") {
		var compact bytes.Buffer
		if json.Compact(&compact, b) == nil {
			b = compact.Bytes()
		}
	}
	m, err := jsonrpc.Parse(b)
	if err != nil {
		c.push(item{err: jsonrpc.NewDropError(m, err)})
		return nil
	}
	if related != nil && m.Kind != jsonrpc.KindResponse {
		m.Related = related
	}
	c.queue(m)
	return m
}

// queue hands a server message to Recv, noting the negotiated version.
func (c *Client) queue(m *jsonrpc.Message) {
	if m.Kind == jsonrpc.KindResponse && m.Result != nil {
		var r struct {
			ProtocolVersion string `json:"protocolVersion"`
		}
		if json.Unmarshal(m.Result, &r) == nil && r.ProtocolVersion != "" {
			c.mu.Lock()
			if c.version == "" {
				c.version = r.ProtocolVersion
			}
			c.mu.Unlock()
		}
	}
	c.push(item{msg: m})
}

func (c *Client) push(it item) {
	select {
	case c.out <- it:
	case <-c.ctx.Done():
	case <-c.gone:
	}
}

func (c *Client) fail(m *jsonrpc.Message, why string) {
	if c.ctx.Err() != nil {
		return
	}
	c.log.Warn("remote MCP request failed", "method", m.Method, "err", why)
	if m.Kind == jsonrpc.KindRequest {
		c.queue(jsonrpc.NewErrorResponse(m.ID, methods.CodeUpstreamUnavailable, "mcpgate: "+why))
	}
}

// Recv returns the next server message, a *jsonrpc.DropError for a malformed one,
// ErrSessionExpired once the server lost the session, or io.EOF after Close.
func (c *Client) Recv() (*jsonrpc.Message, error) {
	select {
	case it := <-c.out:
		return it.msg, it.err
	case <-c.gone:
		return nil, ErrSessionExpired
	case <-c.ctx.Done():
		return nil, io.EOF
	}
}

// Close ends the session (DELETE) and stops every stream.
func (c *Client) Close(ctx context.Context, _ time.Duration) error {
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return nil
	}
	c.closed = true
	sid := c.sessionID
	c.mu.Unlock()
	if sid != "" {
		req, _ := http.NewRequestWithContext(ctx, http.MethodDelete, c.opts.URL, nil)
		c.headers(req)
		if resp, err := c.hc.Do(req); err == nil {
			resp.Body.Close()
		}
	}
	c.cancel()
	c.wg.Wait()
	return nil
}
