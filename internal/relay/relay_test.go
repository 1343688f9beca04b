package relay

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mcpgate/mcpgate/ctxapi"
	"github.com/mcpgate/mcpgate/engine"
	"github.com/mcpgate/mcpgate/gate"
	"github.com/mcpgate/mcpgate/internal/audit"
	"github.com/mcpgate/mcpgate/internal/bound"
	"github.com/mcpgate/mcpgate/internal/jsonrpc"
	"github.com/mcpgate/mcpgate/internal/methods"
	"github.com/mcpgate/mcpgate/internal/pipeline"
)

// fakeUpstream is an in-memory MCP server side: the test reads what the relay sent
// and writes what the server says.
type fakeUpstream struct {
	sent   chan string
	lines  chan string
	errs   chan error                     // transient errors Recv reports before the next line
	refuse func(m *jsonrpc.Message) error // when set, may refuse a message
}

func newFakeUpstream() *fakeUpstream {
	return &fakeUpstream{sent: make(chan string, 64), lines: make(chan string, 64), errs: make(chan error, 4)}
}

func (f *fakeUpstream) Send(m *jsonrpc.Message) error {
	if f.refuse != nil {
		if err := f.refuse(m); err != nil {
			return err
		}
	}
	f.sent <- string(m.Raw)
	return nil
}

// Recv returns the next scripted line, parsed as a stdio transport parses it;
// "TOOLARGE:<head>" stands for an oversized line whose first bytes are <head>.
func (f *fakeUpstream) Recv() (*jsonrpc.Message, error) {
	var l string
	var ok bool
	select {
	case err := <-f.errs:
		return nil, err
	case l, ok = <-f.lines:
	}
	if !ok {
		return nil, io.EOF
	}
	if head, ok := strings.CutPrefix(l, "TOOLARGE:"); ok {
		return nil, &jsonrpc.DropError{Head: []byte(head), Reason: jsonrpc.ReasonTooLarge}
	}
	return jsonrpc.NewStream(strings.NewReader(l+"\n"), nil, 0).Recv()
}

type records struct{ ch chan *audit.Record }

func (r records) Emit(rec *audit.Record) { r.ch <- rec }

// call returns the next tools/call record; the records of listings that passed
// through before it (one per tools/list response) are skipped.
func (r records) call() *audit.Record {
	for {
		if rec := <-r.ch; rec.Method == "tools/call" {
			return rec
		}
	}
}

// harness runs a Session between a pipe-driven client and a fake upstream.
type harness struct {
	t      *testing.T
	up     *fakeUpstream
	in     *io.PipeWriter
	out    *bufio.Reader
	recs   records
	cancel context.CancelFunc
	done   chan error
}

func newHarness(t *testing.T, timeout time.Duration, opts ...func(*Options)) *harness {
	t.Helper()
	up := newFakeUpstream()
	return newHarnessOver(t, up, up, append([]func(*Options){func(o *Options) { o.CallTimeout = timeout }}, opts...)...)
}

// newHarnessWith runs a Session over up with options changed by opt.
func newHarnessWith(t *testing.T, up *fakeUpstream, opt func(*Options)) *harness {
	t.Helper()
	return newHarnessOver(t, up, up, opt)
}

// newHarnessWithUpstream runs a Session over upstream, a wrapper around fake.
func newHarnessWithUpstream(t *testing.T, upstream Upstream, fake *fakeUpstream) *harness {
	t.Helper()
	return newHarnessOver(t, upstream, fake)
}

func newHarnessOver(t *testing.T, upstream Upstream, up *fakeUpstream, opts ...func(*Options)) *harness {
	t.Helper()
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	an, _ := engine.New(engine.Options{})
	g, err := gate.Load(context.Background(), gate.Options{Dir: t.TempDir(), Analyzer: an, Logger: log})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { g.Close() })
	recs := records{ch: make(chan *audit.Record, 16)}
	p := &pipeline.Pipeline{Analyzer: an, Gate: g, Limiter: ctxapi.NewRateLimiter(time.Hour, nil), Audit: recs,
		Logger: log, FilterOutput: true, Kind: audit.KindGateway, AuditOutput: true}
	o := Options{Pipeline: p, Logger: log, User: ctxapi.User{UserID: "u"}, MaxMessageBytes: 1 << 10}
	for _, f := range opts {
		f(&o)
	}
	s := New(o, upstream)
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	ctx, cancel := context.WithCancel(context.Background())
	h := &harness{t: t, up: up, in: inW, out: bufio.NewReader(outR), recs: recs, cancel: cancel, done: make(chan error, 1)}
	go func() { h.done <- s.Run(ctx, inR, outW); outW.Close() }()
	t.Cleanup(func() { inW.Close(); cancel() })
	return h
}

func (h *harness) client(line string) {
	h.t.Helper()
	if _, err := io.WriteString(h.in, line+"\n"); err != nil {
		h.t.Fatal(err)
	}
}

func (h *harness) clientGets() string {
	h.t.Helper()
	ch := make(chan string, 1)
	go func() {
		l, _ := h.out.ReadString('\n')
		ch <- strings.TrimSuffix(l, "\n")
	}()
	select {
	case l := <-ch:
		return l
	case <-time.After(5 * time.Second):
		h.t.Fatal("the client got nothing")
	}
	return ""
}

func (h *harness) upstreamGets() string {
	h.t.Helper()
	select {
	case l := <-h.up.sent:
		return l
	case <-time.After(5 * time.Second):
		h.t.Fatal("the upstream got nothing")
	}
	return ""
}

func errorCode(t *testing.T, line string) int {
	t.Helper()
	var m struct {
		Error struct {
			Code int `json:"code"`
		} `json:"error"`
	}
	if err := json.Unmarshal([]byte(line), &m); err != nil {
		t.Fatalf("%q: %v", line, err)
	}
	return m.Error.Code
}

func TestRelayForwardsVerbatim(t *testing.T) {
	h := newHarness(t, 0)
	msgs := []string{
		`{"jsonrpc":"2.0","id":"r1","method":"resources/read","params":{"uri":"file:///a"},"x-extra":{"k":[1,2]}}`,
		`{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":"p","progress":1}}`,
		`{"jsonrpc":"2.0","id":9,"method":"prompts/get","params":{"name":"p"}}`,
	}
	for _, m := range msgs {
		h.client(m)
		if got := h.upstreamGets(); got != m {
			t.Fatalf("upstream got %q, want %q", got, m)
		}
	}
	// Responses and server-to-client requests come back byte for byte.
	back := []string{
		`{"jsonrpc":"2.0","id":"r1","result":{"contents":[{"uri":"file:///a","text":"<x> & y","x-new":1}]}}`,
		`{"jsonrpc":"2.0","id":"s1","method":"sampling/createMessage","params":{"messages":[]}}`,
		`{"jsonrpc":"2.0","method":"notifications/message","params":{"level":"info","data":"x"}}`,
	}
	for _, m := range back {
		h.up.lines <- m
		if got := h.clientGets(); got != m {
			t.Fatalf("client got %q, want %q", got, m)
		}
	}
	// The client's answer to the server's request goes upstream.
	h.client(`{"jsonrpc":"2.0","id":"s1","result":{"role":"assistant","content":{"type":"text","text":"hi"}}}`)
	if got := h.upstreamGets(); !strings.Contains(got, `"id":"s1"`) {
		t.Fatalf("upstream got %q", got)
	}
}

func TestRelayRejectsBadClientInput(t *testing.T) {
	tests := []struct {
		name, line string
		code       int
	}{
		{"batch", `[{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"x"}}]`, -32600},
		{"malformed JSON", `{"jsonrpc":"2.0","id":1,`, -32700},
		{"not JSON-RPC 2.0", `{"jsonrpc":"1.0","id":1,"method":"x"}`, -32600},
		{"oversized", `{"jsonrpc":"2.0","id":1,"method":"x","params":{"p":"` + strings.Repeat("a", 2000) + `"}}`, -32600},
	}
	h := newHarness(t, 0)
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			h.client(tc.line)
			if got := errorCode(t, h.clientGets()); got != tc.code {
				t.Fatalf("code %d, want %d", got, tc.code)
			}
		})
	}
	// The session still serves the next message.
	h.client(`{"jsonrpc":"2.0","id":2,"method":"ping"}`)
	if got := h.upstreamGets(); !strings.Contains(got, `"ping"`) {
		t.Fatalf("upstream got %q", got)
	}
}

func TestRelayToolCallAndRecord(t *testing.T) {
	h := newHarness(t, 0)
	h.client(`{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"t","arguments":{"a":1}}}`)
	if got := h.upstreamGets(); !strings.Contains(got, `"tools/list"`) {
		// The gateway lists tools once to learn access tags when the client has not.
		t.Fatalf("want the gateway's own tools/list first, got %q", got)
	}
	h.up.lines <- `{"jsonrpc":"2.0","id":` + ownID1 + `,"result":{"tools":[{"name":"t","annotations":{"readOnlyHint":true}}]}}`
	if got := h.upstreamGets(); !strings.Contains(got, `"tools/call"`) || !strings.Contains(got, `"id":5`) {
		t.Fatalf("upstream got %q", got)
	}
	result := `{"jsonrpc":"2.0","id":5,"result":{"content":[{"type":"text","text":"ok"}]}}`
	h.up.lines <- result
	if got := h.clientGets(); got != result {
		t.Fatalf("client got %q", got)
	}
	rec := h.recs.call()
	if rec.Tool != "t" || rec.ToolAccess != "read" || rec.ActionTaken != "pass" || !rec.Listed {
		t.Fatalf("record %+v", rec)
	}
}

// TestRelayBoundsClientInput proves clientInfo is cut to bound.ClientInfo bytes
// before it reaches a record, and a tool the upstream never listed is marked so
// (it never becomes a /metrics label).
func TestRelayBoundsClientInput(t *testing.T) {
	h := newHarness(t, 0, func(o *Options) { o.RecordClientInfo = true; o.MaxMessageBytes = 4 << 10 })
	long := strings.Repeat("n", 3000)
	h.client(`{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"` + long + `","version":"1"}}}`)
	h.upstreamGets()
	h.up.lines <- `{"jsonrpc":"2.0","id":0,"result":{"protocolVersion":"2025-11-25","capabilities":{"tools":{}},"serverInfo":{"name":"s","version":"1"}}}`
	h.clientGets()
	h.client(`{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"made_up","arguments":{}}}`)
	h.upstreamGets() // the gateway's own tools/list
	h.up.lines <- `{"jsonrpc":"2.0","id":` + ownID1 + `,"result":{"tools":[{"name":"t"}]}}`
	h.upstreamGets()
	h.up.lines <- `{"jsonrpc":"2.0","id":5,"error":{"code":-32602,"message":"Unknown tool"}}`
	h.clientGets()
	rec := h.recs.call()
	if n := len(rec.ClientInfo["name"]); n > bound.ClientInfo || n == 0 {
		t.Fatalf("clientInfo name kept %d bytes, want 1..%d", n, bound.ClientInfo)
	}
	if rec.ClientInfo["version"] != "1" {
		t.Fatalf("clientInfo version %q", rec.ClientInfo["version"])
	}
	if rec.Listed {
		t.Fatal("a tool the upstream never listed is marked listed")
	}
}

func TestRelayKeepsTasksCapability(t *testing.T) {
	h := newHarness(t, 0)
	h.client(`{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"c","version":"1"}}}`)
	h.upstreamGets()
	h.up.lines <- `{"jsonrpc":"2.0","id":0,"result":{"protocolVersion":"2025-11-25","capabilities":{"tools":{},"tasks":{"requests":{"tools":{"call":{}}}}},"serverInfo":{"name":"s","version":"1"}}}`
	got := h.clientGets()
	// tasks/result goes through the pipeline, so the capability is relayed as is
	if !strings.Contains(got, `"tasks":{"requests"`) || !strings.Contains(got, `"tools":{}`) || !strings.Contains(got, `"serverInfo"`) {
		t.Fatalf("client got %q", got)
	}
}

func TestRelayUpstreamGone(t *testing.T) {
	h := newHarness(t, 0)
	h.client(`{"jsonrpc":"2.0","id":1,"method":"resources/list"}`)
	h.upstreamGets()
	close(h.up.lines) // the upstream's stdout ends
	if got := errorCode(t, h.clientGets()); got != -32000 {
		t.Fatalf("in-flight request: code %d", got)
	}
	h.client(`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"t"}}`)
	if got := errorCode(t, h.clientGets()); got != -32000 {
		t.Fatalf("later tools/call: code %d", got)
	}
	if rec := h.recs.call(); rec.Outcome != "upstream_error" {
		t.Fatalf("record %+v", rec)
	}
}

func TestRelayCallTimeoutSendsCancel(t *testing.T) {
	h := newHarness(t, 50*time.Millisecond)
	h.client(`{"jsonrpc":"2.0","id":3,"method":"tools/list"}`)
	h.upstreamGets()
	h.up.lines <- `{"jsonrpc":"2.0","id":3,"result":{"tools":[{"name":"slow"}]}}`
	h.clientGets()
	h.client(`{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"slow"}}`)
	h.upstreamGets() // the call
	if got := h.upstreamGets(); !strings.Contains(got, "notifications/cancelled") || !strings.Contains(got, `"requestId":4`) {
		t.Fatalf("want a cancellation upstream, got %q", got)
	}
	if got := errorCode(t, h.clientGets()); got != -32001 {
		t.Fatalf("code %d", got)
	}
	if rec := h.recs.call(); rec.Outcome != "timeout" {
		t.Fatalf("record %+v", rec)
	}
	// The late answer must never reach the client: it skipped the output filter.
	h.up.lines <- `{"jsonrpc":"2.0","id":4,"result":{"content":[{"type":"text","text":"late \u001b]52;c;eA==\u0007"}]}}`
	next := `{"jsonrpc":"2.0","method":"notifications/message","params":{"level":"info","data":"after"}}`
	h.up.lines <- next
	if got := h.clientGets(); got != next {
		t.Fatalf("the client got %q, want the notification after the dropped late answer", got)
	}
}

func TestRelayClientCancel(t *testing.T) {
	h := newHarness(t, 0)
	h.client(`{"jsonrpc":"2.0","id":3,"method":"tools/list"}`)
	h.upstreamGets()
	h.up.lines <- `{"jsonrpc":"2.0","id":3,"result":{"tools":[{"name":"slow"}]}}`
	h.clientGets()
	h.client(`{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"slow"}}`)
	h.upstreamGets()
	h.client(`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":4}}`)
	if got := h.upstreamGets(); !strings.Contains(got, "notifications/cancelled") {
		t.Fatalf("upstream got %q", got)
	}
	if rec := h.recs.call(); rec.Outcome != "cancelled" {
		t.Fatalf("record %+v", rec)
	}
}

// TestRelayFailsDroppedResponses: an upstream answer the gateway cannot relay (too
// deep to decode, or over the size limit) fails its request at once, instead of
// leaving the client to wait for the call timeout.
func TestRelayFailsDroppedResponses(t *testing.T) {
	h := newHarness(t, 0)
	h.client(`{"jsonrpc":"2.0","id":3,"method":"tools/list"}`)
	h.upstreamGets()
	h.up.lines <- `{"jsonrpc":"2.0","id":3,"result":{"tools":[{"name":"t"}]}}`
	h.clientGets()

	deep := strings.Repeat("[", 20000) + strings.Repeat("]", 20000)
	h.client(`{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"t"}}`)
	h.upstreamGets()
	h.up.lines <- `{"jsonrpc":"2.0","id":4,"result":{"structuredContent":` + deep + `}}`
	if got := errorCode(t, h.clientGets()); got != methods.CodeInternalError {
		t.Fatalf("too deep: code %d", got)
	}
	if rec := h.recs.call(); rec.Outcome != "upstream_error" {
		t.Fatalf("record %+v", rec)
	}

	h.client(`{"jsonrpc":"2.0","id":5,"method":"resources/read","params":{"uri":"file:///big"}}`)
	h.upstreamGets()
	h.up.lines <- `TOOLARGE:{"jsonrpc":"2.0","id":5,"result":{"contents":[{"text":"aaaa`
	if got := errorCode(t, h.clientGets()); got != methods.CodeInternalError {
		t.Fatalf("oversized: code %d", got)
	}
}

// TestRelayRejectsDuplicateInFlightIDs: a second request with the id of one still in
// flight would steal its answer; it is refused.
func TestRelayRejectsDuplicateInFlightIDs(t *testing.T) {
	h := newHarness(t, 0)
	h.client(`{"jsonrpc":"2.0","id":1,"method":"resources/list"}`)
	h.upstreamGets()
	h.client(`{"jsonrpc":"2.0","id":1.0,"method":"prompts/list"}`)
	if got := errorCode(t, h.clientGets()); got != methods.CodeInvalidRequest {
		t.Fatalf("code %d", got)
	}
	// The first request is still answered normally.
	h.up.lines <- `{"jsonrpc":"2.0","id":1,"result":{"resources":[]}}`
	if got := h.clientGets(); !strings.Contains(got, `"resources":[]`) {
		t.Fatalf("client got %q", got)
	}
}

// routedUpstream is a fakeUpstream that routes like a multiplexer: a request's
// "server" param names its server.
type routedUpstream struct{ *fakeUpstream }

func (r routedUpstream) Route(m *jsonrpc.Message) (*jsonrpc.Message, error) {
	var p struct {
		Server string `json:"server"`
	}
	_ = json.Unmarshal(m.Params, &p)
	c := *m
	c.Upstream = p.Server
	return &c, nil
}

// TestRelayReset: a lost connection fails the requests routed to its server at
// once (all of them with one server), and no others.
func TestRelayReset(t *testing.T) {
	for _, tc := range []struct {
		name    string
		routed  bool
		reset   string
		failIDs []string
	}{
		{"one server", false, "", []string{"1", "2"}},
		{"several servers", true, "a", []string{"1"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			up := newFakeUpstream()
			var h *harness
			if tc.routed {
				h = newHarnessWithUpstream(t, routedUpstream{up}, up)
			} else {
				h = newHarnessWith(t, up, func(*Options) {})
			}
			h.client(`{"jsonrpc":"2.0","id":1,"method":"resources/read","params":{"server":"a"}}`)
			h.upstreamGets()
			h.client(`{"jsonrpc":"2.0","id":2,"method":"prompts/get","params":{"server":"b"}}`)
			h.upstreamGets()
			up.errs <- &jsonrpc.ResetError{Upstream: tc.reset, Err: errors.New("exited")}
			var failed []string
			for range tc.failIDs {
				got := h.clientGets()
				var m jsonrpc.Message
				if p, err := jsonrpc.Parse([]byte(got)); err == nil {
					m = *p
				}
				if errorCode(t, got) != methods.CodeUpstreamUnavailable || !strings.Contains(got, "exited while the request was in flight") {
					t.Fatalf("client got %q", got)
				}
				failed = append(failed, string(m.ID))
			}
			slices.Sort(failed)
			if !slices.Equal(failed, tc.failIDs) {
				t.Fatalf("failed %v, want %v", failed, tc.failIDs)
			}
			// The other server's request is still pending: its answer reaches the client.
			if len(tc.failIDs) == 1 {
				up.lines <- `{"jsonrpc":"2.0","id":2,"result":{"messages":[]}}`
				if got := h.clientGets(); !strings.Contains(got, `"id":2,"result"`) {
					t.Fatalf("client got %q", got)
				}
			}
		})
	}
}

// TestRelayRefusedRequest: a request the upstream cannot deliver now is answered at
// once, with the code a *jsonrpc.RequestError names, and the session goes on.
func TestRelayRefusedRequest(t *testing.T) {
	up := newFakeUpstream()
	up.refuse = func(m *jsonrpc.Message) error {
		switch m.Method {
		case "resources/read":
			return &jsonrpc.RequestError{Code: -32002, Message: "mcpgate: no such resource"}
		case "prompts/get":
			return fmt.Errorf("%w: restarting", jsonrpc.ErrNotDelivered)
		}
		return nil
	}
	h := newHarnessWith(t, up, func(*Options) {})
	h.client(`{"jsonrpc":"2.0","id":1,"method":"resources/read","params":{"uri":"x"}}`)
	if got := h.clientGets(); errorCode(t, got) != -32002 {
		t.Fatalf("client got %q", got)
	}
	h.client(`{"jsonrpc":"2.0","id":2,"method":"prompts/get","params":{"name":"x"}}`)
	if got := h.clientGets(); errorCode(t, got) != methods.CodeUpstreamUnavailable || !strings.Contains(got, "restarting") {
		t.Fatalf("client got %q", got)
	}
	h.client(`{"jsonrpc":"2.0","id":2,"method":"ping"}`) // id 2 is free again
	if got := h.upstreamGets(); !strings.Contains(got, `"ping"`) {
		t.Fatalf("upstream got %q", got)
	}
}

// restartingUpstream refuses requests until up is closed, like a restarting
// supervisor.
type restartingUpstream struct {
	*fakeUpstream
	up chan struct{}
}

func (r restartingUpstream) Up() <-chan struct{} { return r.up }

// TestRelayListingWaitsForRestart: a listing sent while the one server restarts is
// delivered once the server is back, instead of failing.
func TestRelayListingWaitsForRestart(t *testing.T) {
	up := newFakeUpstream()
	r := restartingUpstream{fakeUpstream: up, up: make(chan struct{})}
	var down atomic.Bool
	down.Store(true)
	refused := make(chan struct{}, 1)
	up.refuse = func(m *jsonrpc.Message) error {
		if down.Load() && m.Kind == jsonrpc.KindRequest {
			refused <- struct{}{}
			return fmt.Errorf("%w: restarting", jsonrpc.ErrNotDelivered)
		}
		return nil
	}
	h := newHarnessWithUpstream(t, r, up)
	h.client(`{"jsonrpc":"2.0","id":1,"method":"tools/list"}`)
	<-refused // the first attempt met the restart
	down.Store(false)
	close(r.up)
	if got := h.upstreamGets(); !strings.Contains(got, `"tools/list"`) {
		t.Fatalf("upstream got %q", got)
	}
	up.lines <- `{"jsonrpc":"2.0","id":1,"result":{"tools":[]}}`
	if got := h.clientGets(); got != `{"jsonrpc":"2.0","id":1,"result":{"tools":[]}}` {
		t.Fatalf("client got %q", got)
	}
}
