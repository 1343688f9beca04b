//go:build !unix

package gate

import "time"

// processCPU is not read on this platform.
func processCPU() time.Duration { return 0 }
