package gate

import (
	"math"
	"reflect"
	"slices"
	"strconv"

	"github.com/dop251/goja"

	"github.com/mcpgate/mcpgate/ctxapi"
	"github.com/mcpgate/mcpgate/engine"
	"github.com/mcpgate/mcpgate/gate/internal/lines"
)

// binding holds the native functions behind ctx, built once per runtime and frozen;
// they read the call being run from vm.cur.
type binding struct {
	ctx      *goja.Object // the global ctx: a proxy (delete trap) over one non-extensible object per runtime
	response *goja.Object // ctx.response in the post phase: a proxy like ctx

	members     []ctxMember // the ctx surface: one name to function(s) per field (bind)
	respMembers []ctxMember // ctx.response's fields

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
	if _, err := v.DeepFreeze(goja.Undefined(), o); err != nil {
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
	paramsGet := fn(func(goja.FunctionCall) goja.Value { c := st(); return v.getSlot(c, &c.params) })
	paramsSet := fn(func(a goja.FunctionCall) goja.Value {
		c := st()
		v.setSlot(c, &c.params, a.Argument(0))
		return goja.Undefined()
	})
	// The content slot holds the phase's one array (phaseSpecs: ctx.response.content,
	// ctx.tools, ctx.response.contents, ctx.response.messages). Each accessor reads it
	// only in the phase whose array it names; elsewhere it is undefined, and assigning
	// it is a bad shape. ctx.response.structuredContent goes with the post phase's.
	inPhase := func(name string, in func(phaseSpec) bool, s func(*callState) *slot) accessor {
		var phase ctxapi.Phase // the phase the bad-shape message names
		for p, spec := range phaseSpecs {
			if in(spec) {
				phase = p
			}
		}
		return accessor{
			get: fn(func(goja.FunctionCall) goja.Value {
				c := st()
				if !in(phaseSpecs[c.phase]) {
					return goja.Undefined()
				}
				return v.getSlot(c, s(c))
			}),
			set: fn(func(a goja.FunctionCall) goja.Value {
				c := st()
				if !in(phaseSpecs[c.phase]) {
					c.badShape("ctx." + name + " can only be assigned in the " + string(phase) + " phase")
					return goja.Undefined()
				}
				v.setSlot(c, s(c), a.Argument(0))
				return goja.Undefined()
			}),
		}
	}
	content := func(c *callState) *slot { return &c.content }
	array := func(name string) accessor {
		return inPhase(name, func(s phaseSpec) bool { return s.array == name }, content)
	}
	tools := array("tools")
	v.b.respMembers = []ctxMember{
		{name: "content", accessor: array("response.content")},
		{name: "structuredContent", accessor: inPhase("response.structuredContent", func(s phaseSpec) bool { return s.structured },
			func(c *callState) *slot { return &c.sc })},
		{name: "contents", accessor: array("response.contents")},
		{name: "messages", accessor: array("response.messages")},
	}
	// ctx.response = {content, structuredContent} replaces both (post only); anything
	// else is a bad shape, recorded so that a policy cannot catch it and go on.
	responseSet := fn(func(a goja.FunctionCall) goja.Value {
		c := st()
		val := a.Argument(0)
		if !phaseSpecs[c.phase].structured {
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
	findingsGet := fn(func(goja.FunctionCall) goja.Value {
		c := st()
		if c.findings == nil {
			c.findings = v.findingsValue(c.call.Findings)
		}
		return c.findings
	})
	warn := fn(func(a goja.FunctionCall) goja.Value {
		c := st()
		reason := "warning"
		if s, ok := a.Argument(0).Export().(string); ok && s != "" {
			reason = s
		}
		c.warned = true
		c.warnings = append(c.warnings, Warning{Policy: c.policy, Reason: clientText(reason)})
		return goja.Undefined()
	})
	rate := fn(func(a goja.FunctionCall) goja.Value {
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
			out, n := w.copy(a.Argument(0), "", 0)
			if n > 0 {
				c.noteHelper(strategy)
			}
			return out
		}
	}
	redactAll := fn(func(a goja.FunctionCall) goja.Value {
		c := st()
		strategy, kinds := v.redactOptions(a.Argument(0), "")
		total := 0
		switch spec := phaseSpecs[c.phase]; {
		case spec.writesParams:
			total += v.redactSlot(c, &c.params, nil, strategy, kinds)
		case !spec.structured:
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
	removeLines := fn(func(a goja.FunctionCall) goja.Value {
		st()
		prefixes := v.linePrefixes(a.Argument(1))
		text, ok := a.Argument(0).(goja.String)
		if !ok {
			return a.Argument(0) // undefined, null, a number ...: as it is
		}
		if n := int64(text.Length()) * int64(len(prefixes)+1); n > lines.MaxWork {
			v.throwType("ctx.removeLines(text, prefixes): text length × (number of prefixes + 1) is " +
				strconv.FormatInt(n, 10) + ", over the limit of " + strconv.Itoa(lines.MaxWork))
		}
		out, _ := lines.Remove(v.rt, text, prefixes)
		return out
	})
	// a string member keeps the JS string of its last value (a JS string is immutable):
	// ctx.phase and ctx.tool are read by most policies of a call, each read was a new one
	str := func(f func(c *callState) string) goja.Value {
		var last string
		var lastVal goja.Value
		return fn(func(goja.FunctionCall) goja.Value {
			if s := f(st()); s != last || lastVal == nil {
				last, lastVal = s, rt.ToValue(s)
			}
			return lastVal
		})
	}
	// the whole ctx surface, one name to function(s) per field, in the order ctx lists
	// them; buildCtx defines exactly these and the self-test checks each is frozen
	v.b.members = []ctxMember{
		{name: "phase", accessor: accessor{get: str(func(c *callState) string { return string(c.phase) })}},
		{name: "tool", accessor: accessor{get: str(func(c *callState) string { return c.call.Tool })}},
		{name: "server", accessor: accessor{get: str(func(c *callState) string { return c.call.Server })}},
		{name: "toolAccess", accessor: accessor{get: str(func(c *callState) string { return c.call.ToolAccess })}},
		{name: "user", accessor: accessor{get: fn(func(goja.FunctionCall) goja.Value { return v.userValue(st().call.User) })}},
		{name: "params", accessor: accessor{get: paramsGet, set: paramsSet}},
		{name: "response", accessor: accessor{get: fn(func(goja.FunctionCall) goja.Value {
			if phaseSpecs[st().phase].response {
				return v.b.response
			}
			return goja.Undefined()
		}), set: responseSet}},
		{name: "tools", accessor: tools},
		{name: "method", accessor: accessor{get: str(func(c *callState) string { return c.call.Method })}},
		{name: "findings", accessor: accessor{get: findingsGet}},
		{name: "rateLimitExceeded", method: rate},
		{name: "warn", method: warn},
		{name: "redact", method: fn(helper(""))},
		{name: "mask", method: fn(helper(engine.StrategyMask))},
		{name: "hash", method: fn(helper(engine.StrategyHash))},
		{name: "redactAll", method: redactAll},
		{name: "removeLines", method: removeLines},
	}
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
	for _, m := range v.b.respMembers {
		get(respTarget, m.name, m.get, m.set)
	}
	if _, err := v.PreventExtensions(goja.Undefined(), respTarget); err != nil {
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
	for _, m := range v.b.members {
		if m.method != nil {
			ro(m.name, m.method)
		} else {
			get(target, m.name, m.get, m.set)
		}
	}
	if _, err := v.PreventExtensions(goja.Undefined(), target); err != nil {
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
				if phaseSpecs[c.phase].array == "tools" {
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

// accessor is a ctx field's getter, and setter when a policy may assign it.
type accessor struct{ get, set goja.Value }

// ctxMember is one field of ctx: an accessor or a method. Every function is frozen and
// reads the running call from vm.cur.
type ctxMember struct {
	name string
	accessor
	method goja.Value
}

// findingsValue builds ctx.findings: a frozen array of frozen
// {rule_id, severity, entity, pointer, start, end}, plus source for a guardrail's.
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
		if f.Source != "" { // an outside guardrail's (docs/guardrails.md#findings)
			_ = o.Set("source", f.Source)
		}
		items[i] = o
	}
	arr := v.rt.NewArray(items...)
	if _, err := v.DeepFreeze(goja.Undefined(), arr); err != nil {
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
	if _, err := v.PreventExtensions(goja.Undefined(), o); err != nil {
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
	if _, err := v.Freeze(goja.Undefined(), arr); err != nil {
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

// linePrefixes reads the prefixes argument of ctx.removeLines; anything but an array
// of at most lines.MaxPrefixes strings of 1 to lines.MaxPrefixLen units without "\n" is a
// TypeError.
func (v *vm) linePrefixes(val goja.Value) []lines.Prefix {
	const msg = "ctx.removeLines(text, prefixes): prefixes must be an array of at most 64 strings, each 1 to 256 characters long, without a line break"
	list := v.stringList(val, lines.MaxPrefixes, msg)
	out := make([]lines.Prefix, len(list))
	for i, p := range list {
		if n := p.Length(); n == 0 || n > lines.MaxPrefixLen {
			v.throwType(msg)
		}
		out[i] = lines.NewPrefix(p)
		if out[i].HasLineBreak() {
			v.throwType(msg)
		}
	}
	return out
}
