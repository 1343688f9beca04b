package policyast

import (
	"slices"
	"testing"
)

// FuzzCompile: any source compiles or is refused with an *Error, never a panic; a
// compiled policy acts in phases that are default ones or ones it compares ctx.phase
// with, and the read-only proof never holds for a file that assigns ctx.params.
func FuzzCompile(f *testing.F) {
	for _, s := range []string{
		`if (ctx.phase === "pre" && ctx.params.force_delete === true) throw "no"`,
		`if (ctx.phase !== "list") return; ctx.tools = ctx.tools.filter(function (t) { return t.name !== "x" })`,
		`switch (ctx.phase) { case "resource": ctx.redactAll(); }`,
		`for (i = 0; i < 3; i++) s += i; var [a, ...r] = [1, 2]; ({...a})`,
		`}); evil(); (function () {`,
		"`${ctx.tool}` + 1n",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, src string) {
		p, err := Compile("p.js", []byte(src))
		if err != nil {
			if _, ok := err.(*Error); !ok {
				t.Fatalf("%q: %T %v", src, err, err)
			}
			return
		}
		for _, ph := range p.Phases.Acts {
			if !slices.Contains(DefaultPhases, ph) && !slices.Contains(p.Phases.Compared, ph) {
				t.Fatalf("%q: acts in %q, neither default nor compared", src, ph)
			}
		}
		if _, _, err := CompileTest("p_test.js", []byte(src)); err != nil {
			if _, ok := err.(*Error); !ok {
				t.Fatalf("%q: test file: %T %v", src, err, err)
			}
		}
	})
}

// FuzzErrorPosition: any stack text gives a position in the file or none, never a
// panic, and never a line or column below 1 when one is given.
func FuzzErrorPosition(f *testing.F) {
	f.Add("TypeError: x\n\tat p.js:3:5(7)\n\tat runner (lockdown.js:306:13(5))\n", "p.js")
	f.Add("x\n\tat p.js:1:120(2)", "p.js")
	f.Add("\tat p.js:", "p.js")
	f.Fuzz(func(t *testing.T, stack, file string) {
		line, col := ErrorPosition(stack, file, PrefixLen)
		if line < 0 || (line > 0 && col < 1) || (line == 0 && col != 0) {
			t.Fatalf("line %d column %d", line, col)
		}
	})
}
