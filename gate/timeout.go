package gate

import (
	_ "embed"
	"sync"
	"sync/atomic"
	"time"

	"github.com/dlclark/regexp2/v2"
)

var regexpMu sync.Mutex

// lowerRegexpTimeout bounds every backtracking (regexp2) match goja compiles from now
// on: goja falls back to regexp2 for lookaround and backreferences, and Interrupt
// cannot stop a native match. regexp2.DefaultMatchTimeout is process-wide and read
// when a pattern is compiled, so it is only ever lowered, never raised.
func lowerRegexpTimeout(d time.Duration) {
	regexpMu.Lock()
	defer regexpMu.Unlock()
	if d > 0 && d < regexp2.DefaultMatchTimeout {
		regexp2.DefaultMatchTimeout = d
	}
}

func init() { lowerRegexpTimeout(DefaultTimeout) }

var tokens atomic.Uint64

// interruptIf interrupts the runtime only if it is still running the run identified by
// tok, so a late timer never poisons the next call.
func (v *vm) interruptIf(tok uint64, why *interruptReason) {
	v.mu.Lock()
	if v.token == tok && tok != 0 {
		v.rt.Interrupt(why)
		v.broken.Store(true)
	}
	v.mu.Unlock()
}
