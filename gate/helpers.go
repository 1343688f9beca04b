package gate

import (
	"reflect"
	"strconv"

	"github.com/dop251/goja"

	"github.com/mcpgate/mcpgate/ctxapi"
	"github.com/mcpgate/mcpgate/engine"
	"github.com/mcpgate/mcpgate/gate/internal/sandbox"
)

// The redaction helpers take JSON-like values: strings, numbers, booleans, null,
// undefined, arrays without holes and objects with own enumerable data properties.
// Anything else (an accessor, a Proxy, a symbol, a function, a cycle, a hole) is a
// TypeError raised before any policy code runs, so no getter or trap is ever called by
// a helper (docs/policies.md#redaction-helpers).

var proxyType = reflect.TypeOf(goja.Proxy{})

// walker is one helper call's walk over a value.
type walker struct {
	v      *vm
	c      *callState
	s      engine.Strategy
	kinds  []string
	skip   map[string]bool // string values under these keys are kept (content's type, uri, ...)
	nodes  int
	onPath map[*goja.Object]bool // the objects from the root to the current one
}

func (v *vm) newWalker(c *callState, s engine.Strategy, kinds []string, skip map[string]bool) *walker {
	return &walker{v: v, c: c, s: s, kinds: kinds, skip: skip}
}

// enter checks one object before the walk goes into it: depth and size guards, no
// Proxy, no cycle; it returns the object's own data as [k0, v0, k1, v1, ...] (an
// object) or its elements (an array), read without running a getter.
func (w *walker) enter(x *goja.Object, depth int) (items *goja.Object, n int64) {
	v := w.v
	if depth > sandbox.MaxNesting {
		v.rt.Interrupt(errStack)
		v.broken.Store(true)
		panic(v.rt.NewTypeError("value nested too deeply"))
	}
	if w.nodes++; w.nodes > sandbox.MaxNodes {
		v.rt.Interrupt(errMemory)
		v.broken.Store(true)
		panic(v.rt.NewTypeError("value too large"))
	}
	if x.ExportType() == proxyType {
		v.throwType("the redaction helpers take no Proxy objects")
	}
	if w.onPath == nil {
		w.onPath = map[*goja.Object]bool{}
	}
	if w.onPath[x] {
		v.throwType("the redaction helpers take no cyclic values")
	}
	out, err := v.Entries(goja.Undefined(), x)
	if err != nil {
		rethrow(err)
	}
	items = out.(*goja.Object)
	return items, items.Get("length").ToInteger()
}

// leaf checks a non-object value.
func (w *walker) leaf(val goja.Value) {
	switch {
	case val == nil, goja.IsUndefined(val), goja.IsNull(val), goja.IsString(val):
		return
	}
	switch val.ExportType().Kind() {
	case reflect.Bool, reflect.Int64, reflect.Float64:
		return
	}
	w.v.throwType("the redaction helpers take only JSON-like values (no symbols, functions or BigInts)")
}

// redactString redacts one string leaf; member is its nearest member name (an array
// element's is its array's), the context the engine's scan of a result gives it.
func (w *walker) redactString(val goja.Value, member string) (goja.Value, int) {
	str := val.String()
	ns, n := w.c.set.analyzer.RedactMember(str, member, w.s, w.kinds)
	if n == 0 || ns == str {
		return val, 0
	}
	return w.v.rt.ToValue(ns), n
}

// copy returns a JSON-like copy of val with every string leaf redacted, and the
// number of redactions; member is val's nearest member name ("" at the root).
func (w *walker) copy(val goja.Value, member string, depth int) (goja.Value, int) {
	x, ok := val.(*goja.Object)
	if !ok || x.ClassName() == "Function" {
		if ok {
			w.leaf(x)
		}
		if val != nil && goja.IsString(val) {
			return w.redactString(val, member)
		}
		w.leaf(val)
		return val, 0
	}
	items, n := w.enter(x, depth)
	w.onPath[x] = true
	defer delete(w.onPath, x)
	total := 0
	if x.ClassName() == "Array" {
		out := make([]any, n)
		for i := int64(0); i < n; i++ {
			e, k := w.copy(items.Get(strconv.FormatInt(i, 10)), member, depth+1)
			out[i] = e
			total += k
		}
		return w.v.rt.NewArray(out...), total
	}
	out := w.v.rt.NewObject()
	for i := int64(0); i+1 < n; i += 2 {
		key := items.Get(strconv.FormatInt(i, 10)).String()
		e, k := w.copy(items.Get(strconv.FormatInt(i+1, 10)), key, depth+1)
		if err := out.Set(key, e); err != nil {
			rethrow(err)
		}
		total += k
	}
	return out, total
}

// inPlace redacts the string leaves of a materialised JS value in place, so references
// a policy holds stay live; string values under a skip key are kept. member is val's
// nearest member name ("" at the root).
func (w *walker) inPlace(val goja.Value, member string, depth int) int {
	x, ok := val.(*goja.Object)
	if !ok {
		w.leaf(val)
		return 0
	}
	if x.ClassName() == "Function" {
		w.leaf(x)
	}
	items, n := w.enter(x, depth)
	w.onPath[x] = true
	defer delete(w.onPath, x)
	total := 0
	visit := func(key string, e goja.Value, isKey bool) {
		m := member // an array element is read under its array's member name
		if isKey {
			m = key
		}
		if e != nil && goja.IsString(e) {
			if isKey && w.skip[key] {
				return
			}
			ns, k := w.redactString(e, m)
			if k > 0 {
				if err := x.Set(key, ns); err != nil {
					rethrow(err)
				}
				total += k
			}
			return
		}
		total += w.inPlace(e, m, depth+1)
	}
	if x.ClassName() == "Array" {
		for i := int64(0); i < n; i++ {
			k := strconv.FormatInt(i, 10)
			visit(k, items.Get(k), false)
		}
		return total
	}
	for i := int64(0); i+1 < n; i += 2 {
		visit(items.Get(strconv.FormatInt(i, 10)).String(), items.Get(strconv.FormatInt(i+1, 10)), true)
	}
	return total
}

// redactSlot redacts one ctx value in place: on the raw JSON when no policy has
// materialised it (no JS objects built), else on the JS value.
func (v *vm) redactSlot(c *callState, s *slot, skip map[string]bool, strategy engine.Strategy, kinds []string) int {
	if !s.present && !s.mat {
		return 0
	}
	if !s.mat {
		out, n, err := ctxapi.RewriteMembersAppend(s.raw, skip, func(dst []byte, member, str string) ([]byte, int) {
			return c.set.analyzer.AppendRedactMember(dst, str, member, strategy, kinds)
		})
		if err != nil {
			v.throwType("ctx value is not valid JSON")
		}
		if n > 0 {
			s.rewritten(out)
		}
		return n
	}
	if s.readOnly {
		return 0
	}
	s.touched = true
	return v.newWalker(c, strategy, kinds, skip).inPlace(s.js, "", 0)
}

// redactOptions reads {kinds: [...], strategy: "redact"|"mask"|"hash"}; fixed wins.
// Options are read with plain property reads (no descriptor walk: they are read on
// every helper call); a Proxy, a getter that throws or a value of the wrong type is a
// TypeError.
func (v *vm) redactOptions(opts goja.Value, fixed engine.Strategy) (engine.Strategy, []string) {
	strategy := engine.StrategyRedact
	var kinds []string
	if o, ok := opts.(*goja.Object); ok {
		if val := v.optGet(o, "strategy"); !goja.IsUndefined(val) {
			if !goja.IsString(val) {
				v.throwType(`strategy must be "redact", "mask" or "hash"`)
			}
			switch st := engine.Strategy(val.String()); st {
			case engine.StrategyRedact, engine.StrategyMask, engine.StrategyHash:
				strategy = st
			default:
				v.throwType(`strategy must be "redact", "mask" or "hash"`)
			}
		}
		if val := v.optGet(o, "kinds"); !goja.IsUndefined(val) && !goja.IsNull(val) {
			for _, k := range v.stringList(val, 256, "kinds must be an array of at most 256 strings") {
				kinds = append(kinds, k.String())
			}
		}
	} else if !goja.IsUndefined(opts) && !goja.IsNull(opts) {
		v.throwType("options must be an object like {kinds: [\"email\"], strategy: \"redact\"}")
	}
	if fixed != "" {
		strategy = fixed
	}
	return strategy, kinds
}

// optGet reads o[k] for a helper with a plain property read (undefined when absent);
// a Proxy or a getter that throws is a TypeError.
func (v *vm) optGet(o *goja.Object, k string) goja.Value {
	if o.ExportType() == proxyType {
		v.throwType("the helpers take no Proxy objects")
	}
	var val goja.Value
	if ex := v.rt.Try(func() { val = o.Get(k) }); ex != nil {
		v.throwType("the helper arguments could not be read")
	}
	if val == nil {
		return goja.Undefined()
	}
	return val
}

// stringList reads a helper argument that must be an array of at most max strings;
// anything else is a TypeError with msg.
func (v *vm) stringList(val goja.Value, max int64, msg string) []goja.String {
	o, ok := val.(*goja.Object)
	if !ok || o.ClassName() != "Array" {
		v.throwType(msg)
	}
	n := v.optGet(o, "length").ToInteger()
	if n > max {
		v.throwType(msg)
	}
	out := make([]goja.String, 0, n)
	for j := int64(0); j < n; j++ {
		s, ok := v.optGet(o, strconv.FormatInt(j, 10)).(goja.String)
		if !ok {
			v.throwType(msg)
		}
		out = append(out, s)
	}
	return out
}
