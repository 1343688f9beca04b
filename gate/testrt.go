package gate

import (
	"time"

	"github.com/dop251/goja"
	"github.com/mcpgate/mcpgate/gate/internal/testrt"
)

// testRuntime is a fresh runtime of a Gate lent to the policy test runner (package
// gate/policytest).
type testRuntime struct {
	v       *vm
	p       *pool
	tok     uint64
	timeout time.Duration
}

// TestRuntime lends the policy test runner (package gate/policytest, `mcpgate test`) a
// fresh locked-down runtime of g: the sandbox, the limits and the watchdog a policy
// has, registered with the pool's watchdog until its Close. Errors are the sandbox's
// (ErrLockdownFailed).
func (g *Gate) TestRuntime() (testrt.Runtime, error) {
	if err := g.pool.proven(g.closed); err == errCancelled {
		return nil, ErrClosed
	} else if err != nil {
		return nil, err
	}
	v, err := newVM(g.pool)
	if err != nil {
		return nil, err
	}
	tok := tokens.Add(1)
	g.pool.begin(v, tok, 0, 0, nil) // the runner's own timer is the test's clock (paused during host calls)
	return &testRuntime{v: v, p: g.pool, tok: tok, timeout: g.opts.Timeout}, nil
}

func (t *testRuntime) JS() *goja.Runtime      { return t.v.rt }
func (t *testRuntime) Global() *goja.Object   { return t.v.global }
func (t *testRuntime) Timeout() time.Duration { return t.timeout }
func (t *testRuntime) Close()                 { t.p.end(t.v) }
func (t *testRuntime) ThrowType(msg string)   { t.v.throwType(msg) }

func (t *testRuntime) Interrupt(cancelled bool) {
	why := errTimeout
	if cancelled {
		why = errCancelled
	}
	t.v.interruptIf(t.tok, why)
}

func (t *testRuntime) InterruptMessage(ie *goja.InterruptedError) string {
	if why, ok := ie.Value().(*interruptReason); ok {
		return why.msg
	}
	return errTimeout.msg
}

func (t *testRuntime) Stringify(v goja.Value) (goja.Value, error) {
	return t.v.Stringify(goja.Undefined(), v)
}

func (t *testRuntime) Parse(text string) (goja.Value, error) {
	return t.v.Parse(goja.Undefined(), t.v.rt.ToValue(text))
}

func (t *testRuntime) Describe(v goja.Value) (goja.Value, error) {
	return t.v.Describe(goja.Undefined(), v)
}

func (t *testRuntime) Freeze(o *goja.Object) error {
	_, err := t.v.DeepFreeze(goja.Undefined(), o)
	return err
}

func (t *testRuntime) Run(wrapper goja.Value, binding *goja.Object) (goja.Value, error) {
	return t.v.Runner(goja.Undefined(), wrapper, binding)
}

func (t *testRuntime) UnhandledRejection() (string, bool) {
	if rej := t.v.unhandledRejection(); rej != nil {
		return rej.Message, true
	}
	return "", false
}
