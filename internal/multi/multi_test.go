package multi

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mcpgate/mcpgate/internal/jsonrpc"
	"github.com/mcpgate/mcpgate/internal/methods"
	"github.com/mcpgate/mcpgate/internal/testwait"
)

// fakeServer is an in-memory MCP server: answer decides the reply to each request
// (nil: no reply), and the test can push server messages or errors.
type fakeServer struct {
	answer func(m *jsonrpc.Message) *jsonrpc.Message
	recv   chan item
	mu     sync.Mutex
	sent   []*jsonrpc.Message
	down   bool
	closed chan struct{}
	once   sync.Once
}

func newFake(answer func(m *jsonrpc.Message) *jsonrpc.Message) *fakeServer {
	return &fakeServer{answer: answer, recv: make(chan item, 64), closed: make(chan struct{})}
}

func (f *fakeServer) Send(m *jsonrpc.Message) error {
	f.mu.Lock()
	if f.down {
		f.mu.Unlock()
		if m.Kind == jsonrpc.KindRequest {
			return fmt.Errorf("%w: restarting", jsonrpc.ErrNotDelivered)
		}
		return nil
	}
	f.sent = append(f.sent, m)
	f.mu.Unlock()
	if m.Kind == jsonrpc.KindRequest && f.answer != nil {
		if r := f.answer(m); r != nil {
			f.recv <- item{msg: r}
		}
	}
	return nil
}

func (f *fakeServer) Recv() (*jsonrpc.Message, error) {
	select {
	case it := <-f.recv:
		return it.msg, it.err
	case <-f.closed:
		return nil, io.EOF
	}
}

func (f *fakeServer) Close(context.Context, time.Duration) error {
	f.once.Do(func() { close(f.closed) })
	return nil
}

func (f *fakeServer) push(line string) { f.recv <- item{msg: mustParse(line)} }

func (f *fakeServer) last(t *testing.T) *jsonrpc.Message {
	t.Helper()
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(f.sent) == 0 {
		t.Fatal("the server got nothing")
	}
	return f.sent[len(f.sent)-1]
}

func mustParse(line string) *jsonrpc.Message {
	m, err := jsonrpc.Parse([]byte(line))
	if err != nil {
		panic(err)
	}
	return m
}

func result(m *jsonrpc.Message, res string) *jsonrpc.Message {
	return jsonrpc.NewResponse(m.ID, json.RawMessage(res))
}

// server answers initialize with caps and each list method with its entries.
func server(caps string, lists map[string]string) func(m *jsonrpc.Message) *jsonrpc.Message {
	return func(m *jsonrpc.Message) *jsonrpc.Message {
		switch {
		case m.Method == "initialize":
			return result(m, `{"protocolVersion":"2025-06-18","capabilities":`+caps+`,"serverInfo":{"name":"x","version":"1"}}`)
		case lists[m.Method] != "":
			return result(m, lists[m.Method])
		case strings.HasSuffix(m.Method, "/list"):
			return jsonrpc.NewErrorResponse(m.ID, methods.CodeMethodNotFound, "no")
		}
		return nil
	}
}

func newMux(t *testing.T, servers map[string]*fakeServer) *Mux {
	t.Helper()
	var list []Server
	for _, n := range []string{"alpha", "beta", "gamma"} {
		if s := servers[n]; s != nil {
			list = append(list, Server{Name: n, Conn: s})
		}
	}
	m := New(list, Options{ListWait: -1, CallTimeout: 5 * time.Second})
	t.Cleanup(func() { _ = m.Close(context.Background(), time.Second) })
	return m
}

func recv(t *testing.T, m *Mux) (*jsonrpc.Message, error) {
	t.Helper()
	return testwait.Return(t, "a message for the client", m.Recv)
}

func ask(t *testing.T, m *Mux, line string) *jsonrpc.Message {
	t.Helper()
	if err := m.Send(mustParse(line)); err != nil {
		t.Fatal(err)
	}
	r, err := recv(t, m)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func TestRoute(t *testing.T) {
	m := newMux(t, map[string]*fakeServer{"alpha": newFake(nil), "beta": newFake(nil)})
	for _, tc := range []struct {
		name, in           string
		server, wantParams string
		code               int
	}{
		{"tool", `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"beta_echo","arguments":{"a":1}}}`, "beta", `{"arguments":{"a":1},"name":"echo"}`, 0},
		{"tool with underscores", `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"alpha_read_text_file"}}`, "alpha", `{"name":"read_text_file"}`, 0},
		{"prompt", `{"jsonrpc":"2.0","id":1,"method":"prompts/get","params":{"name":"alpha_greet"}}`, "alpha", `{"name":"greet"}`, 0},
		{"resource", `{"jsonrpc":"2.0","id":1,"method":"resources/read","params":{"uri":"beta+demo://resource/dynamic/text/2"}}`, "beta", `{"uri":"demo://resource/dynamic/text/2"}`, 0},
		{"file resource", `{"jsonrpc":"2.0","id":1,"method":"resources/subscribe","params":{"uri":"alpha+file:///tmp/a"}}`, "alpha", `{"uri":"file:///tmp/a"}`, 0},
		{"completion of a prompt", `{"jsonrpc":"2.0","id":1,"method":"completion/complete","params":{"ref":{"type":"ref/prompt","name":"beta_p"},"argument":{"name":"x","value":""}}}`, "beta", `{"argument":{"name":"x","value":""},"ref":{"name":"p","type":"ref/prompt"}}`, 0},
		{"completion of a template", `{"jsonrpc":"2.0","id":1,"method":"completion/complete","params":{"ref":{"type":"ref/resource","uri":"alpha+demo://{id}"}}}`, "alpha", `{"ref":{"type":"ref/resource","uri":"demo://{id}"}}`, 0},
		{"answered by the mux", `{"jsonrpc":"2.0","id":1,"method":"tools/list"}`, "", ``, 0},
		{"listen held by the mux", `{"jsonrpc":"2.0","id":1,"method":"subscriptions/listen","params":{"notifications":{"toolsListChanged":true}}}`, "", ``, 0},
		{"unknown server", `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"delta_x"}}`, "", "", methods.CodeInvalidParams},
		{"no prefix", `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo"}}`, "", "", methods.CodeInvalidParams},
		{"bare URI", `{"jsonrpc":"2.0","id":1,"method":"resources/read","params":{"uri":"demo://x"}}`, "", "", methods.CodeResourceNotFound},
		{"task", `{"jsonrpc":"2.0","id":1,"method":"tasks/get","params":{"taskId":"beta+t-9"}}`, "beta", `{"taskId":"t-9"}`, 0},
		{"task result", `{"jsonrpc":"2.0","id":1,"method":"tasks/result","params":{"taskId":"alpha+t-1"}}`, "alpha", `{"taskId":"t-1"}`, 0},
		{"task of no server", `{"jsonrpc":"2.0","id":1,"method":"tasks/get","params":{"taskId":"t-9"}}`, "", "", methods.CodeInvalidParams},
		{"task update", `{"jsonrpc":"2.0","id":1,"method":"tasks/update","params":{"taskId":"beta+t-9","inputResponses":{"e1":{"action":"decline"}}}}`, "beta", `{"inputResponses":{"e1":{"action":"decline"}},"taskId":"t-9"}`, 0},
		{"task update of no server", `{"jsonrpc":"2.0","id":1,"method":"tasks/update","params":{"taskId":"t-9","inputResponses":{}}}`, "", "", methods.CodeInvalidParams},
		{"unknown method", `{"jsonrpc":"2.0","id":1,"method":"vendor/x"}`, "", "", methods.CodeMethodNotFound},
	} {
		t.Run(tc.name, func(t *testing.T) {
			in := mustParse(tc.in)
			out, err := m.Route(in)
			if tc.code != 0 {
				var re *jsonrpc.RequestError
				if !errors.As(err, &re) || re.Code != tc.code || !errors.Is(err, jsonrpc.ErrNotDelivered) {
					t.Fatalf("want error %d, got %v", tc.code, err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if out.Upstream != tc.server {
				t.Fatalf("server %q, want %q", out.Upstream, tc.server)
			}
			if tc.wantParams == "" {
				if out != in {
					t.Fatal("a request the mux answers must come back unchanged")
				}
				return
			}
			if string(out.Params) != tc.wantParams {
				t.Fatalf("params %s, want %s", out.Params, tc.wantParams)
			}
			if string(in.Params) == string(out.Params) || !strings.Contains(string(out.Raw), tc.wantParams) || string(out.ID) != "1" {
				t.Fatalf("raw %s", out.Raw)
			}
		})
	}
}

// TestInitializeAndListings: initialize merges the servers' answers; listings are
// merged and namespaced; a server without a capability is not asked.
func TestInitializeAndListings(t *testing.T) {
	alpha := newFake(server(`{"tools":{},"resources":{"subscribe":true}}`, map[string]string{
		"tools/list":               `{"tools":[{"name":"read","annotations":{"readOnlyHint":true}}]}`,
		"resources/list":           `{"resources":[{"uri":"file:///a","name":"a"}]}`,
		"resources/templates/list": `{"resourceTemplates":[{"uriTemplate":"demo://{id}","name":"t"}]}`,
	}))
	beta := newFake(server(`{"tools":{},"prompts":{}}`, map[string]string{
		"tools/list":   `{"tools":[{"name":"read"}]}`,
		"prompts/list": `{"prompts":[{"name":"greet"}]}`,
	}))
	m := newMux(t, map[string]*fakeServer{"alpha": alpha, "beta": beta})
	init := ask(t, m, `{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{}}}`)
	var res struct {
		Capabilities map[string]map[string]any `json:"capabilities"`
	}
	if err := json.Unmarshal(init.Result, &res); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"tools", "prompts", "resources"} {
		if res.Capabilities[k]["listChanged"] != true {
			t.Errorf("%s: %v", k, res.Capabilities[k])
		}
	}
	for _, tc := range []struct{ method, want string }{
		{"tools/list", `{"tools":[{"annotations":{"readOnlyHint":true},"name":"alpha_read"},{"name":"beta_read"}]}`},
		{"prompts/list", `{"prompts":[{"name":"beta_greet"}]}`},
		{"resources/list", `{"resources":[{"name":"a","uri":"alpha+file:///a"}]}`},
		{"resources/templates/list", `{"resourceTemplates":[{"name":"t","uriTemplate":"alpha+demo://{id}"}]}`},
	} {
		r := ask(t, m, `{"jsonrpc":"2.0","id":"l","method":"`+tc.method+`"}`)
		if string(r.Result) != tc.want || string(r.ID) != `"l"` {
			t.Errorf("%s: %s", tc.method, r.Raw)
		}
	}
	alpha.mu.Lock()
	for _, s := range alpha.sent {
		if s.Method == "prompts/list" {
			t.Error("alpha offers no prompts but was asked for them")
		}
	}
	alpha.mu.Unlock()
}

// TestServerDownIsLeftOut: a server whose requests cannot be delivered is left out of
// initialize and listings, which still answer.
func TestServerDownIsLeftOut(t *testing.T) {
	alpha := newFake(server(`{"tools":{}}`, map[string]string{"tools/list": `{"tools":[{"name":"a"}]}`}))
	beta := newFake(server(`{"tools":{}}`, nil))
	beta.down = true
	m := newMux(t, map[string]*fakeServer{"alpha": alpha, "beta": beta})
	if r := ask(t, m, `{"jsonrpc":"2.0","id":0,"method":"initialize","params":{}}`); r.Error != nil {
		t.Fatalf("initialize: %s", r.Raw)
	}
	if r := ask(t, m, `{"jsonrpc":"2.0","id":1,"method":"tools/list"}`); string(r.Result) != `{"tools":[{"name":"alpha_a"}]}` {
		t.Fatalf("tools/list: %s", r.Raw)
	}
	err := m.Send(mustParse(`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"beta_x"}}`))
	if !errors.Is(err, jsonrpc.ErrNotDelivered) || !strings.Contains(err.Error(), `"beta"`) {
		t.Fatalf("call to a down server: %v", err)
	}
}

// TestServerRequestsAndResponses: a server→client request gets a mux id, the client's
// answer goes back to that server with the server's own id; responses and
// notifications are marked with their server.
func TestServerRequestsAndResponses(t *testing.T) {
	alpha, beta := newFake(nil), newFake(nil)
	m := newMux(t, map[string]*fakeServer{"alpha": alpha, "beta": beta})
	beta.push(`{"jsonrpc":"2.0","id":1,"method":"sampling/createMessage","params":{}}`)
	req, err := recv(t, m)
	if err != nil || req.Upstream != "beta" || !strings.HasPrefix(string(req.ID), `"`+jsonrpc.OwnIDPrefix+"mux-") {
		t.Fatalf("server request: %v %v", req, err)
	}
	if err := m.Send(mustParse(`{"jsonrpc":"2.0","id":` + string(req.ID) + `,"result":{"content":{"type":"text","text":"hi"}}}`)); err != nil {
		t.Fatal(err)
	}
	back := beta.last(t)
	if back.Kind != jsonrpc.KindResponse || string(back.ID) != "1" {
		t.Fatalf("answer to the server: %s", back.Raw)
	}
	alpha.push(`{"jsonrpc":"2.0","id":7,"result":{}}`)
	if r, _ := recv(t, m); r.Upstream != "alpha" || string(r.Raw) != `{"jsonrpc":"2.0","id":7,"result":{}}` {
		t.Fatalf("response: %+v", r)
	}
	alpha.push(`{"jsonrpc":"2.0","method":"notifications/resources/updated","params":{"uri":"file:///a"}}`)
	if n, _ := recv(t, m); n.Upstream != "alpha" || string(n.Params) != `{"uri":"alpha+file:///a"}` {
		t.Fatalf("notification: %s", n.Raw)
	}
	// A cancellation goes only to the server the relay names.
	if err := m.Send(&jsonrpc.Message{Raw: []byte(`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":7}}`), Kind: jsonrpc.KindNotification, Method: "notifications/cancelled", Upstream: "alpha"}); err != nil {
		t.Fatal(err)
	}
	if alpha.last(t).Method != "notifications/cancelled" || len(beta.sent) != 1 {
		t.Fatal("cancellation misrouted")
	}
}

// TestResetAndDrop: a lost connection and a dropped message come up naming their
// server; the mux's own request to the lost server fails at once.
func TestResetAndDrop(t *testing.T) {
	alpha := newFake(nil) // never answers
	m := newMux(t, map[string]*fakeServer{"alpha": alpha, "beta": newFake(server(`{"tools":{}}`, map[string]string{"tools/list": `{"tools":[]}`}))})
	if err := m.Send(mustParse(`{"jsonrpc":"2.0","id":1,"method":"tools/list"}`)); err != nil {
		t.Fatal(err)
	}
	testwait.For(t, "alpha to be asked", func() bool {
		alpha.mu.Lock()
		defer alpha.mu.Unlock()
		return len(alpha.sent) > 0
	})
	alpha.recv <- item{err: &jsonrpc.ResetError{Err: errors.New("exited")}}
	var reset *jsonrpc.ResetError
	var listing *jsonrpc.Message
	for listing == nil || reset == nil {
		r, err := recv(t, m)
		switch {
		case errors.As(err, &reset):
			if reset.Upstream != "alpha" {
				t.Fatalf("reset names %q", reset.Upstream)
			}
		case err != nil:
			t.Fatal(err)
		default:
			listing = r
		}
	}
	if string(listing.Result) != `{"tools":[]}` {
		t.Fatalf("listing: %s", listing.Raw)
	}
	alpha.recv <- item{err: &jsonrpc.DropError{Head: []byte(`{"id":5,`), Reason: jsonrpc.ReasonTooLarge}}
	var drop *jsonrpc.DropError
	if _, err := recv(t, m); !errors.As(err, &drop) || drop.Upstream != "alpha" {
		t.Fatalf("drop: %v", err)
	}
}

func TestRewriteResponse(t *testing.T) {
	m := newMux(t, map[string]*fakeServer{"alpha": newFake(nil), "beta": newFake(nil)})
	for _, tc := range []struct{ method, result, want string }{
		{"tools/call",
			`{"content":[{"type":"text","text":"uri"},{"type":"resource_link","uri":"demo://resource/dynamic/text/2","name":"r"},{"type":"resource","resource":{"uri":"file:///x","text":"t"}}]}`,
			`{"content":[{"text":"uri","type":"text"},{"name":"r","type":"resource_link","uri":"beta+demo://resource/dynamic/text/2"},{"resource":{"text":"t","uri":"beta+file:///x"},"type":"resource"}]}`},
		{"resources/read", `{"contents":[{"uri":"file:///x","text":"t"}]}`, `{"contents":[{"text":"t","uri":"beta+file:///x"}]}`},
		{"prompts/get", `{"messages":[{"role":"user","content":{"type":"resource","resource":{"uri":"demo://r","text":"t"}}}]}`,
			`{"messages":[{"content":{"resource":{"text":"t","uri":"beta+demo://r"},"type":"resource"},"role":"user"}]}`},
		{"tools/call", `{"content":[{"type":"text","text":"plain"}]}`, `{"content":[{"type":"text","text":"plain"}]}`},
		{"tools/list", `{"tools":[{"name":"x","uri":"y"}]}`, `{"tools":[{"name":"x","uri":"y"}]}`},
		{"tools/call", `{"task":{"taskId":"t-1","status":"working"}}`, `{"task":{"status":"working","taskId":"beta+t-1"}}`},
		{"tasks/get", `{"taskId":"t-1","status":"completed"}`, `{"status":"completed","taskId":"beta+t-1"}`},
		{"tools/call", `{"resultType":"task","taskId":"t-1","status":"working"}`, `{"resultType":"task","status":"working","taskId":"beta+t-1"}`},
		{"prompts/get", `{"resultType":"task","taskId":"t-2","status":"working"}`, `{"resultType":"task","status":"working","taskId":"beta+t-2"}`},
		{"tasks/get", `{"resultType":"task","taskId":"t-1","status":"working"}`, `{"resultType":"task","status":"working","taskId":"beta+t-1"}`},
		{"tools/call", `{"content":[],"taskId":"t-1"}`, `{"content":[],"taskId":"t-1"}`},
		// A task's result, by tasks/result or inlined in a 2026-07-28 tasks/get, is a
		// CallToolResult: its links name the server's resources as a tools/call's do.
		{"tasks/result", `{"content":[{"type":"resource_link","uri":"file:///x","name":"r"}]}`,
			`{"content":[{"name":"r","type":"resource_link","uri":"beta+file:///x"}]}`},
		{"tasks/get", `{"taskId":"t-1","status":"completed","result":{"content":[{"type":"resource","resource":{"uri":"file:///x","text":"t"}}]}}`,
			`{"result":{"content":[{"resource":{"text":"t","uri":"beta+file:///x"},"type":"resource"}]},"status":"completed","taskId":"beta+t-1"}`},
	} {
		in := result(mustParse(`{"jsonrpc":"2.0","id":3,"method":"x"}`), tc.result)
		in.Upstream = "beta"
		out := m.RewriteResponse(tc.method, in)
		if string(out.Result) != tc.want {
			t.Errorf("%s: %s", tc.method, out.Result)
		}
		if string(out.Result) == tc.result && out != in {
			t.Errorf("%s: an unchanged response must be the same message", tc.method)
		}
		if string(out.ID) != "3" || !strings.Contains(string(out.Raw), tc.want) {
			t.Errorf("%s: raw %s", tc.method, out.Raw)
		}
	}
}

func TestValidName(t *testing.T) {
	for name, ok := range map[string]bool{"fs": true, "server-2": true, "a_b": false, "a+b": false, "": false, "-x": false} {
		if (ValidName(name) == nil) != ok {
			t.Errorf("%q", name)
		}
	}
}

// TestInitializeServerInfoVersion: the mux answers initialize for every server, so
// serverInfo names mcpgate and its version ("dev" when the build has none), never a
// placeholder of its own.
func TestInitializeServerInfoVersion(t *testing.T) {
	for _, tc := range []struct{ version, want string }{{"v1.4.0 (commit 0123456789ab)", "v1.4.0 (commit 0123456789ab)"}, {"", "dev"}} {
		a := newFake(server(`{"tools":{}}`, nil))
		b := newFake(server(`{"tools":{}}`, nil))
		m := New([]Server{{Name: "a", Conn: a}, {Name: "b", Conn: b}}, Options{ListWait: -1, CallTimeout: 5 * time.Second, Version: tc.version})
		r := ask(t, m, `{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{}}}`)
		_ = m.Close(context.Background(), time.Second)
		var res struct {
			ServerInfo map[string]string `json:"serverInfo"`
		}
		if err := json.Unmarshal(r.Result, &res); err != nil {
			t.Fatal(err)
		}
		if res.ServerInfo["name"] != "mcpgate" || res.ServerInfo["version"] != tc.want {
			t.Errorf("version %q: serverInfo %v, want version %q", tc.version, res.ServerInfo, tc.want)
		}
	}
}

// TestTaskStatusNamespaced: a task's status notification (2025-11-25, and the
// 2026-07-28 extension's notifications/tasks) names the task as the client knows it,
// <server>+<taskId>, and the links of a result it inlines the resource,
// <server>+<uri>.
func TestTaskStatusNamespaced(t *testing.T) {
	m := newMux(t, map[string]*fakeServer{"alpha": newFake(nil), "beta": newFake(nil)})
	n := mustParse(`{"jsonrpc":"2.0","method":"notifications/tasks/status","params":{"taskId":"t-1","status":"working"}}`)
	if got := string(m.notification("beta", n).Params); got != `{"status":"working","taskId":"beta+t-1"}` {
		t.Errorf("got %s", got)
	}
	n = mustParse(`{"jsonrpc":"2.0","method":"notifications/tasks","params":{"taskId":"t-1","status":"working"}}`)
	if got := string(m.notification("beta", n).Params); got != `{"status":"working","taskId":"beta+t-1"}` {
		t.Errorf("2026-07-28: got %s", got)
	}
	for _, method := range []string{"notifications/tasks/status", "notifications/tasks"} { // a status inlining the task's result
		n = mustParse(`{"jsonrpc":"2.0","method":"` + method + `","params":{"taskId":"t-1","status":"completed","result":{"content":[{"type":"resource_link","uri":"file:///x","name":"r"}]}}}`)
		if got := string(m.notification("beta", n).Params); got != `{"result":{"content":[{"name":"r","type":"resource_link","uri":"beta+file:///x"}]},"status":"completed","taskId":"beta+t-1"}` {
			t.Errorf("%s with a result: got %s", method, got)
		}
	}
}

// TestDiscoverCapabilities: with several servers, server/discover advertises a
// capability when at least one server has it and the multiplexer serves it with
// several servers (docs/decisions.md#discover-capabilities): one server's prompts are
// advertised beside the other's tools (a strict intersection would hide them), and
// so is one server's tasks extension, whose requests, results and notifications the
// multiplexer routes and namespaces, and listChanged and subscribe, served by the
// multiplexer's subscriptions/listen; the legacy tasks capability, experimental and
// other extensions are left out.
func TestDiscoverCapabilities(t *testing.T) {
	discovering := func(caps string) func(m *jsonrpc.Message) *jsonrpc.Message {
		return func(m *jsonrpc.Message) *jsonrpc.Message {
			if m.Method == "server/discover" {
				return result(m, `{"resultType":"complete","supportedVersions":["2026-07-28"],"capabilities":`+caps+`}`)
			}
			return nil
		}
	}
	for _, tc := range []struct {
		name, alpha, beta, want string
	}{
		{"union", `{"tools":{}}`, `{"prompts":{}}`, `{"prompts":{},"tools":{}}`},
		{"both have it", `{"tools":{}}`, `{"tools":{}}`, `{"tools":{}}`},
		{"none has it", `{}`, `{}`, `{}`},
		{"list changes and subscriptions through subscriptions/listen", `{"tools":{"listChanged":true},"prompts":{"listChanged":true}}`, `{"resources":{"subscribe":true,"listChanged":true}}`, `{"prompts":{"listChanged":true},"resources":{"listChanged":true,"subscribe":true},"tools":{"listChanged":true}}`},
		{"completions and logging", `{"completions":{}}`, `{"logging":{}}`, `{"completions":{},"logging":{}}`},
		{"the tasks extension of one server", `{"tools":{}}`, `{"extensions":{"io.modelcontextprotocol/tasks":{}}}`, `{"extensions":{"io.modelcontextprotocol/tasks":{}},"tools":{}}`},
		{"the legacy tasks capability is left out", `{"tools":{},"tasks":{"list":{},"requests":{"tools":{"call":{}}}}}`, `{"tasks":{}}`, `{"tools":{}}`},
		{"experimental and other extensions are left out", `{"experimental":{"x":{}},"extensions":{"io.modelcontextprotocol/ui":{}}}`, `{"resources":{}}`, `{"resources":{}}`},
		{"unknown capabilities and members are left out", `{"sampling":{},"tools":{"future":true}}`, `{}`, `{"tools":{}}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := newMux(t, map[string]*fakeServer{"alpha": newFake(discovering(tc.alpha)), "beta": newFake(discovering(tc.beta))})
			r := ask(t, m, `{"jsonrpc":"2.0","id":0,"method":"server/discover","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}}}`)
			var res struct {
				Capabilities json.RawMessage `json:"capabilities"`
			}
			if err := json.Unmarshal(r.Result, &res); err != nil {
				t.Fatalf("%s: %v", r.Raw, err)
			}
			if string(res.Capabilities) != tc.want {
				t.Errorf("capabilities %s, want %s", res.Capabilities, tc.want)
			}
		})
	}
}

// TestInitializeCheckRefuses: the check reads each server's own initialize answer
// before the merge; a server it refuses is left out of the session (not in the merged
// capabilities or the listings, not sent the client's notifications, its own requests
// answered with the refusal and never relayed), a request routed to it is answered
// with the refusal, and the other server keeps working.
func TestInitializeCheckRefuses(t *testing.T) {
	alpha := newFake(server(`{"tools":{}}`, map[string]string{"tools/list": `{"tools":[{"name":"read"}]}`}))
	beta := newFake(server(`{"tools":{},"prompts":{}}`, map[string]string{"tools/list": `{"tools":[{"name":"write"}]}`}))
	m := newMux(t, map[string]*fakeServer{"alpha": alpha, "beta": beta})
	var mu sync.Mutex
	checked := map[string]string{}
	m.CheckInitialize(func(server string, req, resp *jsonrpc.Message) string {
		mu.Lock()
		defer mu.Unlock()
		checked[server] = req.Method + " " + string(resp.Result)
		if server == "beta" {
			return "mcpgate: beta refused"
		}
		return ""
	})
	init := ask(t, m, `{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{}}}`)
	mu.Lock()
	if len(checked) != 2 || !strings.HasPrefix(checked["beta"], `initialize {"protocolVersion"`) {
		t.Errorf("checked %v", checked)
	}
	mu.Unlock()
	if init.Error != nil || strings.Contains(string(init.Result), "prompts") {
		t.Fatalf("initialize: %s", init.Raw)
	}
	if r := ask(t, m, `{"jsonrpc":"2.0","id":1,"method":"tools/list"}`); string(r.Result) != `{"tools":[{"name":"alpha_read"}]}` {
		t.Errorf("tools/list: %s", r.Raw)
	}
	_, err := m.Route(mustParse(`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"beta_write","arguments":{}}}`))
	var re *jsonrpc.RequestError
	if !errors.As(err, &re) || re.Code != methods.CodeInternalError || re.Message != "mcpgate: beta refused" {
		t.Errorf("a call to the refused server: %v", err)
	}
	if r, err := m.Route(mustParse(`{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"alpha_read","arguments":{}}}`)); err != nil || r.Upstream != "alpha" {
		t.Errorf("a call to the other server: %v", err)
	}
	if err := m.Send(mustParse(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)); err != nil {
		t.Fatal(err)
	}
	beta.push(`{"jsonrpc":"2.0","id":9,"method":"sampling/createMessage","params":{}}`)
	beta.push(`{"jsonrpc":"2.0","method":"notifications/tools/list_changed"}`)
	alpha.push(`{"jsonrpc":"2.0","method":"notifications/tools/list_changed"}`)
	if r, _ := recv(t, m); r.Upstream != "alpha" {
		t.Errorf("relayed from the refused server: %s", r.Raw)
	}
	testwait.For(t, "the refused server's request answered", func() bool {
		beta.mu.Lock()
		defer beta.mu.Unlock()
		last := beta.sent[len(beta.sent)-1]
		return last.Kind == jsonrpc.KindResponse && string(last.ID) == "9" && strings.Contains(string(last.Error), "beta refused")
	})
	beta.mu.Lock()
	for _, s := range beta.sent {
		if s.Method == "notifications/initialized" || s.Method == "tools/list" {
			t.Errorf("the refused server was sent %s", s.Method)
		}
	}
	beta.mu.Unlock()
}

// listenServer answers server/discover with caps and holds subscriptions/listen open.
func listenServer(caps string) *fakeServer {
	return newFake(func(m *jsonrpc.Message) *jsonrpc.Message {
		if m.Method == "server/discover" {
			return result(m, `{"resultType":"complete","supportedVersions":["2026-07-28"],"capabilities":`+caps+`}`)
		}
		return nil
	})
}

// sentOf returns what a fake server got of a method, in order.
func sentOf(f *fakeServer, method string) []*jsonrpc.Message {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []*jsonrpc.Message
	for _, m := range f.sent {
		if m.Method == method {
			out = append(out, m)
		}
	}
	return out
}

const envelope = `"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}`

// openListen discovers alpha's and beta's capabilities, sends the client's listen (id
// 5) and returns the listens the servers got, by server.
func openListen(t *testing.T, m *Mux, servers map[string]*fakeServer, notifications string) map[string]*jsonrpc.Message {
	t.Helper()
	if r := ask(t, m, `{"jsonrpc":"2.0","id":0,"method":"server/discover","params":{`+envelope+`}}`); r.Error != nil {
		t.Fatalf("discover: %s", r.Raw)
	}
	if err := m.Send(mustParse(`{"jsonrpc":"2.0","id":5,"method":"subscriptions/listen","params":{"notifications":` + notifications + `,` + envelope + `}}`)); err != nil {
		t.Fatal(err)
	}
	got := map[string]*jsonrpc.Message{}
	for name, f := range servers {
		if l := sentOf(f, "subscriptions/listen"); len(l) == 1 {
			got[name] = l[0]
		} else if len(l) > 1 {
			t.Fatalf("%s got %d listens", name, len(l))
		}
	}
	return got
}

// TestListenFansOut: with several servers a client's subscriptions/listen goes to
// each server that can send what it asks for (list changes by the server's
// listChanged, resource subscriptions by the URI's server, un-namespaced, when it has
// subscribe), the servers' acknowledgements reach the client as one (URIs
// namespaced), their notifications carry the client's subscriptionId (and a
// namespaced URI), a notification naming another server's listen is dropped, and
// the client's cancellation cancels every server's listen.
func TestListenFansOut(t *testing.T) {
	alpha := listenServer(`{"tools":{"listChanged":true},"resources":{"subscribe":true,"listChanged":true}}`)
	beta := listenServer(`{"tools":{},"prompts":{"listChanged":true},"resources":{}}`)
	gamma := listenServer(`{"completions":{}}`)
	servers := map[string]*fakeServer{"alpha": alpha, "beta": beta, "gamma": gamma}
	m := newMux(t, servers)
	listens := openListen(t, m, servers, `{"toolsListChanged":true,"promptsListChanged":true,"resourcesListChanged":true,"resourceSubscriptions":["alpha+file:///a","beta+file:///b","delta+x","alpha+file:///a"]}`)
	if len(listens) != 2 || listens["gamma"] != nil {
		t.Fatalf("listens sent to %v; want alpha and beta", listens)
	}
	notificationsOf := func(l *jsonrpc.Message) string {
		var p struct {
			N json.RawMessage `json:"notifications"`
		}
		_ = json.Unmarshal(l.Params, &p)
		return string(p.N)
	}
	if got := notificationsOf(listens["alpha"]); got != `{"resourceSubscriptions":["file:///a"],"resourcesListChanged":true,"toolsListChanged":true}` {
		t.Errorf("alpha asked for %s", got)
	}
	if got := notificationsOf(listens["beta"]); got != `{"promptsListChanged":true}` {
		t.Errorf("beta asked for %s", got)
	}
	if !strings.Contains(string(listens["alpha"].Params), `"io.modelcontextprotocol/protocolVersion":"2026-07-28"`) || string(listens["alpha"].ID) == "5" {
		t.Errorf("alpha's listen: %s", listens["alpha"].Raw)
	}
	aid, bid := string(listens["alpha"].ID), string(listens["beta"].ID)
	alpha.push(`{"jsonrpc":"2.0","method":"notifications/subscriptions/acknowledged","params":{"notifications":{"toolsListChanged":true,"resourcesListChanged":true,"resourceSubscriptions":["file:///a"]},"_meta":{"io.modelcontextprotocol/subscriptionId":` + aid + `}}}`)
	beta.push(`{"jsonrpc":"2.0","method":"notifications/subscriptions/acknowledged","params":{"notifications":{"promptsListChanged":true},"_meta":{"io.modelcontextprotocol/subscriptionId":` + bid + `}}}`)
	ack, err := recv(t, m)
	if err != nil || ack.Method != "notifications/subscriptions/acknowledged" ||
		string(ack.Params) != `{"_meta":{"io.modelcontextprotocol/subscriptionId":5},"notifications":{"promptsListChanged":true,"resourceSubscriptions":["alpha+file:///a"],"resourcesListChanged":true,"toolsListChanged":true}}` {
		t.Fatalf("acknowledgement: %v %v", ack, err)
	}
	alpha.push(`{"jsonrpc":"2.0","method":"notifications/resources/updated","params":{"uri":"file:///a","_meta":{"io.modelcontextprotocol/subscriptionId":` + aid + `}}}`)
	if n, _ := recv(t, m); n.Upstream != "alpha" || string(n.Params) != `{"_meta":{"io.modelcontextprotocol/subscriptionId":5},"uri":"alpha+file:///a"}` {
		t.Fatalf("resources/updated: %s", n.Raw)
	}
	beta.push(`{"jsonrpc":"2.0","method":"notifications/tools/list_changed","params":{"_meta":{"io.modelcontextprotocol/subscriptionId":` + aid + `}}}`) // alpha's listen: dropped
	beta.push(`{"jsonrpc":"2.0","method":"notifications/prompts/list_changed","params":{"_meta":{"io.modelcontextprotocol/subscriptionId":` + bid + `}}}`)
	if n, _ := recv(t, m); n.Method != "notifications/prompts/list_changed" || string(n.Params) != `{"_meta":{"io.modelcontextprotocol/subscriptionId":5}}` {
		t.Fatalf("list_changed: %s", n.Raw)
	}
	if err := m.Send(mustParse(`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":5}}`)); err != nil {
		t.Fatal(err)
	}
	for name, f := range map[string]*fakeServer{"alpha": alpha, "beta": beta} {
		c := sentOf(f, "notifications/cancelled")
		if len(c) != 1 || !strings.Contains(string(c[0].Params), `"requestId":`+string(listens[name].ID)) {
			t.Errorf("%s: cancellations %v", name, c)
		}
	}
	alpha.push(`{"jsonrpc":"2.0","method":"notifications/tools/list_changed","params":{"_meta":{"io.modelcontextprotocol/subscriptionId":` + aid + `}}}`) // ended: dropped
	alpha.push(`{"jsonrpc":"2.0","method":"notifications/tools/list_changed"}`)
	if n, _ := recv(t, m); string(n.Raw) != `{"jsonrpc":"2.0","method":"notifications/tools/list_changed"}` {
		t.Fatalf("after the cancellation: %s", n.Raw)
	}
}

// TestListenNothingToSend: a listen no server can serve is acknowledged with nothing
// and sent to no server.
func TestListenNothingToSend(t *testing.T) {
	alpha, beta := listenServer(`{"tools":{}}`), listenServer(`{"resources":{}}`)
	servers := map[string]*fakeServer{"alpha": alpha, "beta": beta}
	m := newMux(t, servers)
	if l := openListen(t, m, servers, `{"toolsListChanged":true,"resourceSubscriptions":["beta+file:///b"]}`); len(l) != 0 {
		t.Fatalf("listens sent: %v", l)
	}
	if ack, _ := recv(t, m); string(ack.Params) != `{"_meta":{"io.modelcontextprotocol/subscriptionId":5},"notifications":{}}` {
		t.Fatalf("acknowledgement: %s", ack.Raw)
	}
}

// TestListenLostServer: when a server's connection is lost, the client's listen ends
// with an error (a restarted server holds no listen, so the client listens again),
// and the other servers' listens are cancelled.
func TestListenLostServer(t *testing.T) {
	alpha, beta := listenServer(`{"tools":{"listChanged":true}}`), listenServer(`{"tools":{"listChanged":true}}`)
	servers := map[string]*fakeServer{"alpha": alpha, "beta": beta}
	m := newMux(t, servers)
	listens := openListen(t, m, servers, `{"toolsListChanged":true}`)
	if len(listens) != 2 {
		t.Fatalf("listens: %v", listens)
	}
	alpha.recv <- item{err: &jsonrpc.ResetError{Err: errors.New("exited")}}
	r, err := recv(t, m)
	if err != nil || r.Kind != jsonrpc.KindResponse || string(r.ID) != "5" || r.Error == nil {
		t.Fatalf("the client's listen: %v %v", r, err)
	}
	if c := sentOf(beta, "notifications/cancelled"); len(c) != 1 || !strings.Contains(string(c[0].Params), string(listens["beta"].ID)) {
		t.Fatalf("beta's cancellations: %v", c)
	}
}

// TestListenEnded: a server that ends its listen (its response) leaves the others;
// the last one's end answers the client's listen, naming the subscription.
func TestListenEnded(t *testing.T) {
	alpha, beta := listenServer(`{"tools":{"listChanged":true}}`), listenServer(`{"prompts":{"listChanged":true}}`)
	servers := map[string]*fakeServer{"alpha": alpha, "beta": beta}
	m := newMux(t, servers)
	listens := openListen(t, m, servers, `{"toolsListChanged":true,"promptsListChanged":true}`)
	alpha.push(`{"jsonrpc":"2.0","method":"notifications/subscriptions/acknowledged","params":{"notifications":{"toolsListChanged":true},"_meta":{"io.modelcontextprotocol/subscriptionId":` + string(listens["alpha"].ID) + `}}}`)
	beta.push(`{"jsonrpc":"2.0","id":` + string(listens["beta"].ID) + `,"result":{}}`)
	if ack, _ := recv(t, m); string(ack.Params) != `{"_meta":{"io.modelcontextprotocol/subscriptionId":5},"notifications":{"toolsListChanged":true}}` {
		t.Fatalf("acknowledgement: %s", ack.Raw)
	}
	alpha.push(`{"jsonrpc":"2.0","id":` + string(listens["alpha"].ID) + `,"result":{}}`)
	if r, _ := recv(t, m); string(r.Raw) != `{"jsonrpc":"2.0","id":5,"result":{"_meta":{"io.modelcontextprotocol/subscriptionId":5}}}` {
		t.Fatalf("end: %s", r.Raw)
	}
}

// TestDiscoverCheckRefuses: with several 2026-07-28 servers each server's own
// server/discover answer (its serverInfo under _meta) is read by the same check as
// an initialize answer; a refused server is left out of the merged answer and of
// the session.
func TestDiscoverCheckRefuses(t *testing.T) {
	alpha := listenServer(`{"tools":{}}`)
	beta := listenServer(`{"tools":{},"prompts":{}}`)
	m := newMux(t, map[string]*fakeServer{"alpha": alpha, "beta": beta})
	var mu sync.Mutex
	checked := map[string]string{}
	m.CheckInitialize(func(server string, req, resp *jsonrpc.Message) string {
		mu.Lock()
		defer mu.Unlock()
		checked[server] = req.Method
		if server == "beta" {
			return "mcpgate: beta refused"
		}
		return ""
	})
	d := ask(t, m, `{"jsonrpc":"2.0","id":0,"method":"server/discover","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"}}}`)
	mu.Lock()
	if checked["alpha"] != "server/discover" || checked["beta"] != "server/discover" {
		t.Errorf("checked %v", checked)
	}
	mu.Unlock()
	if d.Error != nil || strings.Contains(string(d.Result), "prompts") {
		t.Fatalf("server/discover: %s", d.Raw)
	}
	_, err := m.Route(mustParse(`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"beta_write","arguments":{}}}`))
	var re *jsonrpc.RequestError
	if !errors.As(err, &re) || re.Message != "mcpgate: beta refused" {
		t.Errorf("a call to the refused server: %v", err)
	}
}
