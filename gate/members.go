package gate

import (
	"errors"
	"strconv"
	"strings"
	"unicode/utf8"
	"unsafe"

	"github.com/dop251/goja"
	"github.com/mcpgate/mcpgate/internal/jsonscan"
)

// A policy proven to use ctx.params only as ctx.params.KEY for known keys
// (paramsMembers) gets an object holding just those keys: the arguments are split into
// their top-level members, only the members it names are built as JS values, and what
// it leaves in them is spliced back into the arguments text, every other member copied
// as it came. It cannot tell the difference: it never sees the object itself, only
// values read or written under the keys it names (docs/policies.md#keyed).

// member is one top-level member of a JSON object text: text[start:end] is
// `"key" : value` and text[valStart:end] the value; key is unescaped.
type member struct {
	key                  string
	start, valStart, end int
}

// keyedPart is one member a policy's object was built from: its key, its value's text
// in the arguments, and JSON.stringify of that value ("" unknown).
type keyedPart struct {
	key, text, canon string
}

// Bounds of the arguments objectMembers splits for a keyed policy; past them the whole
// value is built as before. Deep values stay with fromJSON's own depth guard, and the
// check for a key given twice stays short.
const (
	keyedMaxMembers = 64
	keyedMaxDepth   = maxNesting / 2
)

// objectMembers splits the JSON text of an object into its members, in text order,
// validating all of it as JSON.parse would (RFC 8259). ok is false for anything else,
// and where JSON.parse and the splice could disagree: a \u escape of a surrogate
// (skipString), a key given twice or not valid UTF-8; and past keyedMaxMembers
// members or keyedMaxDepth levels. dst is reused.
func objectMembers(text string, dst []member) ([]member, bool) {
	return splitObject(text, dst, keyedMaxMembers, keyedMaxDepth, false)
}

// splitObject is objectMembers with its bounds given. readBack splits the read-back's
// own text instead, where \uD800–\uDFFF escapes are lone surrogates (the writer
// escapes no other): a key holding one is kept as "\xff" and its escaped text, which no
// key of the arguments (valid UTF-8, no such escape) can equal.
func splitObject(text string, dst []member, maxMembers, maxDepth int, readBack bool) ([]member, bool) {
	r := jsonReader{s: text, lone: readBack}
	r.space()
	if r.i >= len(r.s) || r.s[r.i] != '{' {
		return nil, false
	}
	r.i++
	out := dst[:0]
	r.space()
	if r.i < len(r.s) && r.s[r.i] == '}' {
		r.i++
		r.space()
		return out, r.i == len(r.s)
	}
	for {
		r.space()
		start := r.i
		if !r.skipString() {
			return nil, false
		}
		k := text[start+1 : r.i-1]
		if !utf8.ValidString(k) {
			return nil, false // two such keys may be one in JavaScript (U+FFFD)
		}
		if strings.IndexByte(k, '\\') >= 0 {
			d, ok := unescape(k) // skipString let through no other escape than a surrogate's
			switch {
			case ok:
				k = d
			case readBack:
				k = "\xff" + k
			default:
				return nil, false
			}
		}
		if len(out) >= maxMembers {
			return nil, false
		}
		for _, m := range out {
			if m.key == k {
				return nil, false // JSON.parse keeps the last value at the first place
			}
		}
		r.space()
		if r.i >= len(r.s) || r.s[r.i] != ':' {
			return nil, false
		}
		r.i++
		r.space()
		valStart := r.i
		if !skipValue(&r, 1, maxDepth) {
			return nil, false
		}
		out = append(out, member{key: k, start: start, valStart: valStart, end: r.i})
		r.space()
		if r.i >= len(r.s) {
			return nil, false
		}
		switch r.s[r.i] {
		case '}':
			r.i++
			r.space()
			return out, r.i == len(r.s)
		case ',':
			r.i++
		default:
			return nil, false
		}
	}
}

// skipValue moves r past one JSON value at r.i, validating it; depth is the nesting of
// the value (the arguments object is 0), and no array or object may be deeper than
// maxDepth.
func skipValue(r *jsonReader, depth, maxDepth int) bool {
	if r.i >= len(r.s) {
		return false
	}
	switch c := r.s[r.i]; {
	case c == '"':
		return r.skipString()
	case c == '{' || c == '[':
		if depth > maxDepth {
			return false
		}
		end := byte('}')
		if c == '[' {
			end = ']'
		}
		r.i++
		r.space()
		if r.i < len(r.s) && r.s[r.i] == end {
			r.i++
			return true
		}
		for {
			r.space()
			if c == '{' {
				if !r.skipString() {
					return false
				}
				r.space()
				if r.i >= len(r.s) || r.s[r.i] != ':' {
					return false
				}
				r.i++
				r.space()
			}
			if !skipValue(r, depth+1, maxDepth) {
				return false
			}
			r.space()
			if r.i >= len(r.s) {
				return false
			}
			if r.s[r.i] == end {
				r.i++
				return true
			}
			if r.s[r.i] != ',' {
				return false
			}
			r.i++
		}
	case c == 't':
		return r.literal("true")
	case c == 'f':
		return r.literal("false")
	case c == 'n':
		return r.literal("null")
	case c == '-' || c >= '0' && c <= '9':
		return r.number()
	}
	return false
}

// skipString moves past a JSON string, validating it as str does, without decoding:
// no control character, and each escape one of \" \\ \/ \b \f \n \r \t \uXXXX,
// except that a \u escape of a surrogate (\uD800–\uDFFF) is refused too (JSON.parse
// joins a pair and reads a lone one as U+FFFD; the whole value is then built instead).
// Runs of plain bytes are skipped eight at a time.
func (r *jsonReader) skipString() bool {
	s := r.s
	if r.i >= len(s) || s[r.i] != '"' {
		return false
	}
	const lo, hi = 0x0101010101010101, 0x8080808080808080
	for j := r.i + 1; j < len(s); j++ {
		for j+8 <= len(s) {
			x := uint64(s[j]) | uint64(s[j+1])<<8 | uint64(s[j+2])<<16 | uint64(s[j+3])<<24 |
				uint64(s[j+4])<<32 | uint64(s[j+5])<<40 | uint64(s[j+6])<<48 | uint64(s[j+7])<<56
			q, b := x^('"'*lo), x^('\\'*lo)
			// a byte below 0x20, or equal to " or \ (exact zero-byte tests: a set bit
			// can only come from such a byte or a borrow out of one below it)
			if ((x-0x20*lo)&^x|(q-lo)&^q|(b-lo)&^b)&hi != 0 {
				break
			}
			j += 8
		}
		if j >= len(s) {
			break
		}
		switch c := s[j]; {
		case c == '"':
			r.i = j + 1
			return true
		case c < 0x20:
			return false
		case c == '\\':
			if j+1 >= len(s) {
				return false
			}
			j++
			if _, ok := jsonscan.Escaped(s[j]); ok {
				continue
			}
			if s[j] != 'u' || j+4 >= len(s) || !r.lone && (s[j+1] == 'd' || s[j+1] == 'D') {
				return false
			}
			for _, h := range []byte(s[j+1 : j+5]) {
				if !('0' <= h && h <= '9' || 'a' <= h && h <= 'f' || 'A' <= h && h <= 'F') {
					return false
				}
			}
			j += 4
		}
	}
	return false
}

func (r *jsonReader) literal(lit string) bool {
	if !strings.HasPrefix(r.s[r.i:], lit) {
		return false
	}
	r.i += len(lit)
	return true
}

// number moves past a JSON number: -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?,
// refusing one out of float64's range.
func (r *jsonReader) number() bool {
	s, i := r.s, r.i
	digits := func() bool {
		j := i
		for i < len(s) && s[i] >= '0' && s[i] <= '9' {
			i++
		}
		return i > j
	}
	if i < len(s) && s[i] == '-' {
		i++
	}
	switch {
	case i < len(s) && s[i] == '0':
		i++
	case !digits():
		return false
	}
	if i < len(s) && s[i] == '.' {
		i++
		if !digits() {
			return false
		}
	}
	if i < len(s) && (s[i] == 'e' || s[i] == 'E') {
		i++
		if i < len(s) && (s[i] == '+' || s[i] == '-') {
			i++
		}
		if !digits() {
			return false
		}
	}
	// one JSON.parse here cannot read (out of float64's range) makes the whole value
	// fail to build, as reading it whole would
	if tok := s[r.i:i]; len(tok) > 300 || strings.ContainsAny(tok, "eE") {
		if _, err := strconv.ParseFloat(tok, 64); err != nil {
			return false
		}
	}
	r.i = i
	return true
}

// keyedParams builds the object a policy proven to use only ctx.params[keys] sees: the
// members of the arguments under those keys, in text order, each built as fromJSON
// builds it. ok is false (the caller builds the whole value) where the arguments are
// not an object objectMembers splits or a member is not one fromJSON builds exactly.
// The parts it was built from are left in v.parts.
func (v *vm) keyedParams(s *slot, keys []string) (goja.Value, bool) {
	// split a view of raw (unchanged while Run runs); what reaches JS or outlives this
	// policy is copied
	view := unsafe.String(&s.raw[0], len(s.raw))
	ms, ok := objectMembers(view, v.members)
	if !ok {
		return nil, false
	}
	v.members = ms // spliceParams reads their offsets; the next split reuses them
	o := v.rt.NewObject()
	v.parts = v.parts[:0]
	for _, m := range ms {
		if !containsKey(keys, m.key) {
			continue
		}
		key, text := strings.Clone(m.key), strings.Clone(view[m.valStart:m.end])
		val, canon, ok := v.fromJSON(text)
		if !ok {
			return nil, false
		}
		if !v.defineKey(o, key, val) {
			return nil, false
		}
		v.parts = append(v.parts, keyedPart{key: key, text: text, canon: canon})
	}
	return o, true
}

// dropKeyed forgets the running keyed policy's members and parts (an idle runtime
// holds no call data), up to their capacity: a split that failed part way left
// members past the length.
func (v *vm) dropKeyed() {
	clear(v.members[:cap(v.members)])
	clear(v.parts[:cap(v.parts)])
	clear(v.got[:cap(v.got)])
	v.members, v.parts, v.got = v.members[:0], v.parts[:0], v.got[:0]
}

// containsKey reports whether sorted keys holds k.
func containsKey(keys []string, k string) bool {
	for _, x := range keys { // a policy names few keys
		if x == k {
			return true
		}
	}
	return false
}

// spliceParams writes back what a policy left in its keyed object, read back as
// JSON.stringify text (canonical: members in the object's order). Members of raw under
// the policy's keys take their new values (or are dropped when the value is gone, as
// JSON.stringify drops undefined); keys the object gained follow the last member; every
// other member is copied as it came. changed is false, and raw kept, when each value
// equals as JSON the one the policy was given.
// An error (not expected: both texts were split before) fails the call closed.
// raw's members and the parts are those keyedParams left in v.
func (v *vm) spliceParams(raw []byte, keys []string, text string) (out []byte, changed bool, err error) {
	ms, parts := v.members, v.parts
	// the read-back of a plain object: its keys are distinct and the writer bounds its depth
	got, ok := splitObject(text, v.got, len(text), maxNesting+1, true)
	if !ok {
		return nil, false, errSplice
	}
	v.got = got
	value := func(m member) string { return text[m.valStart:m.end] }
	changed = len(got) != len(parts)
	for _, m := range got {
		if changed {
			break
		}
		i := partIndex(parts, m.key)
		if i < 0 {
			changed = true
			break
		}
		p := parts[i]
		switch nv := value(m); {
		case p.canon != "": // a value's keys reordered is the same value, as readBack has it
			changed = nv != p.canon && (len(nv) != len(p.canon) || !jsonEqual([]byte(nv), []byte(p.canon)))
		default:
			changed = nv != p.text && !jsonEqual([]byte(nv), []byte(p.text))
		}
	}
	if !changed {
		return raw, false, nil
	}
	need := len(raw) + len(text) // at most: raw with every part dropped, then text's members
	for _, p := range parts {
		need -= len(p.text)
	}
	out = make([]byte, 0, need)
	out = append(out, '{')
	sep := func() {
		if len(out) > 1 {
			out = append(out, ',')
		}
	}
	for _, m := range ms {
		if !containsKey(keys, m.key) {
			sep()
			out = append(out, raw[m.start:m.end]...)
			continue
		}
		for _, g := range got {
			if g.key == m.key {
				sep()
				out = append(out, raw[m.start:m.valStart]...)
				out = append(out, value(g)...)
				break
			}
		}
	}
	for _, g := range got {
		if partIndex(parts, g.key) < 0 {
			sep()
			out = append(out, text[g.start:g.end]...)
		}
	}
	return append(out, '}'), true, nil
}

var errSplice = errors.New("ctx.params could not be written back")

func partIndex(parts []keyedPart, k string) int {
	for i, p := range parts {
		if p.key == k {
			return i
		}
	}
	return -1
}
