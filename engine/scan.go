package engine

import (
	"encoding/binary"
	"strings"
	"unicode"
	"unicode/utf8"
	"unsafe"
)

// load64 reads s[i:i+8] little-endian; the caller guarantees 0 <= i and i+8 <= len(s)
// (the string is not sliced, so the scan's inner loop carries no bounds check).
func load64(s string, i int) uint64 {
	return binary.LittleEndian.Uint64((*[8]byte)(unsafe.Add(unsafe.Pointer(unsafe.StringData(s)), i))[:])
}

// Byte classes of the pre-scan. Class 0 bytes can start nothing interesting, so the
// scanner skips them eight at a time; only the other classes run a matcher.
const (
	cNone  = iota
	cESC   // ESC (U+001B)
	cLF    // line feed: line-start and line-end checks
	cCR    // carriage return: CRLF or a bare CR overwrite
	cBS    // backspace overwrite
	cLead  // UTF-8 lead byte of a range with C1, invisible or format characters
	cWord  // digits, 'A', 'J', '_', '-': numbers, secrets, IBANs
	cAt    // '@': e-mail
	cLT    // '<': role tags, ChatML tokens, fence sentinels
	cLBr   // '[': [INST], forged gateway notices
	cColon // ':': IPv6
	cSign  // '+' or '(': phone numbers
)

// pairHint marks, in pairFull, a letter pair that hints at a word worth a look
// (markup.go, orderHint); no byte class has this bit.
const pairHint = 0x80

// classFull is the pre-scan table of the full analysis; classPII the one Redact uses.
var classFull, classPII [256]uint8

// pairFull and pairPII answer for two bytes at once (index: first byte | second<<8):
// non-zero when either byte has a class. Clean text is skipped eight bytes per four
// lookups; the 64 KiB tables stay in L1 for text (printable ASCII touches ~12 KiB).
var pairFull, pairPII [1 << 16]uint8

func init() {
	for _, t := range []*[256]uint8{&classFull, &classPII} {
		for c := '0'; c <= '9'; c++ {
			t[c] = cWord
		}
		for _, c := range "AJ_-" {
			t[c] = cWord
		}
		t['@'] = cAt
		t[':'] = cColon
		t['+'] = cSign
		t['('] = cSign
	}
	classFull[0x1B] = cESC
	classFull['\n'] = cLF
	classFull['\r'] = cCR
	classFull['\b'] = cBS
	classFull['<'] = cLT
	classFull['['] = cLBr
	// C2: U+0080–U+00BF (C1 controls). E1: U+1000–U+1FFF (U+180E). E2: U+2000–U+2FFF
	// (zero-width, bidi, word joiner). EF: U+F000–U+FFFF (variation selectors, BOM).
	// F3: U+C0000–U+FFFFF (Tags, variation selectors supplement).
	// CD: U+0340–U+037F (U+034F COMBINING GRAPHEME JOINER). E3: U+3000–U+3FFF (U+3164
	// HANGUL FILLER). F0: U+10000–U+3FFFF (shorthand and musical format controls).
	for _, b := range []byte{0xC2, 0xCD, 0xE1, 0xE2, 0xE3, 0xEF, 0xF0, 0xF3} {
		classFull[b] = cLead
	}
	for i := range pairFull {
		pairFull[i] = classFull[i&0xFF] | classFull[i>>8]
		pairPII[i] = classPII[i&0xFF] | classPII[i>>8]
	}
	// "instruct" holds "ru" or "uc" at an even offset wherever it starts: the hint
	// that looks for injected orders in prose (markup.go, orderHint)
	for _, bg := range []string{"ru", "uc", "RU", "UC"} {
		pairFull[uint16(bg[0])|uint16(bg[1])<<8] |= pairHint
	}
}

// textScan is the state of one scan over one string.
type textScan struct {
	k       *sink
	s       string
	class   *[256]uint8
	pair    *[1 << 16]uint8
	piiOnly bool
	cut     bool // s was cut at the scan cap: its end is not the string's end
	// notice: s is, whole, a gateway notice (GatewayNotice). A stream window after
	// the first is longer than any notice, so only a whole string can be one.
	notice bool

	lineStart, prevLineStart int
	done                     int // bytes before this were consumed by a word or number matcher

	// SGR state and the start of the current hidden run (-1 when visible)
	sgr        sgrState
	hiddenFrom int
	hiddenSGR  int
	hiddenKind string

	// OSC 8: an open hyperlink
	linkOpen   bool
	linkStart  int
	labelStart int
	linkHost   string

	// isolated zero-width characters outside a joining context
	zwCount, zwFirst, zwLast int

	// words noted for the catalogue (catalogue.go); the slice lives in the sink
	cat []catToken

	// orderHint: where the last look for "instruct" ended; orders: one reported
	hintDone int
	orders   bool
	// directive: an order in plain words reported (directive.go); b64Done: where the
	// last encoded run checked ended
	directive bool
	b64Done   int

	// gated: gateSeen and gateHigh hold gateScan of the string's first
	// maxCredRequest bytes (wordgate.go)
	gated    bool
	gateHigh bool
	gateSeen uint32
}

// scanText runs every matcher over s and reports hits to k. cut says s is a prefix
// cut at the scan cap, so nothing at its end is "dangling".
func scanText(k *sink, s string, piiOnly, cut bool) {
	t := textScan{k: k, s: s, class: &classFull, pair: &pairFull, piiOnly: piiOnly, cut: cut, hiddenFrom: -1, prevLineStart: -1}
	t.notice = len(s) > 0 && s[0] == '[' && len(s) < 200 && !cut && !piiOnly && GatewayNotice(s)
	if piiOnly {
		t.class, t.pair = &classPII, &pairPII
	}
	t.cat = k.cat[:0]
	t.run()
	if len(t.cat) > 0 {
		t.catalogueScan()
	}
	k.cat = t.cat[:0]
}

func (t *textScan) run() {
	s := t.s
	n := len(s)
	tab, pair := t.class, t.pair
	if !t.piiOnly {
		t.atLineStart(0)
	}
	i := 0
	if t.k.key != "" {
		i = t.keyContext()
		t.done = i
		t.uriMember()
	}
	for {
		for i+8 <= n {
			x := load64(s, i)
			if p := pair[uint16(x)] | pair[uint16(x>>16)] | pair[uint16(x>>32)] | pair[uint16(x>>48)]; p != 0 {
				if p&pairHint != 0 {
					t.orderHint(i)
					if p == pairHint {
						i += 8
						continue
					}
				}
				break
			}
			i += 8
		}
		for i < n && tab[s[i]] == 0 {
			i++
		}
		if i >= n {
			break
		}
		switch tab[s[i]] {
		case cESC:
			i = t.escape(i)
		case cLF:
			t.atLineEnd(i)
			t.prevLineStart = t.lineStart
			t.lineStart = i + 1
			t.atLineStart(i + 1)
			i++
		case cCR:
			if i+1 < n && s[i+1] == '\n' {
				i++
				continue
			}
			if i+1 < n && s[i+1] != '\r' {
				t.overwrite(i, i+1, 0, "carriage_return")
			}
			i++
		case cBS:
			j := i
			for j < n && s[j] == '\b' {
				j++
			}
			t.backspace(i, j)
			i = j
		case cLead:
			// CD, E3 and F0 lead far more letters and emoji than carriers: only
			// U+034F (CD 8F), U+3164 (E3 85 A4) and U+1B000–U+1DFFF (F0 9B, F0 9D) matter
			if c := s[i]; c == 0xCD && i+1 < n && s[i+1] != 0x8F ||
				c == 0xE3 && i+2 < n && (s[i+1] != 0x85 || s[i+2] != 0xA4) ||
				c == 0xF0 && i+1 < n && s[i+1] != 0x9B && s[i+1] != 0x9D {
				i++
				continue
			}
			i = t.unicode(i)
		case cWord:
			// 'A' and 'J' only matter where a secret's prefix can start: "AKIA",
			// "ASIA", "AIza" at a word start, and the "J" of a JWT's "eyJ". Every
			// other secret word carries '_', '-' or a digit, which still trigger.
			if c := s[i]; c == 'A' && !(i+1 < n && (s[i+1] == 'K' || s[i+1] == 'S' || s[i+1] == 'I' || s[i+1] == 'B' || s[i+1] == 'C') && (i == 0 || !isWordByte(s[i-1]))) ||
				c == 'J' && !(i >= 2 && s[i-1] == 'y' && s[i-2] == 'e') {
				i++
				continue
			}
			i = t.word(i)
		case cAt:
			i = t.email(i)
		case cLT:
			i = t.angle(i)
		case cLBr:
			i = t.bracket(i)
		case cColon:
			i = t.colon(i)
		case cSign:
			i = t.sign(i)
		default:
			i++
		}
	}
	if !t.piiOnly {
		t.atLineEnd(n)
		t.shortOrders()
		t.directives()
		t.credentialRequest()
		t.finish()
	}
}

// finish closes what is still open at the end of the string: a hidden SGR run, an
// unterminated OSC 8 link, isolated zero-width characters.
func (t *textScan) finish() {
	n := len(t.s)
	t.endHidden(n)
	if t.linkOpen {
		t.closeLink(n)
	}
	if t.zwCount >= zwIsolatedThreshold {
		t.k.add(rHidden, "zero_width", t.zwFirst, t.zwLast)
	}
}

// ---- escape sequences ----

func (t *textScan) escape(i int) int {
	e := parseEscape(t.s, i)
	t.handleEscape(e)
	if !e.terminated && e.end == len(t.s) && !t.cut && e.kind != escST {
		// A lone ESC, or a CSI/OSC/DCS/... introducer unterminated at the end of the
		// string: a client that concatenates strings (content items) completes it with
		// the next one's bytes (docs/engine.md, "Dangling escapes").
		t.k.add(rControl, "dangling_escape", e.start, e.end)
	}
	if e.end <= i {
		return i + 1
	}
	return e.end
}

func (t *textScan) handleEscape(e escSeq) {
	s := t.s
	switch e.kind {
	case escCSI:
		t.csi(e)
	case escOSC:
		t.osc(e)
	case escDCS:
		p := s[e.pStart:e.pEnd]
		if hasPrefixFold(p, "tmux;") && containsOSC52(p) {
			t.k.add(rOSC52, "osc52", e.start, e.end)
			return
		}
		t.k.add(rControl, "dcs", e.start, e.end)
	case escAPC:
		t.k.add(rControl, "apc", e.start, e.end)
	case escPM:
		t.k.add(rControl, "pm", e.start, e.end)
	case escSOS:
		t.k.add(rControl, "sos", e.start, e.end)
	case escC1:
		t.k.add(rControl, "c1_control", e.start, e.end)
	case escTwoByte:
		switch e.final {
		case 'c': // RIS, full reset: clears the screen
			if e.pEnd == e.start+1 {
				t.k.add(rClear, "ris", e.start, e.end)
			}
		case 'M': // RI, reverse index: cursor up
			t.overwrite(e.start, e.end, 1, "cursor_move")
		case '8': // DECRC: restore a saved cursor position; ESC # 8 DECALN fills the screen with E
			if e.pEnd == e.start+1 {
				t.overwrite(e.start, e.end, lineUnknown, "cursor_move")
			} else if t.s[e.pStart:e.pEnd] == "#" {
				t.k.add(rInputMode, "decaln", e.start, e.end)
			}
		}
	}
}

func containsOSC52(p string) bool {
	for i := 0; i+3 < len(p); i++ {
		if p[i] == ']' && p[i+1] == '5' && p[i+2] == '2' && p[i+3] == ';' {
			return true
		}
	}
	return false
}

// csi handles one CSI sequence: SGR state, clears, cursor moves, erases and queries.
func (t *textScan) csi(e escSeq) {
	s := t.s
	p := s[e.pStart:e.pEnd]
	private := len(p) > 0 && p[0] >= 0x3C && p[0] <= 0x3F
	switch e.final {
	case 'm':
		if !e.terminated {
			return
		}
		if len(p) > 0 && p[0] == '>' { // XTMODKEYS: xterm modifyOtherKeys changes what keys send
			if v, _ := sgrNum(p, 1); v == 4 && len(p) > 2 {
				t.k.add(rInputMode, "keyboard_protocol", e.start, e.end)
			}
			return
		}
		t.endHidden(e.start)
		if applySGR(&t.sgr, p) {
			if h, kind := t.sgr.hidden(); h {
				t.hiddenFrom, t.hiddenSGR, t.hiddenKind = e.end, e.start, kind
			}
		}
	case 'J':
		if !private {
			v, _ := sgrNum(p, 0)
			switch v {
			case 2, 3:
				t.k.add(rClear, "clear_screen", e.start, e.end)
			case 1:
				t.overwrite(e.start, e.end, lineUnknown, "erase_display")
			}
		}
	case 'K':
		if !private {
			if v, _ := sgrNum(p, 0); v == 1 || v == 2 {
				t.overwrite(e.start, e.end, 0, "erase_line")
			}
		}
	case 'A', 'F': // cursor up, cursor preceding line: n lines up
		if !private {
			n, _ := sgrNum(p, 0)
			t.overwrite(e.start, e.end, max(n, 1), "cursor_move")
		}
	case 'd': // line position absolute
		if !private {
			t.overwrite(e.start, e.end, lineUnknown, "cursor_move")
		}
	case 'H', 'f': // cursor position; a bare home is the usual prelude to a clear
		if !private && len(p) > 0 && !(p == "1;1" || p == "1" || p == ";") {
			t.overwrite(e.start, e.end, lineUnknown, "cursor_move")
		}
	case 'D', 'G': // cursor back, column absolute: same line
		if !private {
			t.overwrite(e.start, e.end, 0, "cursor_move")
		}
	case 'u': // SCORC restore cursor; CSI > flags u / CSI = flags u: kitty keyboard protocol
		if len(p) == 0 {
			t.overwrite(e.start, e.end, lineUnknown, "cursor_move")
		} else if p[0] == '>' || p[0] == '=' {
			t.k.add(rInputMode, "keyboard_protocol", e.start, e.end)
		}
	case 'h', 'l':
		if e.final == 'h' && (p == "?1049" || p == "?47" || p == "?1047") {
			t.k.add(rClear, "alt_screen", e.start, e.end)
			return
		}
		if ent := inputMode(p, e.final); ent != "" {
			t.k.add(rInputMode, ent, e.start, e.end)
		}
	case 'i': // MC, media copy: CSI 5 i starts the printer controller, CSI 4 i ends it, CSI 0 i prints the screen
		if v, _ := sgrNum(p, boolInt(private)); v == 4 || v == 5 || v == 0 && (len(p) == 0 || p == "0") {
			t.k.add(rInputMode, "printer_controller", e.start, e.end)
		}
	case 'n': // DSR: the terminal answers on its input
		if v, _ := sgrNum(p, boolInt(private)); v == 5 || v == 6 {
			t.k.add(rControl, "terminal_query", e.start, e.end)
		}
	case 'c': // DA: device attributes, answered on input
		t.k.add(rControl, "terminal_query", e.start, e.end)
	case 't': // window operations: 20/21 report icon label and title on input
		if !private {
			v, _ := sgrNum(p, 0)
			if v >= 11 && v <= 21 || v < 10 {
				t.k.add(rControl, "terminal_query", e.start, e.end)
			}
		}
	case 'p':
		if len(p) > 0 && p[len(p)-1] == '$' { // DECRQM
			t.k.add(rControl, "terminal_query", e.start, e.end)
		}
	}
}

// inputMode names the entity of a set-mode (h) or reset-mode (l) CSI whose
// parameters p change how the terminal takes input, or "": DEC private mouse
// reporting ?9, ?1000–?1003, ?1005–?1007, ?1015, ?1016 and focus reporting ?1004 set;
// bracketed paste ?2004 reset (pasted text then runs as typed commands); ANSI KAM (2,
// keyboard locked), SRM (12, local echo off) and LNM (20) set. Any parameter of a
// list counts.
func inputMode(p string, final byte) string {
	private := len(p) > 0 && p[0] == '?'
	if private {
		p = p[1:]
	} else if len(p) > 0 && (p[0] < '0' || p[0] > '9') && p[0] != ';' {
		return ""
	}
	for len(p) > 0 {
		v, j := sgrNum(p, 0)
		if j == 0 && (len(p) == 0 || p[0] != ';') {
			return ""
		}
		switch {
		case private && final == 'h' && (v == 9 || v >= 1000 && v <= 1003 || v == 1005 || v == 1006 || v == 1007 || v == 1015 || v == 1016):
			return "mouse_reporting"
		case private && final == 'h' && v == 1004:
			return "focus_reporting"
		case private && final == 'l' && v == 2004:
			return "bracketed_paste_off"
		case !private && final == 'h' && v == 2:
			return "keyboard_locked"
		case !private && final == 'h' && v == 12:
			return "local_echo_off"
		case !private && final == 'h' && v == 20:
			return "newline_mode" // LNM: Return sends CR LF
		}
		if j >= len(p) {
			break
		}
		p = p[j+1:]
	}
	return ""
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

// endHidden closes a hidden SGR run at position end, reporting it if any visible
// character was drawn inside it.
func (t *textScan) endHidden(end int) {
	if t.hiddenFrom < 0 {
		return
	}
	if hasVisible(t.s[t.hiddenFrom:end]) {
		t.k.add(rHidden, t.hiddenKind, t.hiddenSGR, end)
	}
	t.hiddenFrom = -1
}

// hasVisible reports whether s draws a printable, non-space character outside escape
// sequences.
func hasVisible(s string) bool {
	for i := 0; i < len(s); {
		c := s[i]
		if c == 0x1B || isC1Lead(s, i) {
			e := parseEscape(s, i)
			i = max(e.end, i+1)
			continue
		}
		if c < 0x80 {
			if c > 0x20 && c != 0x7F {
				return true
			}
			i++
			continue
		}
		r, sz := utf8.DecodeRuneInString(s[i:])
		if r != utf8.RuneError && !unicode.IsSpace(r) && !isInvisible(r) {
			return true
		}
		i += sz
	}
	return false
}

// osc handles one Operating System Command by its numeric selector Ps.
func (t *textScan) osc(e escSeq) {
	p := t.s[e.pStart:e.pEnd]
	ps, j := sgrNum(p, 0)
	numeric := j > 0 && (j == len(p) || p[j] == ';')
	if !numeric {
		t.k.add(rControl, "osc", e.start, e.end)
		return
	}
	rest := ""
	if j < len(p) {
		rest = p[j+1:]
	}
	switch ps {
	case 0, 1, 2:
		t.k.add(rTitle, "osc_title", e.start, e.end)
	case 8:
		t.hyperlink(e, rest)
	case 52:
		t.k.add(rOSC52, "osc52", e.start, e.end)
	case 5522: // kitty clipboard protocol
		t.k.add(rOSC52, "osc5522", e.start, e.end)
	case 1337: // iTerm2
		switch {
		case hasPrefixFold(rest, "Copy="):
			t.k.add(rOSC52, "osc1337_copy", e.start, e.end)
		case hasPrefixFold(rest, "File="):
			t.k.add(rControl, "osc1337_file", e.start, e.end)
		case hasPrefixFold(rest, "CurrentDir="), hasPrefixFold(rest, "SetUserVar="), hasPrefixFold(rest, "RemoteHost="):
			t.k.add(rShellIntegration, "osc1337_shell_integration", e.start, e.end)
		}
	case 7: // the working directory, as a file: URL
		t.k.add(rShellIntegration, "osc7_cwd", e.start, e.end)
	case 633: // VS Code shell integration: A-D mark the prompt as OSC 133 does
		if rest != "" && (rest[0] == 'E' || hasPrefixFold(rest, "P;Cwd=")) {
			t.k.add(rShellIntegration, "osc633_shell_integration", e.start, e.end)
		}
	case 133, 3008: // prompt marks and context reports: not reported
	case 9:
		if !hasPrefixFold(rest, "4;") { // OSC 9;4 is a progress report
			t.k.add(rControl, "osc", e.start, e.end)
		}
	default:
		t.k.add(rControl, "osc", e.start, e.end)
	}
}

// ---- OSC 8 hyperlinks ----

func (t *textScan) hyperlink(e escSeq, rest string) {
	// rest is "params;URI"
	uri := ""
	for k := 0; k < len(rest); k++ {
		if rest[k] == ';' {
			uri = rest[k+1:]
			break
		}
	}
	if t.linkOpen {
		t.closeLink(e.start)
	}
	if uri == "" {
		return
	}
	t.linkOpen = true
	t.linkStart = e.start
	t.labelStart = e.end
	t.linkHost = urlHost(uri)
	if !webScheme(uri) {
		t.k.add(rLinkScheme, "osc8_scheme", e.start, e.end)
	}
	t.targetCheck(uri, e.start, e.end)
}

// webScheme reports URIs a hyperlink may safely open: http, https and mailto (any
// case), and scheme-less references.
func webScheme(uri string) bool {
	c := strings.IndexByte(uri, ':')
	if c < 0 {
		return true
	}
	for i := 0; i < c; i++ {
		if ch := uri[i]; !(isAlnum(ch) || ch == '+' || ch == '-' || ch == '.') {
			return true // "a/b:c" is a path, not a scheme
		}
	}
	switch strings.ToLower(uri[:c]) {
	case "http", "https", "mailto":
		return true
	}
	return false
}

// closeLink compares the visible label of the open link, ending at end, with the
// link's host.
func (t *textScan) closeLink(end int) {
	t.linkOpen = false
	var buf [256]byte
	label := visibleText(buf[:0], t.s[t.labelStart:end])
	lh, ok := labelHost(label)
	if !ok {
		return
	}
	if !sameSite(lh, t.linkHost) {
		t.k.add(rHyperlink, "osc8", t.linkStart, end)
	}
}

// ---- Unicode: C1, zero-width, bidi, Tags, variation selectors ----

// zwIsolatedThreshold is how many isolated zero-width characters outside a joining
// context one string may hold before output_hidden_text fires (docs/engine.md).
const zwIsolatedThreshold = 4

// invisible classes
const (
	invNone = iota
	invZW   // zero-width: U+200B–U+200D, U+2060–U+2064, U+FEFF, U+180E
	invBidi // U+202A–U+202E, U+2066–U+2069
	invTag  // U+E0000–U+E007F
	invVS   // U+FE00–U+FE0F, U+E0100–U+E01EF
	// invOther: every other Default_Ignorable_Code_Point and the Hangul fillers (soft
	// hyphen, combining grapheme joiner, Hangul fillers, Khmer inherent vowels,
	// Mongolian free variation selectors, ...): fine alone, a carrier in runs
	invOther
)

// invBMP is invClass for U+0000–U+FFFF, one load per rune.
var invBMP = func() (t [0x10000]uint8) {
	for r := rune(0); r < 0x10000; r++ {
		t[r] = uint8(invClassSlow(r))
	}
	return
}()

func invClass(r rune) int {
	if uint32(r) < 0x10000 {
		return int(invBMP[r])
	}
	return invClassSlow(r)
}

func invClassSlow(r rune) int {
	switch {
	case r >= 0x200B && r <= 0x200D, r >= 0x2060 && r <= 0x2064, r == 0xFEFF, r == 0x180E:
		return invZW
	case r >= 0x202A && r <= 0x202E, r >= 0x2066 && r <= 0x2069:
		return invBidi
	case r >= 0xE0000 && r <= 0xE007F:
		return invTag
	case r >= 0xFE00 && r <= 0xFE0F, r >= 0xE0100 && r <= 0xE01EF:
		return invVS
	case r < 0xAD, r > 0x3164 && r < 0xFE00, r > 0xFFF8 && r < 0x1BCA0, r > 0x1BCA3 && r < 0x1D173, r > 0x1D17A && r < 0xE0000:
		return invNone // fast path: no default-ignorable code point lies here (emoji, CJK)
	}
	if isCarrier(r) {
		return invOther
	}
	return invNone
}

func isZWOrOther(c int) bool { return c == invZW || c == invOther }

func prevRune(s string, i int) rune {
	r, _ := utf8.DecodeLastRuneInString(s[:i])
	return r
}

func isInvisible(r rune) bool { return invClass(r) != invNone || r == 0xAD }

func (t *textScan) unicode(i int) int {
	s := t.s
	if isC1Lead(s, i) {
		return t.escape(i)
	}
	if s[i] == 0xC2 && i+1 == len(s) && !t.cut {
		// the first byte of a C1 control whose second byte would come from the next string
		t.k.add(rControl, "dangling_escape", i, i+1)
		return i + 1
	}
	r, sz := utf8.DecodeRuneInString(s[i:])
	cls := invClass(r)
	if cls == invNone {
		if (r == 0xFF1C || r == 0xFE64 || r == 0xFF3B) && !t.piiOnly {
			return t.normalizedToken(i) // FULLWIDTH / SMALL LESS-THAN SIGN, FULLWIDTH LEFT SQUARE BRACKET
		}
		return i + sz
	}
	// the maximal run of this class; zero-width and other carriers run together
	j := i + sz
	count := 1
	allZW := cls == invZW
	for j < len(s) {
		r2, sz2 := utf8.DecodeRuneInString(s[j:])
		c2 := invClass(r2)
		if c2 != cls && !(isZWOrOther(c2) && isZWOrOther(cls)) {
			break
		}
		allZW = allZW && c2 == invZW
		j += sz2
		count++
	}
	switch cls {
	case invZW, invOther:
		if count >= 2 {
			if allZW {
				t.k.add(rHidden, "zero_width", i, j)
			} else if !hangulFillerPair(s, i, j) {
				t.k.add(rHidden, "invisible_run", i, j)
			}
		} else if cls == invZW && !zwLegit(s, i, j, r) {
			if t.zwCount == 0 {
				t.zwFirst = i
			}
			t.zwCount++
			t.zwLast = j
		}
	case invBidi:
		t.k.add(rHidden, "bidi_control", i, j)
	case invTag:
		if !validTagSequence(s, i, j) && !(t.cut && j == len(s) && prevRune(s, i) == 0x1F3F4) {
			t.k.add(rHidden, "unicode_tag", i, j)
		}
	case invVS:
		prev, _ := utf8.DecodeLastRuneInString(s[:i])
		if count > 1 || i == 0 || !isBase(prev) {
			t.k.add(rHidden, "variation_selector", i, j)
		}
	}
	return j
}

// hangulFillerPair reports whether the run s[i:j] is U+115F U+1160 (choseong and
// jungseong fillers) before a conjoining jongseong: an old-Hangul syllable, not a
// carrier.
func hangulFillerPair(s string, i, j int) bool {
	if s[i:j] != "\u115F\u1160" || j >= len(s) {
		return false
	}
	r, _ := utf8.DecodeRuneInString(s[j:])
	return r >= 0x11A8 && r <= 0x11FF
}

// zwLegit reports whether the single zero-width character r at s[i:j] sits in a
// legitimate context: a BOM at the start; ZWJ between emoji; ZWJ, ZWNJ, ZWSP or WJ
// between two non-ASCII letters or marks (Persian, Arabic, Indic, Thai, CJK).
func zwLegit(s string, i, j int, r rune) bool {
	if r == 0xFEFF {
		return i == 0
	}
	if i == 0 || j >= len(s) {
		return false
	}
	prev, _ := utf8.DecodeLastRuneInString(s[:i])
	next, _ := utf8.DecodeRuneInString(s[j:])
	if r == 0x200D && isEmojiish(prev) && isEmojiish(next) {
		return true
	}
	if r <= 0x200D || r == 0x2060 {
		return isScriptLetter(prev) && isScriptLetter(next)
	}
	return false
}

func isScriptLetter(r rune) bool {
	return r >= 0x300 && r != utf8.RuneError && (unicode.IsLetter(r) || unicode.IsMark(r))
}

// isEmojiish reports whether r can sit next to ZWJ in an emoji ZWJ sequence.
func isEmojiish(r rune) bool {
	switch {
	case r >= 0x1F000 && r <= 0x1FAFF, r >= 0x2190 && r <= 0x2BFF, r >= 0x2300 && r <= 0x23FF:
		return true
	case r == 0xFE0F, r == 0x20E3, r == 0xA9, r == 0xAE, r == 0x203C, r == 0x2049, r == 0x2122, r == 0x2139:
		return true
	case r >= 0xE0020 && r <= 0xE007F:
		return true
	}
	return false
}

// isBase reports whether r can carry a variation selector.
func isBase(r rune) bool {
	if r == utf8.RuneError || r < 0x21 || r == 0x7F || (r >= 0x80 && r <= 0x9F) {
		return false
	}
	return invClass(r) == invNone && !unicode.IsSpace(r)
}

// validTagSequence reports whether the Tag run s[i:j] is an emoji tag sequence: it
// follows U+1F3F4 WAVING BLACK FLAG, holds tag digits or small letters, and ends with
// U+E007F CANCEL TAG.
func validTagSequence(s string, i, j int) bool {
	prev, _ := utf8.DecodeLastRuneInString(s[:i])
	if prev != 0x1F3F4 {
		return false
	}
	n := 0
	for k := i; k < j; {
		r, sz := utf8.DecodeRuneInString(s[k:])
		k += sz
		if k == j {
			return r == 0xE007F && n >= 2
		}
		if !(r >= 0xE0030 && r <= 0xE0039 || r >= 0xE0061 && r <= 0xE007A) {
			return false
		}
		n++
	}
	return false
}

// ---- overwrites: bare CR, backspace, cursor moves, erases ----

// overwriteWindow bounds how many bytes an overwrite looks back for the text it hides
// and ahead for the text that replaces it, so each event costs O(1).
const overwriteWindow = 1024

// lineUnknown is the line argument of overwrite for moves to an unknown row (cursor
// position, restore, erase above): the current line if it has letters, else the one
// above.
const lineUnknown = -1

// overwrite reports a cursor event at s[start:end] when it hides earlier prose. lines
// says which line is overwritten: 0 the current one, n > 0 the line n above,
// lineUnknown see above. It fires when that text holds at least 8 letters, does not
// look like a progress display, and the text that follows does not redraw it (a
// common prefix of 4 or more characters covering at least half of the shorter one).
func (t *textScan) overwrite(start, end int, lines int, entity string) {
	if t.piiOnly {
		return
	}
	s := t.s
	lo := max(0, start-overwriteWindow)
	before := s[max(t.lineStart, lo):start]
	switch {
	case lines == lineUnknown:
		if countLetters(before) == 0 && t.prevLineStart >= 0 && t.lineStart-1 > lo {
			before = s[max(t.prevLineStart, lo) : t.lineStart-1]
		}
	case lines > 0 && t.lineStart > lo:
		// the line n above (or the first one within the window)
		le := t.lineStart - 1 // its terminating LF
		for k := 1; ; k++ {
			ls := lo
			for p := le - 1; p >= lo; p-- {
				if s[p] == '\n' {
					ls = p + 1
					break
				}
			}
			before = s[ls:le]
			if k >= lines || ls <= lo {
				break
			}
			le = ls - 1
		}
	}
	if countLetters(before) < 8 || progressLike(before) {
		return
	}
	after := s[end:min(len(s), end+overwriteWindow)]
	for k := 0; k < len(after); k++ {
		if after[k] == '\n' || after[k] == '\r' {
			after = after[:k]
			break
		}
	}
	var b1, b2 [64]byte
	vb := trimLeadNoise(visibleText(b1[:0], lastSegment(before)))
	va := trimLeadNoise(visibleText(b2[:0], after))
	if redraws(vb, va) {
		return
	}
	t.k.add(rOverwrite, entity, start, end)
}

// redraws reports whether after redraws before: a common prefix of at least 4
// characters that covers at least half of the shorter text ("Compiling a" over
// "Compiling b"), not just a shared first word ("Send the key to evil" under "Send
// nothing").
func redraws(before, after []byte) bool {
	cp := commonPrefixFold(before, after)
	return cp >= 4 && 2*cp >= min(len(before), len(after))
}

// backspace reports a run of backspaces at s[start:end] that erases visible text and
// draws other text in its place: the erased cells (one per backspace) hold at least 3
// letters or digits (8 letters when nothing visible replaces them), do not look like
// progress, and differ from what is drawn over them. Spinners (|\b/\b-), overstrike
// bold (X\bX) and underline (_\bX) never fire.
func (t *textScan) backspace(start, end int) {
	if t.piiOnly {
		return
	}
	s := t.s
	before := lastSegment(s[max(t.lineStart, start-overwriteWindow):start])
	if len(before) > 256 {
		k := len(before) - 256
		for k < len(before) && !utf8.RuneStart(before[k]) {
			k++
		}
		before = before[k:]
	}
	var b1, b2 [256]byte
	vb := visibleText(b1[:0], before)
	cells := end - start
	erased := vb
	for n, k := 0, len(vb); n < cells && k > 0; n++ {
		_, sz := utf8.DecodeLastRune(vb[:k])
		k -= sz
		erased = vb[k:]
	}
	if len(erased) == 0 || progressLike(unsafe.String(unsafe.SliceData(erased), len(erased))) {
		return
	}
	after := s[end:min(len(s), end+overwriteWindow)]
	for k := 0; k < len(after); k++ {
		if after[k] == '\n' || after[k] == '\r' {
			after = after[:k]
			break
		}
	}
	va := visibleText(b2[:0], after)
	drawn := va
	for n, k := 0, 0; k < len(va); n++ {
		if n == cells {
			drawn = va[:k]
			break
		}
		_, sz := utf8.DecodeRune(va[k:])
		k += sz
	}
	alnum, letters := 0, 0
	for _, c := range erased {
		if l := c | 0x20; l >= 'a' && l <= 'z' || c >= 0xC0 {
			letters++
			alnum++
		} else if c >= '0' && c <= '9' {
			alnum++
		}
	}
	blank := true
	for _, c := range drawn {
		if c != ' ' && c != '\t' {
			blank = false
			break
		}
	}
	if blank && letters < 8 || !blank && alnum < 3 {
		return
	}
	if len(drawn) == len(erased) && commonPrefixFold(erased, drawn) == len(erased) {
		return // redrawn as it was
	}
	t.k.add(rOverwrite, "backspace", start, end)
}

// lastSegment returns the text after the last bare CR of a line.
func lastSegment(s string) string {
	for k := len(s) - 1; k >= 0; k-- {
		if s[k] == '\r' {
			if rest := s[k+1:]; countLetters(rest) > 0 {
				return rest
			}
		}
	}
	return s
}

// countLetters counts the letters s draws (escape sequences skipped; every non-ASCII
// character counts).
func countLetters(s string) int {
	n := 0
	for i := 0; i < len(s); i++ {
		if s[i] == 0x1B || isC1Lead(s, i) {
			i = max(parseEscape(s, i).end, i+1) - 1
			continue
		}
		c := s[i] | 0x20
		if c >= 'a' && c <= 'z' {
			n++
		} else if s[i] >= 0xC0 {
			n++
		}
	}
	return n
}

// progressLike reports whether s looks like a progress display: a percentage, a bar
// of '=' or '#', block elements or a braille spinner.
func progressLike(s string) bool {
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case '%':
			return true
		case '=', '#':
			if i+1 < len(s) && (s[i+1] == '=' || s[i+1] == '>' || s[i+1] == '#') {
				return true
			}
		case 0xE2:
			if i+1 < len(s) && (s[i+1] == 0x96 || s[i+1] == 0xA0 || s[i+1] == 0xA3) { // ▏█░ U+2580–25BF, braille U+2800–28FF
				return true
			}
		}
	}
	return false
}

func trimLeadNoise(b []byte) []byte {
	for len(b) > 0 && (b[0] == ' ' || b[0] == '\t' || b[0] == '|' || b[0] == '/' || b[0] == '-' || b[0] == '\\') {
		b = b[1:]
	}
	return b
}

func commonPrefixFold(a, b []byte) int {
	n := 0
	for n < len(a) && n < len(b) && a[n]|0x20 == b[n]|0x20 {
		n++
	}
	return n
}

// visibleText appends to dst (up to its capacity) what s draws: escape sequences,
// controls and invisible characters removed.
func visibleText(dst []byte, s string) []byte {
	for i := 0; i < len(s) && len(dst) < cap(dst); {
		c := s[i]
		if c == 0x1B || isC1Lead(s, i) {
			e := parseEscape(s, i)
			i = max(e.end, i+1)
			continue
		}
		if c < 0x80 {
			if c >= 0x20 && c != 0x7F {
				dst = append(dst, c)
			}
			i++
			continue
		}
		r, sz := utf8.DecodeRuneInString(s[i:])
		if r != utf8.RuneError && !isInvisible(r) && len(dst)+sz <= cap(dst) {
			dst = append(dst, s[i:i+sz]...)
		}
		i += sz
	}
	return dst
}

func hasPrefixFold(s, prefix string) bool {
	if len(s) < len(prefix) {
		return false
	}
	for i := 0; i < len(prefix); i++ {
		a, b := s[i], prefix[i]
		if a >= 'A' && a <= 'Z' {
			a += 'a' - 'A'
		}
		if b >= 'A' && b <= 'Z' {
			b += 'a' - 'A'
		}
		if a != b {
			return false
		}
	}
	return true
}
