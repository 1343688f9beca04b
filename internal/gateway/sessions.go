package gateway

import (
	"os"
	"strconv"
	"strings"
)

// What an HTTP session costs (docs/http.md#what-a-session-costs): each 2025-11-25
// session starts its own stdio upstream, and a Node.js MCP server holds about
// 37 MiB of its own (69 MiB resident, the node binary's pages shared), the session's
// resumption buffer up to 1 MiB more. SessionCost rounds that up to leave room for
// the results in flight.
const SessionCost = 64 << 20

// Bounds of DefaultMaxSessions, and the per-caller default.
const (
	minDefaultSessions = 16
	maxDefaultSessions = 1024
	// DefaultMaxSessionsPerCaller is one caller identity's share by default: enough
	// for an agent with parallel sub-agents, a small part of any host's total.
	DefaultMaxSessionsPerCaller = 32
)

// DefaultMaxSessions is the default --max-sessions of gateway run: the sessions half
// of the host's memory holds at SessionCost each (the cgroup's limit when lower,
// as in a container), between 16 and 1024. 24 GiB gives 192.
func DefaultMaxSessions() int { return sessionsFor(hostMemory()) }

func sessionsFor(mem uint64) int {
	if mem == 0 {
		return 256 // memory unknown
	}
	n := mem / 2 / SessionCost
	return int(min(max(n, minDefaultSessions), maxDefaultSessions))
}

// hostMemory is the memory this process may use in bytes: the cgroup v2 or v1 limit
// when one is set and lower than the machine's, else the machine's total; 0 when
// neither can be read.
func hostMemory() uint64 {
	total := totalMemory()
	for _, f := range []string{"/sys/fs/cgroup/memory.max", "/sys/fs/cgroup/memory/memory.limit_in_bytes"} {
		b, err := os.ReadFile(f)
		if err != nil {
			continue
		}
		if lim, err := strconv.ParseUint(strings.TrimSpace(string(b)), 10, 64); err == nil && lim > 0 && (total == 0 || lim < total) {
			return lim
		}
	}
	return total
}

// totalMemory reads MemTotal from /proc/meminfo (Linux); 0 elsewhere.
func totalMemory() uint64 {
	b, err := os.ReadFile("/proc/meminfo")
	if err != nil {
		return 0
	}
	for line := range strings.Lines(string(b)) {
		if rest, ok := strings.CutPrefix(line, "MemTotal:"); ok {
			f := strings.Fields(rest)
			if len(f) == 2 && f[1] == "kB" {
				if kb, err := strconv.ParseUint(f[0], 10, 64); err == nil {
					return kb << 10
				}
			}
		}
	}
	return 0
}
