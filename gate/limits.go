package gate

import (
	_ "embed"
	"time"
)

// Sandbox limits. A guard that trips interrupts the policy with policy_memory_limit or
// policy_stack_limit; the runtime is then thrown away.
const (
	maxStringLen   = 1 << 25          // UTF-16 units a guarded built-in may produce (repeat, padStart, join)
	maxArrayLen    = 1 << 20          // elements: Array(n), Array.from, any Array.prototype receiver, split, apply, spreads
	maxNodes       = 1 << 22          // values one JSON.stringify or one helper walk visits
	maxBufferLen   = 1 << 26          // bytes: ArrayBuffer and typed arrays
	maxNesting     = 512              // JSON.parse/stringify nesting, Array.prototype.flat depth, helper walks
	maxCallStack   = 2048             // JS frames (goja SetMaxCallStackSize)
	watchInterval  = time.Millisecond // heap sampling and deadlines while a policy runs
	watchIdleTicks = 100              // ticks with no policy before the watchdog sleeps
	inputFactor    = 32               // heap budget bytes per byte of a phase's input JSON
)
