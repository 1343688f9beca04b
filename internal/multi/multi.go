// Package multi puts several MCP servers behind one MCP session: a Mux is an
// upstream.Conn that the relay talks to as if it were one server, so the pipeline
// stays unchanged and ctx.tool is the name the client sees
// (docs/decisions.md#tool-names, docs/servers.md).
//
// Names: tools and prompts are exposed as "<server>_<name>"; resource URIs and URI
// templates as "<server>+<uri>" (the server name joined to the URI's scheme, so
// "demo://x" from server "everything" reads "everything+demo://x", still a URI).
// Resource URIs are namespaced wherever a server writes them: listings,
// resources/read contents, resource_link and embedded resources in tool results and
// prompts, and notifications/resources/updated. Every routed request is routed by its
// name or URI alone (Route), so a URI the client built from a template reaches its
// server without a listing.
//
// initialize goes to every server and the answers are merged; tools/list,
// prompts/list, resources/list and resources/templates/list are merged over every page
// of every server that offers them and returned as one page; a server that is
// restarting is waited for briefly (ListWait) and otherwise left out, and its
// list_changed notifications follow when it is back. Server-to-client requests
// (sampling, elicitation, roots) get ids of the mux's own namespace (jsonrpc.OwnID "mux-") so
// that two servers' ids never collide, and the client's answer goes back to the server
// that asked.
//
// The mux keeps no table of client requests: client ids go to servers unchanged, each
// message from a server carries the server's name in Message.Upstream, and a lost
// connection is reported as a *jsonrpc.ResetError naming the server, so the relay
// (which owns the pending requests) fails exactly those that went there. The only
// requests the mux waits for are its own (initialize and listings fanned out to every
// server); a 2026-07-28 subscriptions/listen is held by the mux over one listen per
// server (listen.go).
package multi

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"regexp"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/mcpgate/mcpgate/internal/jsonrpc"
	"github.com/mcpgate/mcpgate/internal/methods"
	"github.com/mcpgate/mcpgate/internal/upstream"
)

// Conn is one server connection: a stdio process, a remote session, or a supervisor.
type Conn = upstream.Conn

// Server is one named upstream.
type Server struct {
	Name string
	Conn Conn
}

var nameRE = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9-]*$`)

// ValidName checks a server name used as a prefix: letters, digits and '-', so that
// "<server>_<tool>" splits at the first '_' and "<server>+<uri>" at the first '+'.
func ValidName(name string) error {
	if !nameRE.MatchString(name) {
		return fmt.Errorf("server name %q: with several servers, names are tool prefixes and may hold only letters, digits and '-'", name)
	}
	return nil
}

// Options configure a Mux.
type Options struct {
	Logger *slog.Logger
	// ListWait is how long a listing waits for a server that is restarting before
	// leaving it out (1 s when zero; negative: do not wait).
	ListWait time.Duration
	// CallTimeout bounds the mux's own requests (initialize, listings): 60 s when zero.
	CallTimeout time.Duration
	// Version is serverInfo.version in the initialize result the mux answers: the
	// version of mcpgate ("dev" when empty), since no one server speaks for the rest.
	Version string
}

// Mux multiplexes servers.
type Mux struct {
	servers []*Server
	byName  map[string]*Server
	opts    Options
	log     *slog.Logger
	out     chan item
	done    chan struct{}
	once    sync.Once

	mu      sync.Mutex
	seq     uint64
	waits   map[string]*wait  // the mux's own requests, by id key
	srvReqs map[string]srvReq // mux id key → the server request it stands for
	check   func(server string, req, resp *jsonrpc.Message) (refusal string)
	refused map[string]string                    // servers left out of the session by check, with why
	caps    map[string]map[string]map[string]any // each server's capabilities, with their members

	listens     map[string]*listening // the client's subscriptions/listen, by id key
	listenParts map[string]listenPart // the mux's listen on a server, by id key
}

type item struct {
	msg *jsonrpc.Message
	err error
}

type wait struct {
	server string
	ch     chan *jsonrpc.Message
}

type srvReq struct {
	server string
	id     json.RawMessage
}

// New returns a Mux over servers (names must pass ValidName and be distinct).
func New(servers []Server, opts Options) *Mux {
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	if opts.ListWait == 0 {
		opts.ListWait = time.Second
	}
	if opts.CallTimeout <= 0 {
		opts.CallTimeout = 60 * time.Second
	}
	m := &Mux{
		byName: map[string]*Server{}, opts: opts, log: opts.Logger,
		out: make(chan item, 64), done: make(chan struct{}),
		waits: map[string]*wait{}, srvReqs: map[string]srvReq{},
		caps: map[string]map[string]map[string]any{}, refused: map[string]string{},
		listens: map[string]*listening{}, listenParts: map[string]listenPart{},
	}
	for i := range servers {
		s := &servers[i]
		m.servers = append(m.servers, s)
		m.byName[s.Name] = s
	}
	for _, s := range m.servers {
		go m.read(s)
	}
	return m
}

// Recv returns the next message for the client, a transient error naming its server
// (*jsonrpc.DropError, *jsonrpc.ResetError), or io.EOF after Close.
func (m *Mux) Recv() (*jsonrpc.Message, error) {
	select {
	case it := <-m.out:
		return it.msg, it.err
	case <-m.done:
		return nil, io.EOF
	}
}

// Close closes every server.
func (m *Mux) Close(ctx context.Context, grace time.Duration) error {
	m.once.Do(func() { close(m.done) })
	var errs []error
	for _, s := range m.servers {
		errs = append(errs, s.Conn.Close(ctx, grace))
	}
	return errors.Join(errs...)
}

// CheckInitialize sets check, which reads each server's own answer resp to the
// client's initialize or server/discover req before it is merged (the serverInfo pin,
// docs/vet.md#identity); a non-empty refusal is the text for the client. A server it refuses is left out of this
// session: it is not listed or asked, a request routed to it is answered with the
// refusal (-32603), and its own requests and notifications are dropped. Set it before
// the client's initialize.
func (m *Mux) CheckInitialize(check func(server string, req, resp *jsonrpc.Message) (refusal string)) {
	m.mu.Lock()
	m.check = check
	m.mu.Unlock()
	for _, s := range m.servers { // and each answer to the initialize replayed after a restart
		if r, ok := s.Conn.(reinitChecker); ok {
			name := s.Name
			r.CheckReinitialize(func(req, resp *jsonrpc.Message) string { return m.checkInit(name, req, resp) })
		}
	}
}

// reinitChecker is a server connection that replays initialize after a restart
// (upstream.Supervisor).
type reinitChecker interface {
	CheckReinitialize(check func(req, resp *jsonrpc.Message) (refusal string))
}

// refusal is why check left server out of the session; "" when it did not.
func (m *Mux) refusal(server string) string {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.refused[server]
}

func (m *Mux) emit(msg *jsonrpc.Message, err error) {
	select {
	case m.out <- item{msg, err}:
	case <-m.done:
	}
}

// reply answers req with result, valid in the revision req is of
// (methods.Conform).
func (m *Mux) reply(req *jsonrpc.Message, result any) {
	b, _ := jsonrpc.Marshal(result)
	if e, ok := methods.EnvelopeOf(req.Params); ok {
		b = methods.Conform(methods.Of(req.Method), e.ProtocolVersion, b, false)
	}
	m.emit(jsonrpc.NewResponse(req.ID, b), nil)
}

func (m *Mux) replyErr(id json.RawMessage, code int, msg string) {
	m.emit(jsonrpc.NewErrorResponse(id, code, msg), nil)
}

// answered reports whether the mux answers a request itself, after asking every
// server (its row's Route, internal/methods).
func answered(method string) bool {
	m := methods.Of(method)
	return m != nil && m.Route == methods.Answered
}

// Send routes one client message. A request the mux cannot route gets a
// *jsonrpc.RequestError; one whose server is down an error wrapping
// jsonrpc.ErrNotDelivered.
func (m *Mux) Send(msg *jsonrpc.Message) error {
	switch msg.Kind {
	case jsonrpc.KindRequest:
		if msg.Upstream == "" && msg.Method == methods.SubscriptionsListen {
			m.listen(msg) // at once, so that a cancellation that follows finds it
			return nil
		}
		if msg.Upstream == "" && answered(msg.Method) {
			go m.request(msg)
			return nil
		}
		if msg.Upstream == "" {
			routed, err := m.Route(msg)
			if err != nil {
				return err
			}
			msg = routed
		}
		return m.sendTo(msg.Upstream, msg)
	case jsonrpc.KindNotification:
		if msg.Method == methods.NotificationCancelled {
			// The relay names the server the cancelled request went to; the mux's
			// own are its subscriptions/listen.
			if msg.Upstream != "" {
				_ = m.sendTo(msg.Upstream, msg)
			} else {
				var p map[string]json.RawMessage
				if json.Unmarshal(msg.Params, &p) == nil && p["requestId"] != nil {
					m.unlisten(jsonrpc.IDKey(p["requestId"]))
				}
			}
			return nil
		}
		for _, s := range m.servers { // initialized, roots/list_changed, progress, …
			if m.refusal(s.Name) == "" {
				_ = m.sendTo(s.Name, msg)
			}
		}
	case jsonrpc.KindResponse:
		m.mu.Lock()
		r, ok := m.srvReqs[msg.IDKey()]
		delete(m.srvReqs, msg.IDKey())
		m.mu.Unlock()
		switch {
		case ok:
			_ = m.sendTo(r.server, msg.WithID(r.id))
		case msg.Upstream != "":
			// The gateway's own answer to a server request it refused
			// (docs/decisions.md#one-reading), under the server's own id.
			_ = m.sendTo(msg.Upstream, msg)
		}
	}
	return nil
}

func (m *Mux) sendTo(server string, msg *jsonrpc.Message) error {
	s := m.byName[server]
	if s == nil {
		return &jsonrpc.RequestError{Code: methods.CodeInvalidParams, Message: fmt.Sprintf("mcpgate: no upstream server is named %q", server)}
	}
	err := s.Conn.Send(msg)
	switch {
	case err == nil:
		return nil
	case errors.Is(err, jsonrpc.ErrNotDelivered):
		return fmt.Errorf("upstream %q: %w", server, err)
	}
	m.log.Warn("send to upstream failed", "upstream", server, "err", err)
	return fmt.Errorf("%w: upstream %q: %v", jsonrpc.ErrNotDelivered, server, err)
}

// Abandon ends a client request's input rounds on the server it went to
// (upstream.Abandon); server "" is a request the mux answered itself, which has none.
func (m *Mux) Abandon(id json.RawMessage, server string) error {
	if server == "" {
		return nil
	}
	s := m.byName[server]
	if s == nil {
		return &jsonrpc.RequestError{Code: methods.CodeInvalidParams, Message: fmt.Sprintf("mcpgate: no upstream server is named %q", server)}
	}
	return upstream.Abandon(s.Conn, id, server)
}

// Route picks the server of a client request and rewrites it as that server must see
// it: the name without its "<server>_" prefix, the URI without its "<server>+"
// prefix. The result carries the server in Upstream. Requests the mux answers itself
// come back unchanged with Upstream "". An unknown name or URI is a
// *jsonrpc.RequestError.
func (m *Mux) Route(msg *jsonrpc.Message) (*jsonrpc.Message, error) {
	out, err := m.route(msg)
	if err == nil && out.Upstream != "" {
		if why := m.refusal(out.Upstream); why != "" {
			return nil, &jsonrpc.RequestError{Code: methods.CodeInternalError, Message: why}
		}
	}
	return out, err
}

func (m *Mux) route(msg *jsonrpc.Message) (*jsonrpc.Message, error) {
	if msg.Kind != jsonrpc.KindRequest || answered(msg.Method) {
		return msg, nil
	}
	params := map[string]json.RawMessage{}
	_ = json.Unmarshal(msg.Params, &params)
	routed := func(server string, key string, value string) (*jsonrpc.Message, error) {
		params[key], _ = jsonrpc.Marshal(value)
		b, _ := jsonrpc.Marshal(params)
		out := msg.WithParams(b)
		out.Upstream = server
		return out, nil
	}
	row := methods.Of(msg.Method)
	route := methods.Unrouted
	if row != nil {
		route = row.Route
	}
	switch route {
	case methods.ByName:
		var name string
		_ = json.Unmarshal(params["name"], &name)
		server, orig, ok := m.SplitName(name)
		if !ok {
			what := "tool"
			if msg.Method == methods.PromptsGet {
				what = "prompt"
			}
			return nil, &jsonrpc.RequestError{Code: methods.CodeInvalidParams, Message: fmt.Sprintf("mcpgate: unknown %s %q: with several servers, names are <server>_<name>", what, name), Unknown: true}
		}
		return routed(server, "name", orig)
	case methods.ByURI:
		var uri string
		_ = json.Unmarshal(params["uri"], &uri)
		server, orig, ok := m.SplitURI(uri)
		if !ok {
			code := methods.CodeResourceNotFound
			if e, modern := methods.EnvelopeOf(msg.Params); modern && methods.RevisionOf(e.ProtocolVersion) == methods.Rev20260728 {
				code = methods.CodeInvalidParams // 2026-07-28 answers an unknown resource -32602
			}
			return nil, &jsonrpc.RequestError{Code: code, Message: fmt.Sprintf("mcpgate: resource %q names no upstream server: with several servers, resource URIs are <server>+<uri>, as resources/list shows them", uri), Unknown: true}
		}
		return routed(server, "uri", orig)
	case methods.ByTask:
		var id string
		_ = json.Unmarshal(params["taskId"], &id)
		server, orig, ok := m.SplitURI(id)
		if !ok {
			return nil, &jsonrpc.RequestError{Code: methods.CodeInvalidParams, Message: fmt.Sprintf("mcpgate: task %q names no upstream server: with several servers, task ids are <server>+<taskId>", id), Unknown: true}
		}
		return routed(server, "taskId", orig)
	case methods.ByRef:
		var ref map[string]json.RawMessage
		_ = json.Unmarshal(params["ref"], &ref)
		var typ, name, uri string
		_ = json.Unmarshal(ref["type"], &typ)
		_ = json.Unmarshal(ref["name"], &name)
		_ = json.Unmarshal(ref["uri"], &uri)
		var server, orig, key string
		var ok bool
		if typ == "ref/prompt" {
			server, orig, ok = m.SplitName(name)
			key = "name"
		} else {
			server, orig, ok = m.SplitURI(uri)
			key = "uri"
		}
		if !ok {
			return nil, &jsonrpc.RequestError{Code: methods.CodeInvalidParams, Message: fmt.Sprintf("mcpgate: completion reference %q names no upstream server", name+uri), Unknown: true}
		}
		ref[key], _ = jsonrpc.Marshal(orig)
		b, _ := jsonrpc.Marshal(ref)
		params["ref"] = b
		b, _ = jsonrpc.Marshal(params)
		out := msg.WithParams(b)
		out.Upstream = server
		return out, nil
	}
	return nil, &jsonrpc.RequestError{Code: methods.CodeMethodNotFound, Message: fmt.Sprintf("mcpgate: method %q is not supported with several upstream servers", msg.Method)}
}

// SplitName maps "<server>_<name>" to its server and the server's own name.
func (m *Mux) SplitName(exposed string) (server, name string, ok bool) {
	i := strings.IndexByte(exposed, '_')
	if i <= 0 {
		return "", "", false
	}
	if _, known := m.byName[exposed[:i]]; !known {
		return "", "", false
	}
	return exposed[:i], exposed[i+1:], true
}

// SplitURI maps "<server>+<uri>" to its server and the server's own URI.
func (m *Mux) SplitURI(exposed string) (server, uri string, ok bool) {
	i := strings.IndexByte(exposed, '+')
	if i <= 0 {
		return "", "", false
	}
	if _, known := m.byName[exposed[:i]]; !known {
		return "", "", false
	}
	return exposed[:i], exposed[i+1:], true
}

// request answers one request the mux handles itself, on its own goroutine.
func (m *Mux) request(msg *jsonrpc.Message) {
	switch msg.Method {
	case methods.Initialize:
		m.initialize(msg)
	case methods.ServerDiscover:
		m.discover(msg)
	case methods.Ping:
		m.reply(msg, struct{}{})
	case methods.LoggingSetLevel:
		m.broadcast(msg)
	default:
		if row := methods.Of(msg.Method); row != nil && row.List != nil {
			l := row.List
			m.list(msg, l.Capability, l.Key, l.Entry, l.Sep)
			return
		}
		m.replyErr(msg.ID, methods.CodeMethodNotFound, fmt.Sprintf("mcpgate: method %q is not supported with several upstream servers", msg.Method))
	}
}

// call sends the mux's own request to one server and waits for the response. A server
// that is restarting is waited for up to wait first.
func (m *Mux) call(server, method string, params json.RawMessage, retryWait time.Duration) (*jsonrpc.Message, error) {
	m.mu.Lock()
	m.seq++
	id := jsonrpc.OwnID("mux-", m.seq)
	ch := make(chan *jsonrpc.Message, 1)
	m.waits[jsonrpc.IDKey(id)] = &wait{server: server, ch: ch}
	m.mu.Unlock()
	defer func() {
		m.mu.Lock()
		delete(m.waits, jsonrpc.IDKey(id))
		m.mu.Unlock()
	}()
	req := jsonrpc.NewRequest(id, method, params)
	err := m.sendTo(server, req)
	if errors.Is(err, jsonrpc.ErrNotDelivered) && retryWait > 0 && m.initialized(server) && m.waitUp(server, retryWait) {
		err = m.sendTo(server, req)
	}
	if err != nil {
		return nil, err
	}
	t := time.NewTimer(m.opts.CallTimeout)
	defer t.Stop()
	select {
	case r := <-ch:
		if r.Error != nil {
			var e jsonrpc.ErrorObject
			_ = json.Unmarshal(r.Error, &e)
			return r, &callError{server: server, obj: e}
		}
		return r, nil
	case <-t.C:
		return nil, fmt.Errorf("upstream %q: no answer to %s within %s", server, method, m.opts.CallTimeout)
	case <-m.done:
		return nil, errors.New("closed")
	}
}

type callError struct {
	server string
	obj    jsonrpc.ErrorObject
}

func (e *callError) Error() string {
	return fmt.Sprintf("upstream %q answered %d %s", e.server, e.obj.Code, e.obj.Message)
}

// waitUp waits up to d for a restarting server's connection; it reports whether the
// server is up.
func (m *Mux) waitUp(server string, d time.Duration) bool {
	u, ok := m.byName[server].Conn.(interface{ Up() <-chan struct{} })
	if !ok {
		return false
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-u.Up():
		return true
	case <-t.C:
	case <-m.done:
	}
	return false
}

// initialized reports whether a server answered initialize through the mux: only
// such a server is waited for while it restarts; one that never started is not.
func (m *Mux) initialized(server string) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	_, ok := m.caps[server]
	return ok
}

// offers reports whether a server offers a capability; true while unknown (the
// server has not answered initialize through the mux).
func (m *Mux) offers(server, capability string) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.refused[server] != "" {
		return false
	}
	c, ok := m.caps[server]
	if !ok {
		return true
	}
	_, offered := c[capability]
	return offered
}

// all fetches every page of a list from one server.
func (m *Mux) all(server, method, field string, first map[string]json.RawMessage) []map[string]json.RawMessage {
	var items []map[string]json.RawMessage
	cursor := ""
	for page := 0; page < 100; page++ {
		params := map[string]json.RawMessage{}
		for k, v := range first {
			if k != "cursor" {
				params[k] = v
			}
		}
		if cursor != "" {
			params["cursor"], _ = jsonrpc.Marshal(cursor)
		}
		b, _ := jsonrpc.Marshal(params)
		r, err := m.call(server, method, b, m.opts.ListWait)
		if err != nil {
			var ce *callError
			level := slog.LevelWarn
			switch {
			case errors.As(err, &ce) && ce.obj.Code == methods.CodeMethodNotFound:
				level = slog.LevelDebug // the server does not offer this list
			case errors.Is(err, jsonrpc.ErrNotDelivered),
				errors.As(err, &ce) && ce.obj.Code == methods.CodeUpstreamUnavailable:
				level = slog.LevelDebug // down or lost: its supervisor logs the restarts
			}
			m.log.Log(context.Background(), level, "listing an upstream failed; its entries are left out", "upstream", server, "method", method, "err", err)
			return items
		}
		var res map[string]json.RawMessage
		_ = json.Unmarshal(r.Result, &res)
		var list []map[string]json.RawMessage
		_ = json.Unmarshal(res[field], &list)
		items = append(items, list...)
		cursor = ""
		_ = json.Unmarshal(res["nextCursor"], &cursor)
		if cursor == "" {
			break
		}
	}
	return items
}

// list merges a list over every server that offers it into one page, each entry's
// key prefixed with "<server>" and sep.
func (m *Mux) list(msg *jsonrpc.Message, capability, field, key, sep string) {
	var first map[string]json.RawMessage
	_ = json.Unmarshal(msg.Params, &first)
	parts := make([][]map[string]json.RawMessage, len(m.servers))
	var wg sync.WaitGroup
	for i, s := range m.servers {
		if !m.offers(s.Name, capability) {
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			parts[i] = m.all(s.Name, msg.Method, field, first)
		}()
	}
	wg.Wait()
	merged := []map[string]json.RawMessage{}
	for i, s := range m.servers {
		for _, it := range parts[i] {
			var name string
			_ = json.Unmarshal(it[key], &name)
			it[key], _ = jsonrpc.Marshal(s.Name + sep + name)
			merged = append(merged, it)
		}
	}
	m.reply(msg, map[string]any{field: merged})
}

// broadcast sends a request to every server and answers with the first success.
func (m *Mux) broadcast(msg *jsonrpc.Message) {
	var firstErr error
	ok := false
	for _, s := range m.servers {
		if m.refusal(s.Name) != "" {
			continue
		}
		if _, err := m.call(s.Name, msg.Method, msg.Params, 0); err != nil {
			firstErr = err
			continue
		}
		ok = true
	}
	if !ok && firstErr != nil {
		m.replyErr(msg.ID, methods.CodeInternalError, "mcpgate: "+firstErr.Error())
		return
	}
	m.reply(msg, struct{}{})
}

// initialize sends the client's initialize to every server and merges the answers. A
// server that cannot answer is left out with an error naming it; its supervisor
// replays this initialize when it starts, and its list_changed notifications follow.
func (m *Mux) initialize(msg *jsonrpc.Message) {
	type ans struct {
		res     map[string]json.RawMessage
		err     error
		refusal string
	}
	answers := make([]ans, len(m.servers))
	var wg sync.WaitGroup
	for i, s := range m.servers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r, err := m.call(s.Name, methods.Initialize, msg.Params, 0)
			if err == nil {
				err = json.Unmarshal(r.Result, &answers[i].res)
			}
			answers[i].err = err
			if err == nil {
				answers[i].refusal = m.checkInit(s.Name, msg, r)
			}
		}()
	}
	wg.Wait()
	caps := map[string]map[string]any{}
	version := ""
	var instructions []string
	var refusals []string
	up, missing := 0, 0
	for i, a := range answers {
		name := m.servers[i].Name
		if a.refusal != "" {
			refusals = append(refusals, a.refusal) // left out for the session: it will not join
			continue
		}
		if a.err != nil {
			m.log.Error("upstream failed to initialize; it is left out until it starts", "upstream", name, "err", a.err)
			missing++
			continue
		}
		up++
		var v string
		_ = json.Unmarshal(a.res["protocolVersion"], &v)
		if version == "" || v < version {
			version = v // the oldest version every server speaks
		}
		m.mergeCapabilities(name, a.res["capabilities"], caps)
		var ins string
		if json.Unmarshal(a.res["instructions"], &ins) == nil && ins != "" {
			instructions = append(instructions, name+": "+ins)
		}
	}
	if up == 0 && missing == 0 && len(refusals) > 0 {
		m.replyErr(msg.ID, methods.CodeInternalError, strings.Join(refusals, "; "))
		return
	}
	if up == 0 {
		m.replyErr(msg.ID, methods.CodeUpstreamUnavailable, "mcpgate: no upstream server could be initialized")
		return
	}
	if version == "" {
		var p struct {
			ProtocolVersion string `json:"protocolVersion"`
		}
		_ = json.Unmarshal(msg.Params, &p)
		version = p.ProtocolVersion
	}
	for _, k := range []string{"tools", "prompts", "resources"} {
		if caps[k] == nil && missing > 0 {
			// A server that is left out may bring these when it joins.
			caps[k] = map[string]any{}
		}
		if caps[k] != nil {
			caps[k]["listChanged"] = true
		}
	}
	res := map[string]any{
		"protocolVersion": version,
		"capabilities":    caps,
		"serverInfo":      map[string]string{"name": "mcpgate", "version": cmp.Or(m.opts.Version, "dev")},
	}
	if len(instructions) > 0 {
		slices.Sort(instructions)
		res["instructions"] = strings.Join(instructions, "\n")
	}
	m.reply(msg, res)
}

// checkInit runs the check on one server's initialize answer; a refusal leaves the
// server out of the session.
func (m *Mux) checkInit(server string, req, resp *jsonrpc.Message) string {
	m.mu.Lock()
	check := m.check
	m.mu.Unlock()
	if check == nil {
		return ""
	}
	why := check(server, req, resp)
	if why != "" {
		m.log.Error("upstream left out of the session: its initialize (or server/discover) answer was refused", "upstream", server)
		m.mu.Lock()
		m.refused[server] = why
		m.mu.Unlock()
	}
	return why
}

// discover answers a 2026-07-28 server/discover after asking every server with the
// client's own request (its _meta envelope): the versions the gateway and every server
// that answered serve, the capabilities at least one server has that the multiplexer
// serves (servedCapabilities), their instructions each under its server's name, and
// the gateway's serverInfo in _meta. A server that does not answer is left out; none
// answering is -32603 naming the first error.
func (m *Mux) discover(msg *jsonrpc.Message) {
	type ans struct {
		res map[string]json.RawMessage
		err error
	}
	answers := make([]ans, len(m.servers))
	var wg sync.WaitGroup
	for i, s := range m.servers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r, err := m.call(s.Name, methods.ServerDiscover, msg.Params, m.opts.ListWait)
			if err == nil {
				err = json.Unmarshal(r.Result, &answers[i].res)
			}
			if err == nil { // its serverInfo pin, as an initialize answer's (docs/vet.md#identity)
				if why := m.checkInit(s.Name, msg, r); why != "" {
					err = errors.New(why)
				}
			}
			answers[i].err = err
		}()
	}
	wg.Wait()
	versions := map[string]bool{methods.Version20260728: true}
	caps := map[string]map[string]any{}
	var instructions []string
	var firstErr error
	up := 0
	for i, a := range answers {
		name := m.servers[i].Name
		if a.err != nil {
			m.log.Warn("upstream failed server/discover; it is left out", "upstream", name, "err", a.err)
			if firstErr == nil {
				firstErr = a.err
			}
			continue
		}
		up++
		var vs []string
		_ = json.Unmarshal(a.res["supportedVersions"], &vs)
		for v := range versions {
			if !slices.Contains(vs, v) {
				delete(versions, v)
			}
		}
		m.mergeCapabilities(name, a.res["capabilities"], caps)
		var ins string
		if json.Unmarshal(a.res["instructions"], &ins) == nil && ins != "" {
			instructions = append(instructions, name+": "+ins)
		}
	}
	if up == 0 {
		m.replyErr(msg.ID, methods.CodeInternalError, "mcpgate: no upstream server answered server/discover: "+firstErr.Error())
		return
	}
	supported := slices.Sorted(maps.Keys(versions))
	if supported == nil {
		supported = []string{}
	}
	res := map[string]any{
		"supportedVersions": supported,
		"capabilities":      servedCapabilities(caps),
		"_meta":             map[string]any{methods.MetaServerInfo: map[string]string{"name": "mcpgate", "version": cmp.Or(m.opts.Version, "dev")}},
	}
	if len(instructions) > 0 {
		slices.Sort(instructions)
		res["instructions"] = strings.Join(instructions, "\n")
	}
	m.reply(msg, res)
}

// read relays one server's messages, each marked with the server's name.
func (m *Mux) read(s *Server) {
	for {
		msg, err := s.Conn.Recv()
		if err != nil {
			var drop *jsonrpc.DropError
			var reset *jsonrpc.ResetError
			switch {
			case errors.As(err, &drop):
				id, ok := jsonrpc.PeekID(drop.Head)
				if a := drop.Ambiguous; a != nil { // one reading: the id as read exactly, and only of a response
					id, ok = a.ID, a.ID != nil && (a.Kind == jsonrpc.KindResponse || a.Answers)
				}
				if ok && m.deliverOwn(jsonrpc.ResponseErrorMessage(id, drop.Reason)) && drop.Ambiguous == nil {
					continue // a refusal goes on to the relay, which records it
				}
				d := *drop
				d.Upstream = s.Name
				m.emit(nil, &d)
				continue
			case errors.As(err, &reset):
				m.lost(s, reset.Err)
				continue
			}
			select {
			case <-m.done:
				return
			default:
			}
			// The connection ended for good (its supervisor was closed).
			m.log.Error("upstream connection ended", "upstream", s.Name, "err", err)
			m.lost(s, err)
			return
		}
		if why := m.refusal(s.Name); why != "" && msg.Kind != jsonrpc.KindResponse {
			if msg.Kind == jsonrpc.KindRequest { // never relayed: the server is not used
				_ = s.Conn.Send(jsonrpc.NewErrorResponse(msg.ID, methods.CodeInternalError, why))
			}
			continue
		}
		switch msg.Kind {
		case jsonrpc.KindResponse:
			if m.deliverOwn(msg) || m.listenEnded(s.Name, msg) {
				continue
			}
			msg.Upstream = s.Name
			m.emit(msg, nil)
		case jsonrpc.KindRequest:
			m.mu.Lock()
			m.seq++
			id := jsonrpc.OwnID("mux-", m.seq)
			m.srvReqs[jsonrpc.IDKey(id)] = srvReq{server: s.Name, id: msg.ID}
			m.mu.Unlock()
			out := msg.WithID(id)
			out.Upstream = s.Name
			m.emit(out, nil)
		case jsonrpc.KindNotification:
			out := m.notification(s.Name, msg)
			out.Upstream = s.Name
			if out = m.subscribed(s.Name, out); out != nil {
				m.emit(out, nil)
			}
		}
	}
}

// deliverOwn hands a response to the mux's own request with its id; it reports
// whether there was one.
func (m *Mux) deliverOwn(msg *jsonrpc.Message) bool {
	m.mu.Lock()
	w := m.waits[msg.IDKey()]
	delete(m.waits, msg.IDKey())
	m.mu.Unlock()
	if w == nil {
		return false
	}
	w.ch <- msg
	return true
}

// lost fails the mux's own requests to a server whose connection was lost, forgets
// its server-to-client requests and reports the reset to the relay.
func (m *Mux) lost(s *Server, cause error) {
	m.mu.Lock()
	var mine []*wait
	var ids []string
	for k, w := range m.waits {
		if w.server == s.Name {
			mine = append(mine, w)
			ids = append(ids, k)
		}
	}
	for _, k := range ids {
		delete(m.waits, k)
	}
	for k, r := range m.srvReqs {
		if r.server == s.Name {
			delete(m.srvReqs, k)
		}
	}
	m.mu.Unlock()
	m.listensLost(s.Name)
	for _, w := range mine {
		w.ch <- jsonrpc.NewErrorResponse(nil, methods.CodeUpstreamUnavailable, "mcpgate: the upstream connection was lost")
	}
	m.emit(nil, &jsonrpc.ResetError{Upstream: s.Name, Err: cause})
}

// notification rewrites a server notification for the client: the members that
// carry a server's names (the table's Names: a resource URI, a task id, the links of
// a task result it inlines) get its server prefix.
func (m *Mux) notification(server string, msg *jsonrpc.Message) *jsonrpc.Message {
	row := methods.Of(msg.Method)
	if row == nil || row.Direction != methods.ServerNotification || len(row.Names) == 0 {
		return msg
	}
	var params map[string]json.RawMessage
	if json.Unmarshal(msg.Params, &params) != nil || params == nil || !prefixNames(params, row.Names, server+"+") {
		return msg
	}
	b, _ := jsonrpc.Marshal(params)
	return msg.WithParams(b)
}

// RewriteResponse namespaces the names a server's response carries for the client
// (the table's Names of the request's method): resources/read contents, resource_link
// and embedded resource content in tool results and prompt messages, and task ids,
// also the top-level taskId of a 2026-07-28 CreateTaskResult (resultType "task"),
// which may answer any request. method is the method of the request it answers. A
// response with nothing to rewrite comes back as it was.
func (m *Mux) RewriteResponse(method string, msg *jsonrpc.Message) *jsonrpc.Message {
	if msg.Upstream == "" || msg.Result == nil {
		return msg
	}
	row := methods.Of(method)
	var names []methods.Name
	if row != nil && row.Direction == methods.ClientRequest {
		names = row.Names
	}
	task := bytes.Contains(msg.Result, []byte(`"task"`))
	if len(names) == 0 && !task {
		return msg
	}
	var res map[string]json.RawMessage
	if json.Unmarshal(msg.Result, &res) != nil {
		return msg
	}
	prefix := msg.Upstream + "+"
	changed := false
	var resultType string
	if _ = json.Unmarshal(res["resultType"], &resultType); resultType == "task" && !slices.ContainsFunc(names, func(n methods.Name) bool {
		return len(n.Path) == 1 && n.Path[0] == "taskId"
	}) {
		changed = prefixKey(res, "taskId", prefix)
	}
	changed = prefixNames(res, names, prefix) || changed
	if !changed {
		return msg
	}
	b, _ := jsonrpc.Marshal(res)
	out := msg.WithResult(b)
	return out
}

// prefixNames prefixes each member of obj that names (a result, or a notification's
// params) carry; it reports whether anything changed.
func prefixNames(obj map[string]json.RawMessage, names []methods.Name, prefix string) bool {
	changed := false
	for _, n := range names {
		path, leaf := n.Path, prefixItem
		if n.Kind == methods.NameString {
			key := path[len(path)-1]
			path, leaf = path[:len(path)-1], func(obj map[string]json.RawMessage, prefix string) bool { return prefixKey(obj, key, prefix) }
		}
		changed = prefixAt(obj, path, prefix, leaf) || changed
	}
	return changed
}

// prefixAt walks obj along path (member names, "*" for every item of an array of
// objects) to the objects it names and prefixes each with leaf; a member it changed is
// written back. It reports whether anything changed.
func prefixAt(obj map[string]json.RawMessage, path []string, prefix string, leaf func(map[string]json.RawMessage, string) bool) bool {
	if len(path) == 0 {
		return leaf(obj, prefix)
	}
	key, rest := path[0], path[1:]
	changed := false
	if len(rest) > 0 && rest[0] == "*" {
		var items []map[string]json.RawMessage
		if json.Unmarshal(obj[key], &items) != nil {
			return false
		}
		for _, it := range items {
			changed = prefixAt(it, rest[1:], prefix, leaf) || changed
		}
		if changed {
			obj[key], _ = jsonrpc.Marshal(items)
		}
		return changed
	}
	var sub map[string]json.RawMessage
	if json.Unmarshal(obj[key], &sub) != nil || !prefixAt(sub, rest, prefix, leaf) {
		return false
	}
	obj[key], _ = jsonrpc.Marshal(sub)
	return true
}

// prefixItem prefixes the URI of one content item: a resource_link's uri, or an
// embedded resource's resource.uri.
func prefixItem(it map[string]json.RawMessage, prefix string) bool {
	var typ string
	_ = json.Unmarshal(it["type"], &typ)
	switch typ {
	case "resource_link":
		return prefixKey(it, "uri", prefix)
	case "resource":
		var r map[string]json.RawMessage
		if json.Unmarshal(it["resource"], &r) == nil && prefixKey(r, "uri", prefix) {
			it["resource"], _ = jsonrpc.Marshal(r)
			return true
		}
	}
	return false
}

// prefixKey prefixes the string member key of obj.
func prefixKey(obj map[string]json.RawMessage, key, prefix string) bool {
	var v string
	if json.Unmarshal(obj[key], &v) != nil || v == "" {
		return false
	}
	obj[key], _ = jsonrpc.Marshal(prefix + v)
	return true
}

// mergeCapabilities adds one server's capabilities (its initialize or server/discover
// result member) into caps, leaving out the names in skip, and remembers every
// capability the server offered for routing.
func (m *Mux) mergeCapabilities(name string, raw json.RawMessage, caps map[string]map[string]any) {
	var c map[string]map[string]any
	_ = json.Unmarshal(raw, &c)
	for k, sub := range c {
		if caps[k] == nil {
			caps[k] = map[string]any{}
		}
		for kk, vv := range sub {
			caps[k][kk] = vv
		}
	}
	m.mu.Lock()
	m.caps[name] = c
	m.mu.Unlock()
}

// discoverServes is what a server/discover answer of several servers may advertise
// (docs/decisions.md#discover-capabilities): per server capability, the request that
// must be routed with several servers for the multiplexer to serve it ("" for none
// beyond the envelope every request carries), and per member the requests its meaning
// needs, every one routed (listChanged and subscribe: the mux's subscriptions/listen). A capability, or a member, not listed is never advertised:
// experimental, extensions other than tasks (methods no row routes), the legacy tasks
// capability (2026-07-28 has tasks only as an extension). extensions is advertised
// only with a member: it is a map of extensions, not a capability of its own.
var discoverServes = map[string]struct {
	method      string
	members     map[string][]string
	onlyMembers bool
}{
	"tools":       {methods.ToolsCall, map[string][]string{"listChanged": {methods.SubscriptionsListen}}, false},
	"prompts":     {methods.PromptsGet, map[string][]string{"listChanged": {methods.SubscriptionsListen}}, false},
	"resources":   {methods.ResourcesRead, map[string][]string{"listChanged": {methods.SubscriptionsListen}, "subscribe": {methods.SubscriptionsListen}}, false},
	"completions": {methods.CompletionComplete, nil, false},
	"logging":     {"", nil, false}, // the envelope's logLevel, on every request
	// The tasks extension: its requests routed by <server>+<taskId>, which the
	// multiplexer puts in every CreateTaskResult, task answer and notifications/tasks.
	"extensions": {"", map[string][]string{methods.ExtensionTasks: {methods.TasksGet, methods.TasksCancel, methods.TasksUpdate}}, true},
}

// servedCapabilities is caps (the union of the servers' capabilities) less what the
// multiplexer does not serve with several servers in 2026-07-28 (discoverServes).
func servedCapabilities(caps map[string]map[string]any) map[string]map[string]any {
	routedModern := func(method string) bool {
		row := methods.In(method, methods.Rev20260728)
		return method == "" || row != nil && row.Route != methods.Unrouted
	}
	out := map[string]map[string]any{}
	for k, members := range caps {
		serve, ok := discoverServes[k]
		if !ok || !routedModern(serve.method) {
			continue
		}
		served := map[string]any{}
		for member, v := range members {
			if need, ok := serve.members[member]; ok && !slices.ContainsFunc(need, func(m string) bool { return !routedModern(m) }) {
				served[member] = v
			}
		}
		if len(served) > 0 || !serve.onlyMembers {
			out[k] = served
		}
	}
	return out
}
