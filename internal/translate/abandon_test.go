package translate

import (
	"context"
	"encoding/json"
	"testing"
	"time"
)

// TestAbandon: the relay ends a round whose input request it withheld through
// Abandon. Where the translation made the input_required result, the round ends at
// once (the server's request gets an error, the server's request is cancelled under
// the id it saw) and nothing is sent that names the client's id; where the server
// made it, the server gets notifications/cancelled of the client's id.
func TestAbandon(t *testing.T) {
	t.Run("translated round", func(t *testing.T) {
		f := newFake()
		c := Wrap(f, Options{ClientInfo: map[string]string{"name": "mcpgate", "version": "test"}})
		defer c.Close(context.Background(), 0)
		toClient := toClientOf(c, 64)
		playOn(t, c, f, toClient, mscript(mopening, melicit, minputRequired))
		if err := c.Abandon(json.RawMessage(`7`), ""); err != nil {
			t.Fatal(err)
		}
		playOn(t, c, f, toClient, []mstep{
			{dir: ">s", want: []string{`"id":100`, `"code":-32001`, `cancelled`}},
			{dir: ">s", want: []string{`"notifications/cancelled"`, `"requestId":"mcpgate-tr-req-3"`}},
		})
		c.mu.Lock()
		n := len(c.rounds.all())
		c.mu.Unlock()
		if n != 0 {
			t.Fatalf("%d rounds left; want the round ended", n)
		}
		select {
		case m := <-f.sent:
			t.Fatalf("the server got %s after the round ended", m.Raw)
		case <-time.After(50 * time.Millisecond):
		}
	})
	t.Run("passing hop", func(t *testing.T) {
		f := newFake()
		c := Wrap(f, Options{})
		defer c.Close(context.Background(), 0)
		toClient := toClientOf(c, 64)
		playOn(t, c, f, toClient, []mstep{
			{dir: "c>", msg: `{"jsonrpc":"2.0","id":1,"method":"server/discover","params":{` + menv + `}}`},
			{dir: ">s", want: []string{`"method":"server/discover"`}},
			{dir: "s>", msg: `{"jsonrpc":"2.0","id":1,"result":{"resultType":"complete","supportedVersions":["2026-07-28"],"capabilities":{}}}`},
			{dir: ">c", want: []string{`"id":1`}},
		})
		if err := c.Abandon(json.RawMessage(`9`), ""); err != nil {
			t.Fatal(err)
		}
		playOn(t, c, f, toClient, []mstep{
			{dir: ">s", want: []string{`"notifications/cancelled"`, `"requestId":9`, `an input request was withheld`}},
		})
	})
}
