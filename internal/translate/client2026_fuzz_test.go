package translate

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/mcpgate/mcpgate/internal/jsonrpc"
)

// sink is a server connection that takes every message and says nothing.
type sink struct{}

func (sink) Send(*jsonrpc.Message) error                { return nil }
func (sink) Recv() (*jsonrpc.Message, error)            { select {} }
func (sink) Close(context.Context, time.Duration) error { return nil }

// FuzzModernServerMessages: whatever a 2025-11-25 server sends while a translated
// tools/call is in flight, and whatever params the client's next request carries
// (a retry with any requestState and inputResponses), the translation does not
// panic, and everything it hands the client is one JSON-RPC message that parses.
func FuzzModernServerMessages(f *testing.F) {
	f.Add([]byte(`{"jsonrpc":"2.0","id":100,"method":"elicitation/create","params":{"message":"m"}}`), []byte(`{"requestState":"x","inputResponses":{"mcpgate-4":{"action":"accept"}}}`))
	f.Add([]byte(`{"jsonrpc":"2.0","id":"mcpgate-tr-req-3","result":{"content":[]}}`), []byte(`{}`))
	f.Add([]byte(`{"jsonrpc":"2.0","id":"mcpgate-tr-req-3","error":{"code":-32002,"message":"x"}}`), []byte(`{"name":"t"}`))
	f.Add([]byte(`{"jsonrpc":"2.0","method":"notifications/resources/updated","params":{"uri":1}}`), []byte(`{"notifications":{"resourceSubscriptions":[1]}}`))
	f.Add([]byte(`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":"mcpgate-tr-req-3"}}`), []byte(`{"requestState":null}`))
	f.Fuzz(func(t *testing.T, server, params []byte) {
		c := Wrap(sink{}, Options{})
		defer c.Close(context.Background(), 0)
		send := func(raw string) {
			m, err := jsonrpc.Parse([]byte(raw))
			if err != nil {
				return // the relay refuses what does not parse; it never reaches the hop
			}
			_ = c.Send(m)
		}
		recv := func(raw []byte) {
			m, err := jsonrpc.Parse(raw)
			if err != nil {
				return
			}
			if out := c.recvModern(m); out != nil {
				c.enqueue(out)
			}
		}
		send(`{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"t",` + env1 + `}}`)
		recv([]byte(`{"jsonrpc":"2.0","id":"mcpgate-tr-discover-1","error":{"code":-32601,"message":"no"}}`))
		recv([]byte(`{"jsonrpc":"2.0","id":"mcpgate-tr-initialize-2","result":{"capabilities":{"tools":{},"logging":{},"resources":{"subscribe":true,"listChanged":true}}}}`))
		recv(server)
		for _, method := range []string{"tools/call", "subscriptions/listen"} {
			var obj map[string]json.RawMessage
			if json.Unmarshal(params, &obj) == nil && obj != nil {
				obj["_meta"] = json.RawMessage(`{"io.modelcontextprotocol/protocolVersion":"2026-07-28"}`)
				b, _ := json.Marshal(obj)
				send(`{"jsonrpc":"2.0","id":8,"method":"` + method + `","params":` + string(b) + `}`)
			}
		}
		recv(server)
		for m := c.dequeue(); m != nil; m = c.dequeue() {
			if _, err := jsonrpc.Parse(m.Raw); err != nil {
				t.Fatalf("the client got %s: %v", m.Raw, err)
			}
		}
	})
}

const env1 = `"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"}`
