// Command confclient drives mcpgate's upstream side for the conformance suite's client
// scenarios: `conformance client --command "confclient MCPGATE" --scenario NAME`
// appends the test server's URL. It starts `mcpgate gateway run --listen` with that
// URL as its only (remote) upstream, then, as an MCP client of the gateway, runs
// initialize, notifications/initialized, tools/list and a tools/call of every tool the
// scenario expects (add_numbers for tools_call). The suite judges the messages that
// reach its server, i.e. what mcpgate sends upstream.
package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"time"
)

func main() {
	if len(os.Args) != 3 {
		fmt.Fprintln(os.Stderr, "usage: confclient MCPGATE URL")
		os.Exit(2)
	}
	if err := run(os.Args[1], os.Args[2]); err != nil {
		fmt.Fprintln(os.Stderr, "confclient:", err)
		os.Exit(1)
	}
}

func run(gw, upURL string) error {
	dir, err := os.MkdirTemp("", "confclient-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	cfg := filepath.Join(dir, "config.json")
	b, _ := json.Marshal(map[string]any{"mcpServers": map[string]any{"conformance": map[string]any{"url": upURL}}})
	if err := os.WriteFile(cfg, b, 0o600); err != nil {
		return err
	}
	pol := filepath.Join(dir, "policies")
	_ = os.Mkdir(pol, 0o700)
	cmd := exec.Command(gw, "gateway", "run", "--listen", "127.0.0.1:0", "--config", cfg, "--policies", pol, "--log-format", "json")
	stderr, _ := cmd.StderrPipe()
	cmd.Stdout = nil // never the runner's stdout
	if err := cmd.Start(); err != nil {
		return err
	}
	defer func() { _ = cmd.Process.Kill(); _ = cmd.Wait() }()
	urlc := make(chan string, 1)
	go func() {
		re := regexp.MustCompile(`"url":"(http://[^"]+)"`)
		sc := bufio.NewScanner(stderr)
		sent := false
		for sc.Scan() {
			fmt.Fprintln(os.Stderr, sc.Text())
			if m := re.FindStringSubmatch(sc.Text()); m != nil && !sent {
				urlc <- m[1]
				sent = true
			}
		}
	}()
	var url string
	select {
	case url = <-urlc:
	case <-time.After(15 * time.Second):
		return fmt.Errorf("gateway did not start")
	}
	c := &client{url: url}
	if _, err := c.rpc(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"mcpgate-confclient","version":"1.0.0"}}}`); err != nil {
		return err
	}
	if _, err := c.rpc(`{"jsonrpc":"2.0","method":"notifications/initialized"}`); err != nil {
		return err
	}
	list, err := c.rpc(`{"jsonrpc":"2.0","id":2,"method":"tools/list"}`)
	if err != nil {
		return err
	}
	if strings.Contains(list, `"add_numbers"`) {
		res, err := c.rpc(`{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"add_numbers","arguments":{"a":5,"b":3}}}`)
		if err != nil {
			return err
		}
		if !strings.Contains(res, "8") {
			return fmt.Errorf("add_numbers: %s", res)
		}
	}
	req, _ := http.NewRequest(http.MethodDelete, url, nil)
	req.Header.Set("Mcp-Session-Id", c.sid)
	if resp, err := http.DefaultClient.Do(req); err == nil {
		resp.Body.Close()
	}
	_ = cmd.Process.Signal(os.Interrupt)
	return nil
}

type client struct{ url, sid string }

// rpc POSTs one message and returns the last SSE data or the JSON body.
func (c *client) rpc(body string) (string, error) {
	req, _ := http.NewRequest(http.MethodPost, c.url, bytes.NewReader([]byte(body)))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	if c.sid != "" {
		req.Header.Set("Mcp-Session-Id", c.sid)
	}
	resp, err := (&http.Client{Timeout: 20 * time.Second}).Do(req)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	if sid := resp.Header.Get("Mcp-Session-Id"); sid != "" {
		c.sid = sid
	}
	if resp.StatusCode >= 300 {
		b, _ := io.ReadAll(resp.Body)
		return "", fmt.Errorf("HTTP %d: %s", resp.StatusCode, b)
	}
	b, _ := io.ReadAll(resp.Body)
	last := ""
	for _, line := range strings.Split(string(b), "\n") {
		if d, ok := strings.CutPrefix(line, "data: "); ok {
			last = d
		}
	}
	if last == "" {
		last = string(b)
	}
	return last, nil
}
