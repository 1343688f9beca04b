package gate

import (
	"errors"
	"fmt"

	"github.com/mcpgate/mcpgate/vocab"
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
type interruptReason struct {
	code vocab.Reason
	msg  string
}

func (r *interruptReason) Error() string { return r.msg }

var (
	errTimeout   = &interruptReason{vocab.ReasonPolicyTimeout, "policy ran past its time limit"}
	errCancelled = &interruptReason{vocab.ReasonPolicyTimeout, "call cancelled while the policy ran"}
	errMemory    = &interruptReason{vocab.ReasonPolicyMemoryLimit, "policy exceeded the memory limit"}
	errStack     = &interruptReason{vocab.ReasonPolicyStackLimit, "policy exceeded the nesting limit"}
	errClosing   = &interruptReason{vocab.ReasonPolicyError, "gate closed while the policy ran"}
)
