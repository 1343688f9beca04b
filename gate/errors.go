package gate

import (
	"errors"

	"github.com/mcpgate/mcpgate/gate/internal/policyast"
	"github.com/mcpgate/mcpgate/vocab"
)

// Load and reload errors. Match them with errors.Is.
var (
	ErrNoDir          = errors.New("gate: policies directory does not exist")
	ErrSyntax         = policyast.ErrSyntax
	ErrUnknownEval    = errors.New("gate: unknown evaluator in GATE_EVALUATORS")
	ErrLockdownFailed = errors.New("gate: sandbox self-test failed")
	ErrClosed         = errors.New("gate: closed")
)

// CompileError is a policy (or a policy test file) that does not compile: File, 1-based
// Line and Column (0 when unknown), and the parser's Msg (which quotes source tokens,
// never call data). It matches ErrSyntax with errors.Is. It is the one compile-error
// type, the one package policyast returns.
type CompileError = policyast.Error

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
