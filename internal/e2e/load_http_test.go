package e2e

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// TestLoadHTTP is the bounded load test of the HTTP front (make load). Each client
// has its own session (so its own upstream process) and calls the big tool, which
// returns MCPGATE_LOAD_RESULT_BYTES (1 MiB) of text, in a loop for
// MCPGATE_LOAD_DURATION (20 s), over loopback, with --filter-output and the shipped
// policies. It runs 16 clients (the gateway must stay under 512 MB resident) and 64
// clients (under 1 GB); MCPGATE_LOAD_CLIENTS=N runs N clients only (under 1 GB).
// It requires zero errors and exactly one audit record per call, and reports calls
// per second, round-trip p50/p99, the p50/p99 the gateway adds (round trip minus the
// upstream stage of the records), and the peak resident memory.
func TestLoadHTTP(t *testing.T) {
	if testing.Short() || os.Getenv("MCPGATE_LOAD") == "" {
		t.Skip("load test: set MCPGATE_LOAD=1 (make load)")
	}
	duration := 20 * time.Second
	if d, err := time.ParseDuration(os.Getenv("MCPGATE_LOAD_DURATION")); err == nil {
		duration = d
	}
	size := 1 << 20
	if n, err := strconv.Atoi(os.Getenv("MCPGATE_LOAD_RESULT_BYTES")); err == nil && n > 0 {
		size = n
	}
	runs := []struct {
		clients int
		maxRSS  int // KiB
	}{{16, 512 << 10}, {64, 1 << 20}}
	if n, err := strconv.Atoi(os.Getenv("MCPGATE_LOAD_CLIENTS")); err == nil && n > 0 {
		runs = runs[:0]
		runs = append(runs, struct{ clients, maxRSS int }{n, 1 << 20})
	}
	for _, r := range runs {
		t.Run(fmt.Sprintf("%dclients", r.clients), func(t *testing.T) {
			loadHTTP(t, r.clients, size, duration, r.maxRSS)
		})
	}
}

func loadHTTP(t *testing.T, clients, size int, duration time.Duration, maxRSS int) {
	_, fake := httpBinaries(t)
	auditFile := filepath.Join(t.TempDir(), "audit.jsonl")
	g := startHTTPGateway(t, "--filter-output", "--policies", shippedPolicies(), "--audit-file", auditFile, "--", fake)

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
				tag := fmt.Sprintf("c%d-%d", i, id)
				r, err := c.do(t.Context(), "POST", httpCallBody(id, "big", map[string]any{"bytes": size, "tag": tag}), nil)
				d := time.Since(start)
				calls.Add(1)
				text := httpResultText(r.last())
				if err != nil || r.status != 200 || len(text) != size+len(tag) || !strings.HasSuffix(text, tag) {
					errs.Add(1)
					firstErr.CompareAndSwap(nil, fmt.Sprintf("err=%v status=%d result %d bytes", err, r.status, len(text)))
					continue
				}
				local = append(local, d)
			}
		}()
	}
	tick := time.NewTicker(200 * time.Millisecond)
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
	g.stop(t) // flushes the audit records

	slices.Sort(lat)
	up, records := upstreamStageMS(t, auditFile)
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
	peak := maxInt(rss)
	t.Logf("load: %d clients, %d-byte results, %s: %d calls (%.1f/s), %d errors", clients, size, duration, n, float64(n)/duration.Seconds(), errs.Load())
	t.Logf("load: round trip p50 %s p99 %s; upstream stage p50 %s p99 %s; added ≈ p50 %s p99 %s",
		p(lat, .5), p(lat, .99), pf(up, .5), pf(up, .99), p(lat, .5)-pf(up, .5), p(lat, .99)-pf(up, .99))
	t.Logf("load: gateway peak resident memory %d MiB (limit %d MiB), at the end %d MiB", peak>>10, maxRSS>>10, rss[len(rss)-1]>>10)
	if errs.Load() != 0 {
		t.Fatalf("%d errors; first: %v", errs.Load(), firstErr.Load())
	}
	if int64(records) != n {
		t.Errorf("%d audit records for %d calls, want exactly one per call", records, n)
	}
	if peak > maxRSS {
		t.Errorf("gateway peak resident memory %d MiB, want under %d MiB", peak>>10, maxRSS>>10)
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

// upstreamStageMS reads stage_ms.upstream from every record, sorted, and counts the
// records with distinct event ids.
func upstreamStageMS(t *testing.T, path string) ([]float64, int) {
	f, err := os.Open(path)
	if err != nil {
		t.Logf("audit file: %v", err)
		return nil, 0
	}
	defer f.Close()
	var out []float64
	ids := map[string]bool{}
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<24)
	for sc.Scan() {
		var r struct {
			EventID string             `json:"event_id"`
			StageMS map[string]float64 `json:"stage_ms"`
		}
		if json.Unmarshal(sc.Bytes(), &r) == nil && r.EventID != "" {
			ids[r.EventID] = true
			if v, ok := r.StageMS["upstream"]; ok {
				out = append(out, v)
			}
		}
	}
	sort.Float64s(out)
	return out, len(ids)
}
