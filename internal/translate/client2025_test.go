package translate

import (
	"context"
	"encoding/json"
	"io"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/mcpgate/mcpgate/internal/jsonrpc"
	"github.com/mcpgate/mcpgate/internal/testwait"
)

// fakeServer is a scripted server connection: what the translation sends arrives on
// sent; what the test writes to recv is the server's.
type fakeServer struct {
	sent chan *jsonrpc.Message
	recv chan *jsonrpc.Message
	done chan struct{}
}

func newFake() *fakeServer {
	return &fakeServer{sent: make(chan *jsonrpc.Message, 64), recv: make(chan *jsonrpc.Message), done: make(chan struct{})}
}

func (f *fakeServer) Send(m *jsonrpc.Message) error { f.sent <- m; return nil }

func (f *fakeServer) Recv() (*jsonrpc.Message, error) {
	select {
	case m := <-f.recv:
		return m, nil
	case <-f.done:
		return nil, io.EOF
	}
}

func (f *fakeServer) Close(context.Context, time.Duration) error {
	select {
	case <-f.done:
	default:
		close(f.done)
	}
	return nil
}

// step is one exchange of a script: ">" the client sends line, "<" the server sends
// line, "S" the server gets a message holding every part of want, "C" the client gets
// one, "-S" the server gets nothing (before the next message the script expects),
// "close" closes the connection, "sleep" waits line as a duration.
type step struct {
	dir  string
	line string
	want []string
}

const (
	initReq    = `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{"elicitation":{}},"clientInfo":{"name":"cl","version":"9"}}}`
	refused    = `{"jsonrpc":"2.0","id":1,"error":{"code":-32022,"message":"Unsupported protocol version: 2025-11-25","data":{"supported":["2026-07-28"],"requested":"2025-11-25"}}}`
	discovered = `{"jsonrpc":"2.0","id":"mcpgate-t-1","result":{"supportedVersions":["2026-07-28"],"capabilities":{"tools":{"listChanged":true},"resources":{"subscribe":true,"listChanged":true}},"instructions":"be nice","resultType":"complete","_meta":{"io.modelcontextprotocol/serverInfo":{"name":"modern","version":"1.0.0"}}}}`
	callReq    = `{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"ask","arguments":{"q":1},"_meta":{"progressToken":"p"}}}`
	twoInputs  = `{"jsonrpc":"2.0","id":7,"result":{"resultType":"input_required","inputRequests":{"b":{"method":"roots/list"},"a":{"method":"elicitation/create","params":{"message":"ok?","requestedSchema":{"type":"object","properties":{}}}}},"requestState":"s\u003ct<&` + "\u2028" + `x"}}`
	final      = `{"jsonrpc":"2.0","id":"mcpgate-t-4","result":{"content":[{"type":"text","text":"done"}],"resultType":"complete"}}`
)

// translated is the opening of every translated script: the refused initialize, the
// probe and the gateway's answer.
var translated = []step{
	{">", initReq, nil},
	{"S", "", []string{`"method":"initialize"`, `"protocolVersion":"2025-11-25"`}},
	{"<", refused, nil},
	{"S", "", []string{`"id":"mcpgate-t-1"`, `"method":"server/discover"`, `"io.modelcontextprotocol/protocolVersion":"2026-07-28"`,
		`"io.modelcontextprotocol/clientCapabilities":{"elicitation":{}}`, `"io.modelcontextprotocol/clientInfo":{"name":"cl","version":"9"}`}},
	{"<", discovered, nil},
	{"C", "", []string{`"id":1`, `"protocolVersion":"2025-11-25"`, `"serverInfo":{"name":"modern","version":"1.0.0"}`,
		`"instructions":"be nice"`, `"tools":{}`, `"resources":{}`}},
	{">", `{"jsonrpc":"2.0","method":"notifications/initialized"}`, nil},
}

// asked is the client's side of twoInputs: its two requests, in key order.
var asked = []step{
	{">", callReq, nil},
	{"S", "", []string{`"id":7`, `"progressToken":"p"`, `"io.modelcontextprotocol/protocolVersion":"2026-07-28"`}},
	{"<", twoInputs, nil},
	{"C", "", []string{`"id":"mcpgate-t-2"`, `"method":"elicitation/create"`, `"message":"ok?"`}},
	{"C", "", []string{`"id":"mcpgate-t-3"`, `"method":"roots/list"`}},
}

func script(parts ...[]step) []step {
	var out []step
	for _, p := range parts {
		out = append(out, p...)
	}
	return out
}

func TestLegacyScripts(t *testing.T) {
	defer func(d time.Duration) { inputRoundTimeout = d }(inputRoundTimeout)
	inputRoundTimeout = 300 * time.Millisecond
	loop := []step{}
	for i := 0; i < maxInputRounds; i++ {
		id := `"mcpgate-t-` + strconv.Itoa(2+2*i) + `"`
		loop = append(loop,
			step{"C", "", []string{`"id":` + id, `"method":"roots/list"`}},
			step{">", `{"jsonrpc":"2.0","id":` + id + `,"result":{"roots":[]}}`, nil},
			step{"S", "", []string{`"id":"mcpgate-t-` + strconv.Itoa(3+2*i) + `"`, `"inputResponses":{"r":{"roots":[]}}`}},
			step{"<", `{"jsonrpc":"2.0","id":"mcpgate-t-` + strconv.Itoa(3+2*i) + `","result":{"resultType":"input_required","inputRequests":{"r":{"method":"roots/list"}}}}`, nil})
	}
	for _, c := range []struct {
		name  string
		steps []step
	}{
		{"a server that serves 2025-11-25 is not translated", []step{
			{">", initReq, nil},
			{"S", "", []string{`"method":"initialize"`}},
			{"<", `{"jsonrpc":"2.0","id":1,"result":{"protocolVersion":"2025-11-25","capabilities":{"tools":{"listChanged":true}},"serverInfo":{"name":"old","version":"1"}}}`, nil},
			{"C", "", []string{`"listChanged":true`, `"name":"old"`}},
			{">", `{"jsonrpc":"2.0","method":"notifications/initialized"}`, nil},
			{"S", "", []string{`"notifications/initialized"`}},
			{">", `{"jsonrpc":"2.0","id":2,"method":"tools/list"}`, nil},
			{"S", "", []string{`{"jsonrpc":"2.0","id":2,"method":"tools/list"}`}},
		}},
		{"a 2025-11-25 server's request under a translation-like id (a second gateway's) gets the client's answer", []step{
			{">", initReq, nil},
			{"S", "", []string{`"method":"initialize"`}},
			{"<", `{"jsonrpc":"2.0","id":1,"result":{"protocolVersion":"2025-11-25","capabilities":{},"serverInfo":{"name":"gw","version":"1"}}}`, nil},
			{"C", "", []string{`"name":"gw"`}},
			{"<", `{"jsonrpc":"2.0","id":"mcpgate-t-2","method":"roots/list"}`, nil},
			{"C", "", []string{`"id":"mcpgate-t-2"`, `"method":"roots/list"`}},
			{">", `{"jsonrpc":"2.0","id":"mcpgate-t-2","result":{"roots":[]}}`, nil},
			{"S", "", []string{`"id":"mcpgate-t-2"`, `"roots":[]`}},
		}},
		{"initialize answered from server/discover; the envelope on every request", script(translated, []step{
			{">", `{"jsonrpc":"2.0","id":2,"method":"tools/list"}`, nil},
			{"S", "", []string{`"id":2`, `"io.modelcontextprotocol/protocolVersion":"2026-07-28"`, `"io.modelcontextprotocol/clientInfo":{"name":"cl","version":"9"}`}},
			{">", `{"jsonrpc":"2.0","id":3,"method":"ping"}`, nil},
			{"C", "", []string{`"id":3`, `"result":{}`}},
			{">", `{"jsonrpc":"2.0","id":4,"method":"logging/setLevel","params":{"level":"debug"}}`, nil},
			{"C", "", []string{`"id":4`, `"result":{}`}},
			{">", `{"jsonrpc":"2.0","id":5,"method":"resources/subscribe","params":{"uri":"x:///a"}}`, nil},
			{"C", "", []string{`"id":5`, `"code":-32601`}},
			{">", `{"jsonrpc":"2.0","id":6,"method":"prompts/list","params":{"cursor":"c"}}`, nil},
			{"S", "", []string{`"id":6`, `"cursor":"c"`, `"io.modelcontextprotocol/logLevel":"debug"`}}, // ping, setLevel, subscribe never reached it
			{"<", `{"jsonrpc":"2.0","id":6,"result":{"prompts":[],"resultType":"complete"}}`, nil},
			{"C", "", []string{`"id":6`, `"prompts":[]`}},
		})},
		{"server/discover fails: the client gets the refusal", []step{
			{">", initReq, nil},
			{"S", "", []string{`"method":"initialize"`}},
			{"<", refused, nil},
			{"S", "", []string{`"method":"server/discover"`}},
			{"<", `{"jsonrpc":"2.0","id":"mcpgate-t-1","error":{"code":-32601,"message":"nope"}}`, nil},
			{"C", "", []string{`"id":1`, `"code":-32022`}},
		}},
		{"input_required: the client's answers in the retry, requestState byte for byte, the result under the client's id", script(translated, asked, []step{
			{">", `{"jsonrpc":"2.0","id":"mcpgate-t-3","result":{"roots":[{"uri":"file:///r"}]}}`, nil},
			{"-S", "", nil},
			{">", `{"jsonrpc":"2.0","id":"mcpgate-t-2","result":{"action":"accept","content":{}}}`, nil},
			{"S", "", []string{`"id":"mcpgate-t-4"`, `"method":"tools/call"`, `"arguments":{"q":1}`, `"progressToken":"p"`,
				`"requestState":"s\u003ct<&` + "\u2028" + `x"`, `"inputResponses":{"a":{"action":"accept","content":{}},"b":{"roots":[{"uri":"file:///r"}]}}`,
				`"io.modelcontextprotocol/protocolVersion":"2026-07-28"`}},
			{"<", final, nil},
			{"C", "", []string{`"id":7`, `"text":"done"`}},
		})},
		{"the client answers an input request with an error (or the gateway withholds it)", script(translated, asked, []step{
			{">", `{"jsonrpc":"2.0","id":"mcpgate-t-2","error":{"code":-32603,"message":"mcpgate: withheld (audit log entry e1)"}}`, nil},
			{"C", "", []string{`"method":"notifications/cancelled"`, `"requestId":"mcpgate-t-3"`}},
			{"C", "", []string{`"id":7`, `"code":-32603`, `elicitation/create`, `withheld (audit log entry e1)`}},
			{">", `{"jsonrpc":"2.0","id":"mcpgate-t-3","result":{"roots":[]}}`, nil}, // late: dropped
			{"-S", "", nil},
		})},
		{"the client never answers: the round times out", script(translated, asked, []step{
			{"C", "", []string{`"method":"notifications/cancelled"`, `"requestId":"mcpgate-t-2"`}},
			{"C", "", []string{`"method":"notifications/cancelled"`, `"requestId":"mcpgate-t-3"`}},
			{"C", "", []string{`"id":7`, `"code":-32001`, `did not answer`}},
			{"-S", "", nil},
		})},
		{"a server that asks forever is stopped after the round limit", script(translated, []step{
			{">", callReq, nil},
			{"S", "", []string{`"id":7`}},
			{"<", `{"jsonrpc":"2.0","id":7,"result":{"resultType":"input_required","inputRequests":{"r":{"method":"roots/list"}}}}`, nil},
		}, loop, []step{
			{"C", "", []string{`"id":7`, `"code":-32603`, `more than 8 times`}},
		})},
		{"requestState alone is retried after a pause", script(translated, []step{
			{">", callReq, nil},
			{"S", "", []string{`"id":7`}},
			{"<", `{"jsonrpc":"2.0","id":7,"result":{"resultType":"input_required","requestState":"busy"}}`, nil},
			{"S", "", []string{`"id":"mcpgate-t-2"`, `"requestState":"busy"`}},
			{"<", `{"jsonrpc":"2.0","id":"mcpgate-t-2","result":{"content":[],"resultType":"complete"}}`, nil},
			{"C", "", []string{`"id":7`, `"content":[]`}},
		})},
		{"resultType is read decoded: input\\u005frequired starts a round", script(translated, []step{
			{">", callReq, nil},
			{"S", "", []string{`"id":7`}},
			{"<", `{"jsonrpc":"2.0","id":7,"result":{"resultType":"input\u005frequired","inputRequests":{"r":{"method":"roots/list"}}}}`, nil},
			{"C", "", []string{`"id":"mcpgate-t-2"`, `"method":"roots/list"`}},
		})},
		{"an input request of an unknown method fails the request", script(translated, []step{
			{">", callReq, nil},
			{"S", "", []string{`"id":7`}},
			{"<", `{"jsonrpc":"2.0","id":7,"result":{"resultType":"input_required","inputRequests":{"x":{"method":"tools/call","params":{}}}}}`, nil},
			{"C", "", []string{`"id":7`, `"code":-32603`, `not elicitation/create`}},
		})},
		{"input_required with neither member fails the request", script(translated, []step{
			{">", callReq, nil},
			{"S", "", []string{`"id":7`}},
			{"<", `{"jsonrpc":"2.0","id":7,"result":{"resultType":"input_required"}}`, nil},
			{"C", "", []string{`"id":7`, `"code":-32603`, `neither`}},
		})},
		{"cancelled while the client answers: nothing reaches the server", script(translated, asked, []step{
			{">", `{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":7}}`, nil},
			{"C", "", []string{`"method":"notifications/cancelled"`, `"requestId":"mcpgate-t-2"`}},
			{"C", "", []string{`"method":"notifications/cancelled"`, `"requestId":"mcpgate-t-3"`}},
			{">", `{"jsonrpc":"2.0","id":"mcpgate-t-2","result":{"action":"cancel"}}`, nil},
			{"-S", "", nil},
		})},
		{"cancelled while the retry is with the server: the cancellation names the retry", script(translated, asked, []step{
			{">", `{"jsonrpc":"2.0","id":"mcpgate-t-2","result":{"action":"decline"}}`, nil},
			{">", `{"jsonrpc":"2.0","id":"mcpgate-t-3","result":{"roots":[]}}`, nil},
			{"S", "", []string{`"id":"mcpgate-t-4"`}},
			{">", `{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":7,"reason":"user"}}`, nil},
			{"S", "", []string{`"method":"notifications/cancelled"`, `"requestId":"mcpgate-t-4"`, `"reason":"user"`}},
		})},
		{"an error of the server passes under the client's id", script(translated, []step{
			{">", callReq, nil},
			{"S", "", []string{`"id":7`}},
			{"<", `{"jsonrpc":"2.0","id":7,"error":{"code":-32602,"message":"bad"}}`, nil},
			{"C", "", []string{`"id":7`, `"code":-32602`}},
		})},
		{"closed in the middle (a restart): later answers are dropped, no timer fires", script(translated, asked, []step{
			{"close", "", nil},
			{">", `{"jsonrpc":"2.0","id":"mcpgate-t-2","result":{"action":"accept"}}`, nil},
			{">", `{"jsonrpc":"2.0","id":"mcpgate-t-3","result":{"roots":[]}}`, nil},
			{"sleep", "400ms", nil},
			{"-S", "", nil},
		})},
		{"an answer to an input request of a connection before the restart is dropped", script(translated, []step{
			{">", `{"jsonrpc":"2.0","id":"mcpgate-t-9","result":{"roots":[]}}`, nil},
			{">", `{"jsonrpc":"2.0","id":2,"method":"tools/list"}`, nil},
			{"S", "", []string{`"id":2`}},
		})},
	} {
		t.Run(c.name, func(t *testing.T) { run(t, c.steps) })
	}
}

func run(t *testing.T, steps []step) {
	f := newFake()
	c := Wrap(f, Options{})
	got := toClientOf(c, 64)
	defer c.Close(context.Background(), time.Second)
	const wait = testwait.Timeout // a loaded machine may take seconds; a passing step never waits it out
	for i, s := range steps {
		switch s.dir {
		case ">":
			m, err := jsonrpc.Parse([]byte(s.line))
			if err != nil {
				t.Fatalf("step %d: %v", i, err)
			}
			if err := c.Send(m); err != nil {
				t.Fatalf("step %d: send: %v", i, err)
			}
		case "<":
			m, err := jsonrpc.Parse([]byte(s.line))
			if err != nil {
				t.Fatalf("step %d: %v", i, err)
			}
			f.recv <- m
		case "S", "C":
			var ch <-chan *jsonrpc.Message = f.sent
			if s.dir == "C" {
				ch = got
			}
			select {
			case m := <-ch:
				if m == nil {
					t.Fatalf("step %d: the connection ended", i)
				}
				for _, w := range s.want {
					if !strings.Contains(string(m.Raw), w) {
						t.Fatalf("step %d: %s got %s\nwant it to hold %s", i, s.dir, m.Raw, w)
					}
				}
			case <-time.After(wait):
				t.Fatalf("step %d: %s got nothing; want %q", i, s.dir, s.want)
			}
		case "-S":
			select {
			case m := <-f.sent:
				t.Fatalf("step %d: the server got %s; want nothing", i, m.Raw)
			case <-time.After(100 * time.Millisecond):
			}
		case "close":
			_ = c.Close(context.Background(), time.Second)
		case "sleep":
			d, _ := time.ParseDuration(s.line)
			time.Sleep(d)
		}
	}
	select {
	case m, ok := <-got:
		if ok && m != nil {
			t.Fatalf("the client got %s after the script", m.Raw)
		}
	case <-time.After(50 * time.Millisecond):
	}
}

// lastConn keeps the last message sent to it.
type lastConn struct{ last *jsonrpc.Message }

func (l *lastConn) Send(m *jsonrpc.Message) error              { l.last = m; return nil }
func (l *lastConn) Recv() (*jsonrpc.Message, error)            { return nil, io.EOF }
func (l *lastConn) Close(context.Context, time.Duration) error { return nil }

// BenchmarkLegacySend: a 2025-11-25 client's tools/call to a server that serves
// 2025-11-25 (passed) and to one that speaks 2026-07-28 only (the envelope added).
func BenchmarkLegacySend(b *testing.B) {
	for _, c := range []struct {
		name  string
		phase phase
		line  string
	}{
		{"passed", phasePassing, callReq},
		{"translated", phaseTranslating, strings.Replace(callReq, `,"_meta":{"progressToken":"p"}`, "", 1)},
		{"translated,_meta", phaseTranslating, callReq},
	} {
		m, _ := jsonrpc.Parse([]byte(c.line))
		phase := c.phase
		b.Run(c.name, func(b *testing.B) {
			up := &lastConn{}
			c := Wrap(up, Options{})
			c.mode, c.phase = legacyClient, phase
			c.legacy.meta = map[string]json.RawMessage{"io.modelcontextprotocol/protocolVersion": json.RawMessage(`"2026-07-28"`),
				"io.modelcontextprotocol/clientCapabilities": json.RawMessage(`{"elicitation":{}}`)}
			c.legacy.metaRaw = mustMarshal(c.legacy.meta)
			if err := c.Send(m); err != nil || (phase == phaseTranslating) != strings.Contains(string(up.last.Raw), `"io.modelcontextprotocol/protocolVersion":"2026-07-28"`) ||
				!json.Valid(up.last.Raw) || !strings.Contains(string(up.last.Raw), `"arguments":{"q":1}`) {
				b.Fatalf("sent %s (%v)", up.last.Raw, err)
			}
			b.ReportAllocs()
			for b.Loop() {
				_ = c.Send(m)
				c.rounds = newRoundTable()
			}
		})
	}
}

// stuckServer takes no message (a server that stopped reading its input) until it
// is closed.
type stuckServer struct{ *fakeServer }

func (s stuckServer) Send(m *jsonrpc.Message) error {
	if m.Method == "initialize" {
		return nil
	}
	<-s.done
	return io.ErrClosedPipe
}

// TestLegacyCloseWhileProbeBlocks: a server that refuses initialize and then stops
// reading leaves the server/discover probe blocked in its send; Close still returns
// (it closes the server, which ends the send) instead of waiting for the hop's lock
// the blocked probe holds.
func TestLegacyCloseWhileProbeBlocks(t *testing.T) {
	f := stuckServer{newFake()}
	c := Wrap(f, Options{})
	go func() {
		for {
			if _, err := c.Recv(); err != nil {
				return
			}
		}
	}()
	m, _ := jsonrpc.Parse([]byte(initReq))
	if err := c.Send(m); err != nil {
		t.Fatal(err)
	}
	r, _ := jsonrpc.Parse([]byte(refused))
	f.recv <- r
	time.Sleep(50 * time.Millisecond) // the probe's send is blocked now
	closed := make(chan struct{})
	go func() { _ = c.Close(context.Background(), 0); close(closed) }()
	select {
	case <-closed:
	case <-time.After(testwait.Timeout):
		t.Fatal("Close did not return while the probe's send was blocked")
	}
}

// TestLegacyInputRequestIDsUnguessable: the ids of the input requests the client is
// asked carry a random part, so a client cannot answer one it has not been shown
// (ahead of the relay, which runs a roots/list answer through the roots pins only
// for a request it forwarded, or in place of a request the relay withholds).
func TestLegacyInputRequestIDsUnguessable(t *testing.T) {
	defer func(f func() string) { askNonce = f }(askNonce)
	askNonce = drawnAskNonce
	f := newFake()
	c := Wrap(f, Options{})
	defer c.Close(context.Background(), 0)
	got := toClientOf(c, 16)
	send := func(s string) {
		m, err := jsonrpc.Parse([]byte(s))
		if err != nil {
			t.Fatal(err)
		}
		_ = c.Send(m)
	}
	serve := func(s string) {
		m, err := jsonrpc.Parse([]byte(s))
		if err != nil {
			t.Fatal(err)
		}
		f.recv <- m
	}
	send(initReq)
	<-f.sent
	serve(refused)
	<-f.sent
	serve(discovered)
	<-got
	send(callReq)
	<-f.sent
	serve(twoInputs)
	for deadline := time.Now().Add(testwait.Timeout); ; time.Sleep(time.Millisecond) { // the requests are made, not yet read
		c.mu.Lock()
		n := len(c.rounds.byAsk)
		c.mu.Unlock()
		if n == 2 || time.Now().After(deadline) {
			break
		}
	}
	// the answers a client that guesses the sequence sends before it reads the requests
	send(`{"jsonrpc":"2.0","id":"mcpgate-t-2","result":{"action":"accept","content":{}}}`)
	send(`{"jsonrpc":"2.0","id":"mcpgate-t-3","result":{"roots":[{"uri":"file:///"}]}}`)
	var ids []string
	for range 2 {
		select {
		case m := <-got:
			ids = append(ids, m.IDKey())
		case <-time.After(testwait.Timeout):
			t.Fatal("the client was not asked")
		}
	}
	select {
	case m := <-f.sent:
		t.Fatalf("guessed answers reached the server: %s", m.Raw)
	case <-time.After(100 * time.Millisecond):
	}
	if ids[0] == ids[1] || strings.HasPrefix(ids[0], `"mcpgate-t-2`) && len(ids[0]) < len(`"mcpgate-t-2-`)+8 {
		t.Fatalf("input request ids %v are guessable", ids)
	}
	send(`{"jsonrpc":"2.0","id":` + ids[0] + `,"result":{"action":"accept","content":{}}}`)
	send(`{"jsonrpc":"2.0","id":` + ids[1] + `,"result":{"roots":[]}}`)
	select {
	case m := <-f.sent:
		if !strings.Contains(string(m.Raw), `"inputResponses"`) {
			t.Fatalf("the server got %s; want the retry", m.Raw)
		}
	case <-time.After(testwait.Timeout):
		t.Fatal("the answers to the ids shown did not make the retry")
	}
}

// TestLegacyProbeDoesNotBlockRecv: the server/discover probe is sent off the
// reader's goroutine, so a server that refuses initialize and then stops reading
// does not stop Recv from returning the server's next message.
func TestLegacyProbeDoesNotBlockRecv(t *testing.T) {
	f := stuckServer{newFake()}
	c := Wrap(f, Options{})
	defer c.Close(context.Background(), 0)
	got := toClientOf(c, 4)
	m, _ := jsonrpc.Parse([]byte(initReq))
	if err := c.Send(m); err != nil {
		t.Fatal(err)
	}
	r, _ := jsonrpc.Parse([]byte(refused))
	f.recv <- r
	n, _ := jsonrpc.Parse([]byte(`{"jsonrpc":"2.0","method":"notifications/message","params":{"level":"info","data":"x"}}`))
	select {
	case f.recv <- n:
	case <-time.After(testwait.Timeout):
		t.Fatal("Recv is blocked in the probe's send: the server's next message is not read")
	}
	select {
	case m := <-got:
		if m.Method != "notifications/message" {
			t.Fatalf("got %s, want the server's notification", m.Method)
		}
	case <-time.After(testwait.Timeout):
		t.Fatal("Recv is blocked in the probe's send: the server's next message is not returned")
	}
}
