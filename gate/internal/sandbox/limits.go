// Package sandbox builds the locked-down goja runtime a policy runs in and proves it.
// It owns the construction and self-test of a runtime (New, Seal, SelfTest), the
// lockdown script (lockdown.js: no code generation, frozen intrinsics, the growth
// guards of the built-ins), the Go guards of String.prototype.replace and
// RegExp.prototype's symbol methods, the bounds they apply, the bounded host half of
// JSON.parse, the process-wide regexp2 timeout, and the one file that knows goja's
// string types (strings.go). The gate adds ctx between New and Seal
// (docs/policies.md#growth-limits).
package sandbox

// Limits. A guard that trips interrupts the policy with policy_memory_limit or
// policy_stack_limit; the runtime is then thrown away.
const (
	MaxStringLen = 1 << 25 // UTF-16 units a guarded built-in may produce (repeat, padStart, join)
	MaxArrayLen  = 1 << 20 // elements: Array(n), Array.from, any Array.prototype receiver, split, apply, spreads
	MaxNodes     = 1 << 22 // values one JSON.stringify or one helper walk visits
	MaxBufferLen = 1 << 26 // bytes: ArrayBuffer and typed arrays
	MaxNesting   = 512     // JSON.parse/stringify nesting, Array.prototype.flat depth, helper walks
	MaxCallStack = 2048    // JS frames (goja SetMaxCallStackSize)
)
