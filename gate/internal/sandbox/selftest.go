package sandbox

import (
	"errors"
	"fmt"
)

// SelfTest proves the lockdown on a fresh runtime: no eval, no Function constructor by
// any path, no host objects, frozen intrinsics, and console only when console is true.
// The error names the first probe that disagrees.
func (r *Runtime) SelfTest(console bool) error {
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
	if !console {
		probes = append(probes, `typeof console === "undefined"`)
	}
	for i, src := range probes {
		res, err := r.RT.RunString(src)
		if err != nil || !res.ToBoolean() {
			return fmt.Errorf("probe %d (%s) failed: %v", i, src, errors.Unwrap(err))
		}
	}
	if !r.ResetGlobals() {
		return errors.New("globals not clean after probes")
	}
	return nil
}
