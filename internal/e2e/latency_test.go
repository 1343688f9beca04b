package e2e

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"
)

// stdioPeer is a process spoken to in newline-delimited JSON-RPC over stdio.
type stdioPeer struct {
	cmd *exec.Cmd
	in  io.WriteCloser
	out *bufio.Reader
}

func startStdioPeer(b *testing.B, argv ...string) *stdioPeer {
	b.Helper()
	cmd := exec.Command(argv[0], argv[1:]...)
	in, err := cmd.StdinPipe()
	if err != nil {
		b.Fatal(err)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		b.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	p := &stdioPeer{cmd: cmd, in: in, out: bufio.NewReaderSize(out, 1<<20)}
	b.Cleanup(func() { in.Close(); _ = cmd.Wait() })
	p.rpc(b, `{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"bench","version":"1"}}}`)
	if _, err := io.WriteString(in, `{"jsonrpc":"2.0","method":"notifications/initialized"}`+"\n"); err != nil {
		b.Fatal(err)
	}
	return p
}

// rpc sends one request and returns its response line, skipping notifications.
func (p *stdioPeer) rpc(b *testing.B, line string) []byte {
	if _, err := io.WriteString(p.in, line+"\n"); err != nil {
		b.Fatal(err)
	}
	for {
		l, err := p.out.ReadBytes('\n')
		if err != nil {
			b.Fatalf("read: %v", err)
		}
		if !strings.Contains(string(l), `"method":"notifications/`) {
			return l
		}
	}
}

// BenchmarkStdioLatency measures, side by side in one run, a tools/call returning
// 4 KiB of text sent straight to the upstream and sent through `gateway run
// --filter-output` with the shipped policies: calls alternate between the two, so
// both see the same machine load. It reports each path's p50 and p99 round trip and
// what the gateway adds (gateway minus direct, per percentile).
// make bench runs it with -benchtime 5000x.
func BenchmarkStdioLatency(b *testing.B) {
	_, fake := httpBinaries(b)
	direct := startStdioPeer(b, fake)
	gw := startStdioPeer(b, binary, "gateway", "run", "--filter-output", "--policies", shippedPolicies(),
		"--audit-file", filepath.Join(b.TempDir(), "audit.jsonl"), "--log-level", "warn", "--", fake)
	const size = 4 << 10
	call := func(p *stdioPeer, id int) time.Duration {
		body := fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"big","arguments":{"bytes":%d}}}`, id, size)
		t0 := time.Now()
		resp := p.rpc(b, body)
		d := time.Since(t0)
		var m struct {
			Result struct {
				Content []struct {
					Text string `json:"text"`
				} `json:"content"`
			} `json:"result"`
		}
		if err := json.Unmarshal(resp, &m); err != nil || len(m.Result.Content) != 1 || len(m.Result.Content[0].Text) != size {
			b.Fatalf("call %d: %.200s", id, resp)
		}
		return d
	}
	for i := range 200 { // warm up: the gateway lists tools once, runtimes fill their pools
		call(direct, i+1)
		call(gw, i+1)
	}
	d, g := make([]time.Duration, 0, b.N), make([]time.Duration, 0, b.N)
	b.SetBytes(size)
	b.ResetTimer()
	for i := range b.N {
		d = append(d, call(direct, 1000+i))
		g = append(g, call(gw, 1000+i))
	}
	b.StopTimer()
	pct := func(v []time.Duration, q float64) float64 {
		s := append([]time.Duration(nil), v...)
		sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
		return float64(s[int(q*float64(len(s)-1))].Microseconds()) / 1000
	}
	b.ReportMetric(pct(d, .5), "direct-p50-ms")
	b.ReportMetric(pct(d, .99), "direct-p99-ms")
	b.ReportMetric(pct(g, .5), "gateway-p50-ms")
	b.ReportMetric(pct(g, .99), "gateway-p99-ms")
	b.ReportMetric(pct(g, .5)-pct(d, .5), "added-p50-ms")
	b.ReportMetric(pct(g, .99)-pct(d, .99), "added-p99-ms")
}
