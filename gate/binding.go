package gate

import (
	"math"
	"reflect"
	"slices"
	"strconv"

	"github.com/dop251/goja"

	"github.com/mcpgate/mcpgate/ctxapi"
	"github.com/mcpgate/mcpgate/engine"
)

// binding holds the native functions behind ctx, built once per runtime and frozen;
// they read the call being run from vm.cur.
type binding struct {
	paramsGet, paramsSet     goja.Value
	contentGet, contentSet   goja.Value
	toolsGet, toolsSet       goja.Value // list phase
	contentsGet, contentsSet goja.Value // resource phase
	messagesGet, messagesSet goja.Value // prompt phase
	scGet, scSet             goja.Value
	findingsGet              goja.Value
	responseSet              goja.Value
	warn, rate               goja.Value
	redact, mask, hash       goja.Value
	redactAll                goja.Value
	removeLines              goja.Value

	ctx      *goja.Object // the global ctx: a proxy (delete trap) over one non-extensible object per runtime
	response *goja.Object // ctx.response in the post phase: a proxy like ctx

	members []ctxMember // the ctx surface (exports)

	lastUser    ctxapi.User // cache: a frozen ctx.user is reused while the user is the same
	lastUserVal goja.Value
}

// throwType throws a JS TypeError from a native.
func (v *vm) throwType(msg string) {
	panic(v.rt.NewTypeError(msg))
}

// rethrow re-raises an error returned by a nested JS call inside a native.
func rethrow(err error) {
	panic(err)
}

// frozenFunc wraps a Go function as a frozen JS function, so no policy can change it.
func (v *vm) frozenFunc(f func(goja.FunctionCall) goja.Value) goja.Value {
	o := v.rt.ToValue(f)
	if _, err := v.deepFreeze(goja.Undefined(), o); err != nil {
		panic(err)
	}
	return o
}

func (v *vm) bind(p *pool) error {
	rt := v.rt
	fn := v.frozenFunc
	st := func() *callState {
		if v.cur == nil {
			v.throwType("ctx is only available while a policy runs")
		}
		return v.cur
	}
	v.b.paramsGet = fn(func(goja.FunctionCall) goja.Value { c := st(); return v.getSlot(c, &c.params) })
	v.b.paramsSet = fn(func(a goja.FunctionCall) goja.Value {
		c := st()
		v.setSlot(c, &c.params, a.Argument(0))
		return goja.Undefined()
	})
	// The content slot holds the phase's one array: ctx.response.content (post),
	// ctx.tools (list), ctx.response.contents (resource), ctx.response.messages
	// (prompt). Each accessor reads it only in its own phase; elsewhere it is
	// undefined, and assigning it is a bad shape.
	inPhase := func(phase ctxapi.Phase, name string, s func(*callState) *slot) (get, set goja.Value) {
		get = fn(func(goja.FunctionCall) goja.Value {
			c := st()
			if c.phase != phase {
				return goja.Undefined()
			}
			return v.getSlot(c, s(c))
		})
		set = fn(func(a goja.FunctionCall) goja.Value {
			c := st()
			if c.phase != phase {
				c.badShape("ctx." + name + " can only be assigned in the " + string(phase) + " phase")
				return goja.Undefined()
			}
			v.setSlot(c, s(c), a.Argument(0))
			return goja.Undefined()
		})
		return get, set
	}
	content := func(c *callState) *slot { return &c.content }
	v.b.contentGet, v.b.contentSet = inPhase(ctxapi.PhasePost, "response.content", content)
	v.b.scGet, v.b.scSet = inPhase(ctxapi.PhasePost, "response.structuredContent", func(c *callState) *slot { return &c.sc })
	v.b.toolsGet, v.b.toolsSet = inPhase(ctxapi.PhaseList, "tools", content)
	v.b.contentsGet, v.b.contentsSet = inPhase(ctxapi.PhaseResource, "response.contents", content)
	v.b.messagesGet, v.b.messagesSet = inPhase(ctxapi.PhasePrompt, "response.messages", content)
	// ctx.response = {content, structuredContent} replaces both (post only); anything
	// else is a bad shape, recorded so that a policy cannot catch it and go on.
	v.b.responseSet = fn(func(a goja.FunctionCall) goja.Value {
		c := st()
		val := a.Argument(0)
		if c.phase != ctxapi.PhasePost {
			c.badShape("ctx.response can only be assigned in the post phase")
			return goja.Undefined()
		}
		o, ok := val.(*goja.Object)
		if ok && o == v.b.response {
			return goja.Undefined() // ctx.response = ctx.response
		}
		if !ok || o.ClassName() == "Array" || o.ClassName() == "Function" {
			c.badShape("ctx.response must be assigned an object {content, structuredContent}")
			return goja.Undefined()
		}
		content, sc := o.Get("content"), o.Get("structuredContent")
		v.setSlot(c, &c.content, orUndefined(content))
		v.setSlot(c, &c.sc, orUndefined(sc))
		return goja.Undefined()
	})
	v.b.findingsGet = fn(func(goja.FunctionCall) goja.Value {
		c := st()
		if c.findings == nil {
			c.findings = v.findingsValue(c.call.Findings)
		}
		return c.findings
	})
	v.b.warn = fn(func(a goja.FunctionCall) goja.Value {
		c := st()
		reason := "warning"
		if s, ok := a.Argument(0).Export().(string); ok && s != "" {
			reason = s
		}
		c.warned = true
		c.warnings = append(c.warnings, Warning{Policy: c.policy, Reason: clientText(reason)})
		return goja.Undefined()
	})
	v.b.rate = fn(func(a goja.FunctionCall) goja.Value {
		c := st()
		arg := a.Argument(0)
		if k := arg.ExportType(); k == nil || (k.Kind() != reflect.Int64 && k.Kind() != reflect.Float64) {
			v.throwType("ctx.rateLimitExceeded(n) needs a number n >= 0 (calls per hour)")
		}
		f := arg.ToFloat() // a primitive number: runs no code
		if math.IsNaN(f) || f < 0 {
			v.throwType("ctx.rateLimitExceeded(n) needs a number n >= 0 (calls per hour)")
		}
		if c.call.RateLimitExceeded == nil {
			return rt.ToValue(false)
		}
		n := math.MaxInt32
		if f < float64(math.MaxInt32) {
			n = int(f)
		}
		return rt.ToValue(c.call.RateLimitExceeded(n))
	})
	helper := func(fixed engine.Strategy) func(goja.FunctionCall) goja.Value {
		return func(a goja.FunctionCall) goja.Value {
			c := st()
			strategy, kinds := v.redactOptions(a.Argument(1), fixed)
			w := v.newWalker(c, strategy, kinds, nil)
			out, n := w.copy(a.Argument(0), 0)
			if n > 0 {
				c.noteHelper(strategy)
			}
			return out
		}
	}
	v.b.redact = fn(helper(""))
	v.b.mask = fn(helper(engine.StrategyMask))
	v.b.hash = fn(helper(engine.StrategyHash))
	v.b.redactAll = fn(func(a goja.FunctionCall) goja.Value {
		c := st()
		strategy, kinds := v.redactOptions(a.Argument(0), "")
		total := 0
		switch c.phase {
		case ctxapi.PhasePre, ctxapi.PhaseServerRequest, ctxapi.PhaseInstructions:
			total += v.redactSlot(c, &c.params, nil, strategy, kinds)
		case ctxapi.PhaseList, ctxapi.PhaseResource, ctxapi.PhasePrompt:
			total += v.redactSlot(c, &c.content, ctxapi.ContentSkipKeys, strategy, kinds)
		default:
			total += v.redactSlot(c, &c.content, ctxapi.ContentSkipKeys, strategy, kinds)
			total += v.redactSlot(c, &c.sc, nil, strategy, kinds)
		}
		if total > 0 {
			c.noteHelper(strategy)
		}
		return rt.ToValue(total)
	})
	v.b.removeLines = fn(func(a goja.FunctionCall) goja.Value {
		st()
		prefixes := v.linePrefixes(a.Argument(1))
		text, ok := a.Argument(0).(goja.String)
		if !ok {
			return a.Argument(0) // undefined, null, a number ...: as it is
		}
		if n := int64(text.Length()) * int64(len(prefixes)+1); n > maxLineWork {
			v.throwType("ctx.removeLines(text, prefixes): text length × (number of prefixes + 1) is " +
				strconv.FormatInt(n, 10) + ", over the limit of " + strconv.Itoa(maxLineWork))
		}
		out, _ := removeLines(v.rt, text, prefixes)
		return out
	})
	return v.buildCtx(st)
}

// buildCtx builds the runtime's ctx object once. Every field is an accessor reading the
// call being run, or a non-writable function; the object is non-extensible, so nothing
// a policy does to ctx outlives its call.
func (v *vm) buildCtx(st func() *callState) error {
	rt := v.rt
	fn := v.frozenFunc
	target := rt.NewObject()
	get := func(o *goja.Object, name string, getter, setter goja.Value) {
		if err := o.DefineAccessorProperty(name, getter, setter, goja.FLAG_FALSE, goja.FLAG_TRUE); err != nil {
			panic(err)
		}
	}
	ro := func(name string, val goja.Value) {
		if err := target.DefineDataProperty(name, val, goja.FLAG_FALSE, goja.FLAG_FALSE, goja.FLAG_TRUE); err != nil {
			panic(err)
		}
	}
	respTarget := rt.NewObject()
	get(respTarget, "content", v.b.contentGet, v.b.contentSet)
	get(respTarget, "structuredContent", v.b.scGet, v.b.scSet)
	get(respTarget, "contents", v.b.contentsGet, v.b.contentsSet)
	get(respTarget, "messages", v.b.messagesGet, v.b.messagesSet)
	if _, err := v.preventExt(goja.Undefined(), respTarget); err != nil {
		return err
	}
	// Every field is non-configurable, so a sloppy `delete` would fail silently and leave
	// the value as it was; the proxies turn a delete into an assignment of undefined
	// (structuredContent: dropped; content, params: bad_ctx_shape) or a recorded bad
	// shape (ctx.response), and still report failure to JavaScript (a strict-mode
	// delete throws a TypeError).
	resp := rt.ToValue(rt.NewProxy(respTarget, &goja.ProxyTrapConfig{
		DeleteProperty: func(_ *goja.Object, prop string) bool {
			c := st()
			switch prop {
			case "content", "contents", "messages":
				v.setSlot(c, &c.content, goja.Undefined())
			case "structuredContent":
				v.setSlot(c, &c.sc, goja.Undefined())
			default:
				return true // not an own property: delete succeeds trivially
			}
			return false
		},
	})).(*goja.Object)
	v.b.response = resp
	for _, m := range v.exports(st) {
		if m.method != nil {
			ro(m.name, m.method)
		} else {
			get(target, m.name, m.get, m.set)
		}
	}
	if _, err := v.preventExt(goja.Undefined(), target); err != nil {
		return err
	}
	own := map[string]bool{}
	for _, k := range target.GetOwnPropertyNames() {
		own[k] = true
	}
	ctx := rt.ToValue(rt.NewProxy(target, &goja.ProxyTrapConfig{
		DeleteProperty: func(_ *goja.Object, prop string) bool {
			switch prop {
			case "params":
				c := st()
				v.setSlot(c, &c.params, goja.Undefined()) // throws when read-only (post)
			case "response":
				st().badShape("ctx.response cannot be deleted")
			case "tools":
				c := st()
				if c.phase == ctxapi.PhaseList {
					v.setSlot(c, &c.content, goja.Undefined())
				}
			}
			return !own[prop]
		},
	})).(*goja.Object)
	v.b.ctx = ctx
	// the global ctx: a non-enumerable, non-configurable accessor on globalThis
	getter := fn(func(goja.FunctionCall) goja.Value {
		if v.cur == nil {
			return goja.Undefined()
		}
		return ctx
	})
	return v.global.DefineAccessorProperty("ctx", getter, nil, goja.FLAG_FALSE, goja.FLAG_FALSE)
}

// ctxMember is one field of ctx: an accessor (get, and set when a policy may assign
// it) or a method. Every function is frozen and reads the running call from vm.cur.
type ctxMember struct {
	name     string
	get, set goja.Value
	method   goja.Value
}

// exports is the whole ctx surface, one name to function(s) per field, in the order
// ctx lists them; buildCtx defines exactly these and the self-test checks each is frozen.
func (v *vm) exports(st func() *callState) []ctxMember {
	if v.b.members != nil {
		return v.b.members
	}
	rt := v.rt
	str := func(f func(c *callState) string) goja.Value {
		return v.frozenFunc(func(goja.FunctionCall) goja.Value { return rt.ToValue(f(st())) })
	}
	resp := v.b.response
	v.b.members = []ctxMember{
		{name: "phase", get: str(func(c *callState) string { return string(c.phase) })},
		{name: "tool", get: str(func(c *callState) string { return c.call.Tool })},
		{name: "server", get: str(func(c *callState) string { return c.call.Server })},
		{name: "toolAccess", get: str(func(c *callState) string { return c.call.ToolAccess })},
		{name: "user", get: v.frozenFunc(func(goja.FunctionCall) goja.Value { return v.userValue(st().call.User) })},
		{name: "params", get: v.b.paramsGet, set: v.b.paramsSet},
		{name: "response", get: v.frozenFunc(func(goja.FunctionCall) goja.Value {
			switch st().phase {
			case ctxapi.PhasePost, ctxapi.PhaseResource, ctxapi.PhasePrompt:
				return resp
			}
			return goja.Undefined()
		}), set: v.b.responseSet},
		{name: "tools", get: v.b.toolsGet, set: v.b.toolsSet},
		{name: "method", get: str(func(c *callState) string { return c.call.Method })},
		{name: "findings", get: v.b.findingsGet},
		{name: "rateLimitExceeded", method: v.b.rate},
		{name: "warn", method: v.b.warn},
		{name: "redact", method: v.b.redact},
		{name: "mask", method: v.b.mask},
		{name: "hash", method: v.b.hash},
		{name: "redactAll", method: v.b.redactAll},
		{name: "removeLines", method: v.b.removeLines},
	}
	return v.b.members
}

// findingsValue builds ctx.findings: a frozen array of frozen
// {rule_id, severity, entity, pointer, start, end}.
func (v *vm) findingsValue(fs []engine.Finding) goja.Value {
	items := make([]any, len(fs))
	for i, f := range fs {
		o := v.rt.NewObject()
		_ = o.Set("rule_id", f.RuleID)
		_ = o.Set("severity", f.Severity.String())
		_ = o.Set("entity", f.Entity)
		_ = o.Set("pointer", f.Pointer)
		_ = o.Set("start", f.Start)
		_ = o.Set("end", f.End)
		items[i] = o
	}
	arr := v.rt.NewArray(items...)
	if _, err := v.deepFreeze(goja.Undefined(), arr); err != nil {
		rethrow(err)
	}
	return arr
}

// userValue returns the frozen ctx.user, reusing the last one while the user is the same.
func (v *vm) userValue(u ctxapi.User) goja.Value {
	if v.b.lastUserVal != nil && sameUser(v.b.lastUser, u) {
		return v.b.lastUserVal
	}
	o := v.rt.NewObject()
	arr, scopes := v.frozenStrings(u.Roles), v.frozenStrings(u.Scopes)
	for _, kv := range [...]struct {
		k string
		v any
	}{{"userID", u.UserID}, {"callerId", u.CallerID}, {"callerClass", u.CallerClass}, {"roles", arr}, {"scopes", scopes}} {
		_ = o.DefineDataProperty(kv.k, v.rt.ToValue(kv.v), goja.FLAG_FALSE, goja.FLAG_FALSE, goja.FLAG_TRUE)
	}
	if _, err := v.preventExt(goja.Undefined(), o); err != nil {
		rethrow(err)
	}
	u.Roles, u.Scopes = append([]string(nil), u.Roles...), append([]string(nil), u.Scopes...)
	v.b.lastUser, v.b.lastUserVal = u, o
	return o
}

// frozenStrings returns a frozen JS array of ss.
func (v *vm) frozenStrings(ss []string) goja.Value {
	items := make([]any, len(ss))
	for i, s := range ss {
		items[i] = s
	}
	arr := v.rt.NewArray(items...)
	if _, err := v.freeze(goja.Undefined(), arr); err != nil {
		rethrow(err)
	}
	return arr
}

func sameUser(a, b ctxapi.User) bool {
	if a.UserID != b.UserID || a.CallerID != b.CallerID || a.CallerClass != b.CallerClass || !slices.Equal(a.Scopes, b.Scopes) || len(a.Roles) != len(b.Roles) {
		return false
	}
	for i := range a.Roles {
		if a.Roles[i] != b.Roles[i] {
			return false
		}
	}
	return true
}
