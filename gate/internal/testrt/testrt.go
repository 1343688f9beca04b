package testrt

import (
	"time"

	"github.com/dop251/goja"
)

// Runtime is one test's runtime. The functions behind Stringify, Parse, Describe,
// Freeze and Run are the ones a policy's runtime uses.
type Runtime interface {
	JS() *goja.Runtime
	Global() *goja.Object // the frozen intrinsics (native error classes by identity)
	Timeout() time.Duration
	// Interrupt stops the running code with the gate's timeout (or, cancelled, the
	// cancellation) reason, once, for this test only.
	Interrupt(cancelled bool)
	// InterruptMessage is the policy-worded message of what interrupted the runtime.
	InterruptMessage(ie *goja.InterruptedError) string
	Stringify(v goja.Value) (goja.Value, error) // guarded JSON.stringify
	Parse(text string) (goja.Value, error)      // guarded JSON.parse
	Describe(v goja.Value) (goja.Value, error)  // a thrown value's message, without its toString
	Freeze(o *goja.Object) error                // deep freeze
	ThrowType(msg string)                       // panics with a TypeError in the runtime
	// Run hands a compiled wrapper the binding and the growth guards; it returns
	// undefined, or [message, error class, stack] when the top level threw.
	Run(wrapper goja.Value, binding *goja.Object) (goja.Value, error)
	// UnhandledRejection describes the first promise still rejected without a handler.
	UnhandledRejection() (msg string, ok bool)
	Close()
}
