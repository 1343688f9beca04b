// Command foldgo is a stdio MCP server built on mcp-go, the library that decodes
// requests with encoding/json (member names matched case-insensitively, ſ read as s,
// K as k). The one-reading end-to-end tests put it behind the gateway and read
// $RAN_FILE to see which calls it really ran.
//
// Tools: safe answers "safe"; wipe {force} and act {force} (arguments bound to a
// struct, as typed handlers do) record "<tool> force=<bool>" in $RAN_FILE.
package main

import (
	"context"
	"fmt"
	"os"
	"sync"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"
)

var mu sync.Mutex

func ran(line string) {
	mu.Lock()
	defer mu.Unlock()
	f, err := os.OpenFile(os.Getenv("RAN_FILE"), os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o600)
	if err != nil {
		return
	}
	defer f.Close()
	fmt.Fprintln(f, line)
}

type forceArgs struct {
	Force bool `json:"force"`
}

func main() {
	s := server.NewMCPServer("foldgo", "1.0.0", server.WithToolCapabilities(false))
	s.AddTool(mcp.NewTool("safe", mcp.WithDescription("does nothing")), func(ctx context.Context, r mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		ran("safe")
		return mcp.NewToolResultText("safe"), nil
	})
	for _, name := range []string{"wipe", "act"} {
		s.AddTool(mcp.NewTool(name, mcp.WithBoolean("force")), mcp.NewTypedToolHandler(func(ctx context.Context, r mcp.CallToolRequest, a forceArgs) (*mcp.CallToolResult, error) {
			ran(fmt.Sprintf("%s force=%v", r.Params.Name, a.Force))
			return mcp.NewToolResultText(r.Params.Name + " done"), nil
		}))
	}
	if err := server.ServeStdio(s); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}
