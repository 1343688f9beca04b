package translate

import (
	"context"
	"encoding/json"
	"regexp"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mcpgate/mcpgate/internal/jsonrpc"
	"github.com/mcpgate/mcpgate/internal/testwait"
	"github.com/mcpgate/mcpgate/internal/upstream"
	"github.com/mcpgate/mcpgate/vocab"
)

// mstep is one exchange of a script: "c>" the client sends msg, "s>" the server
// sends msg, ">s" the server gets a message holding every want and no not, ">c" the
// client gets one. {state}, {key} and {up} stand for the last requestState, the
// last inputRequests key the client got, and the id of the last request the server
// got.
type mstep struct {
	dir, msg  string
	want, not []string
}

const menv = `"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{"elicitation":{}},"io.modelcontextprotocol/clientInfo":{"name":"cl","version":"1"}}`

// mopening has a client's tools/call (id 7) probe a 2025-11-25 server, which the
// gateway initializes; the call then reaches the server under an id of the
// gateway's.
var mopening = []mstep{
	{dir: "c>", msg: `{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"t","arguments":{},` + menv + `}}`},
	{dir: ">s", want: []string{`"method":"server/discover"`, `"io.modelcontextprotocol/protocolVersion":"2026-07-28"`}},
	{dir: "s>", msg: `{"jsonrpc":"2.0","id":"{up}","error":{"code":-32601,"message":"Method not found"}}`},
	{dir: ">s", want: []string{`"method":"initialize"`, `"protocolVersion":"2025-11-25"`, `"clientInfo":{"name":"cl","version":"1"}`, `"capabilities":{"elicitation":{}}`}},
	{dir: "s>", msg: `{"jsonrpc":"2.0","id":"{up}","result":{"protocolVersion":"2025-11-25","capabilities":{"tools":{},"logging":{}},"serverInfo":{"name":"v1","version":"1.0"}}}`},
	{dir: ">s", want: []string{`"method":"notifications/initialized"`}},
	{dir: ">s", want: []string{`"method":"tools/call"`, `"id":"mcpgate-tr-req-`, `"name":"t"`}, not: []string{`io.modelcontextprotocol`, `"id":7`}},
}

var melicit = mstep{dir: "s>", msg: `{"jsonrpc":"2.0","id":100,"method":"elicitation/create","params":{"message":"name?","requestedSchema":{"type":"object","properties":{}}}}`}

var minputRequired = mstep{dir: ">c", want: []string{`"id":7`, `"resultType":"input_required"`, `"method":"elicitation/create"`, `"message":"name?"`, `"requestState":"mcpgate:`}}

var mretry = mstep{dir: "c>", msg: `{"jsonrpc":"2.0","id":8,"method":"tools/call","params":{"name":"t","arguments":{},"inputResponses":{"{key}":{"action":"accept","content":{"n":"x"}}},"requestState":"{state}",` + menv + `}}`}

func mscript(parts ...any) []mstep {
	var out []mstep
	for _, p := range parts {
		switch v := p.(type) {
		case mstep:
			out = append(out, v)
		case []mstep:
			out = append(out, v...)
		}
	}
	return out
}

func TestModernTranslation(t *testing.T) {
	cases := []struct {
		name  string
		steps []mstep
	}{
		{"a server that speaks 2026-07-28 gets every message as it is", []mstep{
			{dir: "c>", msg: `{"jsonrpc":"2.0","id":1,"method":"server/discover","params":{` + menv + `}}`},
			{dir: ">s", want: []string{`"id":1`, `"method":"server/discover"`}},
			{dir: "s>", msg: `{"jsonrpc":"2.0","id":1,"result":{"resultType":"complete","supportedVersions":["2026-07-28"],"capabilities":{},"ttlMs":0,"cacheScope":"public"}}`},
			{dir: ">c", want: []string{`"id":1`, `"cacheScope":"public"`}},
			{dir: "c>", msg: `{"jsonrpc":"2.0","id":2,"method":"tools/list","params":{` + menv + `}}`},
			{dir: ">s", want: []string{`"id":2`, `"io.modelcontextprotocol/protocolVersion"`}},
		}},
		{"the client's server/discover is answered from the InitializeResult", []mstep{
			{dir: "c>", msg: `{"jsonrpc":"2.0","id":1,"method":"server/discover","params":{` + menv + `}}`},
			{dir: ">s", want: []string{`"id":1`, `"method":"server/discover"`}},
			{dir: "s>", msg: `{"jsonrpc":"2.0","id":1,"error":{"code":-32601,"message":"Method not found"}}`},
			{dir: ">s", want: []string{`"method":"initialize"`}},
			{dir: "s>", msg: `{"jsonrpc":"2.0","id":"{up}","result":{"protocolVersion":"2025-11-25","capabilities":{"tools":{"listChanged":true},"tasks":{}},"serverInfo":{"name":"v1","version":"1.0"},"instructions":"use t"}}`},
			{dir: ">s", want: []string{`"method":"notifications/initialized"`}},
			{dir: ">c", want: []string{`"id":1`, `"supportedVersions":["2026-07-28"]`, `"capabilities":{"tools":{"listChanged":true}}`,
				`"_meta":{"io.modelcontextprotocol/serverInfo":{"name":"v1","version":"1.0"}}`, `"instructions":"use t"`, `"resultType":"complete"`, `"ttlMs":0`, `"cacheScope":"private"`},
				not: []string{`"tasks"`}},
		}},
		{"a discover result without 2026-07-28 is translated", []mstep{
			{dir: "c>", msg: `{"jsonrpc":"2.0","id":1,"method":"server/discover","params":{` + menv + `}}`},
			{dir: ">s"},
			{dir: "s>", msg: `{"jsonrpc":"2.0","id":1,"result":{"supportedVersions":["2025-11-25"]}}`},
			{dir: ">s", want: []string{`"method":"initialize"`}},
		}},
		{"a request is held until the handshake, loses the envelope, and its result is made valid", mscript(
			[]mstep{
				{dir: "c>", msg: `{"jsonrpc":"2.0","id":5,"method":"tools/list","params":{"_meta":{"progressToken":3,"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}}}`},
				{dir: "c>", msg: `{"jsonrpc":"2.0","id":6,"method":"resources/read","params":{"uri":"x:///a",` + menv + `}}`},
				{dir: ">s", want: []string{`"method":"server/discover"`}},
				{dir: "s>", msg: `{"jsonrpc":"2.0","id":"{up}","error":{"code":-32601,"message":"Method not found"}}`},
				{dir: ">s", want: []string{`"method":"initialize"`, `"clientInfo":{"name":"mcpgate"`}},
				{dir: "s>", msg: `{"jsonrpc":"2.0","id":"{up}","result":{"protocolVersion":"2025-11-25","capabilities":{"tools":{}},"serverInfo":{"name":"v1","version":"1.0"}}}`},
				{dir: ">s", want: []string{`"method":"notifications/initialized"`}},
				{dir: ">s", want: []string{`"method":"tools/list"`, `"_meta":{"progressToken":3}`}, not: []string{`io.modelcontextprotocol`}},
				{dir: "s>", msg: `{"jsonrpc":"2.0","id":"{up}","result":{"tools":[]}}`},
				{dir: ">c", want: []string{`"id":5`, `"resultType":"complete"`, `"ttlMs":0`, `"cacheScope":"private"`}},
				{dir: ">s", want: []string{`"method":"resources/read"`}, not: []string{`"_meta"`}},
				{dir: "s>", msg: `{"jsonrpc":"2.0","id":"{up}","error":{"code":-32002,"message":"Resource not found"}}`},
				{dir: ">c", want: []string{`"id":6`, `"code":-32602`, `"Resource not found"`}},
			})},
		{"the 2026-07-28 members of a 2025-11-25 server's result are the gateway's: no input_required, no public cacheScope, no ttlMs of its own", mscript(mopening,
			mstep{dir: "s>", msg: `{"jsonrpc":"2.0","id":"{up}","result":{"resultType":"input_required","inputRequests":{"x":{"method":"elicitation/create","params":{"message":"m"}}},"requestState":"S","content":[]}}`},
			mstep{dir: ">c", want: []string{`"id":7`, `"resultType":"complete"`}, not: []string{`input_required`}},
			mstep{dir: "c>", msg: `{"jsonrpc":"2.0","id":9,"method":"tools/list","params":{` + menv + `}}`},
			mstep{dir: ">s", want: []string{`"method":"tools/list"`}},
			mstep{dir: "s>", msg: `{"jsonrpc":"2.0","id":"{up}","result":{"tools":[],"cacheScope":"public","ttlMs":86400000}}`},
			mstep{dir: ">c", want: []string{`"id":9`, `"cacheScope":"private"`, `"ttlMs":0`, `"resultType":"complete"`}, not: []string{`public`, `86400000`}},
		)},
		{"a changed logLevel becomes logging/setLevel first", mscript(mopening,
			mstep{dir: "s>", msg: `{"jsonrpc":"2.0","id":"{up}","result":{"content":[]}}`},
			mstep{dir: ">c", want: []string{`"id":7`, `"resultType":"complete"`}},
			mstep{dir: "c>", msg: `{"jsonrpc":"2.0","id":9,"method":"tools/list","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/logLevel":"debug"}}}`},
			mstep{dir: ">s", want: []string{`"method":"logging/setLevel"`, `"level":"debug"`}},
			mstep{dir: ">s", want: []string{`"method":"tools/list"`}},
			mstep{dir: "c>", msg: `{"jsonrpc":"2.0","id":10,"method":"tools/list","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/logLevel":"debug"}}}`},
			mstep{dir: ">s", want: []string{`"method":"tools/list"`}},
		)},
		{"an elicitation in flight becomes an input request; the retry answers it and gets the result", mscript(mopening,
			mstep{dir: "s>", msg: `{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":1,"progress":1}}`},
			mstep{dir: ">c", want: []string{`"notifications/progress"`}},
			melicit, minputRequired, mretry,
			mstep{dir: ">s", want: []string{`"id":100`, `"result":{"action":"accept","content":{"n":"x"}}`}},
			mstep{dir: "s>", msg: `{"jsonrpc":"2.0","id":"mcpgate-tr-req-3","result":{"content":[{"type":"text","text":"hi x"}]}}`},
			mstep{dir: ">c", want: []string{`"id":8`, `"hi x"`, `"resultType":"complete"`}},
		)},
		{"a result that comes before the retry waits for it", mscript(mopening, melicit, minputRequired,
			mstep{dir: "s>", msg: `{"jsonrpc":"2.0","id":"mcpgate-tr-req-3","result":{"content":[{"type":"text","text":"early"}]}}`},
			mretry,
			mstep{dir: ">s", want: []string{`"id":100`, `"result"`}},
			mstep{dir: ">c", want: []string{`"id":8`, `"early"`}},
		)},
		{"several rounds: a request the server sends after the retry is the next round", mscript(mopening, melicit, minputRequired, mretry,
			mstep{dir: ">s", want: []string{`"id":100`}},
			mstep{dir: "s>", msg: `{"jsonrpc":"2.0","id":101,"method":"sampling/createMessage","params":{"messages":[],"maxTokens":5}}`},
			mstep{dir: ">c", want: []string{`"id":8`, `"input_required"`, `"sampling/createMessage"`}, not: []string{`elicitation`}},
			mstep{dir: "c>", msg: `{"jsonrpc":"2.0","id":9,"method":"tools/call","params":{"name":"t","inputResponses":{"{key}":{"role":"assistant","content":{"type":"text","text":"ok"},"model":"m"}},"requestState":"{state}",` + menv + `}}`},
			mstep{dir: ">s", want: []string{`"id":101`, `"model":"m"`}},
			mstep{dir: "s>", msg: `{"jsonrpc":"2.0","id":"mcpgate-tr-req-3","result":{"content":[]}}`},
			mstep{dir: ">c", want: []string{`"id":9`, `"resultType":"complete"`}},
		)},
		{"an input request the retry leaves unanswered is asked again", mscript(mopening, melicit, minputRequired,
			mstep{dir: "c>", msg: `{"jsonrpc":"2.0","id":8,"method":"tools/call","params":{"name":"t","inputResponses":{},"requestState":"{state}",` + menv + `}}`},
			mstep{dir: ">c", want: []string{`"id":8`, `"input_required"`, `"message":"name?"`}},
		)},
		{"an unknown requestState gets -32602 and reaches no server", mscript(mopening,
			mstep{dir: "c>", msg: `{"jsonrpc":"2.0","id":8,"method":"tools/call","params":{"name":"t","requestState":"mcpgate:forged",` + menv + `}}`},
			mstep{dir: ">c", want: []string{`"id":8`, `"code":-32602`, `requestState`}},
		)},
		{"a requestState used twice is unknown the second time", mscript(mopening, melicit, minputRequired, mretry,
			mstep{dir: ">s", want: []string{`"id":100`}},
			mstep{dir: "c>", msg: `{"jsonrpc":"2.0","id":9,"method":"tools/call","params":{"name":"t","requestState":"{state}",` + menv + `}}`},
			mstep{dir: ">c", want: []string{`"id":9`, `"code":-32602`}},
		)},
		{"a requestState retried on another method is refused", mscript(mopening, melicit, minputRequired,
			mstep{dir: "c>", msg: `{"jsonrpc":"2.0","id":8,"method":"prompts/get","params":{"name":"t","requestState":"{state}",` + menv + `}}`},
			mstep{dir: ">c", want: []string{`"id":8`, `"code":-32602`}},
		)},
		{"a requestState retried for another tool is refused: the result is the issuing call's, judged and recorded under its name", mscript(mopening, melicit, minputRequired,
			mstep{dir: "c>", msg: strings.Replace(mretry.msg, `"name":"t"`, `"name":"other"`, 1)},
			mstep{dir: ">c", want: []string{`"id":8`, `"code":-32602`}},
			mretry,
			mstep{dir: ">s", want: []string{`"id":100`}},
		)},
		{"a retry with other arguments is refused: the server runs the original's, which the policies must judge", mscript(mopening, melicit, minputRequired,
			mstep{dir: "c>", msg: strings.Replace(mretry.msg, `"arguments":{}`, `"arguments":{"table":"public"}`, 1)},
			mstep{dir: ">c", want: []string{`"id":8`, `"code":-32602`, `differ from the request the server is running`}},
			mstep{dir: "c>", msg: strings.Replace(mretry.msg, `"arguments":{}`, `"arguments":{},"extra":1`, 1)},
			mstep{dir: ">c", want: []string{`"id":8`, `"code":-32602`}},
			// The round stays open for the request it was issued for, in any spelling.
			mstep{dir: "c>", msg: strings.Replace(mretry.msg, `"arguments":{}`, `"arguments":{ }`, 1)},
			mstep{dir: ">s", want: []string{`"id":100`, `"result":{"action":"accept"`}},
		)},
		{"a server request with nothing in flight gets an error", mscript(mopening,
			mstep{dir: "s>", msg: `{"jsonrpc":"2.0","id":"mcpgate-tr-req-3","result":{"content":[]}}`},
			mstep{dir: ">c", want: []string{`"id":7`}},
			melicit,
			mstep{dir: ">s", want: []string{`"id":100`, `"code":-32600`, `none (or more than one)`}},
		)},
		{"a server request with two in flight and no Related gets an error", mscript(mopening,
			mstep{dir: "c>", msg: `{"jsonrpc":"2.0","id":9,"method":"tools/call","params":{"name":"u",` + menv + `}}`},
			mstep{dir: ">s", want: []string{`"name":"u"`}},
			melicit,
			mstep{dir: ">s", want: []string{`"id":100`, `"code":-32600`}},
		)},
		{"Related picks the request among several", mscript(mopening,
			mstep{dir: "c>", msg: `{"jsonrpc":"2.0","id":9,"method":"tools/call","params":{"name":"u",` + menv + `}}`},
			mstep{dir: ">s", want: []string{`"name":"u"`}},
			mstep{dir: "s>", msg: `{"jsonrpc":"2.0","id":100,"method":"roots/list","related":"{up}"}`},
			mstep{dir: ">c", want: []string{`"id":9`, `"input_required"`, `"method":"roots/list"`}},
		)},
		{"a client's own response to the server's request reaches no server: only a retry's inputResponses answer it", mscript(mopening, melicit, minputRequired,
			mstep{dir: "c>", msg: `{"jsonrpc":"2.0","id":100,"result":{"action":"accept","content":{"n":"unfiltered"}}}`},
			mstep{dir: "c>", msg: `{"jsonrpc":"2.0","id":100,"result":{"roots":[{"uri":"file:///"}]}}`},
		)},
		{"a server ping is answered by the gateway", mscript(mopening,
			mstep{dir: "s>", msg: `{"jsonrpc":"2.0","id":100,"method":"ping"}`},
			mstep{dir: ">s", want: []string{`"id":100`, `"result":{}`}},
		)},
		{"subscriptions/listen is held open by the gateway and gets the notifications it asked for", []mstep{
			{dir: "c>", msg: `{"jsonrpc":"2.0","id":1,"method":"server/discover","params":{` + menv + `}}`},
			{dir: ">s"},
			{dir: "s>", msg: `{"jsonrpc":"2.0","id":1,"error":{"code":-32601,"message":"Method not found"}}`},
			{dir: ">s", want: []string{`"method":"initialize"`}},
			{dir: "s>", msg: `{"jsonrpc":"2.0","id":"{up}","result":{"protocolVersion":"2025-11-25","capabilities":{"tools":{"listChanged":true},"resources":{"subscribe":true}},"serverInfo":{"name":"v1","version":"1"}}}`},
			{dir: ">s", want: []string{`"method":"notifications/initialized"`}},
			{dir: ">c", want: []string{`"id":1`, `"supportedVersions"`}},
			{dir: "c>", msg: `{"jsonrpc":"2.0","id":"L","method":"subscriptions/listen","params":{"notifications":{"toolsListChanged":true,"promptsListChanged":true,"resourceSubscriptions":["x:///a"]},` + menv + `}}`},
			{dir: ">s", want: []string{`"method":"resources/subscribe"`, `"uri":"x:///a"`}},
			{dir: ">c", want: []string{`"method":"notifications/subscriptions/acknowledged"`, `"toolsListChanged":true`, `"resourceSubscriptions":["x:///a"]`, `"io.modelcontextprotocol/subscriptionId":"L"`},
				not: []string{`promptsListChanged`}},
			{dir: "s>", msg: `{"jsonrpc":"2.0","id":"{up}","result":{}}`},
			{dir: "s>", msg: `{"jsonrpc":"2.0","method":"notifications/tools/list_changed"}`},
			{dir: ">c", want: []string{`"method":"notifications/tools/list_changed"`, `"_meta":{"io.modelcontextprotocol/subscriptionId":"L"}`}},
			{dir: "s>", msg: `{"jsonrpc":"2.0","method":"notifications/prompts/list_changed"}`},
			{dir: "s>", msg: `{"jsonrpc":"2.0","method":"notifications/resources/updated","params":{"uri":"x:///b"}}`},
			{dir: "s>", msg: `{"jsonrpc":"2.0","method":"notifications/resources/updated","params":{"uri":"x:///a"}}`},
			{dir: ">c", want: []string{`"method":"notifications/resources/updated"`, `"uri":"x:///a"`, `"io.modelcontextprotocol/subscriptionId":"L"`}},
			{dir: "c>", msg: `{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":"L"}}`},
			{dir: ">s", want: []string{`"method":"resources/unsubscribe"`, `"uri":"x:///a"`}},
			{dir: "s>", msg: `{"jsonrpc":"2.0","method":"notifications/tools/list_changed"}`},
			{dir: ">c", want: []string{`"method":"notifications/tools/list_changed"`}, not: []string{`subscriptionId`}},
		}},
		{"a cancellation of the request a round answered ends the round at once", mscript(mopening, melicit, minputRequired,
			mstep{dir: "c>", msg: `{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":7,"reason":"withheld"}}`},
			mstep{dir: ">s", want: []string{`"id":100`, `"code":-32001`, `cancelled`}},
			mstep{dir: ">s", want: []string{`"notifications/cancelled"`, `"requestId":"mcpgate-tr-req-3"`}},
			mretry,
			mstep{dir: ">c", want: []string{`"id":8`, `"code":-32602`}},
		)},
		{"the client's cancellation reaches the server under its id", mscript(mopening,
			mstep{dir: "c>", msg: `{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":7,"reason":"x"}}`},
			mstep{dir: ">s", want: []string{`"notifications/cancelled"`, `"requestId":"mcpgate-tr-req-3"`}},
		)},
		{"a server that fails initialize: the held request gets the error", []mstep{
			{dir: "c>", msg: `{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{` + menv + `}}`},
			{dir: ">s", want: []string{`"method":"server/discover"`}},
			{dir: "s>", msg: `{"jsonrpc":"2.0","id":"{up}","error":{"code":-32601,"message":"Method not found"}}`},
			{dir: ">s", want: []string{`"method":"initialize"`}},
			{dir: "s>", msg: `{"jsonrpc":"2.0","id":"{up}","error":{"code":-32602,"message":"Unsupported protocol version"}}`},
			{dir: ">c", want: []string{`"id":1`, `"code":-32000`, `initialize failed: Unsupported protocol version`}},
			{dir: "c>", msg: `{"jsonrpc":"2.0","id":2,"method":"tools/list","params":{` + menv + `}}`},
			{dir: ">c", want: []string{`"id":2`, `"code":-32000`}},
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			f := newFake()
			c := Wrap(f, Options{ClientInfo: map[string]string{"name": "mcpgate", "version": "test"}})
			defer c.Close(context.Background(), 0)
			mrun(t, c, f, tc.steps)
		})
	}
}

// TestModernInputExpires: a round the client never retries ends after the bound:
// the server's request gets an error, the server is told to cancel the original
// request, and a late retry is refused.
func TestModernInputExpires(t *testing.T) {
	f := newFake()
	c := Wrap(f, Options{})
	c.bounds.modernRound = 50 * time.Millisecond
	defer c.Close(context.Background(), 0)
	mrun(t, c, f, mscript(mopening, melicit, minputRequired,
		mstep{dir: ">s", want: []string{`"id":100`, `"code":-32001`, `did not retry`}},
		mstep{dir: ">s", want: []string{`"notifications/cancelled"`, `"requestId":"mcpgate-tr-req-3"`}},
		mretry,
		mstep{dir: ">c", want: []string{`"id":8`, `"code":-32602`}},
	))
}

// TestModernProbeSilence: a server that never answers server/discover is taken for
// 2025-11-25 after the probe's bound, and initialized.
func TestModernProbeSilence(t *testing.T) {
	f := newFake()
	c := Wrap(f, Options{})
	c.bounds.probe = 50 * time.Millisecond
	defer c.Close(context.Background(), 0)
	mrun(t, c, f, []mstep{
		{dir: "c>", msg: `{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{` + menv + `}}`},
		{dir: ">s", want: []string{`"method":"server/discover"`}},
		{dir: ">s", want: []string{`"method":"initialize"`}},
		{dir: "s>", msg: `{"jsonrpc":"2.0","id":"{up}","result":{"protocolVersion":"2025-11-25","capabilities":{},"serverInfo":{"name":"v1","version":"1"}}}`},
		{dir: ">s", want: []string{`"method":"notifications/initialized"`}},
		{dir: ">s", want: []string{`"method":"tools/list"`}},
	})
}

// TestModernRoundBound: past the bound of rounds waiting for the client, a server
// request gets -32603 and the client is asked nothing more.
func TestModernRoundBound(t *testing.T) {
	f := newFake()
	c := Wrap(f, Options{})
	c.bounds.maxWaiting = 1
	defer c.Close(context.Background(), 0)
	mrun(t, c, f, mscript(mopening,
		mstep{dir: "c>", msg: `{"jsonrpc":"2.0","id":9,"method":"tools/call","params":{"name":"u",` + menv + `}}`},
		mstep{dir: ">s", want: []string{`"name":"u"`}},
		mstep{dir: "s>", msg: `{"jsonrpc":"2.0","id":100,"method":"roots/list","related":"mcpgate-tr-req-3"}`},
		mstep{dir: ">c", want: []string{`"id":7`, `"input_required"`}},
		mstep{dir: "s>", msg: `{"jsonrpc":"2.0","id":101,"method":"roots/list","related":"{up}"}`},
		mstep{dir: ">s", want: []string{`"id":101`, `"code":-32603`}},
	))
}

// TestModernStateIsPerConnection: a requestState one connection issued is unknown
// on another (another caller's backend, or the server's connection after a
// restart).
func TestModernStateIsPerConnection(t *testing.T) {
	f1, f2 := newFake(), newFake()
	c1, c2 := Wrap(f1, Options{}), Wrap(f2, Options{})
	defer c1.Close(context.Background(), 0)
	defer c2.Close(context.Background(), 0)
	vars := mrun(t, c1, f1, mscript(mopening, melicit, minputRequired))
	mrun(t, c2, f2, mscript(mopening, mstep{dir: "c>", msg: strings.ReplaceAll(mretry.msg, "{state}", vars["state"])},
		mstep{dir: ">c", want: []string{`"id":8`, `"code":-32602`}}))
}

var (
	stateRe = regexp.MustCompile(`"requestState":"([^"]+)"`)
	keyRe   = regexp.MustCompile(`"inputRequests":\{"([^"]+)"`)
)

// mrun plays steps against c over f and returns the captured variables.
func mrun(t *testing.T, c *Conn, f *fakeServer, steps []mstep) map[string]string {
	t.Helper()
	toClient := toClientOf(c, 64)
	return playOn(t, c, f, toClient, steps)
}

// playOn plays steps against conn (a Conn, or a supervisor over Conns) over f,
// reading what the client gets from toClient.
func playOn(t *testing.T, c jsonrpc.Conn, f *fakeServer, toClient <-chan *jsonrpc.Message, steps []mstep) map[string]string {
	t.Helper()
	vars := map[string]string{}
	subst := func(s string) string {
		for k, v := range vars {
			s = strings.ReplaceAll(s, "{"+k+"}", v)
		}
		return s
	}
	parse := func(s string) *jsonrpc.Message {
		m, err := jsonrpc.Parse([]byte(subst(s)))
		if err != nil {
			t.Fatalf("script message %s: %v", s, err)
		}
		var rel struct {
			Related json.RawMessage `json:"related"`
		}
		if json.Unmarshal(m.Raw, &rel) == nil && rel.Related != nil { // the script's way to say what the transport tells
			m.Related = rel.Related
		}
		return m
	}
	for i, st := range steps {
		switch st.dir {
		case "c>":
			if err := c.Send(parse(st.msg)); err != nil {
				t.Fatalf("step %d: Send: %v", i, err)
			}
		case "s>":
			select {
			case f.recv <- parse(st.msg):
			case <-time.After(5 * time.Second):
				t.Fatalf("step %d: the translation did not read the server", i)
			}
		case ">s", ">c":
			var m *jsonrpc.Message
			var src <-chan *jsonrpc.Message = f.sent
			if st.dir == ">c" {
				src = toClient
			}
			select {
			case m = <-src:
			case <-time.After(5 * time.Second):
				t.Fatalf("step %d (%s): nothing came; want %v", i, st.dir, st.want)
			}
			raw := string(m.Raw)
			for _, w := range st.want {
				if !strings.Contains(raw, w) {
					t.Fatalf("step %d (%s): %s\nwant it to hold %s", i, st.dir, raw, w)
				}
			}
			for _, n := range st.not {
				if strings.Contains(raw, n) {
					t.Fatalf("step %d (%s): %s\nwant it not to hold %s", i, st.dir, raw, n)
				}
			}
			if st.dir == ">s" && m.Kind == jsonrpc.KindRequest {
				var id string
				_ = json.Unmarshal(m.ID, &id)
				vars["up"] = id
			}
			if s := stateRe.FindStringSubmatch(raw); s != nil {
				vars["state"] = s[1]
			}
			if k := keyRe.FindStringSubmatch(raw); k != nil {
				vars["key"] = k[1]
			}
		}
	}
	select {
	case m := <-f.sent:
		t.Fatalf("the server got more than the script says: %s", m.Raw)
	case m, ok := <-toClient:
		if ok {
			t.Fatalf("the client got more than the script says: %s", m.Raw)
		}
	case <-time.After(30 * time.Millisecond):
	}
	return vars
}

// TestModernRestartMidRound: behind the restart supervisor, a server that exits
// while a round waits for the client's retry is started anew; the retry reaches the
// new process's hop, which probes and initializes it again (the supervisor replays
// no initialize: the client sent none), and gets -32602 for the round the restart
// lost, without reaching the new server as a request.
func TestModernRestartMidRound(t *testing.T) {
	fakes := make(chan *fakeServer, 2)
	sup, err := upstream.NewSupervisor(upstream.SupervisorOptions{MinBackoff: time.Millisecond, Start: func() (upstream.Conn, error) {
		f := newFake()
		fakes <- f
		return Wrap(f, Options{}), nil
	}})
	if err != nil {
		t.Fatal(err)
	}
	defer sup.Close(context.Background(), 0)
	f1 := <-fakes
	toClient := make(chan *jsonrpc.Message, 16)
	go func() {
		for {
			m, err := sup.Recv()
			if err != nil && !jsonrpc.Transient(err) {
				return
			}
			if m != nil {
				toClient <- m
			}
		}
	}()
	vars := playOn(t, sup, f1, toClient, mscript(mopening, melicit, minputRequired))
	_ = f1.Close(context.Background(), 0) // the server exits
	var f2 *fakeServer
	select {
	case f2 = <-fakes:
	case <-time.After(5 * time.Second):
		t.Fatal("no restart")
	}
	if !testwaitUp(sup) {
		t.Fatal("the supervisor did not come up")
	}
	playOn(t, sup, f2, toClient, []mstep{
		{dir: "c>", msg: strings.ReplaceAll(mretry.msg, "{state}", vars["state"])},
		{dir: ">s", want: []string{`"method":"server/discover"`}},
		{dir: "s>", msg: `{"jsonrpc":"2.0","id":"{up}","error":{"code":-32601,"message":"Method not found"}}`},
		{dir: ">s", want: []string{`"method":"initialize"`}},
		{dir: "s>", msg: `{"jsonrpc":"2.0","id":"{up}","result":{"protocolVersion":"2025-11-25","capabilities":{"tools":{}},"serverInfo":{"name":"v1","version":"1.0"}}}`},
		{dir: ">s", want: []string{`"method":"notifications/initialized"`}},
		{dir: ">c", want: []string{`"id":8`, `"code":-32602`}},
	})
}

func testwaitUp(s *upstream.Supervisor) bool {
	select {
	case <-s.Up():
		return true
	case <-time.After(5 * time.Second):
		return false
	}
}

// TestModernInputRequestsBound: a server that keeps sending requests for one client
// request gets an error past the bound of one round's inputRequests, instead of the
// gateway keeping every one until the client retries.
func TestModernInputRequestsBound(t *testing.T) {
	f := newFake()
	c := Wrap(f, Options{})
	defer c.Close(context.Background(), 0)
	steps := mscript(mopening, melicit, minputRequired)
	for i := 1; i < maxInputRequests; i++ {
		steps = append(steps, mstep{dir: "s>", msg: strings.Replace(melicit.msg, `"id":100`, `"id":`+strconv.Itoa(100+i), 1)})
	}
	steps = append(steps,
		mstep{dir: "s>", msg: strings.Replace(melicit.msg, `"id":100`, `"id":999`, 1)},
		mstep{dir: ">s", want: []string{`"id":999`, `"code":-32603`}},
		mstep{dir: "c>", msg: strings.Replace(mretry.msg, `"{key}":{"action":"accept","content":{"n":"x"}}`, ``, 1)},
		mstep{dir: ">c", want: []string{`"id":8`, `"input_required"`}},
	)
	mrun(t, c, f, steps)
}

// TestModernInitializeSilence: a server that refuses server/discover and then never
// answers the gateway's initialize fails the requests held for it after
// initialize's bound, instead of holding them (and every later message) for ever.
func TestModernInitializeSilence(t *testing.T) {
	f := newFake()
	c := Wrap(f, Options{})
	c.bounds.init = 50 * time.Millisecond
	defer c.Close(context.Background(), 0)
	mrun(t, c, f, []mstep{
		{dir: "c>", msg: `{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{` + menv + `}}`},
		{dir: ">s", want: []string{`"method":"server/discover"`}},
		{dir: "s>", msg: `{"jsonrpc":"2.0","id":"{up}","error":{"code":-32601,"message":"Method not found"}}`},
		{dir: ">s", want: []string{`"method":"initialize"`}},
		{dir: ">c", want: []string{`"id":1`, `"code":-32000`, `did not answer its 2025-11-25 initialize`}},
		{dir: "c>", msg: `{"jsonrpc":"2.0","id":2,"method":"tools/list","params":{` + menv + `}}`},
		{dir: ">c", want: []string{`"id":2`, `"code":-32000`}},
		{dir: "s>", msg: `{"jsonrpc":"2.0","id":"{up}","result":{"protocolVersion":"2025-11-25","capabilities":{},"serverInfo":{"name":"late","version":"1"}}}`},
	})
}

// gatedServer is a fakeServer that stops taking messages while hold is set, until
// open is closed (a server that stopped reading its input).
type gatedServer struct {
	*fakeServer
	hold atomic.Bool
	open chan struct{}
}

func (g *gatedServer) Send(m *jsonrpc.Message) error {
	if g.hold.Load() {
		<-g.open
	}
	return g.fakeServer.Send(m)
}

// TestModernOutboxBackpressure: a translated server that stops reading makes the
// client's sends wait once the bound of queued messages is reached, as a direct send
// would, and its own pings' answers stop queueing at the hard bound, instead of the
// queue growing with whatever the client and the server send.
func TestModernOutboxBackpressure(t *testing.T) {
	g := &gatedServer{fakeServer: newFake(), open: make(chan struct{})}
	c := Wrap(g, Options{})
	defer c.Close(context.Background(), 0)
	mrun(t, c, g.fakeServer, mopening)
	g.hold.Store(true)
	for i := range 2 * maxOutboxQueue {
		g.recv <- mustParse(t, `{"jsonrpc":"2.0","id":`+strconv.Itoa(1000+i)+`,"method":"ping"}`)
	}
	sent := make(chan struct{})
	go func() {
		defer close(sent)
		for range 2 * maxQueued {
			_ = c.Send(mustParse(t, `{"jsonrpc":"2.0","method":"notifications/roots/list_changed"}`))
		}
	}()
	select {
	case <-sent:
		t.Fatal("every send returned while the server read nothing")
	case <-time.After(300 * time.Millisecond):
	}
	c.modern.out.mu.Lock()
	n := len(c.modern.out.q)
	c.modern.out.mu.Unlock()
	if n > maxOutboxQueue {
		t.Fatalf("%d messages queued for a server that reads nothing; want at most %d", n, maxOutboxQueue)
	}
	go func() {
		for range g.sent {
		}
	}()
	close(g.open)
	select {
	case <-sent:
	case <-time.After(5 * time.Second):
		t.Fatal("the client's sends did not resume once the server read again")
	}
}

func mustParse(t *testing.T, s string) *jsonrpc.Message {
	t.Helper()
	m, err := jsonrpc.Parse([]byte(s))
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// TestModernHeldBound: while the server has not yet answered server/discover (or the
// gateway's initialize), the client's messages are held only up to the outbox's hard
// bound; a request past it gets -32000 at once instead of growing the hold.
func TestModernHeldBound(t *testing.T) {
	f := newFake()
	c := Wrap(f, Options{})
	defer c.Close(context.Background(), 0)
	steps := []mstep{}
	for i := range maxOutboxQueue + 1 {
		steps = append(steps, mstep{dir: "c>", msg: `{"jsonrpc":"2.0","id":` + strconv.Itoa(i) + `,"method":"tools/list","params":{` + menv + `}}`})
	}
	steps = append(steps,
		mstep{dir: ">s", want: []string{`"method":"server/discover"`}},
		mstep{dir: ">c", want: []string{`"id":` + strconv.Itoa(maxOutboxQueue), `"code":-32000`, `held`}})
	mrun(t, c, f, steps)
	c.mu.Lock()
	n := len(c.modern.held)
	c.mu.Unlock()
	if n != maxOutboxQueue {
		t.Fatalf("%d messages held; want %d", n, maxOutboxQueue)
	}
}

// TestModernRetryOutboxFull: when the answers a retry carries for the server cannot
// be queued (the server reads nothing and the outbox is at its hard bound), the
// retry gets a JSON-RPC error and the round ends, instead of the answers being
// dropped while the round goes on as if the server had them.
func TestModernRetryOutboxFull(t *testing.T) {
	g := &gatedServer{fakeServer: newFake(), open: make(chan struct{})}
	c := Wrap(g, Options{})
	defer c.Close(context.Background(), 0)
	defer close(g.open)
	toClient := toClientOf(c, 64)
	vars := playOn(t, c, g.fakeServer, toClient, mscript(mopening, melicit, minputRequired))
	g.hold.Store(true)
	for i := range maxOutboxQueue + 1 {
		g.recv <- mustParse(t, `{"jsonrpc":"2.0","id":`+strconv.Itoa(1000+i)+`,"method":"ping"}`)
	}
	deadline := time.Now().Add(5 * time.Second)
	for {
		c.modern.out.mu.Lock()
		n := len(c.modern.out.q)
		c.modern.out.mu.Unlock()
		if n >= maxOutboxQueue {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("outbox holds %d messages; want %d", n, maxOutboxQueue)
		}
		time.Sleep(5 * time.Millisecond)
	}
	retry := mretry.msg
	for k, v := range vars {
		retry = strings.ReplaceAll(retry, "{"+k+"}", v)
	}
	// The retry as it reaches the translation once the client's wait is over (a
	// server's ping answer can fill the outbox between the wait and the lock).
	c.mu.Lock()
	c.request(mustParse(t, retry))
	flights := len(c.rounds.all())
	c.mu.Unlock()
	select {
	case m := <-toClient:
		if string(m.ID) != "8" || m.Error == nil {
			t.Fatalf("the retry got %s; want a JSON-RPC error", m.Raw)
		}
	case <-time.After(testwait.Timeout):
		t.Fatal("the retry got no answer")
	}
	if flights != 0 {
		t.Fatalf("%d rounds left after the failed retry; want the round ended", flights)
	}
}

// TestBindingOf: a retry is the request its round was issued for when its params,
// but for _meta, inputResponses and requestState, are equal as the server reads them
// (docs/decisions.md#retry-binding).
func TestBindingOf(t *testing.T) {
	orig := `{"name":"read","arguments":{"table":"payroll","limit":10}}`
	tests := []struct {
		retry string
		same  bool
	}{
		{`{"name":"read","arguments":{"limit":10,"table":"payroll"},"requestState":"s","inputResponses":{"k":{}},"_meta":{"x":1}}`, true},
		{`{"arguments":{"table":"\u0070ayroll","limit":10},"name":"r\u0065ad"}`, true},
		{`{"name":"read","arguments":{"table":"public","limit":10}}`, false},
		{`{"name":"read","arguments":{"table":"payroll"}}`, false},
		{`{"name":"read","arguments":{"table":"payroll","limit":10,"extra":true}}`, false},
		{`{"name":"read","arguments":{"table":"payroll","limit":10},"task":{"ttl":1}}`, false},
		{`{"name":"other","arguments":{"table":"payroll","limit":10}}`, false},
	}
	params := func(s string) map[string]json.RawMessage {
		var p map[string]json.RawMessage
		if err := json.Unmarshal([]byte(s), &p); err != nil {
			t.Fatal(err)
		}
		return p
	}
	want := bindingOf(params(orig))
	for _, tt := range tests {
		if got := bindingOf(params(tt.retry)) == want; got != tt.same {
			t.Errorf("bindingOf(%s) equal to the original's: %v, want %v", tt.retry, got, tt.same)
		}
	}
	if bindingOf(params(`{"name":"t"}`)) != bindingOf(params(`{"name":"t","arguments":{}}`)) {
		t.Error("no arguments must bind like {}")
	}
}

// TestModernRetryMismatchRecorded: the -32602 a retry with other arguments gets is
// marked retry_mismatch, so the pipeline's record of the retry carries the reason.
func TestModernRetryMismatchRecorded(t *testing.T) {
	f := newFake()
	c := Wrap(f, Options{})
	defer c.Close(context.Background(), 0)
	toClient := toClientOf(c, 64)
	steps := mscript(mopening, melicit, minputRequired)
	vars := playOn(t, c, f, toClient, steps)
	retry := strings.Replace(mretry.msg, `"arguments":{}`, `"arguments":{"table":"public"}`, 1)
	for k, v := range vars {
		retry = strings.ReplaceAll(retry, "{"+k+"}", v)
	}
	if err := c.Send(mustParse(t, retry)); err != nil {
		t.Fatal(err)
	}
	select {
	case m := <-toClient:
		if m.Refused != vocab.ReasonRetryMismatch || m.Error == nil {
			t.Fatalf("client got %s (refused %q)", m.Raw, m.Refused)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("no answer to the retry")
	}
}
