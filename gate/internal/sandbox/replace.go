package sandbox

import (
	"errors"
	"math"
	"reflect"
	"strconv"
	"strings"

	"github.com/dop251/goja"
)

// Growth guards for String.prototype.replace, String.prototype.replaceAll and
// RegExp.prototype[Symbol.replace], as Go natives that New installs before the
// lockdown freezes them. Each is one native step no interrupt can stop, so each is
// bounded before the step: with a replacement function, the matches of a string of
// MaxArrayLen units or more are counted first (as it goes, checking the deadline) and
// more than MaxArrayLen are refused, then its results are summed as they come;
// a replacement string is checked against the number of matches, counted only when
// the quick bound len(s) + (len(s)+1) * per is over MaxStringLen (per is the
// replacement's length, plus len(replacement) * len(s) when it holds a `$`, since $&,
// $` and $' each expand to at most len(s)). A result longer than MaxStringLen is
// refused after the step. Refusals are policy_memory_limit (docs/policies.md#growth-limits).
//
// Each argument is converted to a string once, in the built-in's order, and the
// originals receive the converted strings: nothing a toString returns later can
// differ from what was bounded.
//
// RegExp.prototype[Symbol.replace], [Symbol.match], [Symbol.matchAll] and
// [Symbol.split] take only a plain RegExp (plainRegExp); on anything else goja runs the
// generic algorithm, whose exec, flags, species and match objects the policy controls,
// in one native step: a non-global RegExp whose flags say "g" loops without end, a
// match object's captures or length build results no bound saw, and a split with a
// non-sticky splitter scans the string once per position. Each is a TypeError instead.
// On a plain RegExp, a global [Symbol.match] and [Symbol.split] run here one exec per
// match, stopping at their bound plus one and checking the deadline as they go
// (poller; docs/decisions.md#bounded-guards, docs/policies.md#guards-deadline).

// replaceGuards holds the originals the guards call.
type replaceGuards struct {
	refuse              func() // interrupts the runtime with policy_memory_limit
	rt                  *goja.Runtime
	replace, replaceAll goja.Callable // String.prototype.replace, replaceAll
	symReplace          goja.Callable // RegExp.prototype[Symbol.replace]
	reProto             *goja.Object  // RegExp.prototype
	exec, indexOf       goja.Callable // RegExp.prototype.exec, String.prototype.indexOf
	regExp              *goja.Object  // the RegExp constructor
	poll                goja.Callable // an empty JS function: calling it raises a pending interrupt
	guardedSym          *goja.Object  // the guarded RegExp.prototype[Symbol.replace]
}

// pollEvery is how many matches a count runs between two interrupt checks, and
// pollUnits how many UTF-16 units of its input it passes at most between two (one
// exec may pass more: a single match or search is one native step).
const (
	pollEvery = 1024
	pollUnits = 1 << 16
)

// poller checks for a pending interrupt every pollEvery matches and whenever the
// search has passed pollUnits more of its input since the last check.
type poller struct {
	g     *replaceGuards
	n, at int64 // matches and input position at the last check
}

// step records a match ending at position at (n matches so far) and checks when due.
func (p *poller) step(n, at int64) {
	if n-p.n >= pollEvery || at-p.at >= pollUnits {
		p.n, p.at = n, at
		p.g.check()
	}
}

// GuardReplace installs the guards on String.prototype and RegExp.prototype (writable
// and configurable until the lockdown freezes them); refuse interrupts the runtime with
// policy_memory_limit and marks it broken. It returns poll, an empty JS function whose
// call raises a pending interrupt, and an error when an original is missing.
func GuardReplace(rt *goja.Runtime, refuse func()) (poll goja.Callable, err error) {
	g := &replaceGuards{refuse: refuse, rt: rt}
	strProto := rt.Get("String").ToObject(rt).Get("prototype").ToObject(rt)
	g.regExp = rt.Get("RegExp").ToObject(rt)
	reProto := g.regExp.Get("prototype").ToObject(rt)
	g.reProto = reProto
	var ok [5]bool
	g.replace, ok[0] = goja.AssertFunction(strProto.Get("replace"))
	g.replaceAll, ok[1] = goja.AssertFunction(strProto.Get("replaceAll"))
	g.symReplace, ok[2] = goja.AssertFunction(reProto.GetSymbol(goja.SymReplace))
	g.exec, ok[3] = goja.AssertFunction(reProto.Get("exec"))
	g.indexOf, ok[4] = goja.AssertFunction(strProto.Get("indexOf"))
	for _, found := range ok {
		if !found {
			return nil, errors.New("a String.prototype or RegExp.prototype original is missing")
		}
	}
	pv, err := rt.RunString(`(function () {})`)
	if err != nil {
		return nil, err
	}
	g.poll, _ = goja.AssertFunction(pv)

	replace := g.native("replace", func(c goja.FunctionCall) goja.Value { return g.stringReplace(c, false) })
	replaceAll := g.native("replaceAll", func(c goja.FunctionCall) goja.Value { return g.stringReplace(c, true) })
	g.guardedSym = g.native("[Symbol.replace]", g.regexpReplace)
	for _, m := range []struct {
		sym    *goja.Symbol
		name   string
		length int
	}{{goja.SymMatch, "[Symbol.match]", 1}, {goja.SymMatchAll, "[Symbol.matchAll]", 1}, {goja.SymSplit, "[Symbol.split]", 2}} {
		orig, found := goja.AssertFunction(reProto.GetSymbol(m.sym))
		if !found {
			return nil, errors.New("RegExp.prototype" + m.name + " is missing")
		}
		guard := g.native(m.name, func(c goja.FunctionCall) goja.Value {
			g.requirePlain(c.This, m.name)
			switch m.sym {
			case goja.SymMatch:
				return g.regexpMatch(c.This, c.Argument(0), orig)
			case goja.SymSplit:
				return g.regexpSplit(c.This, c.Argument(0), c.Argument(1), orig)
			}
			return CallJS(orig, c.This, c.Arguments...)
		})
		_ = guard.DefineDataProperty("length", g.rt.ToValue(m.length), goja.FLAG_FALSE, goja.FLAG_TRUE, goja.FLAG_FALSE)
		if err := reProto.DefineDataPropertySymbol(m.sym, guard, goja.FLAG_TRUE, goja.FLAG_TRUE, goja.FLAG_FALSE); err != nil {
			return nil, err
		}
	}
	if err := strProto.DefineDataProperty("replace", replace, goja.FLAG_TRUE, goja.FLAG_TRUE, goja.FLAG_FALSE); err != nil {
		return nil, err
	}
	if err := strProto.DefineDataProperty("replaceAll", replaceAll, goja.FLAG_TRUE, goja.FLAG_TRUE, goja.FLAG_FALSE); err != nil {
		return nil, err
	}
	return g.poll, reProto.DefineDataPropertySymbol(goja.SymReplace, g.guardedSym, goja.FLAG_TRUE, goja.FLAG_TRUE, goja.FLAG_FALSE)
}

// native returns f as a function object named name with length 2, as the originals.
func (g *replaceGuards) native(name string, f func(goja.FunctionCall) goja.Value) *goja.Object {
	o := g.rt.ToValue(f).ToObject(g.rt)
	_ = o.DefineDataProperty("length", g.rt.ToValue(2), goja.FLAG_FALSE, goja.FLAG_TRUE, goja.FLAG_FALSE)
	_ = o.DefineDataProperty("name", g.rt.ToValue(name), goja.FLAG_FALSE, goja.FLAG_TRUE, goja.FLAG_FALSE)
	return o
}

// rethrow re-raises an error returned by a nested JS call inside a native.
func rethrow(err error) { panic(err) }

// CallJS calls f, re-raising what it throws (interrupts included) in the calling native.
func CallJS(f goja.Callable, this goja.Value, args ...goja.Value) goja.Value {
	r, err := f(this, args...)
	if err != nil {
		rethrow(err)
	}
	return r
}

// str is the language's ToString: it runs an object's toString or valueOf once, and a
// Symbol is a TypeError.
func (g *replaceGuards) str(v goja.Value) goja.String {
	if o, ok := v.(*goja.Object); ok {
		v = o.ToString() // a primitive
	}
	switch p := v.(type) {
	case goja.String:
		return p
	case *goja.Symbol:
		panic(g.rt.NewTypeError("Cannot convert a Symbol value to a string"))
	}
	return g.rt.ToValue(v.String()).(goja.String) // a number, boolean, null or undefined: ASCII
}

// oom refuses the step (policy_memory_limit): it interrupts the runtime, marks the vm
// broken and raises the interrupt at once, so no native caller goes on.
func (g *replaceGuards) oom() {
	g.refuse()
	g.check()
	panic(g.rt.NewTypeError("string too long")) // not reached: check raises the interrupt
}

// check raises a pending interrupt (a timeout, or oom) between two native steps.
func (g *replaceGuards) check() {
	CallJS(g.poll, goja.Undefined())
}

// checkResult refuses a result string longer than MaxStringLen.
func (g *replaceGuards) checkResult(r goja.Value) {
	if s, ok := r.(goja.String); ok && s.Length() > MaxStringLen {
		g.oom()
	}
}

func isNullish(v goja.Value) bool { return v == nil || goja.IsUndefined(v) || goja.IsNull(v) }

// stringReplace is String.prototype.replace (all false) and replaceAll (all true).
func (g *replaceGuards) stringReplace(c goja.FunctionCall, all bool) goja.Value {
	orig := g.replace
	if all {
		orig = g.replaceAll
	}
	this, pattern, replacement := c.This, c.Argument(0), c.Argument(1)
	if isNullish(this) {
		return CallJS(orig, this, pattern, replacement) // the original's TypeError
	}
	if o, ok := pattern.(*goja.Object); ok {
		if all && g.isRegExp(o) {
			flags := o.Get("flags")
			if isNullish(flags) {
				panic(g.rt.NewTypeError("Value is not object coercible"))
			}
			if !g.contains(g.str(flags), 'g') {
				panic(g.rt.NewTypeError("String.prototype.replaceAll called with a non-global RegExp argument"))
			}
		}
		if m := o.GetSymbol(goja.SymReplace); !isNullish(m) {
			var r goja.Value
			if m == g.guardedSym { // a RegExp: the guard below, as the original would call it
				r = g.regexpReplace(goja.FunctionCall{This: pattern, Arguments: []goja.Value{this, replacement}})
			} else {
				f, ok := goja.AssertFunction(m)
				if !ok {
					panic(g.rt.NewTypeError("%s is not a method", m.String()))
				}
				r = CallJS(f, pattern, this, replacement) // a user Symbol.replace: JS, interruptible
			}
			g.checkResult(r)
			return r
		}
	}
	s := g.str(this)
	p := g.str(pattern)
	step := func(rep goja.Value) goja.Value { return CallJS(orig, s, p, rep) }
	if all && p.Length() == 0 && !isASCII(s) {
		// goja's replaceAll never ends on an empty pattern in a non-ASCII string; an
		// empty global RegExp matches at the same places (every unit boundary) and its
		// matches are replaced by the same code
		re, err := g.rt.New(g.regExp, g.rt.ToValue(""), g.rt.ToValue("g"))
		if err != nil {
			rethrow(err)
		}
		step = func(rep goja.Value) goja.Value { return CallJS(g.symReplace, re, s, rep) }
	}
	if fn, ok := goja.AssertFunction(replacement); ok {
		if s.Length() >= MaxArrayLen && g.countString(s, p, all, MaxArrayLen) > MaxArrayLen {
			g.oom() // the original finds every match in one step before calling fn
		}
		return step(g.summing(s, fn))
	}
	rep := g.str(replacement)
	if over, limit := g.quickBound(s, rep); over && (limit < 0 || g.countString(s, p, all, limit) > limit) {
		g.oom()
	}
	r := step(rep)
	g.checkResult(r)
	return r
}

// plainRegExp reports whether v is a RegExp of the built-in prototype with no own
// property but lastIndex (no Proxy): goja's built-ins then use its own exec and flags.
func (g *replaceGuards) plainRegExp(v goja.Value) bool {
	o, ok := v.(*goja.Object)
	if !ok || o.ExportType() == proxyType || o.ClassName() != "RegExp" || o.Prototype() != g.reProto {
		return false
	}
	names := o.GetOwnPropertyNames()
	return len(names) == 1 && names[0] == "lastIndex" && len(o.Symbols()) == 0
}

// requirePlain throws a TypeError unless this is a plain RegExp (plainRegExp); a
// primitive gets the original's TypeError.
func (g *replaceGuards) requirePlain(this goja.Value, name string) {
	if _, ok := this.(*goja.Object); ok && !g.plainRegExp(this) {
		panic(g.rt.NewTypeError("RegExp.prototype%s in policies takes only a RegExp of the built-in prototype with no own property but lastIndex", name))
	}
}

// regexpReplace is RegExp.prototype[Symbol.replace].
func (g *replaceGuards) regexpReplace(c goja.FunctionCall) goja.Value {
	this, replacement := c.This, c.Argument(1)
	g.requirePlain(this, "[Symbol.replace]")
	s := g.str(c.Argument(0))
	if fn, ok := goja.AssertFunction(replacement); ok {
		if s.Length() >= MaxArrayLen && g.countRegExp(s, this, MaxArrayLen) > MaxArrayLen {
			g.oom() // the original finds every match in one step before calling fn
		}
		return CallJS(g.symReplace, this, s, g.summing(s, fn))
	}
	rep := g.str(replacement)
	if over, limit := g.quickBound(s, rep); over && (limit < 0 || g.countRegExp(s, this, limit) > limit) {
		g.oom()
	}
	r := CallJS(g.symReplace, this, s, rep)
	g.checkResult(r)
	return r
}

// isRegExp is the language's IsRegExp: Symbol.match decides when defined, else
// whether o is a RegExp object.
func (g *replaceGuards) isRegExp(o *goja.Object) bool {
	if m := o.GetSymbol(goja.SymMatch); m != nil && !goja.IsUndefined(m) {
		return m.ToBoolean()
	}
	return o.ClassName() == "RegExp"
}

// quickBound reports whether replacing every match of anything in s by rep could pass
// MaxStringLen and, if so, the most matches that stay within it (negative: none).
func (g *replaceGuards) quickBound(s, rep goja.String) (over bool, limit int64) {
	n, per := float64(s.Length()), float64(rep.Length())
	if g.contains(rep, '$') {
		per += float64(rep.Length()) * n // $&, $`, $' each up to len(s)
	}
	if n+(n+1)*per <= MaxStringLen {
		return false, 0
	}
	return true, int64(math.Floor((MaxStringLen - n) / math.Max(per, 1)))
}

// summing wraps a replacement function so that its results, converted to strings, are
// summed as they come (from len(s)) and refused past MaxStringLen.
func (g *replaceGuards) summing(s goja.String, fn goja.Callable) goja.Value {
	total := int64(s.Length())
	return g.rt.ToValue(func(c goja.FunctionCall) goja.Value {
		r := g.str(CallJS(fn, c.This, c.Arguments...))
		if total += int64(r.Length()); total > MaxStringLen {
			g.oom()
		}
		return r
	})
}

// countString counts the matches of the string p in s (at most one unless all),
// stopping once there are more than limit. Both ASCII: counted in Go; else with
// String.prototype.indexOf.
func (g *replaceGuards) countString(s, p goja.String, all bool, limit int64) int64 {
	if !all {
		return 1
	}
	step := max(p.Length(), 1)
	gs, sASCII := ASCII(s)
	gp, pASCII := ASCII(p)
	p0 := poller{g: g}
	if sASCII && pASCII { // bytes are UTF-16 units
		var n int64
		for at := 0; ; {
			i := strings.Index(gs[at:], gp)
			if i < 0 {
				return n
			}
			if n++; n > limit {
				return n
			}
			if at += i + step; at > len(gs) {
				return n
			}
			p0.step(n, int64(at))
		}
	}
	var n int64
	for at := int64(0); ; {
		i := CallJS(g.indexOf, s, p, g.rt.ToValue(at)).ToInteger()
		if i < 0 {
			return n
		}
		if n++; n > limit {
			return n
		}
		if at = i + int64(step); at > int64(s.Length()) {
			return n
		}
		p0.step(n, at)
	}
}

// countRegExp counts the matches of the RegExp re in s (one without the g flag) with a
// fresh RegExp of the same source and flags and the original exec, stopping once there
// are more than limit. A receiver that is no RegExp (or is a function) is counted as a
// string.
func (g *replaceGuards) countRegExp(s goja.String, re goja.Value, limit int64) int64 {
	o, ok := re.(*goja.Object)
	if _, callable := goja.AssertFunction(re); !ok || callable || !g.rt.InstanceOf(o, g.regExp) {
		return g.countString(s, g.str(re), true, limit)
	}
	flags := g.str(nilUndefined(o.Get("flags")))
	if !g.contains(flags, 'g') {
		return 1
	}
	fresh, err := g.rt.New(g.regExp, nilUndefined(o.Get("source")), flags)
	if err != nil {
		rethrow(err)
	}
	lastIndex := func() int64 { return fresh.Get("lastIndex").ToInteger() }
	if err := fresh.Set("lastIndex", 0); err != nil {
		rethrow(err)
	}
	var n int64
	p0 := poller{g: g}
	for {
		m := CallJS(g.exec, fresh, s)
		if goja.IsNull(m) {
			return n
		}
		if n++; n > limit {
			return n
		}
		at := lastIndex()
		if g.str(nilUndefined(m.ToObject(g.rt).Get("0"))).Length() == 0 {
			if err := fresh.Set("lastIndex", at+1); err != nil {
				rethrow(err)
			}
		}
		p0.step(n, at)
	}
}

// contains reports whether s holds the ASCII unit c (String.prototype.indexOf unless
// s is ASCII).
func (g *replaceGuards) contains(s goja.String, c byte) bool {
	if a, ok := ASCII(s); ok {
		return strings.IndexByte(a, c) >= 0
	}
	return CallJS(g.indexOf, s, g.rt.ToValue(string(c))).ToInteger() >= 0
}

func nilUndefined(v goja.Value) goja.Value {
	if v == nil {
		return goja.Undefined()
	}
	return v
}

// regexpMatch is RegExp.prototype[Symbol.match] on a plain RegExp (ECMA-262
// RegExp.prototype[@@match]): without the g flag the original's one match; with it,
// the spec's loop run here, one exec per match, refused at MaxArrayLen + 1 matches and
// checked for a pending interrupt before the first search of a long string, every
// pollEvery matches and every pollUnits of input passed, so that neither the count nor
// the time of a global match is one native step (one exec still is).
func (g *replaceGuards) regexpMatch(this, arg goja.Value, orig goja.Callable) goja.Value {
	o, ok := this.(*goja.Object)
	if !ok {
		return CallJS(orig, this, arg) // the original's TypeError
	}
	s := g.str(arg)
	if !nilUndefined(o.Get("global")).ToBoolean() {
		return CallJS(g.exec, o, s)
	}
	unicode := nilUndefined(o.Get("unicode")).ToBoolean() || nilUndefined(o.Get("unicodeSets")).ToBoolean()
	if err := o.Set("lastIndex", 0); err != nil {
		rethrow(err)
	}
	var out []any
	p0 := poller{g: g}
	if s.Length() > pollUnits {
		g.check() // a deadline already passed stops the first search too
	}
	for {
		m := CallJS(g.exec, o, s)
		if goja.IsNull(m) {
			if len(out) == 0 {
				return goja.Null()
			}
			return g.rt.NewArray(out...)
		}
		ms := g.str(nilUndefined(m.ToObject(g.rt).Get("0")))
		if out = append(out, ms); len(out) > MaxArrayLen {
			g.oom()
		}
		at := o.Get("lastIndex").ToInteger()
		if ms.Length() == 0 {
			if err := o.Set("lastIndex", advanceIndex(s, at, unicode)); err != nil {
				rethrow(err)
			}
		}
		p0.step(int64(len(out)), at)
	}
}

// regexpSplit is RegExp.prototype[Symbol.split] on a plain RegExp (ECMA-262
// RegExp.prototype[@@split]): goja's own finds every match of the whole string in one
// native step whatever the limit, so the spec's loop runs here instead, one exec of a
// global copy per separator (the leftmost match from q is the first sticky match at
// or after q), stopping at the limit, refused at MaxArrayLen + 1 elements and checked
// for a pending interrupt as it goes (poller).
func (g *replaceGuards) regexpSplit(this, arg, limit goja.Value, orig goja.Callable) goja.Value {
	o, ok := this.(*goja.Object)
	if !ok {
		return CallJS(orig, this, arg, limit) // the original's TypeError
	}
	s := g.str(arg)
	flags, _ := ASCII(g.str(nilUndefined(o.Get("flags")))) // a plain RegExp's flags are ASCII
	unicode := strings.ContainsAny(flags, "uv")
	fresh, err := g.rt.New(g.regExp, nilUndefined(o.Get("source")), g.rt.ToValue(strings.ReplaceAll(strings.ReplaceAll(flags, "y", ""), "g", "")+"g"))
	if err != nil {
		rethrow(err)
	}
	lim := int64(math.MaxUint32)
	if limit != nil && !goja.IsUndefined(limit) {
		lim = toUint32(limit.ToFloat())
	}
	if lim == 0 {
		return g.rt.NewArray()
	}
	size := int64(s.Length())
	search := func(q int64) *goja.Object {
		if err := fresh.Set("lastIndex", q); err != nil {
			rethrow(err)
		}
		m := CallJS(g.exec, fresh, s)
		if goja.IsNull(m) {
			return nil
		}
		return m.ToObject(g.rt)
	}
	if size == 0 {
		if search(0) != nil {
			return g.rt.NewArray()
		}
		return g.rt.NewArray(s)
	}
	var out []any
	push := func(v goja.Value) bool {
		if out = append(out, v); len(out) > MaxArrayLen {
			g.oom()
		}
		return int64(len(out)) == lim
	}
	p0 := poller{g: g}
	if size > pollUnits {
		g.check()
	}
	p, q := int64(0), int64(0)
	for q < size {
		m := search(q)
		if m == nil {
			break
		}
		start := m.Get("index").ToInteger()
		if start >= size {
			break
		}
		e := min(fresh.Get("lastIndex").ToInteger(), size)
		if e == p { // an empty match where the last piece ended
			q = advanceIndex(s, start, unicode)
			continue
		}
		if push(s.Substring(int(p), int(start))) {
			return g.rt.NewArray(out...)
		}
		n := m.Get("length").ToInteger()
		for i := int64(1); i < n; i++ {
			if push(nilUndefined(m.Get(strconv.FormatInt(i, 10)))) {
				return g.rt.NewArray(out...)
			}
		}
		p, q = e, e
		p0.step(int64(len(out)), q)
	}
	push(s.Substring(int(p), int(size)))
	return g.rt.NewArray(out...)
}

// toUint32 is ECMA-262 ToUint32 of a number.
func toUint32(f float64) int64 {
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return 0
	}
	m := math.Mod(math.Trunc(f), 1<<32)
	if m < 0 {
		m += 1 << 32
	}
	return int64(m)
}

// advanceIndex is ECMA-262 AdvanceStringIndex: past the code point at i when unicode,
// else the unit.
func advanceIndex(s goja.String, i int64, unicode bool) int64 {
	if !unicode || i+1 >= int64(s.Length()) {
		return i + 1
	}
	if c := s.CharAt(int(i)); c >= 0xD800 && c <= 0xDBFF {
		if d := s.CharAt(int(i + 1)); d >= 0xDC00 && d <= 0xDFFF {
			return i + 2
		}
	}
	return i + 1
}

// proxyType is the type goja exports a Proxy as.
var proxyType = reflect.TypeOf(goja.Proxy{})
