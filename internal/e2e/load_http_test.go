package e2e

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// TestLoadHTTP is the bounded load test of the HTTP front (make load): 64 concurrent
// clients, each in its own session (so 64 upstream processes), call echo for 30 s
// over loopback. It requires zero errors and a flat gateway RSS, and reports the
// p50/p99 latency the gateway adds (client round trip minus the upstream stage of the
// audit records). Enable with MCPGATE_LOAD=1; MCPGATE_LOAD_DURATION and
// MCPGATE_LOAD_CLIENTS override the defaults.
func TestLoadHTTP(t *testing.T) {
	if testing.Short() || os.Getenv("MCPGATE_LOAD") == "" {
		t.Skip("load test: set MCPGATE_LOAD=1 (make load)")
	}
	duration := 30 * time.Second
	if d, err := time.ParseDuration(os.Getenv("MCPGATE_LOAD_DURATION")); err == nil {
		duration = d
	}
	clients := 64
	if n, err := strconv.Atoi(os.Getenv("MCPGATE_LOAD_CLIENTS")); err == nil && n > 0 {
		clients = n
	}
	_, fake := httpBinaries(t)
	auditFile := filepath.Join(t.TempDir(), "audit.jsonl")
	g := startHTTPGateway(t, "--audit-file", auditFile, "--", fake)

	cs := make([]*httpClient, clients)
	for i := range cs {
		cs[i] = newHTTPClient(g.url)
		cs[i].initialize(t)
	}
	var (
		calls, errs atomic.Int64
		mu          sync.Mutex
		lat         []time.Duration
		firstErr    atomic.Value
	)
	rss := []int{}
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for i, c := range cs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			local := make([]time.Duration, 0, 4096)
			for id := 1; ; id++ {
				select {
				case <-stop:
					mu.Lock()
					lat = append(lat, local...)
					mu.Unlock()
					return
				default:
				}
				start := time.Now()
				want := fmt.Sprintf("c%d-%d", i, id)
				r, err := c.do(t.Context(), "POST", httpCallBody(id, "echo", map[string]any{"text": want}), nil)
				d := time.Since(start)
				calls.Add(1)
				if err != nil || r.status != 200 || httpResultText(r.last()) != "fakeup: "+want {
					errs.Add(1)
					firstErr.CompareAndSwap(nil, fmt.Sprintf("err=%v status=%d msgs=%v", err, r.status, r.msgs))
					continue
				}
				local = append(local, d)
			}
		}()
	}
	tick := time.NewTicker(time.Second)
	deadline := time.After(duration)
loop:
	for {
		select {
		case <-tick.C:
			rss = append(rss, rssKB(g.cmd.Process.Pid))
		case <-deadline:
			break loop
		}
	}
	tick.Stop()
	close(stop)
	wg.Wait()

	sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })
	up := upstreamStageMS(t, auditFile)
	p := func(d []time.Duration, q float64) time.Duration {
		if len(d) == 0 {
			return 0
		}
		return d[int(q*float64(len(d)-1))]
	}
	pf := func(v []float64, q float64) time.Duration {
		if len(v) == 0 {
			return 0
		}
		return time.Duration(v[int(q*float64(len(v)-1))] * float64(time.Millisecond))
	}
	n := calls.Load()
	t.Logf("load: %d clients, %s: %d calls (%.0f/s), %d errors", clients, duration, n, float64(n)/duration.Seconds(), errs.Load())
	t.Logf("load: round trip p50 %s p99 %s; upstream stage p50 %s p99 %s; added ≈ p50 %s p99 %s",
		p(lat, .5), p(lat, .99), pf(up, .5), pf(up, .99), p(lat, .5)-pf(up, .5), p(lat, .99)-pf(up, .99))
	if len(rss) > 6 {
		warm, end := rss[4], rss[len(rss)-1]
		t.Logf("load: gateway RSS after warm-up %d KiB, at the end %d KiB, peak %d KiB", warm, end, maxInt(rss))
		if end > warm*3/2+32<<10 {
			t.Errorf("gateway memory grew from %d KiB to %d KiB", warm, end)
		}
	}
	if errs.Load() != 0 {
		t.Fatalf("%d errors; first: %v", errs.Load(), firstErr.Load())
	}
}

func rssKB(pid int) int {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			n, _ := strconv.Atoi(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")))
			return n
		}
	}
	return 0
}

func maxInt(v []int) int {
	m := 0
	for _, x := range v {
		m = max(m, x)
	}
	return m
}

// upstreamStageMS reads stage_ms.upstream from every record, sorted.
func upstreamStageMS(t *testing.T, path string) []float64 {
	f, err := os.Open(path)
	if err != nil {
		t.Logf("audit file: %v", err)
		return nil
	}
	defer f.Close()
	var out []float64
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<24)
	for sc.Scan() {
		var r struct {
			StageMS map[string]float64 `json:"stage_ms"`
		}
		if json.Unmarshal(sc.Bytes(), &r) == nil {
			if v, ok := r.StageMS["upstream"]; ok {
				out = append(out, v)
			}
		}
	}
	sort.Float64s(out)
	return out
}
