package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mcpgate/mcpgate/engine"
)

// lockedBuf collects stderr from the command's goroutines.
type lockedBuf struct {
	mu sync.Mutex
	b  strings.Builder
}

func (l *lockedBuf) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuf) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

func TestMCPServerStdio(t *testing.T) {
	tests := []struct {
		name   string
		args   []string
		filter string
	}{
		{"plain", nil, "off"},
		{"sanitize", []string{"--sanitize-tool-output"}, "on"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			inR, inW := io.Pipe()
			outR, outW := io.Pipe()
			errb := &lockedBuf{}
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			done := make(chan int, 1)
			go func() {
				done <- run(ctx, append([]string{"mcp-server", "--log-format", "json"}, tt.args...), inR, outW, errb)
				outW.Close()
			}()
			sc := bufio.NewScanner(outR)
			sc.Buffer(make([]byte, 1<<20), 1<<24)
			rpc := func(line string) map[string]any {
				t.Helper()
				if _, err := io.WriteString(inW, line+"\n"); err != nil {
					t.Fatal(err)
				}
				if !sc.Scan() {
					t.Fatalf("no answer to %s; stderr:\n%s", line, errb.String())
				}
				var m map[string]any
				if err := json.Unmarshal(sc.Bytes(), &m); err != nil {
					t.Fatal(err)
				}
				return m
			}
			rpc(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"unit-client","version":"9.9"}}}`)
			io.WriteString(inW, `{"jsonrpc":"2.0","method":"notifications/initialized"}`+"\n")
			list := rpc(`{"jsonrpc":"2.0","id":2,"method":"tools/list"}`)
			var names []string
			for _, x := range list["result"].(map[string]any)["tools"].([]any) {
				names = append(names, x.(map[string]any)["name"].(string))
			}
			if got := strings.Join(names, ","); !strings.Contains(got, "scan_text") || !strings.Contains(got, "sanitize_text") || !strings.Contains(got, "redact_text") || !strings.Contains(got, "explain_rule") {
				t.Fatalf("tools: %s", got)
			}
			res := rpc(`{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"scan_text","arguments":{"text":"hello"}}}`)
			if res["result"] == nil {
				t.Fatalf("scan_text: %v", res)
			}
			inW.Close()
			select {
			case code := <-done:
				if code != 0 {
					t.Fatalf("exit %d: %s", code, errb.String())
				}
			case <-ctx.Done():
				t.Fatal("mcp-server did not exit on EOF")
			}
			var rec map[string]any
			for _, line := range strings.Split(errb.String(), "\n") {
				var m map[string]any
				if json.Unmarshal([]byte(line), &m) == nil && m["event_id"] != nil && m["kind"] != nil {
					rec = m
				}
			}
			if rec == nil {
				t.Fatalf("no audit record:\n%s", errb.String())
			}
			if rec["kind"] != "mcp_output_filter" || rec["agent_origin"] != nil || rec["tool"] != "scan_text" || rec["filter"] != tt.filter {
				t.Fatalf("record: %v", rec)
			}
			ci, _ := rec["client_info"].(map[string]any)
			if ci["name"] != "unit-client" || ci["version"] != "9.9" {
				t.Fatalf("client_info: %v", rec["client_info"])
			}
		})
	}
}

// TestToolArgumentsChecked: explain_rule with an unknown argument is an error, not
// the whole list; with none it lists every rule; an unknown id is an error too.
func TestToolArgumentsChecked(t *testing.T) {
	an, err := engine.New(engine.Options{})
	if err != nil {
		t.Fatal(err)
	}
	srv := newToolMCPServer(an)
	call := func(name, args string) (bool, string) {
		t.Helper()
		msg := srv.HandleMessage(context.Background(), json.RawMessage(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"`+name+`","arguments":`+args+`}}`))
		b, _ := json.Marshal(msg)
		var resp struct {
			Result struct {
				IsError bool `json:"isError"`
				Content []struct {
					Text string `json:"text"`
				} `json:"content"`
			} `json:"result"`
		}
		if err := json.Unmarshal(b, &resp); err != nil || len(resp.Result.Content) == 0 {
			t.Fatalf("%s: %s", name, b)
		}
		return resp.Result.IsError, resp.Result.Content[0].Text
	}
	for _, tc := range []struct {
		tool, args string
		isError    bool
		has        string
	}{
		{"explain_rule", `{"rule":"output_osc52_clipboard_write"}`, true, `unknown argument "rule"`},
		{"explain_rule", `{}`, false, `"rules"`},
		{"explain_rule", `{"id":"output_osc52_clipboard_write"}`, false, "output_osc52_clipboard_write"},
		{"explain_rule", `{"id":"nope"}`, true, `no rule "nope"`},
		{"scan_text", `{"text":"x","txt":"y"}`, true, `unknown argument "txt"`},
		{"redact_text", `{"text":"a@b.example","strategy":"mask"}`, false, ""},
	} {
		isErr, text := call(tc.tool, tc.args)
		if isErr != tc.isError || !strings.Contains(text, tc.has) {
			t.Errorf("%s %s: isError %v, %.120q", tc.tool, tc.args, isErr, text)
		}
	}
}

// TestMCPServerHelpIsTruthful: mcp-server starts no upstream process, and its help
// says so instead of promising one per session.
func TestMCPServerHelpIsTruthful(t *testing.T) {
	var out, errb bytes.Buffer
	if code := run(context.Background(), []string{"mcp-server", "--help"}, nil, &out, &errb); code != 0 {
		t.Fatalf("exit %d: %s", code, errb.String())
	}
	if help := out.String(); strings.Contains(help, "upstream process") || !strings.Contains(help, "no process is started") {
		t.Fatalf("help:\n%s", help)
	}
}
