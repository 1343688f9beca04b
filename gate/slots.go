package gate

import (
	"bytes"
	"encoding/json"
	"reflect"

	"github.com/dop251/goja"

	"github.com/mcpgate/mcpgate/gate/internal/sandbox"

	"github.com/mcpgate/mcpgate/gate/internal/jsvalue"
	"github.com/mcpgate/mcpgate/vocab"
)

// tri is a three-valued truth: unknown, true or false.
type tri int8

const (
	unknown tri = iota
	yes
	no
)

// slot is one ctx value the policies can change (params, response.content,
// response.structuredContent). It is raw JSON until a policy reads it; then a native
// JS value (JSON.parse inside the runtime, so push, splice and delete behave as
// JavaScript) that is read back with JSON.stringify once the policy ends, and
// dropped: the next policy parses the read-back text again. So every getter, setter,
// toJSON or Proxy a policy leaves behind runs exactly once, and later policies and the
// upstream see that one value (docs/policies.md#shapes).
//
// Changes are tracked, not assumed: eq says how raw relates to the input — equal,
// different, or unknown (decided by one JSON comparison at the end of the phase).
type slot struct {
	name     string
	orig     []byte // the input bytes (nil: absent)
	raw      []byte // current value (nil: absent)
	present  bool
	readOnly bool

	eq        tri    // raw versus orig as JSON
	canon     string // JSON.stringify text equal as JSON to raw; "" unknown
	origCanon string // JSON.stringify text equal as JSON to orig; "" unknown

	mat     bool       // js holds the value
	js      goja.Value // materialised value
	touched bool       // read or written by the running policy
	changed bool       // changed by a Go-side helper during the running policy
}

func newSlot(name string, raw []byte, readOnly bool) slot {
	present := len(raw) > 0 && string(raw) != "null"
	if !present {
		raw = nil
	}
	return slot{name: name, orig: raw, raw: raw, present: present, readOnly: readOnly, eq: yes}
}

// rewritten records a Go-side rewrite of raw that changed at least one string's value.
func (s *slot) rewritten(out []byte) {
	s.raw, s.canon, s.changed = out, "", true
	if s.eq == yes {
		s.eq = no // one leaf differs from a value equal to the input
	} else {
		s.eq = unknown
	}
}

// set records a read-back whose text differs as JSON from the current value. Texts of
// different lengths from a canonical text of the input cannot be equal as JSON (equal
// values differ at most in the order of keys).
func (s *slot) set(text string) {
	s.raw, s.canon = []byte(text), text
	switch {
	case s.origCanon != "" && text == s.origCanon:
		s.eq = yes
	case s.eq == yes:
		s.eq = no
	case s.origCanon != "" && len(text) != len(s.origCanon):
		s.eq = no
	default:
		s.eq = unknown
	}
}

// differs reports whether the value at the end of the phase differs from the input as
// JSON (an edit that restores the input is no change).
func (s *slot) differs() bool {
	switch s.eq {
	case yes:
		return false
	case no:
		return true
	}
	if (s.raw == nil) != (s.orig == nil) {
		return true
	}
	return !bytes.Equal(s.raw, s.orig) && !jsonEqual(s.raw, s.orig)
}

// getSlot materialises a ctx value the first time a policy reads it.
func (v *vm) getSlot(c *callState, s *slot) goja.Value {
	if !s.mat {
		if !s.present {
			return goja.Undefined()
		}
		val, canon := v.parseJSON(string(s.raw))
		if canon != "" {
			s.canon = canon // the text a read-back of the untouched value gives
			if s.eq == yes && s.origCanon == "" {
				s.origCanon = canon
			}
		}
		if s.readOnly {
			if _, err := v.DeepFreeze(goja.Undefined(), val); err != nil {
				rethrow(err)
			}
		}
		s.js, s.mat = val, true
	}
	s.touched = true
	return s.js
}

// parseJSON builds the native JS value of JSON text: in Go (jsvalue, with its
// canonical text) where it can, else with the runtime's JSON.parse, whose error is
// rethrown into the running policy (canon "").
func (v *vm) parseJSON(text string) (goja.Value, string) {
	if val, canon, ok := v.json.FromJSON(text); ok {
		return val, canon
	}
	val, err := v.Parse(goja.Undefined(), v.rt.ToValue(text))
	if err != nil {
		rethrow(err)
	}
	return val, ""
}

// orUndefined maps a missing property (nil) to undefined.
func orUndefined(val goja.Value) goja.Value {
	if val == nil {
		return goja.Undefined()
	}
	return val
}

func (v *vm) setSlot(c *callState, s *slot, val goja.Value) {
	if s.readOnly {
		v.throwType("ctx." + s.name + " is read-only in this phase")
	}
	s.js, s.mat, s.touched = val, true, true
}

// readBack stringifies each value the policy touched (still under the deadline), checks
// the shape of that text — the JSON that is sent, whatever toJSON did — and records
// changes. The JS values are dropped so that the next policy reads the same text;
// paramsRO (a policy proven to only read ctx.params, paramsReadOnly) keeps ctx.params
// as JSON.parse gave it, for the next policy, with nothing to read back.
func (v *vm) readBack(c *callState, paramsRO bool) (bool, *Rejection) {
	if c.shapeErr != "" {
		return false, &Rejection{Code: vocab.ReasonBadCtxShape, Message: c.shapeErr}
	}
	changed := false
	for _, s := range []*slot{&c.params, &c.content, &c.sc} {
		if s.changed {
			changed = true
			s.changed = false
		}
		if !s.touched {
			continue
		}
		s.touched = false
		if s.readOnly || (paramsRO && s == &c.params) {
			continue
		}
		text, ok, rej := v.readText(s)
		s.js, s.mat = nil, false
		if rej != nil {
			return false, rej
		}
		if msg := checkShape(c, s, text, ok); msg != "" {
			return false, &Rejection{Code: vocab.ReasonBadCtxShape, Message: msg}
		}
		if s == &c.sc && (!ok || text == "null") { // structuredContent dropped
			if s.present {
				s.present, s.raw, s.canon, changed = false, nil, "", true
				s.eq = no
				if s.orig == nil {
					s.eq = yes
				}
			}
			continue
		}
		s.present = true
		switch {
		case s.raw != nil && (text == string(s.raw) || text == s.canon):
			s.canon = text
		case s.raw != nil && (s.canon == "" || len(text) == len(s.canon)) && jsonEqual([]byte(text), s.raw):
			s.canon = text // the same value, its keys in another order (or canon unknown)
		default:
			s.set(text)
			changed = true
			continue
		}
		if s.eq == yes && s.origCanon == "" {
			s.origCanon = text
		}
	}
	return changed, nil
}

// tripReasons are the rejections of the read-back's guards.
var tripReasons = map[jsvalue.Trip]*interruptReason{jsvalue.TripMemory: errMemory, jsvalue.TripStack: errStack}

// maxScratch bounds the read-back buffer a runtime keeps between policies, in bytes.
const maxScratch = 64 << 10

// readText reads a slot's JS value back as JSON text in Go (jsvalue.Writer); ok is false
// when it gives undefined. A throw (a getter, toJSON or Proxy trap) is a bad shape; a
// guard that fires rejects with its own code.
func (v *vm) readText(s *slot) (text string, ok bool, rej *Rejection) {
	// the runtime's scratch buffer: only text, a copy, leaves this function
	w := jsvalue.Writer{V: &v.json, Limit: sandbox.MaxStringLen + 2*len(s.orig), Buf: v.scratch[:0]}
	defer func() {
		if cap(w.Buf) <= maxScratch {
			v.scratch = w.Buf[:0]
		}
	}()
	if ex := v.rt.Try(func() { ok = w.Write("", s.js, 0) }); ex != nil {
		if why := tripReasons[w.Trip]; why != nil {
			return "", false, &Rejection{Code: why.code, Message: why.msg}
		}
		return "", false, &Rejection{Code: vocab.ReasonBadCtxShape, Message: "ctx." + s.name + " could not be read back as JSON"}
	}
	if !ok {
		return "", false, nil
	}
	return string(w.Buf), true, nil
}

// checkShape validates the JSON text of a touched value: params an object; content an
// array of objects each with a string type; structuredContent an object, or
// undefined/null for absent.
func checkShape(c *callState, s *slot, text string, ok bool) string {
	switch s {
	case &c.params:
		if !ok || !isObjectText(text) {
			return "ctx.params must be an object"
		}
	case &c.content:
		// the phase's one array: content blocks each with a string type, tools each
		// with a name, resource contents each with a uri, prompt messages each with a role
		spec := phaseSpecs[c.phase]
		name, member := spec.array, spec.member
		if !ok || !validContent(text, member) {
			return "ctx." + name + " must be an array of objects, each with a string " + member
		}
	case &c.sc:
		if ok && text != "null" && !isObjectText(text) {
			return "ctx.response.structuredContent must be an object"
		}
	}
	return ""
}

func isObjectText(t string) bool { return len(t) > 0 && t[0] == '{' }

// validContent checks an array's JSON: every element an object with a string member
// (content blocks: type).
func validContent(t, member string) bool {
	if len(t) == 0 || t[0] != '[' {
		return false
	}
	var items []map[string]json.RawMessage
	if err := json.Unmarshal([]byte(t), &items); err != nil {
		return false
	}
	for _, it := range items {
		if v := it[member]; it == nil || len(v) == 0 || v[0] != '"' {
			return false
		}
	}
	return true
}

// jsonEqual reports JSON equality: same bytes, or equal once decoded (numbers as
// float64, as JavaScript sees them).
func jsonEqual(a, b []byte) bool {
	if bytes.Equal(a, b) {
		return true
	}
	var x, y any
	if json.Unmarshal(a, &x) != nil || json.Unmarshal(b, &y) != nil {
		return false
	}
	return reflect.DeepEqual(x, y)
}
