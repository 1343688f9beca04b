package e2e

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"os"
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
// 4 KiB and 256 KiB of text sent straight to the upstream and sent through `gateway
// run --filter-output` with the shipped policies and an audit file: calls alternate
// between the paths, so all see the same machine load. It reports each path's p50
// and p99 round trip, what the gateway adds (gateway minus direct, per percentile)
// and added-p50-x, the p50 added as a multiple of the direct p50. With
// MCPGATE_BENCH_BASE naming another mcpgate binary (the commit before, built with go
// build -o), that binary runs as a third path in the same alternation, reported as
// base-* (docs/http.md#added-latency). make bench runs it with -benchtime 5000x.
func BenchmarkStdioLatency(b *testing.B) {
	for _, size := range []int{4 << 10, 256 << 10} {
		b.Run(fmt.Sprintf("%dKiB", size>>10), func(b *testing.B) { stdioLatency(b, size) })
	}
}

func stdioLatency(b *testing.B, size int) {
	_, fake := httpBinaries(b)
	gateway := func(bin string) *stdioPeer {
		return startStdioPeer(b, bin, "gateway", "run", "--filter-output", "--policies", shippedPolicies(),
			"--audit-file", filepath.Join(b.TempDir(), "audit.jsonl"), "--log-level", "warn", "--", fake)
	}
	paths := []struct {
		name string
		peer *stdioPeer
		took []time.Duration
	}{{name: "direct", peer: startStdioPeer(b, fake)}, {name: "gateway", peer: gateway(binary)}}
	if base := os.Getenv("MCPGATE_BENCH_BASE"); base != "" {
		paths = append(paths, struct {
			name string
			peer *stdioPeer
			took []time.Duration
		}{name: "base", peer: gateway(base)})
	}
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
		for _, p := range paths {
			call(p.peer, i+1)
		}
	}
	b.SetBytes(int64(size))
	b.ResetTimer()
	for i := range b.N {
		for k := range paths {
			paths[(i+k)%len(paths)].took = append(paths[(i+k)%len(paths)].took, call(paths[(i+k)%len(paths)].peer, 1000+i))
		}
	}
	b.StopTimer()
	pct := func(v []time.Duration, q float64) float64 {
		s := append([]time.Duration(nil), v...)
		sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
		return float64(s[int(q*float64(len(s)-1))].Microseconds()) / 1000
	}
	d50, d99 := pct(paths[0].took, .5), pct(paths[0].took, .99)
	b.ReportMetric(d50, "direct-p50-ms")
	b.ReportMetric(d99, "direct-p99-ms")
	for _, p := range paths[1:] {
		g50, g99 := pct(p.took, .5), pct(p.took, .99)
		b.ReportMetric(g50, p.name+"-p50-ms")
		b.ReportMetric(g99, p.name+"-p99-ms")
		prefix := p.name + "-"
		if p.name == "gateway" {
			prefix = ""
		}
		b.ReportMetric(g50-d50, prefix+"added-p50-ms")
		b.ReportMetric(g99-d99, prefix+"added-p99-ms")
		b.ReportMetric((g50-d50)/d50, prefix+"added-p50-x")
	}
}

// BenchmarkFirstCall measures a fresh gateway's first moments against the server it
// fronts, each start side by side: the time from starting the process to the answer
// to initialize, the bare server's and the gateway's (`gateway run --filter-output`,
// shipped policies, an audit file), and the time the gateway's policies took in its
// first tools/call (pre_policies plus post_policies) against its tenth's, from their
// audit records, and the time from the start to the first call's answer. The first
// call is sent once the client has its initialize answer, as a client does. With
// MCPGATE_BENCH_BASE the other binary is started alternately and reported as base-*
// (docs/policies.md#first-call). Run: go test -run '^$' -bench FirstCall -benchtime
// 20x ./internal/e2e/
func BenchmarkFirstCall(b *testing.B) {
	_, fake := httpBinaries(b)
	start := func(argv ...string) (*stdioPeer, time.Duration) {
		t0 := time.Now()
		p := startStdioPeer(b, argv...)
		return p, time.Since(t0)
	}
	type side struct {
		name               string
		bin                string
		init, first, tenth []float64
		result             []float64 // from the start to the first call's answer
	}
	sides := []*side{{name: "gateway", bin: binary}}
	if base := os.Getenv("MCPGATE_BENCH_BASE"); base != "" {
		sides = append(sides, &side{name: "base", bin: base})
	}
	var bare []float64
	ms := func(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
	for i := range b.N {
		p, d := start(fake)
		bare = append(bare, ms(d))
		p.in.Close()
		for _, s := range sides {
			auditFile := filepath.Join(b.TempDir(), "audit.jsonl")
			p, d := start(s.bin, "gateway", "run", "--filter-output", "--policies", shippedPolicies(),
				"--audit-file", auditFile, "--log-level", "warn", "--", fake)
			s.init = append(s.init, ms(d))
			t1 := time.Now()
			for id := 1; id <= 10; id++ {
				p.rpc(b, fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"big","arguments":{"bytes":4096}}}`, id))
				if id == 1 {
					s.result = append(s.result, ms(d+time.Since(t1)))
				}
			}
			p.in.Close()
			_ = p.cmd.Wait()
			var pre []float64
			data, err := os.ReadFile(auditFile)
			if err != nil {
				b.Fatal(err)
			}
			for _, line := range strings.Split(strings.TrimSpace(string(data)), "\n") {
				var r struct {
					Method  string             `json:"method"`
					StageMS map[string]float64 `json:"stage_ms"`
				}
				if json.Unmarshal([]byte(line), &r) == nil && r.Method == "tools/call" {
					pre = append(pre, r.StageMS["pre_policies"]+r.StageMS["post_policies"])
				}
			}
			if len(pre) != 10 {
				b.Fatalf("run %d: %d tools/call records in %s, want 10", i, len(pre), auditFile)
			}
			s.first, s.tenth = append(s.first, pre[0]), append(s.tenth, pre[9])
		}
	}
	med := func(v []float64) float64 {
		s := append([]float64(nil), v...)
		sort.Float64s(s)
		return s[len(s)/2]
	}
	b.ReportMetric(med(bare), "bare-init-ms")
	for _, s := range sides {
		prefix := ""
		if s.name != "gateway" {
			prefix = s.name + "-"
		}
		b.ReportMetric(med(s.init), prefix+"init-ms")
		b.ReportMetric(med(s.init)/med(bare), prefix+"init-x")
		b.ReportMetric(med(s.result), prefix+"first-result-ms")
		b.ReportMetric(med(s.first), prefix+"first-policies-ms")
		b.ReportMetric(med(s.tenth), prefix+"tenth-policies-ms")
		b.ReportMetric(med(s.first)/max(med(s.tenth), 0.001), prefix+"first-policies-x")
	}
}
