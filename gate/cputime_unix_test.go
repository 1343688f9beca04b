//go:build unix

package gate

import (
	"syscall"
	"time"
)

// processCPU is the CPU time this process has used (user + system, every thread:
// garbage collection included), or 0 when it cannot be read.
func processCPU() time.Duration {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
