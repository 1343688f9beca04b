package gate

import (
	"errors"
	"fmt"
)

// Rejection codes (DECISIONS "Audit records"): snake_case, safe to log and to put in
// an audit record; the thrown message never is.
const (
	CodeThrow       = "policy_throw"        // the policy threw (a string, an Error, anything)
	CodeTimeout     = "policy_timeout"      // the policy ran past Options.Timeout or the call was cancelled
	CodeStackLimit  = "policy_stack_limit"  // JS or native recursion too deep
	CodeMemoryLimit = "policy_memory_limit" // an allocation guard or the heap watchdog fired
	CodeBadShape    = "bad_ctx_shape"       // ctx.params / ctx.response read back with the wrong shape
	CodeError       = "policy_error"        // anything else: a host-side failure while running the policy
)

// Load and reload errors. Match them with errors.Is.
var (
	ErrNoDir          = errors.New("gate: policies directory does not exist")
	ErrSyntax         = errors.New("gate: policy does not compile")
	ErrUnknownEval    = errors.New("gate: unknown evaluator in GATE_EVALUATORS")
	ErrLockdownFailed = errors.New("gate: sandbox self-test failed")
	ErrClosed         = errors.New("gate: closed")
)

// CompileError is a policy that does not compile: file name, 1-based line and column,
// and the parser's message (which quotes source tokens, never call data). It matches
// ErrSyntax with errors.Is.
type CompileError struct {
	File   string
	Line   int
	Column int
	Msg    string
}

func (e *CompileError) Error() string {
	if e.Line > 0 {
		return fmt.Sprintf("gate: %s:%d:%d: %s", e.File, e.Line, e.Column, e.Msg)
	}
	return fmt.Sprintf("gate: %s: %s", e.File, e.Msg)
}

// Is makes errors.Is(err, ErrSyntax) true.
func (e *CompileError) Is(target error) bool { return target == ErrSyntax }

// interrupt reasons handed to goja's Runtime.Interrupt; they pick the rejection code.
type interruptReason struct{ code, msg string }

func (r *interruptReason) Error() string { return r.msg }

var (
	errTimeout   = &interruptReason{CodeTimeout, "policy ran past its time limit"}
	errCancelled = &interruptReason{CodeTimeout, "call cancelled while the policy ran"}
	errMemory    = &interruptReason{CodeMemoryLimit, "policy exceeded the memory limit"}
	errStack     = &interruptReason{CodeStackLimit, "policy exceeded the nesting limit"}
	errClosing   = &interruptReason{CodeError, "gate closed while the policy ran"}
)
