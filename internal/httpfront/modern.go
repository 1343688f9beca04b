package httpfront

import (
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/mcpgate/mcpgate/internal/bound"
	"github.com/mcpgate/mcpgate/internal/jsonrpc"
	"github.com/mcpgate/mcpgate/internal/mcpparam"
	"github.com/mcpgate/mcpgate/internal/methods"
)

// modernVersions are the 2026-era revisions the front serves without a session.
var modernVersions = []string{methods.Version20260728}

// isModern reports whether a POST without Mcp-Session-Id is a 2026-07-28 message:
// its body carries the per-request _meta envelope, it is server/discover, or its
// MCP-Protocol-Version header names a 2026-era revision (docs/http.md#modern).
func isModern(r *http.Request, msg *jsonrpc.Message) bool {
	if v := r.Header.Get("Mcp-Protocol-Version"); v != "" {
		return methods.RevisionOf(v) == methods.Rev20260728
	}
	if msg.Method == methods.ServerDiscover {
		return true
	}
	e, ok := methods.EnvelopeOf(msg.Params)
	return ok && methods.RevisionOf(e.ProtocolVersion) == methods.Rev20260728
}

// modernSlot is the backend that serves one caller's 2026-07-28 requests: a session
// the front never names to the client (no Mcp-Session-Id), started on the caller's
// first modern request and ended when idle like any other.
type modernSlot struct {
	once sync.Once
	s    *session
	err  error
}

var modernSeq atomic.Uint64

// modern serves one 2026-07-28 POST: no session, the headers checked against the
// body, the request answered on its own SSE or JSON response. Its id is the front's
// own while it is in flight, so requests of different clients of one caller never
// collide; the client gets its own id back.
func (f *Front) modern(w http.ResponseWriter, r *http.Request, id Identity, msg *jsonrpc.Message, sse bool) {
	if msg.Kind != jsonrpc.KindRequest {
		// notifications (a cancellation) and responses: nothing waits for them; a
		// 2026-07-28 server sends no requests to answer
		w.WriteHeader(http.StatusAccepted)
		return
	}
	// What the backend gets is a whole 2026-07-28 request: a server that serves both
	// revisions picks one by the first message it reads, for every later caller.
	e, ok := methods.EnvelopeOf(msg.Params)
	if !ok || len(e.ClientCapabilities) == 0 || e.ClientCapabilities[0] != '{' {
		httpError(w, http.StatusBadRequest, msg.ID, methods.CodeInvalidParams, "mcpgate: a 2026-07-28 request needs the _meta envelope "+
			"(io.modelcontextprotocol/protocolVersion and io.modelcontextprotocol/clientCapabilities)")
		return
	}
	// the headers first: a body whose version differs from its header is a mismatch
	if code, text := checkHeaders(r, msg, e.ProtocolVersion); code != 0 {
		httpError(w, http.StatusBadRequest, msg.ID, code, "mcpgate: "+text)
		return
	}
	if methods.RevisionOf(e.ProtocolVersion) != methods.Rev20260728 || e.ProtocolVersion != methods.Version20260728 {
		b, _ := json.Marshal(map[string]any{"supported": modernVersions, "requested": bound.Truncate(e.ProtocolVersion, bound.Header)})
		writeErrorData(w, http.StatusBadRequest, msg.ID, methods.CodeUnsupportedProtocolVersion, "mcpgate: unsupported protocol version", b)
		return
	}
	if methods.In(msg.Method, methods.Rev20260728) == nil { // initialize, ping, logging/setLevel, unknown
		httpError(w, http.StatusNotFound, msg.ID, methods.CodeMethodNotFound, fmt.Sprintf("mcpgate: method %q is not a 2026-07-28 method", bound.Truncate(msg.Method, bound.Header)))
		return
	}
	s, err := f.modernSession(id)
	if err != nil {
		status := http.StatusBadGateway
		if errors.Is(err, errCallerSessions) {
			status = http.StatusTooManyRequests
		}
		httpError(w, status, msg.ID, methods.CodeUpstreamUnavailable, "mcpgate: "+err.Error())
		return
	}
	s.subject.Set(id.token)
	s.touch()
	inner, _ := json.Marshal("m" + strconv.FormatUint(modernSeq.Add(1), 10))
	fwd := msg.WithID(inner)
	if msg.Method == methods.ToolsCall {
		fwd.ParamHeaders = mcpparam.Of(r.Header) // checked where the tool's listing is known
	}
	st, err := s.openRequest(fwd, !sse)
	if err != nil {
		httpError(w, http.StatusServiceUnavailable, msg.ID, methods.CodeUpstreamUnavailable, "mcpgate: "+err.Error())
		return
	}
	st.clientID = msg.ID
	if err := s.send(fwd); err != nil {
		s.dropRequest(st, fwd)
		httpError(w, http.StatusServiceUnavailable, msg.ID, methods.CodeUpstreamUnavailable, "mcpgate: the upstream is gone; retry")
		return
	}
	if sse && !s.answeredFirst(w, r, st) {
		s.serveSSE(w, r, st, 0)
	} else if !sse {
		s.serveJSON(w, r, st)
	}
	s.mu.Lock()
	open := !st.final
	if open {
		s.finishLocked(st)
	}
	s.mu.Unlock()
	if open { // the client left before the answer (a subscriptions/listen stream closed): the server stops
		_ = s.send(jsonrpc.NewNotification(methods.NotificationCancelled, map[string]any{"requestId": inner, "reason": "the client closed the stream"}))
	}
}

// modernSession returns the backend of the caller's 2026-07-28 requests made with
// tokens that grant what id.User holds, starting it once: requests whose tokens grant
// other scopes, another client or other roles get a backend of their own, since a
// backend judges every request as the user it was started for
// (docs/decisions.md#principal-per-token). It counts toward neither session cap, but
// one caller holds at most MaxSessionsPerCaller such backends at once (past it,
// errCallerSessions: HTTP 429).
func (f *Front) modernSession(id Identity) (*session, error) {
	slotKey := id.Key + "\x00" + grant(id.User)
	f.mu.Lock()
	if f.modernBy == nil {
		f.modernBy = map[string]*modernSlot{}
	}
	slot := f.modernBy[slotKey]
	if slot != nil && slot.ended() {
		slot = nil
	}
	if slot == nil {
		n := 0
		for k, o := range f.modernBy {
			if o.ended() {
				delete(f.modernBy, k)
			} else if strings.HasPrefix(k, id.Key+"\x00") {
				n++
			}
		}
		if n >= f.opts.MaxSessionsPerCaller {
			f.mu.Unlock()
			f.log.Warn("2026-07-28 request refused: the caller holds as many backends as it may (429)", "user_id", id.User.UserID,
				"caller_id", id.User.CallerID, "max_sessions_per_caller", f.opts.MaxSessionsPerCaller)
			return nil, errCallerSessions
		}
		slot = &modernSlot{}
		f.modernBy[slotKey] = slot
	}
	f.mu.Unlock()
	slot.once.Do(func() {
		s, err := f.startSession(id, true)
		f.mu.Lock() // ended reads slot.s under f.mu
		slot.s, slot.err = s, err
		f.mu.Unlock()
	})
	if slot.err != nil {
		f.mu.Lock()
		if f.modernBy[slotKey] == slot {
			delete(f.modernBy, slotKey)
		}
		f.mu.Unlock()
	}
	return slot.s, slot.err
}

// ended reports whether the slot's backend started and has ended since; f.mu is held.
func (m *modernSlot) ended() bool {
	if m.s == nil {
		return false
	}
	m.s.mu.Lock()
	defer m.s.mu.Unlock()
	return m.s.ended
}

// checkHeaders checks the standard headers of a 2026-07-28 request against its body
// (SEP-2243 "Standard Request Headers"): MCP-Protocol-Version must equal the
// envelope's version and Mcp-Method the method; Mcp-Name, required where the row
// names a member (params.name, params.uri or params.taskId) that is a string, must
// equal it. A value of the form "=?base64?…?=" is decoded first.
func checkHeaders(r *http.Request, msg *jsonrpc.Message, version string) (int, string) {
	if h := r.Header.Values("Mcp-Protocol-Version"); len(h) != 1 || strings.Trim(h[0], " \t") != version {
		return methods.CodeHeaderMismatch, "the MCP-Protocol-Version header is missing or does not match _meta's protocolVersion"
	}
	if h := r.Header.Values("Mcp-Method"); len(h) != 1 || decodeHeader(h[0]) != msg.Method {
		return methods.CodeHeaderMismatch, "the Mcp-Method header is missing or does not match the request's method"
	}
	m := methods.Of(msg.Method)
	if m == nil || m.NameParam == "" {
		return 0, ""
	}
	var p map[string]json.RawMessage
	var name string
	_ = json.Unmarshal(msg.Params, &p)
	named := json.Unmarshal(p[m.NameParam], &name) == nil
	if !named {
		return 0, "" // the body is judged further on
	}
	if h := r.Header.Values("Mcp-Name"); len(h) != 1 || decodeHeader(h[0]) != name {
		return methods.CodeHeaderMismatch, fmt.Sprintf("the Mcp-Name header is missing or does not match params.%s", m.NameParam)
	}
	return 0, ""
}

// sessionHeaders checks a request of a 2025-11-25 session (one with Mcp-Session-Id)
// for 2026-07-28's marks, which a downgrade would carry: a 2026-era
// MCP-Protocol-Version header or _meta protocolVersion is answered -32022
// (UnsupportedProtocolVersion), as a stateful reference server answers a 2026-07-28
// request; an Mcp-Method or Mcp-Name header that disagrees with the body is
// answered -32020 (HeaderMismatch), so that nothing that routes by the headers is
// shown another request than the one that runs. Headers that agree are ignored, as
// the reference server ignores them below 2026-07-28.
func sessionHeaders(r *http.Request, msg *jsonrpc.Message) (int, string) {
	if msg.Kind != jsonrpc.KindRequest {
		return 0, ""
	}
	if methods.RevisionOf(r.Header.Get("Mcp-Protocol-Version")) == methods.Rev20260728 {
		return methods.CodeUnsupportedProtocolVersion, "a session (Mcp-Session-Id) serves 2025-11-25; a 2026-07-28 request carries no Mcp-Session-Id"
	}
	if e, ok := methods.EnvelopeOf(msg.Params); ok && methods.RevisionOf(e.ProtocolVersion) == methods.Rev20260728 {
		return methods.CodeUnsupportedProtocolVersion, "a session (Mcp-Session-Id) serves 2025-11-25; a request whose _meta names 2026-07-28 carries no Mcp-Session-Id"
	}
	if h := r.Header.Values("Mcp-Method"); len(h) > 1 || len(h) == 1 && decodeHeader(h[0]) != msg.Method {
		return methods.CodeHeaderMismatch, "the Mcp-Method header does not match the request's method"
	}
	h := r.Header.Values("Mcp-Name")
	if len(h) == 0 {
		return 0, ""
	}
	m := methods.Of(msg.Method)
	var p map[string]json.RawMessage
	var name string
	_ = json.Unmarshal(msg.Params, &p)
	if len(h) > 1 || m == nil || m.NameParam == "" || json.Unmarshal(p[m.NameParam], &name) != nil || decodeHeader(h[0]) != name {
		return methods.CodeHeaderMismatch, "the Mcp-Name header does not match the request's name"
	}
	return 0, ""
}

// decodeHeader decodes a header value sent as "=?base64?<base64>?=" (a value that is
// not visible ASCII); any other value comes back trimmed.
func decodeHeader(v string) string {
	v = strings.Trim(v, " \t")
	if inner, ok := strings.CutPrefix(v, "=?base64?"); ok {
		if inner, ok = strings.CutSuffix(inner, "?="); ok {
			if b, err := base64.StdEncoding.DecodeString(inner); err == nil {
				return string(b)
			}
		}
	}
	return v
}

// writeErrorData writes a JSON-RPC error with data.
func writeErrorData(w http.ResponseWriter, status int, id json.RawMessage, code int, message string, data json.RawMessage) {
	b, _ := jsonrpc.Marshal(jsonrpc.ErrorObject{Code: code, Message: message, Data: data})
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = w.Write(jsonrpc.ErrorResponseObjectRaw(id, b))
}

// modernStatus is the HTTP status of a 2026-07-28 response: 400 Bad Request for the
// revision's own errors (-32020 to -32022, whose HTTP status the spec fixes), 200 for
// any other answer.
func modernStatus(resp []byte) int {
	var m struct {
		Error *struct {
			Code int `json:"code"`
		} `json:"error"`
	}
	if json.Unmarshal(resp, &m) == nil && m.Error != nil &&
		m.Error.Code <= methods.CodeHeaderMismatch && m.Error.Code >= methods.CodeUnsupportedProtocolVersion {
		return http.StatusBadRequest
	}
	return http.StatusOK
}

// answeredFirst waits for the first message of a 2026-07-28 request's stream before
// the SSE headers go out: when that message is a final error whose status is not 200
// (modernStatus), it is written as a JSON response with that status and answeredFirst
// reports true; otherwise the stream is served as SSE by the caller.
func (s *session) answeredFirst(w http.ResponseWriter, r *http.Request, st *stream) bool {
	for {
		s.mu.Lock()
		n, final := len(st.events), st.final
		var resp []byte
		if n > 0 {
			resp = st.events[n-1].data
		}
		ch := st.notify
		s.mu.Unlock()
		if n > 0 {
			if n != 1 || !final || modernStatus(resp) == http.StatusOK {
				return false
			}
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(modernStatus(resp))
			_, _ = w.Write(resp)
			return true
		}
		select {
		case <-ch:
		case <-r.Context().Done():
			return false
		case <-s.done:
			return false
		}
	}
}
