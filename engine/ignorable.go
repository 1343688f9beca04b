package engine

import (
	"slices"
	"unicode"
)

// The hidden-text carrier class: Unicode's Default_Ignorable_Code_Point (UAX #44,
// DerivedCoreProperties.txt), derived here from the property tables of the Go
// standard library as the Unicode standard defines it:
//
//	Other_Default_Ignorable_Code_Point + Cf + Variation_Selector
//	  - White_Space - U+FFF9..U+FFFB (interlinear annotation)
//	  - U+13430..U+1343F (Egyptian hieroglyph format controls)
//	  - Prepended_Concatenation_Mark
//
// The Hangul fillers (U+115F, U+1160, U+3164, U+FFA0) are in it through
// Other_Default_Ignorable_Code_Point and are named again so the class never loses
// them. LRM, RLM and ALM (U+200E, U+200F, U+061C) are default-ignorable too, but they
// are how real bidirectional text is written, so they are not carriers.
var defaultIgnorable = func() *unicode.RangeTable {
	var rs []rune
	in := func(r rune) bool {
		if !(unicode.Is(unicode.Other_Default_Ignorable_Code_Point, r) || unicode.Is(unicode.Cf, r) || unicode.Is(unicode.Variation_Selector, r)) {
			return false
		}
		switch {
		case unicode.Is(unicode.White_Space, r),
			r >= 0xFFF9 && r <= 0xFFFB,
			r >= 0x13430 && r <= 0x1343F,
			unicode.Is(unicode.Prepended_Concatenation_Mark, r):
			return false
		}
		return true
	}
	var t unicode.RangeTable
	// candidates: the code points of the three source tables, in order
	seen := map[rune]bool{0x115F: true, 0x1160: true, 0x3164: true, 0xFFA0: true}
	for _, src := range []*unicode.RangeTable{unicode.Other_Default_Ignorable_Code_Point, unicode.Cf, unicode.Variation_Selector} {
		for _, r16 := range src.R16 {
			for r := rune(r16.Lo); r <= rune(r16.Hi); r += rune(r16.Stride) {
				seen[r] = seen[r] || in(r)
			}
		}
		for _, r32 := range src.R32 {
			for r := rune(r32.Lo); r <= rune(r32.Hi); r += rune(r32.Stride) {
				seen[r] = seen[r] || in(r)
			}
		}
	}
	for r, ok := range seen {
		if ok {
			rs = append(rs, r)
		}
	}
	slices.Sort(rs)
	for k := 0; k < len(rs); {
		lo := rs[k]
		hi := lo
		for k+1 < len(rs) && rs[k+1] == hi+1 {
			k++
			hi = rs[k]
		}
		k++
		if hi <= 0xFFFF {
			t.R16 = append(t.R16, unicode.Range16{Lo: uint16(lo), Hi: uint16(hi), Stride: 1})
		} else {
			t.R32 = append(t.R32, unicode.Range32{Lo: uint32(lo), Hi: uint32(hi), Stride: 1})
		}
	}
	return &t
}()

// ignorableBMP is defaultIgnorable for U+0000–U+FFFF as a bitset, so the scanner's
// check costs one load.
var ignorableBMP = func() (b [0x10000 / 64]uint64) {
	for _, r16 := range defaultIgnorable.R16 {
		for r := rune(r16.Lo); r <= rune(r16.Hi); r++ {
			b[r>>6] |= 1 << (r & 63)
		}
	}
	return
}()

// isCarrier reports whether r belongs to the carrier class of invOther: default
// ignorable, but neither zero-width, bidi control, Tag nor emoji variation selector
// (those have their own rules), nor LRM, RLM or ALM.
func isCarrier(r rune) bool {
	if r < 0xAD || r == 0x200E || r == 0x200F || r == 0x061C {
		return false
	}
	if r < 0x10000 {
		return ignorableBMP[r>>6]&(1<<(r&63)) != 0
	}
	return unicode.Is(defaultIgnorable, r)
}
