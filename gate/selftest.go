package gate

import (
	_ "embed"
	"errors"
	"fmt"

	"github.com/dop251/goja"
)

// selfTest proves the lockdown on a fresh runtime: no eval, no Function constructor by
// any path, no host objects, frozen intrinsics. Load fails when any probe disagrees.
func selfTest(p *pool) error {
	v, err := newVM(p)
	if err != nil {
		return err
	}
	probes := []string{
		`typeof eval === "undefined"`,
		`typeof require === "undefined" && typeof process === "undefined" && typeof module === "undefined"`,
		`typeof fetch === "undefined" && typeof XMLHttpRequest === "undefined" && typeof GoError === "undefined"`,
		`typeof setTimeout === "undefined" && typeof Deno === "undefined" && typeof Bun === "undefined"`,
		`(function(){ try { Function("return 1"); return false } catch (e) { return e instanceof TypeError } })()`,
		`(function(){ try { (function(){}).constructor("return 1"); return false } catch (e) { return e instanceof TypeError } })()`,
		`(function(){ try { (function*(){}).constructor("yield 1"); return false } catch (e) { return e instanceof TypeError } })()`,
		`(function(){ try { (async function(){}).constructor("return 1"); return false } catch (e) { return e instanceof TypeError } })()`,
		`(function(){ try { new (Object.getPrototypeOf(function(){}).constructor)("return 1"); return false } catch (e) { return e instanceof TypeError } })()`,
		`!Object.isExtensible(globalThis) && Object.isFrozen(Object.prototype) && Object.isFrozen(Array.prototype) && Object.isFrozen(String.prototype) && Object.isFrozen(Function.prototype) && Object.isFrozen(JSON) && Object.isFrozen(Math)`,
		`(function(){ Object.prototype.polluted = 1; return ({}).polluted === undefined })()`,
	}
	if !p.console {
		probes = append(probes, `typeof console === "undefined"`)
	}
	for i, src := range probes {
		res, err := v.rt.RunString(src)
		if err != nil || !res.ToBoolean() {
			return fmt.Errorf("%w: probe %d (%s) failed: %v", ErrLockdownFailed, i, src, errors.Unwrap(err))
		}
	}
	// every binding behind ctx is frozen (nothing a policy writes on one can reach the
	// next call), and so are ctx and ctx.response themselves
	isFrozen, ok := goja.AssertFunction(v.global.Get("Object").ToObject(v.rt).Get("isFrozen"))
	if !ok {
		return fmt.Errorf("%w: Object.isFrozen missing", ErrLockdownFailed)
	}
	frozen := func(val goja.Value) bool {
		r, err := isFrozen(goja.Undefined(), val)
		return err == nil && r.ToBoolean()
	}
	if len(v.b.members) == 0 || !frozen(v.b.ctx) || !frozen(v.b.response) {
		return fmt.Errorf("%w: ctx is not frozen", ErrLockdownFailed)
	}
	for _, m := range append(append([]ctxMember(nil), v.b.members...), v.b.respMembers...) {
		for _, f := range []goja.Value{m.get, m.set, m.method} {
			if f != nil && !frozen(f) {
				return fmt.Errorf("%w: a function behind ctx.%s is not frozen", ErrLockdownFailed, m.name)
			}
		}
	}
	if !v.resetGlobals() {
		return fmt.Errorf("%w: globals not clean after probes", ErrLockdownFailed)
	}
	return nil
}
