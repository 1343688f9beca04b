package sandbox

import (
	_ "embed"
	"sync"
	"time"

	"github.com/dlclark/regexp2/v2"
)

var regexpMu sync.Mutex

// LowerRegexpTimeout bounds every backtracking (regexp2) match goja compiles from now
// on: goja falls back to regexp2 for lookaround and backreferences, and Interrupt
// cannot stop a native match. regexp2.DefaultMatchTimeout is process-wide and read
// when a pattern is compiled, so it is only ever lowered, never raised.
func LowerRegexpTimeout(d time.Duration) {
	regexpMu.Lock()
	defer regexpMu.Unlock()
	if d > 0 && d < regexp2.DefaultMatchTimeout {
		regexp2.DefaultMatchTimeout = d
	}
}
