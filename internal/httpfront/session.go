package httpfront

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/mcpgate/mcpgate/internal/jsonrpc"
	"github.com/mcpgate/mcpgate/internal/jsonscan"
	"github.com/mcpgate/mcpgate/internal/methods"
	"github.com/mcpgate/mcpgate/internal/oauth"
)

var errSessionEnded = errors.New("httpfront: session ended")

// errIDInUse is a request under an id equal to one in flight in its session.
var errIDInUse = errors.New("is already in flight in this session")

// keepFinished is how many finished request streams a session keeps for resumption,
// within Options.ReplayBytes.
const keepFinished = 32

// session is one MCP session: its backend's pipes and its streams.
type session struct {
	f   *Front
	id  string
	key string // the caller identity key it is bound to
	// grant is the digest of the user it was opened for (grant): a request whose
	// token grants anything else may not use it
	grant string
	// subject holds the OAuth access token its caller presented last, for the
	// exchange of its url servers' tokens (docs/http.md#token-exchange)
	subject *oauth.SubjectToken
	// modern: a caller's backend of 2026-07-28 requests, never named to the client
	modern bool

	in chan *jsonrpc.Message // client messages for the backend

	mu         sync.Mutex
	streams    map[string]*stream // by stream id, for Last-Event-ID
	waiters    map[string]*stream // by request id key
	progress   map[string]*stream // by progressToken key
	open       []*stream          // request streams still waiting for their response
	finished   []*stream          // recently finished request streams (bounded)
	finBytes   int                // bytes of the events of finished
	standalone *stream            // the GET stream
	seq        int
	last       time.Time
	ended      bool
	done       chan struct{}
}

// stream is one SSE stream: a request's response stream or the standalone GET stream.
type stream struct {
	id     string
	json   bool // the POST asked for application/json: intermediate messages go to GET
	events []event
	bytes  int    // sum of len(data) over events
	next   uint64 // seq of the next event; seqs start at 1
	final  bool   // the response is in events: the stream ends once it is sent
	notify chan struct{}
	owner  uint64 // generation of the connection serving it; 0 when none
	reqID  string // the request id key, for request streams
	// clientID, when set, is the id the client gave the request (a 2026-07-28 one,
	// forwarded under the front's own id); its response gets it back
	clientID json.RawMessage
	method   string // the request's method, for request streams
	// taskID is the params.taskId of a request for a task (a row routed ByTask:
	// tasks/get, tasks/cancel, tasks/update), as the client holds it; "" otherwise.
	taskID  string
	created time.Time
}

type event struct {
	seq  uint64
	data []byte
}

func newSession(f *Front, id string, who Identity) *session {
	s := &session{
		f: f, id: id, key: who.Key, grant: grant(who.User),
		streams:  map[string]*stream{},
		waiters:  map[string]*stream{},
		progress: map[string]*stream{},
		last:     time.Now(),
		done:     make(chan struct{}),
	}
	s.in = make(chan *jsonrpc.Message)
	s.standalone = s.newStreamLocked(false)
	return s
}

func (s *session) newStreamLocked(jsonMode bool) *stream {
	s.seq++
	st := &stream{id: "s" + strconv.Itoa(s.seq), json: jsonMode, next: 1, notify: make(chan struct{}), created: time.Now()}
	s.streams[st.id] = st
	return st
}

// send hands one client message to the backend; it waits until the backend takes it.
func (s *session) send(msg *jsonrpc.Message) error {
	select {
	case <-s.done:
		return errSessionEnded
	default:
	}
	select {
	case s.in <- msg:
		return nil
	case <-s.done:
		return errSessionEnded
	}
}

// Recv is the backend's side of send (jsonrpc.Conn): the next client message, or
// io.EOF once the session ended.
func (s *session) Recv() (*jsonrpc.Message, error) {
	select {
	case m := <-s.in:
		return m, nil
	case <-s.done:
		return nil, io.EOF
	}
}

// Send is the backend's output (jsonrpc.Conn): each server message goes to its stream.
func (s *session) Send(msg *jsonrpc.Message) error {
	s.deliver(msg)
	return nil
}

func (s *session) touch() {
	s.mu.Lock()
	s.last = time.Now()
	s.mu.Unlock()
}

func (s *session) idle(limit time.Duration) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.open) > 0 || s.standalone.owner != 0 {
		return false
	}
	return time.Since(s.last) > limit
}

// end ends the backend's input; the backend then ends and the session is removed.
func (s *session) end(reason string) {
	s.mu.Lock()
	if s.ended {
		s.mu.Unlock()
		return
	}
	s.ended = true
	close(s.done)
	s.mu.Unlock()
	s.f.log.Debug("ending session", "session", s.id, "reason", reason)
}

// openRequest registers a request's stream before the request reaches the backend.
func (s *session) openRequest(msg *jsonrpc.Message, jsonMode bool) (*stream, error) {
	key := msg.IDKey()
	var p struct {
		Meta struct {
			ProgressToken json.RawMessage `json:"progressToken"`
		} `json:"_meta"`
		TaskID string `json:"taskId"`
	}
	_ = json.Unmarshal(msg.Params, &p)
	if m := methods.Of(msg.Method); m == nil || m.Route != methods.ByTask {
		p.TaskID = ""
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.ended {
		return nil, errSessionEnded
	}
	if _, dup := s.waiters[key]; dup {
		return nil, fmt.Errorf("request id %s %w", msg.ID, errIDInUse)
	}
	st := s.newStreamLocked(jsonMode)
	st.reqID, st.method, st.taskID = key, msg.Method, p.TaskID
	s.waiters[key] = st
	if len(p.Meta.ProgressToken) > 0 {
		s.progress[jsonrpc.IDKey(p.Meta.ProgressToken)] = st
	}
	s.open = append(s.open, st)
	return st, nil
}

// dropRequest forgets a request that never reached the backend.
func (s *session) dropRequest(st *stream, msg *jsonrpc.Message) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.finishLocked(st)
}

// finishLocked retires a request stream: no more routing to it. An SSE stream stays
// resumable among the last keepFinished streams while their events fit in
// ReplayBytes, oldest dropped first; a JSON response is never resumed. A connection
// serving a dropped stream still sends it: only the resumption copy goes.
func (s *session) finishLocked(st *stream) {
	delete(s.waiters, st.reqID)
	for k, v := range s.progress {
		if v == st {
			delete(s.progress, k)
		}
	}
	for i, o := range s.open {
		if o == st {
			s.open = append(s.open[:i], s.open[i+1:]...)
			break
		}
	}
	if st.json {
		delete(s.streams, st.id)
		return
	}
	s.finished = append(s.finished, st)
	s.finBytes += st.bytes
	for len(s.finished) > 0 && (len(s.finished) > keepFinished || s.finBytes > s.f.opts.ReplayBytes) {
		old := s.finished[0]
		s.finished[0] = nil
		s.finished = s.finished[1:]
		s.finBytes -= old.bytes
		delete(s.streams, old.id)
	}
}

// appendLocked adds an event to a stream and wakes its connection.
// A stream keeps at most ReplayEvents events and, the newest apart, ReplayBytes bytes.
func (s *session) appendLocked(st *stream, data []byte) {
	st.events = append(st.events, event{seq: st.next, data: data})
	st.bytes += len(data)
	st.next++
	dropped := 0
	for len(st.events)-dropped > 1 && (len(st.events)-dropped > s.f.opts.ReplayEvents || st.bytes > s.f.opts.ReplayBytes) {
		st.bytes -= len(st.events[dropped].data)
		dropped++
	}
	if dropped > 0 {
		if st == s.standalone && st.owner == 0 {
			s.f.log.Warn("no GET stream is open; dropping old server messages", "session", s.id, "dropped", dropped)
		}
		st.events = append(st.events[:0:0], st.events[dropped:]...)
	}
	close(st.notify)
	st.notify = make(chan struct{})
}

func (s *session) deliver(msg *jsonrpc.Message) {
	s.mu.Lock()
	defer s.mu.Unlock()
	switch msg.Kind {
	case jsonrpc.KindResponse:
		st := s.waiters[msg.IDKey()]
		if st == nil {
			s.f.log.Debug("response for no waiting request dropped", "session", s.id, "id", msg.IDKey())
			return
		}
		raw := msg.Raw
		if st.clientID != nil {
			raw = subscriptionMeta(msg.WithID(st.clientID), st.clientID).Raw
		}
		s.appendLocked(st, raw)
		st.final = true
		s.finishLocked(st)
		return
	case jsonrpc.KindNotification:
		if st := s.subscriptionLocked(msg); st != nil { // a 2026-07-28 subscriptions/listen stream
			s.appendLocked(st, subscriptionMeta(msg, st.clientID).Raw)
			return
		}
		if st := s.taskStreamLocked(msg); st != nil {
			s.appendLocked(st, msg.Raw)
			return
		}
		if msg.Method == methods.NotificationProgress {
			var p struct {
				Token json.RawMessage `json:"progressToken"`
			}
			_ = json.Unmarshal(msg.Params, &p)
			if st := s.progress[jsonrpc.IDKey(p.Token)]; st != nil && !st.json {
				s.appendLocked(st, msg.Raw)
				return
			}
		}
		if msg.Method == methods.NotificationMessage || msg.Method == methods.NotificationProgress {
			if st := s.causeLocked(msg); st != nil {
				s.appendLocked(st, msg.Raw)
				return
			}
		}
	case jsonrpc.KindRequest: // sampling, elicitation, roots, ping
		if st := s.causeLocked(msg); st != nil {
			s.appendLocked(st, msg.Raw)
			return
		}
	}
	s.appendLocked(s.standalone, msg.Raw)
}

// subscriptionLocked is the stream of the 2026-07-28 subscriptions/listen request a
// notification names in _meta["io.modelcontextprotocol/subscriptionId"] (the
// request's id), or nil.
func (s *session) subscriptionLocked(msg *jsonrpc.Message) *stream {
	id := subscriptionID(msg.Params)
	if id == nil {
		return nil
	}
	if st := s.waiters[jsonrpc.IDKey(id)]; st != nil && st.clientID != nil && !st.json {
		return st
	}
	return nil
}

// taskStreamLocked is the stream of an in-flight 2026-07-28 request (SSE) for the
// task a task status notification names (notifications/tasks,
// notifications/tasks/status: its taskId, as the client holds it), the oldest when
// several are, or nil. A 2026-07-28 client has no GET stream: a task's status reaches
// it on a request for that task (tasks/get, tasks/cancel, tasks/update).
func (s *session) taskStreamLocked(msg *jsonrpc.Message) *stream {
	m := methods.Of(msg.Method)
	if m == nil || m.Direction != methods.ServerNotification || !slices.ContainsFunc(m.Names, func(n methods.Name) bool {
		return len(n.Path) == 1 && n.Path[0] == "taskId"
	}) {
		return nil
	}
	var p struct {
		TaskID string `json:"taskId"`
	}
	if json.Unmarshal(msg.Params, &p) != nil || p.TaskID == "" {
		return nil
	}
	for _, st := range s.open {
		if st.clientID != nil && !st.json && st.taskID == p.TaskID {
			return st
		}
	}
	return nil
}

// subscriptionID is the subscriptionId member of a message's params._meta (or, for a
// response, of its result's), or nil.
func subscriptionID(doc json.RawMessage) json.RawMessage {
	if !jsonscan.MayHold(doc, subscriptionKey) {
		return nil
	}
	var p struct {
		Meta map[string]json.RawMessage `json:"_meta"`
	}
	if json.Unmarshal(doc, &p) != nil {
		return nil
	}
	return p.Meta[subscriptionKey]
}

const subscriptionKey = "io.modelcontextprotocol/subscriptionId"

// subscriptionMeta gives a message of a listen stream the client's own request id as
// its subscriptionId (params._meta, or result._meta for the closing response); any
// other message comes back as it is.
func subscriptionMeta(msg *jsonrpc.Message, clientID json.RawMessage) *jsonrpc.Message {
	doc := msg.Params
	if msg.Kind == jsonrpc.KindResponse {
		doc = msg.Result
	}
	if subscriptionID(doc) == nil {
		return msg
	}
	var d map[string]json.RawMessage
	var meta map[string]json.RawMessage
	if json.Unmarshal(doc, &d) != nil || json.Unmarshal(d["_meta"], &meta) != nil {
		return msg
	}
	meta[subscriptionKey] = clientID
	d["_meta"], _ = jsonrpc.Marshal(meta)
	b, _ := jsonrpc.Marshal(d)
	if msg.Kind == jsonrpc.KindResponse {
		return msg.WithResult(b)
	}
	return msg.WithParams(b)
}

// causeLocked picks the request stream a server request or log message belongs to
// (docs/http.md#where-server-messages-go), first match wins:
//  1. the request the message names as related (an HTTP upstream sent it on that
//     request's stream);
//  2. the request whose progressToken the message carries in params._meta;
//  3. the only tools/call in flight on an SSE stream;
//  4. otherwise relatedLocked's guess; nil means the GET stream.
func (s *session) causeLocked(msg *jsonrpc.Message) *stream {
	if msg.Related != nil {
		if st := s.waiters[jsonrpc.IDKey(msg.Related)]; st != nil && !st.json {
			return st
		}
	}
	var p struct {
		Meta struct {
			ProgressToken json.RawMessage `json:"progressToken"`
		} `json:"_meta"`
	}
	if json.Unmarshal(msg.Params, &p) == nil && len(p.Meta.ProgressToken) > 0 {
		if st := s.progress[jsonrpc.IDKey(p.Meta.ProgressToken)]; st != nil && !st.json {
			return st
		}
	}
	var call *stream
	calls := 0
	for _, st := range s.open {
		if !st.json && st.method == methods.ToolsCall {
			calls++
			call = st
		}
	}
	if calls == 1 {
		return call
	}
	return s.relatedLocked()
}

// relatedLocked picks the stream for a server message nothing ties to a request, the
// oldest in-flight SSE request stream of the first kind that has one: a tools/call with
// a live connection, any request with one, a tools/call, any request; nil means the
// GET stream.
func (s *session) relatedLocked() *stream {
	var pick [4]*stream
	for _, st := range s.open {
		if st.json {
			continue
		}
		rank := 3
		switch {
		case st.owner != 0 && st.method == methods.ToolsCall:
			rank = 0
		case st.owner != 0:
			rank = 1
		case st.method == methods.ToolsCall:
			rank = 2
		}
		if pick[rank] == nil {
			pick[rank] = st
		}
	}
	for _, st := range pick {
		if st != nil {
			return st
		}
	}
	return nil
}

// resume finds the stream and position named by a Last-Event-ID.
func (s *session) resume(last string) (*stream, uint64, bool) {
	i := strings.LastIndexByte(last, '/')
	if i < 0 {
		return nil, 0, false
	}
	seq, err := strconv.ParseUint(last[i+1:], 10, 64)
	if err != nil {
		return nil, 0, false
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	st := s.streams[last[:i]]
	return st, seq, st != nil
}

var connGen struct {
	sync.Mutex
	n uint64
}

func nextGen() uint64 {
	connGen.Lock()
	defer connGen.Unlock()
	connGen.n++
	return connGen.n
}

// serveSSE writes a stream's events after seq `after` until its response is sent,
// the client goes away, a newer connection takes the stream over, or the session
// ends. The standalone stream also ends when the gateway drains.
func (s *session) serveSSE(w http.ResponseWriter, r *http.Request, st *stream, after uint64) {
	fl, _ := w.(http.Flusher)
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-cache, no-transform")
	h.Set("X-Accel-Buffering", "no")
	if s.f.draining.Load() {
		h.Set("Connection", "close")
	}
	w.WriteHeader(http.StatusOK)
	if fl != nil {
		fl.Flush()
	}
	gen := nextGen()
	s.mu.Lock()
	st.owner = gen
	if after == 0 && st == s.standalone && len(st.events) > 0 {
		// A fresh GET gets what no connection has taken yet: replay from the start of
		// the buffer (messages queued while no GET stream was open).
		after = st.events[0].seq - 1
	}
	s.mu.Unlock()
	defer func() {
		s.mu.Lock()
		if st.owner == gen {
			st.owner = 0
		}
		s.mu.Unlock()
	}()
	var drain <-chan struct{}
	if st == s.standalone {
		drain = s.f.drainCh
	}
	var buf []byte
	ending := false
	for {
		s.mu.Lock()
		if st.owner != gen {
			s.mu.Unlock()
			return
		}
		buf = buf[:0]
		for _, e := range st.events {
			if e.seq <= after {
				continue
			}
			buf = append(buf, "id: "...)
			buf = append(buf, st.id...)
			buf = append(buf, '/')
			buf = strconv.AppendUint(buf, e.seq, 10)
			buf = append(buf, "\nevent: message\ndata: "...)
			buf = append(buf, e.data...)
			buf = append(buf, "\n\n"...)
			after = e.seq
		}
		complete := st.final && after >= st.next-1
		ch := st.notify
		if st == s.standalone && len(buf) > 0 {
			// Delivered: a later fresh GET does not get these again.
			n := 0
			for n < len(st.events) && st.events[n].seq <= after {
				st.bytes -= len(st.events[n].data)
				n++
			}
			st.events = append(st.events[:0:0], st.events[n:]...)
		}
		s.mu.Unlock()
		if len(buf) > 0 {
			if _, err := w.Write(buf); err != nil {
				return
			}
			if fl != nil {
				fl.Flush()
			}
		}
		if complete {
			return
		}
		if ending {
			if st != s.standalone {
				// The backend answers nothing more; say so instead of hanging.
				_, _ = fmt.Fprintf(w, "event: message\ndata: %s\n\n", jsonrpc.ErrorResponse(json.RawMessage(st.reqID), methods.CodeUpstreamUnavailable, "mcpgate: the session ended before the request was answered"))
			}
			return
		}
		select {
		case <-ch:
		case <-r.Context().Done():
			return
		case <-s.done:
			ending = true // flush what is there, then end
		case <-drain:
			return
		}
	}
}

// serveJSON waits for a request's response and sends it as application/json.
func (s *session) serveJSON(w http.ResponseWriter, r *http.Request, st *stream) {
	for {
		s.mu.Lock()
		var resp []byte
		if st.final && len(st.events) > 0 {
			resp = st.events[len(st.events)-1].data
		}
		ch := st.notify
		s.mu.Unlock()
		if resp != nil {
			if s.f.draining.Load() {
				w.Header().Set("Connection", "close")
			}
			w.Header().Set("Content-Type", "application/json")
			status := http.StatusOK
			if st.clientID != nil { // a 2026-07-28 request
				status = modernStatus(resp)
			}
			w.WriteHeader(status)
			_, _ = w.Write(resp)
			return
		}
		select {
		case <-ch:
		case <-r.Context().Done():
			return
		case <-s.done:
			httpError(w, http.StatusBadGateway, json.RawMessage(st.reqID), methods.CodeUpstreamUnavailable, "mcpgate: the session ended before the request was answered")
			return
		}
	}
}
