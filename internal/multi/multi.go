// Package multi puts several MCP servers behind one MCP session: a Mux is a
// relay.Upstream (and upstream.Conn) that the relay talks to as if it were one server,
// so the relay and the pipeline stay unchanged and ctx.tool is the name the client
// sees (docs/decisions.md#tool-names).
//
// Names: tools and prompts are exposed as "<server>_<name>"; resources keep their
// URIs and are routed by the URI (as listed, or by a template's fixed prefix).
// initialize goes to every server and the answers are merged; tools/list,
// prompts/list, resources/list and resources/templates/list are merged over every page
// of every server and returned as one page; list_changed and other notifications are
// relayed. Server-to-client requests (sampling, elicitation, roots) get ids of the
// mux's own "mcpgate-mux-" namespace so that two servers' ids never collide, and the
// client's answer goes back to the server that asked.
package multi

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/mcpgate/mcpgate/internal/jsonrpc"
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
// "<server>_<tool>" splits at the first '_'.
func ValidName(name string) error {
	if !nameRE.MatchString(name) {
		return fmt.Errorf("server name %q: with several servers, names are tool prefixes and may hold only letters, digits and '-'", name)
	}
	return nil
}

// Mux multiplexes servers.
type Mux struct {
	servers []Server
	byName  map[string]*Server
	log     *slog.Logger
	out     chan []byte
	done    chan struct{}
	once    sync.Once

	mu      sync.Mutex
	seq     uint64
	waits   map[string]chan *jsonrpc.Message // the mux's own requests, by id key
	routes  map[string]string                // client request id key → server (for cancellation)
	srvReqs map[string]srvReq                // mux id key → the server request it stands for
	uris    map[string]string                // resource URI → server
	tmpls   []tmpl                           // resource templates' fixed prefixes
}

type srvReq struct {
	server string
	id     json.RawMessage
}

type tmpl struct {
	prefix, server string
}

// New returns a Mux over servers (names must pass ValidName and be distinct).
func New(servers []Server, log *slog.Logger) *Mux {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	m := &Mux{
		servers: servers, byName: map[string]*Server{}, log: log,
		out: make(chan []byte, 64), done: make(chan struct{}),
		waits: map[string]chan *jsonrpc.Message{}, routes: map[string]string{},
		srvReqs: map[string]srvReq{}, uris: map[string]string{},
	}
	for i := range m.servers {
		s := &m.servers[i]
		m.byName[s.Name] = s
		go m.read(s)
	}
	return m
}

// ReadLine returns the next message for the client.
func (m *Mux) ReadLine() ([]byte, error) {
	select {
	case b := <-m.out:
		return b, nil
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

func (m *Mux) emit(b []byte) {
	select {
	case m.out <- b:
	case <-m.done:
	}
}

func (m *Mux) reply(id json.RawMessage, result any) {
	b, _ := json.Marshal(result)
	m.emit(jsonrpc.Response(id, b))
}

func (m *Mux) replyErr(id json.RawMessage, code int, msg string) {
	m.emit(jsonrpc.ErrorResponse(id, code, msg))
}

// Send routes one client message.
func (m *Mux) Send(raw []byte) error {
	msg, err := jsonrpc.Parse(raw)
	if err != nil {
		return fmt.Errorf("multi: %w", err)
	}
	msg.Raw = append([]byte(nil), msg.Raw...)
	switch msg.Kind {
	case jsonrpc.KindRequest:
		go m.request(msg)
	case jsonrpc.KindNotification:
		m.notification(msg)
	case jsonrpc.KindResponse:
		m.mu.Lock()
		r, ok := m.srvReqs[msg.IDKey()]
		delete(m.srvReqs, msg.IDKey())
		m.mu.Unlock()
		if ok {
			m.sendTo(r.server, withID(msg.Raw, r.id))
		}
	}
	return nil
}

func (m *Mux) sendTo(server string, b []byte) {
	if s := m.byName[server]; s != nil {
		if err := s.Conn.Send(b); err != nil {
			m.log.Warn("send to upstream failed", "upstream", server, "err", err)
		}
	}
}

func (m *Mux) notification(msg *jsonrpc.Message) {
	if msg.Method == "notifications/cancelled" {
		var p struct {
			RequestID json.RawMessage `json:"requestId"`
		}
		_ = json.Unmarshal(msg.Params, &p)
		m.mu.Lock()
		server := m.routes[jsonrpc.IDKey(p.RequestID)]
		m.mu.Unlock()
		if server != "" {
			m.sendTo(server, msg.Raw)
		}
		return
	}
	for _, s := range m.servers { // initialized, roots/list_changed, progress, …
		m.sendTo(s.Name, msg.Raw)
	}
}

// request handles one client request on its own goroutine.
func (m *Mux) request(msg *jsonrpc.Message) {
	params := map[string]json.RawMessage{}
	_ = json.Unmarshal(msg.Params, &params)
	switch msg.Method {
	case "initialize":
		m.initialize(msg)
	case "ping":
		m.reply(msg.ID, struct{}{})
	case "tools/list":
		m.list(msg, "tools/list", "tools", "name", true)
	case "prompts/list":
		m.list(msg, "prompts/list", "prompts", "name", true)
	case "resources/list":
		m.list(msg, "resources/list", "resources", "uri", false)
	case "resources/templates/list":
		m.list(msg, "resources/templates/list", "resourceTemplates", "uriTemplate", false)
	case "tools/call", "prompts/get":
		m.byPrefix(msg, params, "name")
	case "resources/read", "resources/subscribe", "resources/unsubscribe":
		var uri string
		_ = json.Unmarshal(params["uri"], &uri)
		m.forward(msg, m.serverForURI(uri), msg.Raw)
	case "completion/complete":
		var ref map[string]json.RawMessage
		_ = json.Unmarshal(params["ref"], &ref)
		var typ, name, uri string
		_ = json.Unmarshal(ref["type"], &typ)
		_ = json.Unmarshal(ref["name"], &name)
		_ = json.Unmarshal(ref["uri"], &uri)
		if typ == "ref/prompt" {
			server, orig, ok := m.split(name)
			if !ok {
				m.replyErr(msg.ID, jsonrpc.CodeInvalidParams, fmt.Sprintf("mcpgate: unknown prompt %q", name))
				return
			}
			ref["name"], _ = json.Marshal(orig)
			params["ref"], _ = json.Marshal(ref)
			m.forward(msg, server, rebuild(msg, params))
			return
		}
		m.forward(msg, m.serverForURI(uri), msg.Raw)
	case "logging/setLevel":
		m.broadcast(msg)
	default:
		m.replyErr(msg.ID, jsonrpc.CodeMethodNotFound, fmt.Sprintf("mcpgate: method %q is not supported with several upstream servers", msg.Method))
	}
}

// split maps "<server>_<name>" to its server and the server's own name.
func (m *Mux) split(exposed string) (server, name string, ok bool) {
	i := strings.IndexByte(exposed, '_')
	if i <= 0 {
		return "", "", false
	}
	if _, known := m.byName[exposed[:i]]; !known {
		return "", "", false
	}
	return exposed[:i], exposed[i+1:], true
}

func (m *Mux) byPrefix(msg *jsonrpc.Message, params map[string]json.RawMessage, key string) {
	var name string
	_ = json.Unmarshal(params[key], &name)
	server, orig, ok := m.split(name)
	if !ok {
		m.replyErr(msg.ID, jsonrpc.CodeInvalidParams, fmt.Sprintf("mcpgate: unknown name %q: with several servers, names are <server>_<name>", name))
		return
	}
	params[key], _ = json.Marshal(orig)
	m.forward(msg, server, rebuild(msg, params))
}

// forward sends a request to one server; its response comes back with the client's id.
func (m *Mux) forward(msg *jsonrpc.Message, server string, raw []byte) {
	if server == "" {
		m.replyErr(msg.ID, -32002, "mcpgate: no upstream server serves this resource")
		return
	}
	m.mu.Lock()
	m.routes[msg.IDKey()] = server
	m.mu.Unlock()
	m.sendTo(server, raw)
}

func (m *Mux) serverForURI(uri string) string {
	m.mu.Lock()
	s, ok := m.uris[uri]
	tm := m.tmpls
	m.mu.Unlock()
	if ok {
		return s
	}
	best := ""
	for _, t := range tm {
		if strings.HasPrefix(uri, t.prefix) && len(t.prefix) > len(best) {
			best, s = t.prefix, t.server
		}
	}
	if best != "" {
		return s
	}
	if len(m.servers) > 0 && uri == "" {
		return ""
	}
	// Unknown: list resources once, then retry.
	m.refreshResources()
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.uris[uri]
}

func (m *Mux) refreshResources() {
	for _, s := range m.servers {
		m.all(s.Name, "resources/list", "resources", nil)
	}
}

// call sends the mux's own request to one server and waits for the response.
func (m *Mux) call(server, method string, params any) (*jsonrpc.Message, error) {
	m.mu.Lock()
	m.seq++
	id, _ := json.Marshal("mcpgate-mux-" + strconv.FormatUint(m.seq, 10))
	ch := make(chan *jsonrpc.Message, 1)
	m.waits[jsonrpc.IDKey(id)] = ch
	m.mu.Unlock()
	defer func() {
		m.mu.Lock()
		delete(m.waits, jsonrpc.IDKey(id))
		m.mu.Unlock()
	}()
	m.sendTo(server, jsonrpc.Request(id, method, params))
	t := time.NewTimer(60 * time.Second)
	defer t.Stop()
	select {
	case r := <-ch:
		if r.Error != nil {
			return r, fmt.Errorf("%s: %s", server, r.Error)
		}
		return r, nil
	case <-t.C:
		return nil, fmt.Errorf("%s: no answer to %s", server, method)
	case <-m.done:
		return nil, errors.New("closed")
	}
}

// all fetches every page of a list from one server and records resource routes.
func (m *Mux) all(server, method, field string, first map[string]json.RawMessage) []map[string]json.RawMessage {
	var items []map[string]json.RawMessage
	cursor := ""
	for page := 0; page < 100; page++ {
		params := map[string]any{}
		for k, v := range first {
			if k != "cursor" {
				params[k] = v
			}
		}
		if cursor != "" {
			params["cursor"] = cursor
		}
		r, err := m.call(server, method, params)
		if err != nil {
			m.log.Warn("listing an upstream failed; its entries are left out", "upstream", server, "method", method, "err", err)
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
	m.mu.Lock()
	for _, it := range items {
		switch field {
		case "resources":
			var uri string
			_ = json.Unmarshal(it["uri"], &uri)
			m.uris[uri] = server
		case "resourceTemplates":
			var t string
			_ = json.Unmarshal(it["uriTemplate"], &t)
			if i := strings.IndexByte(t, '{'); i > 0 {
				m.tmpls = append(m.tmpls, tmpl{prefix: t[:i], server: server})
			}
		}
	}
	m.mu.Unlock()
	return items
}

// list merges a list over every server into one page.
func (m *Mux) list(msg *jsonrpc.Message, method, field, key string, prefix bool) {
	var first map[string]json.RawMessage
	_ = json.Unmarshal(msg.Params, &first)
	type part struct {
		items []map[string]json.RawMessage
	}
	parts := make([]part, len(m.servers))
	var wg sync.WaitGroup
	for i, s := range m.servers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			parts[i].items = m.all(s.Name, method, field, first)
		}()
	}
	wg.Wait()
	merged := []map[string]json.RawMessage{}
	for i, s := range m.servers {
		for _, it := range parts[i].items {
			if prefix {
				var name string
				_ = json.Unmarshal(it[key], &name)
				it[key], _ = json.Marshal(s.Name + "_" + name)
			}
			merged = append(merged, it)
		}
	}
	m.reply(msg.ID, map[string]any{field: merged})
}

// broadcast sends a request to every server and answers with the first success.
func (m *Mux) broadcast(msg *jsonrpc.Message) {
	var p any
	_ = json.Unmarshal(msg.Params, &p)
	var firstErr error
	ok := false
	for _, s := range m.servers {
		if _, err := m.call(s.Name, msg.Method, p); err != nil {
			firstErr = err
			continue
		}
		ok = true
	}
	if !ok && firstErr != nil {
		m.replyErr(msg.ID, jsonrpc.CodeInternalError, "mcpgate: "+firstErr.Error())
		return
	}
	m.reply(msg.ID, struct{}{})
}

// initialize sends the client's initialize to every server and merges the answers.
func (m *Mux) initialize(msg *jsonrpc.Message) {
	var p any
	_ = json.Unmarshal(msg.Params, &p)
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
			r, err := m.call(s.Name, "initialize", p)
			if err == nil {
				err = json.Unmarshal(r.Result, &answers[i].res)
			}
			answers[i].err = err
		}()
	}
	wg.Wait()
	caps := map[string]map[string]any{}
	version := ""
	var instructions []string
	up := 0
	for i, a := range answers {
		name := m.servers[i].Name
		if a.err != nil {
			m.log.Error("upstream failed to initialize; its tools are left out", "upstream", name, "err", a.err)
			continue
		}
		up++
		var v string
		_ = json.Unmarshal(a.res["protocolVersion"], &v)
		if version == "" || v < version {
			version = v // the oldest version every server speaks
		}
		var c map[string]map[string]any
		_ = json.Unmarshal(a.res["capabilities"], &c)
		for k, sub := range c {
			if k == "tasks" {
				continue
			}
			if caps[k] == nil {
				caps[k] = map[string]any{}
			}
			for kk, vv := range sub {
				caps[k][kk] = vv
			}
		}
		var ins string
		if json.Unmarshal(a.res["instructions"], &ins) == nil && ins != "" {
			instructions = append(instructions, name+": "+ins)
		}
	}
	if up == 0 {
		m.replyErr(msg.ID, jsonrpc.CodeUpstreamUnavailable, "mcpgate: no upstream server could be initialized")
		return
	}
	for _, k := range []string{"tools", "prompts", "resources"} {
		if caps[k] != nil {
			caps[k]["listChanged"] = true
		}
	}
	res := map[string]any{
		"protocolVersion": version,
		"capabilities":    caps,
		"serverInfo":      map[string]string{"name": "mcpgate", "version": "multi"},
	}
	if len(instructions) > 0 {
		sort.Strings(instructions)
		res["instructions"] = strings.Join(instructions, "\n")
	}
	m.reply(msg.ID, res)
}

// read relays one server's messages.
func (m *Mux) read(s *Server) {
	for {
		line, err := s.Conn.ReadLine()
		if err != nil {
			if !errors.Is(err, io.EOF) {
				m.log.Warn("upstream read failed", "upstream", s.Name, "err", err)
			}
			select {
			case <-m.done:
			default:
				m.log.Error("upstream connection ended", "upstream", s.Name)
			}
			return
		}
		msg, err := jsonrpc.Parse(line)
		if err != nil {
			continue
		}
		msg.Raw = append([]byte(nil), msg.Raw...)
		switch msg.Kind {
		case jsonrpc.KindResponse:
			m.mu.Lock()
			ch := m.waits[msg.IDKey()]
			delete(m.routes, msg.IDKey())
			m.mu.Unlock()
			if ch != nil {
				ch <- msg
				continue
			}
			m.emit(msg.Raw)
		case jsonrpc.KindRequest:
			m.mu.Lock()
			m.seq++
			id, _ := json.Marshal("mcpgate-mux-" + strconv.FormatUint(m.seq, 10))
			m.srvReqs[jsonrpc.IDKey(id)] = srvReq{server: s.Name, id: msg.ID}
			m.mu.Unlock()
			m.emit(withID(msg.Raw, id))
		case jsonrpc.KindNotification:
			m.emit(msg.Raw)
		}
	}
}

// withID returns raw with its "id" replaced.
func withID(raw []byte, id json.RawMessage) []byte {
	var obj map[string]json.RawMessage
	if json.Unmarshal(raw, &obj) != nil {
		return raw
	}
	obj["id"] = id
	b, _ := json.Marshal(obj)
	return b
}

// rebuild re-encodes a request with new params, keeping its id and other fields.
func rebuild(msg *jsonrpc.Message, params map[string]json.RawMessage) []byte {
	var obj map[string]json.RawMessage
	if json.Unmarshal(msg.Raw, &obj) != nil {
		return msg.Raw
	}
	obj["params"], _ = json.Marshal(params)
	b, _ := json.Marshal(obj)
	return b
}
