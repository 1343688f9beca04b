package engine

// ECMA-48 control-sequence parsing shared by the analyzer and the sanitizer.
//
// An escape sequence starts either with ESC (U+001B) or with an 8-bit C1 control
// encoded as a UTF-8 code point (U+0080–U+009F, bytes C2 80–C2 9F). A lone UTF-8
// continuation byte is never read as a C1 control: it is simply invalid UTF-8.

// escKind classifies a parsed control sequence.
type escKind uint8

const (
	escLoneESC escKind = iota // ESC not followed by a valid sequence: only the ESC
	escTwoByte                // ESC Fe/Fp/Fs, or nF (ESC, intermediates, final)
	escCSI                    // Control Sequence Introducer: ESC [ or U+009B
	escOSC                    // Operating System Command: ESC ] or U+009D
	escDCS                    // Device Control String: ESC P or U+0090
	escSOS                    // Start Of String: ESC X or U+0098
	escPM                     // Privacy Message: ESC ^ or U+009E
	escAPC                    // Application Program Command: ESC _ or U+009F
	escST                     // a stray String Terminator U+009C
	escC1                     // any other C1 control code point
)

// escSeq is one parsed sequence: s[start:end] is the whole sequence, s[pStart:pEnd]
// its parameter bytes (CSI) or payload (OSC, DCS, SOS, PM, APC), final its final byte
// (CSI, two-byte forms). terminated is false when the input ended (or an abort
// byte arrived) before the final byte or ST.
type escSeq struct {
	kind       escKind
	start, end int
	pStart     int
	pEnd       int
	final      byte
	terminated bool
}

// isC1Lead reports whether s[i:] starts with a C1 control code point (C2 80–C2 9F).
func isC1Lead(s string, i int) bool {
	return s[i] == 0xC2 && i+1 < len(s) && s[i+1] >= 0x80 && s[i+1] <= 0x9F
}

// parseEscape parses the sequence starting at s[i], which must be ESC or a C1 lead.
func parseEscape(s string, i int) escSeq {
	n := len(s)
	if s[i] == 0x1B {
		if i+1 >= n {
			return escSeq{kind: escLoneESC, start: i, end: i + 1, pStart: i + 1, pEnd: i + 1}
		}
		c := s[i+1]
		switch c {
		case '[':
			return parseCSI(s, i, i+2)
		case ']':
			return parseString(s, escOSC, i, i+2)
		case 'P':
			return parseString(s, escDCS, i, i+2)
		case 'X':
			return parseString(s, escSOS, i, i+2)
		case '^':
			return parseString(s, escPM, i, i+2)
		case '_':
			return parseString(s, escAPC, i, i+2)
		}
		if c >= 0x20 && c <= 0x2F { // nF: intermediates then a final 0x30–0x7E
			j := i + 1
			for j < n && s[j] >= 0x20 && s[j] <= 0x2F {
				j++
			}
			if j < n && s[j] >= 0x30 && s[j] <= 0x7E {
				return escSeq{kind: escTwoByte, start: i, end: j + 1, pStart: i + 1, pEnd: j, final: s[j], terminated: true}
			}
			return escSeq{kind: escTwoByte, start: i, end: j, pStart: i + 1, pEnd: j}
		}
		if c >= 0x30 && c <= 0x7E {
			return escSeq{kind: escTwoByte, start: i, end: i + 2, pStart: i + 1, pEnd: i + 1, final: c, terminated: true}
		}
		return escSeq{kind: escLoneESC, start: i, end: i + 1, pStart: i + 1, pEnd: i + 1}
	}
	// 8-bit C1 control, UTF-8 encoded.
	c := s[i+1]
	switch c {
	case 0x9B:
		return parseCSI(s, i, i+2)
	case 0x9D:
		return parseString(s, escOSC, i, i+2)
	case 0x90:
		return parseString(s, escDCS, i, i+2)
	case 0x98:
		return parseString(s, escSOS, i, i+2)
	case 0x9E:
		return parseString(s, escPM, i, i+2)
	case 0x9F:
		return parseString(s, escAPC, i, i+2)
	case 0x9C:
		return escSeq{kind: escST, start: i, end: i + 2, pStart: i + 2, pEnd: i + 2, terminated: true}
	}
	return escSeq{kind: escC1, start: i, end: i + 2, pStart: i + 2, pEnd: i + 2, final: c, terminated: true}
}

// parseCSI reads parameter bytes (0x30–0x3F), intermediate bytes (0x20–0x2F) and a
// final byte (0x40–0x7E). C0 controls inside are skipped as a terminal executes
// them; ESC, CAN, SUB, DEL or a non-ASCII byte abort the sequence.
func parseCSI(s string, start, j int) escSeq {
	n := len(s)
	p := j
	for j < n {
		c := s[j]
		switch {
		case c >= 0x40 && c <= 0x7E:
			return escSeq{kind: escCSI, start: start, end: j + 1, pStart: p, pEnd: j, final: c, terminated: true}
		case c >= 0x20 && c <= 0x3F:
			j++
		case c == 0x1B || c == 0x18 || c == 0x1A || c >= 0x7F:
			return escSeq{kind: escCSI, start: start, end: j, pStart: p, pEnd: j}
		default: // other C0
			j++
		}
	}
	return escSeq{kind: escCSI, start: start, end: n, pStart: p, pEnd: n}
}

// strStop marks the bytes that can end a control string: BEL, ESC, CAN, SUB and the
// C2 lead of U+009C (ST).
var strStop = [256]bool{0x07: true, 0x1B: true, 0x18: true, 0x1A: true, 0xC2: true}

// parseString reads a control string (OSC, DCS, SOS, PM, APC) up to its String
// Terminator: ESC \, U+009C, or BEL (xterm's OSC terminator, accepted for all). CAN or
// SUB abort it; an ESC that does not start ST ends it before the ESC.
func parseString(s string, kind escKind, start, j int) escSeq {
	n := len(s)
	p := j
	// tmux passthrough (DCS tmux; ... ST) doubles every ESC of the wrapped sequence
	tmux := kind == escDCS && hasPrefixFold(s[j:], "tmux;")
	for j < n {
		if !strStop[s[j]] {
			j++
			continue
		}
		if tmux && s[j] == 0x1B && j+1 < n && s[j+1] == 0x1B {
			j += 2
			continue
		}
		switch s[j] {
		case 0x07:
			if tmux {
				j++
				continue
			}
			return escSeq{kind: kind, start: start, end: j + 1, pStart: p, pEnd: j, terminated: true}
		case 0x1B:
			if j+1 < n && s[j+1] == '\\' {
				return escSeq{kind: kind, start: start, end: j + 2, pStart: p, pEnd: j, terminated: true}
			}
			return escSeq{kind: kind, start: start, end: j, pStart: p, pEnd: j}
		case 0x18, 0x1A:
			return escSeq{kind: kind, start: start, end: j + 1, pStart: p, pEnd: j}
		default: // 0xC2
			if j+1 < n && s[j+1] == 0x9C {
				return escSeq{kind: kind, start: start, end: j + 2, pStart: p, pEnd: j, terminated: true}
			}
			j++
		}
	}
	return escSeq{kind: kind, start: start, end: n, pStart: p, pEnd: n}
}

// colour is an SGR colour: 0 is the terminal default, colIndexed|n a palette index
// (0–255, the 16 basic colours included), colRGB|rgb a truecolour value.
type colour uint32

const (
	colIndexed colour = 1 << 24
	colRGB     colour = 2 << 24
)

// sgrState is the rendition state a run of SGRs leaves behind.
type sgrState struct {
	fg, bg  colour
	conceal bool
}

// hidden reports whether text drawn in this state is invisible: SGR 8 (conceal), or a
// foreground equal (or within 8 per RGB channel) to an explicit background.
func (st sgrState) hidden() (bool, string) {
	if st.conceal {
		return true, "sgr_conceal"
	}
	if st.fg != 0 && st.bg != 0 && coloursClose(st.fg, st.bg) {
		return true, "sgr_same_colour"
	}
	return false, ""
}

func coloursClose(a, b colour) bool {
	if a == b {
		return true
	}
	if a&colIndexed != 0 && b&colIndexed != 0 {
		return false // two different palette indexes
	}
	ra, rb := toRGB(a), toRGB(b)
	return chanDiff(ra>>16, rb>>16) <= 8 && chanDiff(ra>>8, rb>>8) <= 8 && chanDiff(ra, rb) <= 8
}

func chanDiff(a, b uint32) uint32 {
	a, b = a&0xFF, b&0xFF
	if a > b {
		return a - b
	}
	return b - a
}

// basic16 is xterm's default palette for indexes 0–15.
var basic16 = [16]uint32{
	0x000000, 0xcd0000, 0x00cd00, 0xcdcd00, 0x0000ee, 0xcd00cd, 0x00cdcd, 0xe5e5e5,
	0x7f7f7f, 0xff0000, 0x00ff00, 0xffff00, 0x5c5cff, 0xff00ff, 0x00ffff, 0xffffff,
}

// toRGB maps a colour to 0xRRGGBB using the xterm 256-colour palette.
func toRGB(c colour) uint32 {
	if c&colRGB != 0 {
		return uint32(c) & 0xFFFFFF
	}
	n := uint32(c) & 0xFF
	switch {
	case n < 16:
		return basic16[n]
	case n < 232:
		n -= 16
		lv := func(v uint32) uint32 {
			if v == 0 {
				return 0
			}
			return 55 + 40*v
		}
		return lv(n/36)<<16 | lv(n/6%6)<<8 | lv(n%6)
	default:
		v := 8 + 10*(n-232)
		return v<<16 | v<<8 | v
	}
}

// applySGR updates st with the SGR parameters p (the bytes between CSI and 'm'),
// handling any number of parameters, 38/48 extended colours in both the semicolon form
// (38;5;n, 38;2;r;g;b) and the colon sub-parameter form (38:5:n, 38:2::r:g:b,
// 38:2:r:g:b). It returns false when p carries a private marker (< = > ?), which makes
// the sequence something other than SGR.
func applySGR(st *sgrState, p string) bool {
	for k := 0; k < len(p); k++ {
		if c := p[k]; c >= 0x3C && c <= 0x3F {
			return false
		}
	}
	// Iterate ';'-separated parameters; each may carry ':' sub-parameters.
	i := 0
	pending := 0 // 38/48 in semicolon form waiting for its arguments
	var sub [6]int
	for {
		// read one parameter with its sub-parameters
		ns := 0
		for {
			v, j := sgrNum(p, i)
			if ns < len(sub) {
				sub[ns] = v
			}
			ns++
			i = j
			if i < len(p) && p[i] == ':' {
				i++
				continue
			}
			break
		}
		if pending != 0 {
			pending = sgrExtended(st, pending, sub[0], p, &i)
		} else if ns > 1 {
			sgrColonForm(st, sub[:min(ns, len(sub))], ns)
		} else {
			pending = sgrBasic(st, sub[0])
		}
		if i >= len(p) {
			break
		}
		if p[i] == ';' {
			i++
			if i >= len(p) { // trailing ';' is an empty (0) parameter
				if pending == 0 {
					sgrBasic(st, 0)
				}
				break
			}
			continue
		}
		i++ // stray byte: skip it
		if i >= len(p) {
			break
		}
	}
	if len(p) == 0 {
		sgrBasic(st, 0)
	}
	return true
}

// sgrNum reads a decimal parameter at p[i:], saturating; an empty parameter is 0.
func sgrNum(p string, i int) (int, int) {
	v := 0
	for i < len(p) && p[i] >= '0' && p[i] <= '9' {
		if v < 1<<20 {
			v = v*10 + int(p[i]-'0')
		}
		i++
	}
	return v, i
}

// sgrBasic applies one plain SGR parameter; it returns 38 or 48 when the parameter
// starts a semicolon-form extended colour.
func sgrBasic(st *sgrState, v int) int {
	switch {
	case v == 0:
		*st = sgrState{}
	case v == 8:
		st.conceal = true
	case v == 28:
		st.conceal = false
	case v >= 30 && v <= 37:
		st.fg = colIndexed | colour(v-30)
	case v == 39:
		st.fg = 0
	case v >= 90 && v <= 97:
		st.fg = colIndexed | colour(v-90+8)
	case v >= 40 && v <= 47:
		st.bg = colIndexed | colour(v-40)
	case v == 49:
		st.bg = 0
	case v >= 100 && v <= 107:
		st.bg = colIndexed | colour(v-100+8)
	case v == 38 || v == 48 || v == 58:
		return v
	}
	return 0
}

// sgrExtended consumes the arguments of a semicolon-form 38/48/58: mode is the first
// argument (5 or 2); further arguments are read from p at *i.
func sgrExtended(st *sgrState, which, mode int, p string, i *int) int {
	next := func() int {
		if *i < len(p) && p[*i] == ';' {
			v, j := sgrNum(p, *i+1)
			*i = j
			return v
		}
		return -1
	}
	var c colour
	switch mode {
	case 5:
		n := next()
		if n < 0 {
			return 0
		}
		c = colIndexed | colour(n&0xFF)
	case 2:
		r, g, b := next(), next(), next()
		if r < 0 || g < 0 || b < 0 {
			return 0
		}
		c = colRGB | colour((r&0xFF)<<16|(g&0xFF)<<8|(b&0xFF))
	default:
		return 0
	}
	setExt(st, which, c)
	return 0
}

// sgrColonForm applies a parameter written with ':' sub-parameters (ITU T.416 form).
func sgrColonForm(st *sgrState, sub []int, ns int) {
	which := sub[0]
	if which != 38 && which != 48 && which != 58 {
		if which == 4 || which == 0 { // 4:3 curly underline etc.
			return
		}
		sgrBasic(st, which)
		return
	}
	if len(sub) < 2 {
		return
	}
	var c colour
	switch sub[1] {
	case 5:
		if len(sub) < 3 {
			return
		}
		c = colIndexed | colour(sub[2]&0xFF)
	case 2:
		// 38:2:cs:r:g:b (ns == 6) or 38:2:r:g:b (ns == 5)
		var r, g, b int
		switch {
		case ns >= 6 && len(sub) >= 6:
			r, g, b = sub[3], sub[4], sub[5]
		case ns == 5:
			r, g, b = sub[2], sub[3], sub[4]
		default:
			return
		}
		c = colRGB | colour((r&0xFF)<<16|(g&0xFF)<<8|(b&0xFF))
	default:
		return
	}
	setExt(st, which, c)
}

func setExt(st *sgrState, which int, c colour) {
	switch which {
	case 38:
		st.fg = c
	case 48:
		st.bg = c
	}
}
