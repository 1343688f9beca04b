package engine

// The word gate (docs/engine.md#word-gate): one pass over a string reads its ASCII
// words and notes the gate classes (gateClass) of those that a pattern of orders in
// plain words or of credential requests needs. A string whose words meet no need is
// not folded (directives) and not split into sentences (credential requests); a
// string of at most maxDirective bytes is read once for both. The gate is a necessary
// condition of each detector (docs/decisions.md#prefilter-necessary).

// Gate classes of the credential-request detector (credRequestIn): a verb that hands
// something over (gHand), and a credential noun (gCred: credNouns, the letters of
// "2fa", a field holding '/' or '~' beside '.', '%' or '_' that can name a credential
// file) or both words of a pair such as "API key" (gPairA and gPairB).
const (
	gHand uint32 = 1 << (iota + 26)
	gCred
	gPairA
	gPairB
)

// gsClass maps a byte for gateScan: an ASCII letter to its lower case; an apostrophe
// and ':' to themselves; '/' and '~' to gsPath; a non-ASCII byte to gsHigh; anything
// else to 0.
const (
	gsPath = 1 + iota
	gsHigh
	gsEsc // '%' or '&': a percent escape or an HTML character reference may start here
)

var gsClass = func() (t [256]byte) {
	for c := range t {
		switch {
		case isAlpha(byte(c)):
			t[c] = byte(c) | 0x20
		case c == '\'' || c == ':':
			t[c] = byte(c)
		case c == '/' || c == '~':
			t[c] = gsPath
		case c >= 0x80:
			t[c] = gsHigh
		case c == '%' || c == '&':
			t[c] = gsEsc
		}
	}
	return
}()

// gateScan reads s once as words (runs of ASCII letters; an apostrophe between two
// letters is kept, others are dropped as tokenize does) and returns the union of
// their gate classes, with gModelColon for a ':' after a word of gModel (tokenize
// marks the word before a ':') and gCred for a field (between ASCII white space) that
// holds '/' or '~' and one of '.', '%', '_' (CredentialPath needs a dot segment, a
// suffix, id_..., or a percent-encoded file: URI). high reports a non-ASCII byte or an escape folding decodes (%XX, &#NN;, &lt;):
// folding reads homoglyphs as letters, so the orders detector reads such a string
// whatever its words. The credential detector lower-cases Unicode, where only U+212A
// (KELVIN SIGN) and U+0130 become ASCII letters: either lets a string through; any
// other non-ASCII byte ends a word. The scan stops once the credential need is met
// and, when directive, high is set or one of gateNeeds is met too.
func gateScan(s string, directive bool) (seen uint32, high bool) {
	model := false // the last word read is of gModel
	fieldEnd := -1 // the end of the last field pathField read
	for i := 0; i < len(s); {
		c := gsClass[s[i]]
		if c == 0 {
			i++
			continue
		}
		if c < 'a' { // not a letter
			switch c {
			case gsPath:
				if i > fieldEnd {
					var ok bool
					if ok, fieldEnd = pathField(s, i); ok {
						seen |= gCred
					}
				}
			case ':':
				if model {
					seen |= gModelColon
				}
			case gsEsc:
				// folding reads "ignore%20previous" and "&#73;gnore" as the words they
				// spell, so an escape lets the string through as a non-ASCII byte does
				if _, sz := escapedASCII(s[i:]); sz > 0 && !high {
					high = true
					if gateMet(seen, directive, high) {
						return seen, high
					}
				}
			case gsHigh:
				high = true
				if r := s[i:]; len(r) >= 2 && r[0] == 0xC4 && r[1] == 0xB0 || len(r) >= 3 && r[0] == 0xE2 && r[1] == 0x84 && r[2] == 0xAA {
					seen |= gHand | gCred
				}
				if gateMet(seen, directive, high) {
					return seen, high
				}
			}
			i++
			continue
		}
		h := uint32(fnvOffset)
		for {
			h = (h ^ uint32(c)) * fnvPrime
			j := i + 1
			for ; j < len(s); j++ {
				if c = gsClass[s[j]]; c < 'a' {
					break
				}
				h = (h ^ uint32(c)) * fnvPrime
			}
			i = j
			// an apostrophe between letters is inside the word ("don't")
			if i >= len(s) || s[i] != '\'' {
				break
			}
			j = i + 1
			for j < len(s) && s[j] == '\'' {
				j++
			}
			if j >= len(s) || gsClass[s[j]] < 'a' {
				break // trailing apostrophes end the word
			}
			i, c = j, gsClass[s[j]]
		}
		model = false
		if gateBloom[h>>6&1023]&(1<<(h&63)) != 0 {
			g := gateOf(h)
			model = g&gModel != 0
			if g&^seen != 0 {
				seen |= g
				if gateMet(seen, directive, high) {
					return seen, high
				}
			}
		}
	}
	return seen, high
}

// pathField reports whether the field (between ASCII white space) around s[i] holds
// '.', '%' or '_', and returns where the field ends. The caller asks once per field,
// so the fields are read once in all.
func pathField(s string, i int) (bool, int) {
	found := false
	for k := i; k >= 0 && !isASCIISpace(s[k]) && !found; k-- {
		c := s[k]
		found = c == '.' || c == '%' || c == '_'
	}
	k := i + 1
	for ; k < len(s) && !isASCIISpace(s[k]); k++ {
		if c := s[k]; c == '.' || c == '%' || c == '_' {
			found = true
		}
	}
	return found, k
}

func isASCIISpace(c byte) bool {
	return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f'
}

// FNV-1a, 32 bits.
const (
	fnvOffset = 2166136261
	fnvPrime  = 16777619
)

// gateBloom holds, per letterHash of a gate word, one bit: a word whose bit is clear
// is no gate word, without a lookup.
var gateBloom = func() (b [1024]uint64) {
	for w := range gateClass {
		h := letterHash(w)
		b[h>>6&1023] |= 1 << (h & 63)
	}
	return
}()

// gateByHash maps the letterHash of each gate word to its classes (open addressing,
// a zero key is free). A word is taken for the gate word whose hash it has: a
// collision (about one word in ten million) only lets a string through the gate.
var gateByHash = func() (t [2048]struct{ h, c uint32 }) {
	for w, c := range gateClass {
		h := letterHash(w)
		k := h & uint32(len(t)-1)
		for t[k].h != 0 && t[k].h != h {
			k = (k + 1) & uint32(len(t)-1)
		}
		t[k].h = h
		t[k].c |= c
	}
	return
}()

// gateOf returns the classes of the gate words whose letterHash is h.
func gateOf(h uint32) uint32 {
	for k := h & uint32(len(gateByHash)-1); gateByHash[k].h != 0; k = (k + 1) & uint32(len(gateByHash)-1) {
		if gateByHash[k].h == h {
			return gateByHash[k].c
		}
	}
	return 0
}

// letterHash hashes the letters of a lower-case word (FNV-1a; apostrophes skipped,
// as gateScan reads them).
func letterHash(w string) uint32 {
	h := uint32(fnvOffset)
	for i := 0; i < len(w); i++ {
		if w[i] != '\'' {
			h = (h ^ uint32(w[i])) * fnvPrime
		}
	}
	return h
}

// gateMet reports whether seen meets the credential need and, when directive, the
// orders detector's (high, or one of gateNeeds).
func gateMet(seen uint32, directive, high bool) bool {
	return credNeedMet(seen) && (!directive || high || directNeedMet(seen))
}

// directNeedMet reports whether seen meets one of gateNeeds.
func directNeedMet(seen uint32) bool {
	for _, need := range gateNeeds {
		if seen&need == need {
			return true
		}
	}
	return false
}

// credNeedMet reports whether seen meets the credential detector's need.
func credNeedMet(seen uint32) bool {
	return seen&gHand != 0 && (seen&gCred != 0 || seen&(gPairA|gPairB) == gPairA|gPairB)
}

func isAlphaString(s string) bool {
	for i := 0; i < len(s); i++ {
		if !isAlpha(s[i]) {
			return false
		}
	}
	return true
}

// gate returns gateScan of the string's first maxCredRequest bytes, read once for
// both detectors. A string longer than maxDirective is not read whole for orders, so
// the scan may stop as soon as the credential need is met.
func (t *textScan) gate() (uint32, bool) {
	if !t.gated {
		t.gated = true
		t.gateSeen, t.gateHigh = gateScan(t.s[:min(len(t.s), maxCredRequest)], len(t.s) <= maxDirective)
	}
	return t.gateSeen, t.gateHigh
}
