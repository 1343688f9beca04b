package gate

import (
	"fmt"

	"github.com/dop251/goja"
)

// selfTest proves the lockdown on a fresh runtime (sandbox's probes), and that ctx,
// ctx.response and every function behind them are frozen, so nothing a policy writes
// on one can reach the next call. Load runs it in the background; until it has
// passed no runtime is lent, and when any check disagrees every runtime request
// fails (ErrLockdownFailed: the call is refused with policy_error). A runtime that
// passes is clean (the probes leave nothing behind, ResetGlobals checks) and becomes
// the pool's first, so Load builds one runtime, not two.
func selfTest(p *pool) error {
	v, err := newVM(p)
	if err != nil {
		return err
	}
	if err := v.SelfTest(p.console); err != nil {
		return fmt.Errorf("%w: %w", ErrLockdownFailed, err)
	}
	if len(v.b.members) == 0 || !v.IsFrozen(v.b.ctx) || !v.IsFrozen(v.b.response) {
		return fmt.Errorf("%w: ctx is not frozen", ErrLockdownFailed)
	}
	for _, m := range append(append([]ctxMember(nil), v.b.members...), v.b.respMembers...) {
		for _, f := range []goja.Value{m.get, m.set, m.method} {
			if f != nil && !v.IsFrozen(f) {
				return fmt.Errorf("%w: a function behind ctx.%s is not frozen", ErrLockdownFailed, m.name)
			}
		}
	}
	p.slots <- struct{}{} // a fresh pool: room for size+1
	p.put(v)
	return nil
}
