package sandbox

import (
	"errors"
	"strings"
	"testing"

	"github.com/dop251/goja"
)

// A global match or a count over a long input checks for a pending interrupt as its
// search passes the input, not only every pollEvery matches: with the deadline already
// passed, each stops within pollUnits (plus one match) of where it began, whatever the
// input's length. lastIndex says how far the search went.
func TestGuardsPollAsTheyGo(t *testing.T) {
	word := strings.Repeat("w", 8<<10)
	text := strings.Repeat(word+" ", 2048) // 16 MiB in 2,048 matches: fewer than one poll by count
	for _, tc := range []struct {
		name, text string
	}{{"match", text}, {"match, non-ASCII", text + "\u00e9"}} {
		t.Run(tc.name, func(t *testing.T) {
			r, err := New(Hooks{OOM: func() {}, TooDeep: func() {}})
			if err != nil {
				t.Fatal(err)
			}
			re, err := r.RT.RunString(`/\S+/g`)
			if err != nil {
				t.Fatal(err)
			}
			match, _ := goja.AssertFunction(re.ToObject(r.RT).GetSymbol(goja.SymMatch))
			r.RT.Interrupt("deadline") // the guard is Go: only its own checks raise it
			_, err = match(re, r.RT.ToValue(tc.text))
			var ie *goja.InterruptedError
			if !errors.As(err, &ie) {
				t.Fatalf("got %v, want the interrupt", err)
			}
			r.RT.ClearInterrupt()
			last := re.ToObject(r.RT).Get("lastIndex").ToInteger()
			if max := int64(pollUnits + len(word) + 1); last > max {
				t.Errorf("search went to %d before the interrupt stopped it, want at most %d", last, max)
			}
		})
	}
}

// A split by a RegExp over a long input is the guard's loop, not goja's one native
// step: with the deadline already passed it stops with the interrupt.
func TestSplitPolls(t *testing.T) {
	r, err := New(Hooks{OOM: func() {}, TooDeep: func() {}})
	if err != nil {
		t.Fatal(err)
	}
	re, err := r.RT.RunString(`/\s+/`)
	if err != nil {
		t.Fatal(err)
	}
	split, _ := goja.AssertFunction(re.ToObject(r.RT).GetSymbol(goja.SymSplit))
	r.RT.Interrupt("deadline")
	_, err = split(re, r.RT.ToValue(strings.Repeat("a ", 1<<20)), r.RT.ToValue(10))
	var ie *goja.InterruptedError
	if !errors.As(err, &ie) {
		t.Fatalf("got %v, want the interrupt", err)
	}
}

// JSONShape stops at its bound plus one: a measure past a bound is that bound plus one,
// whatever follows in the text.
func TestJSONShapeStopsAtBound(t *testing.T) {
	long := "[" + strings.Repeat("0,", MaxArrayLen+64) + "0]"
	if _, _, longest := JSONShape(long); longest != MaxArrayLen+1 {
		t.Errorf("longest %d, want %d", longest, MaxArrayLen+1)
	}
	many := "{" + strings.Repeat(`"a":0,`, MaxNodes+64) + `"a":0}`
	if _, values, _ := JSONShape(many); values != MaxNodes+1 {
		t.Errorf("values %d, want %d", values, MaxNodes+1)
	}
	deep := strings.Repeat("[", MaxNesting+64)
	if depth, _, _ := JSONShape(deep); depth != MaxNesting+1 {
		t.Errorf("depth %d, want %d", depth, MaxNesting+1)
	}
}
