// Command fakeup is a scriptable stdio MCP server for mcpgate's end-to-end tests.
//
// Tools: echo {text} answers the text; slow {ms} answers after ms milliseconds,
// sending a progress notification first when the call has a progressToken; hang never
// answers; crash exits the process at once; pid answers the process id (to see a
// restart); ask sends a sampling/createMessage request to the client and answers
// with the client's reply.
package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"
)

type msg struct {
	JSONRPC string          `json:"jsonrpc"`
	ID      json.RawMessage `json:"id,omitempty"`
	Method  string          `json:"method,omitempty"`
	Params  json.RawMessage `json:"params,omitempty"`
	Result  json.RawMessage `json:"result,omitempty"`
	Error   json.RawMessage `json:"error,omitempty"`
}

var (
	outMu   sync.Mutex
	asks    = map[string]chan json.RawMessage{}
	asksMu  sync.Mutex
	askSeq  int
	name    = "fakeup"
	toolSet = []string{"echo", "slow", "hang", "crash", "pid", "ask", "big"}
)

func write(v any) {
	b, _ := json.Marshal(v)
	outMu.Lock()
	os.Stdout.Write(append(b, '\n'))
	outMu.Unlock()
}

func result(id json.RawMessage, r any) {
	write(map[string]any{"jsonrpc": "2.0", "id": id, "result": r})
}

func text(id json.RawMessage, s string) {
	result(id, map[string]any{"content": []map[string]string{{"type": "text", "text": s}}})
}

func main() {
	if len(os.Args) > 1 {
		name = os.Args[1]
	}
	r := bufio.NewReaderSize(os.Stdin, 1<<20)
	for {
		line, err := r.ReadBytes('\n')
		if len(line) > 0 {
			var m msg
			if json.Unmarshal(line, &m) == nil {
				handle(m)
			}
		}
		if err != nil {
			return
		}
	}
}

func handle(m msg) {
	if m.Method == "" && m.ID != nil { // a client's answer to our request
		asksMu.Lock()
		ch := asks[string(m.ID)]
		asksMu.Unlock()
		if ch != nil {
			ch <- m.Result
		}
		return
	}
	switch m.Method {
	case "initialize":
		result(m.ID, map[string]any{
			"protocolVersion": "2025-11-25",
			"capabilities":    map[string]any{"tools": map[string]any{"listChanged": true}, "prompts": map[string]any{}, "resources": map[string]any{}},
			"serverInfo":      map[string]string{"name": name, "version": "1"},
		})
	case "ping":
		result(m.ID, map[string]any{})
	case "tools/list":
		var p struct {
			Cursor string `json:"cursor"`
		}
		_ = json.Unmarshal(m.Params, &p)
		// two pages, to exercise pagination
		tools := []map[string]any{}
		from, to := 0, 3
		if p.Cursor == "2" {
			from, to = 3, len(toolSet)
		}
		for _, t := range toolSet[from:to] {
			tools = append(tools, map[string]any{"name": t, "description": t, "inputSchema": map[string]any{"type": "object"}})
		}
		res := map[string]any{"tools": tools}
		if p.Cursor == "" {
			res["nextCursor"] = "2"
		}
		result(m.ID, res)
	case "prompts/list":
		result(m.ID, map[string]any{"prompts": []map[string]any{{"name": "greet"}}})
	case "prompts/get":
		result(m.ID, map[string]any{"messages": []map[string]any{{"role": "user", "content": map[string]string{"type": "text", "text": "hello from " + name}}}})
	case "resources/list":
		result(m.ID, map[string]any{"resources": []map[string]any{{"uri": "test://" + name + "/a", "name": "a"}}})
	case "resources/read":
		var p struct {
			URI string `json:"uri"`
		}
		_ = json.Unmarshal(m.Params, &p)
		result(m.ID, map[string]any{"contents": []map[string]string{{"uri": p.URI, "text": "content of " + p.URI + " from " + name}}})
	case "tools/call":
		go call(m)
	default:
		if m.ID != nil {
			write(map[string]any{"jsonrpc": "2.0", "id": m.ID, "error": map[string]any{"code": -32601, "message": "method not found"}})
		}
	}
}

func call(m msg) {
	var p struct {
		Name      string         `json:"name"`
		Arguments map[string]any `json:"arguments"`
		Meta      struct {
			ProgressToken json.RawMessage `json:"progressToken"`
		} `json:"_meta"`
	}
	_ = json.Unmarshal(m.Params, &p)
	switch p.Name {
	case "echo":
		s, _ := p.Arguments["text"].(string)
		text(m.ID, name+": "+s)
	case "slow":
		ms, _ := p.Arguments["ms"].(float64)
		if p.Meta.ProgressToken != nil {
			write(map[string]any{"jsonrpc": "2.0", "method": "notifications/progress", "params": map[string]any{"progressToken": p.Meta.ProgressToken, "progress": 1, "total": 2}})
		}
		time.Sleep(time.Duration(ms) * time.Millisecond)
		text(m.ID, "slept "+strconv.Itoa(int(ms)))
	case "big": // {"bytes": N}: N bytes of plain prose, ending in the call's "tag"
		n, _ := p.Arguments["bytes"].(float64)
		tag, _ := p.Arguments["tag"].(string)
		text(m.ID, prose(int(n))+tag)
	case "hang":
	case "crash":
		os.Exit(3)
	case "pid":
		text(m.ID, strconv.Itoa(os.Getpid()))
	case "ask":
		asksMu.Lock()
		askSeq++
		id := fmt.Sprintf("%d", 9000+askSeq)
		ch := make(chan json.RawMessage, 1)
		asks[id] = ch
		asksMu.Unlock()
		write(map[string]any{"jsonrpc": "2.0", "id": json.RawMessage(id), "method": "sampling/createMessage", "params": map[string]any{"messages": []any{}, "maxTokens": 5}})
		res := <-ch
		text(m.ID, "client said "+string(res))
	default:
		write(map[string]any{"jsonrpc": "2.0", "id": m.ID, "error": map[string]any{"code": -32602, "message": "unknown tool " + p.Name}})
	}
}

var proseCache sync.Map // int → string

// prose returns n bytes of clean text (no findings), built once per size.
func prose(n int) string {
	if v, ok := proseCache.Load(n); ok {
		return v.(string)
	}
	const line = "The quick brown fox jumps over the lazy dog; the build finished without errors.\n"
	s := strings.Repeat(line, n/len(line)+1)[:n]
	proseCache.Store(n, s)
	return s
}
