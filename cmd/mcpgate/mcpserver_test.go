package main

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"strings"
	"sync"
	"testing"
	"time"
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
