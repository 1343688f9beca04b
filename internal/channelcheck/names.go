package channelcheck

import (
	"strconv"
	"unicode"
	"unicode/utf8"

	"go.mau.fi/util/confusable"

	"github.com/mcpgate/mcpgate/engine"
)

// MaxNameLen is the longest tool name the MCP specification allows (2025-11-25,
// Tools: "Tool names SHOULD be between 1 and 128 characters").
const MaxNameLen = 128

// ValidName reports whether name is in the specification's tool-name set: 1-128
// characters of A-Z, a-z, 0-9, '_', '-' and '.'.
func ValidName(name string) bool {
	if len(name) == 0 || len(name) > MaxNameLen {
		return false
	}
	for i := 0; i < len(name); i++ {
		c := name[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-' || c == '.') {
			return false
		}
	}
	return true
}

// Invisible reports whether r is a character a reader cannot see at the edge of a
// name: not graphic (format, control, unassigned), white space, a variation selector,
// or another default-ignorable code point (Hangul fillers, U+2800 BRAILLE PATTERN BLANK).
func Invisible(r rune) bool {
	return !unicode.IsGraphic(r) || unicode.IsSpace(r) || unicode.Is(unicode.Variation_Selector, r) ||
		unicode.Is(unicode.Other_Default_Ignorable_Code_Point, r) || r == 0x2800
}

// invisibleEdge reports whether name begins or ends in an invisible character.
func invisibleEdge(name string) bool {
	first, _ := utf8.DecodeRuneInString(name)
	last, _ := utf8.DecodeLastRuneInString(name)
	return name != "" && (Invisible(first) || Invisible(last))
}

// Names checks the names of one listing (tools or prompts, or the tools of a
// sampling request), in listing order; pointer(i) is the JSON Pointer of entry i's
// name. It returns, per entry:
//   - name_invisible (High) for a name that begins or ends in an invisible character;
//   - name_confusable (High) for a name whose UTS #39 skeleton equals that of another,
//     different listed name, except the one name of such a group that is in the
//     tool-name set when exactly one is: "log_search" stays, "lοg_search" (Greek
//     omicron) goes; when none or several are, every one goes;
//   - name_outside_charset (Medium) for any other name outside the tool-name set.
//
// Identical names are not confusable with each other.
func Names(names []string, pointer func(i int) string) []engine.Finding {
	var out []engine.Finding
	first := make(map[string]int, len(names)) // skeleton → first entry with it
	var groups map[string][]int               // skeletons shared by two or more entries
	for i, n := range names {
		if n == "" {
			continue
		}
		s := skeleton(n)
		j, ok := first[s]
		if !ok {
			first[s] = i
			continue
		}
		if groups == nil {
			groups = map[string][]int{}
		}
		if groups[s] == nil {
			groups[s] = []int{j}
		}
		groups[s] = append(groups[s], i)
	}
	confused := make([]bool, len(names))
	for _, group := range groups {
		distinct := map[string]bool{}
		for _, i := range group {
			distinct[names[i]] = true
		}
		if len(distinct) < 2 {
			continue
		}
		keep, valid := "", 0
		for n := range distinct {
			if ValidName(n) {
				keep = n
				valid++
			}
		}
		if valid != 1 {
			keep = ""
		}
		for _, i := range group {
			if names[i] != keep {
				confused[i] = true
			}
		}
	}
	for i, n := range names {
		p := pointer(i)
		switch {
		case invisibleEdge(n):
			out = append(out, finding(RuleNameInvisible, engine.SeverityHigh, p))
		case confused[i]:
			out = append(out, finding(RuleNameConfusable, engine.SeverityHigh, p))
		case !ValidName(n):
			out = append(out, finding(RuleNameCharset, engine.SeverityMedium, p))
		}
		if confused[i] && invisibleEdge(n) {
			out = append(out, finding(RuleNameConfusable, engine.SeverityHigh, p))
		}
	}
	return out
}

// skeleton is confusable.Skeleton, with a short cut for an ASCII name: NFD leaves
// ASCII and the prototypes of ASCII characters ("rn" for m, "l" for 1 and I, "O"
// for 0) as they are, so the skeleton is the characters' prototypes, controls
// dropped (they are not graphic).
func skeleton(s string) string {
	for i := 0; i < len(s); i++ {
		if s[i] >= utf8.RuneSelf {
			return confusable.Skeleton(s)
		}
	}
	var b []byte
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c < 0x20 || c == 0x7f {
			if b == nil {
				b = append(make([]byte, 0, len(s)), s[:i]...)
			}
			continue
		}
		r := confusable.GetReplacement(rune(c))
		if r == "" {
			if b != nil {
				b = append(b, c)
			}
			continue
		}
		if b == nil {
			b = append(make([]byte, 0, len(s)+4), s[:i]...)
		}
		b = append(b, r...)
	}
	if b == nil {
		return s
	}
	return string(b)
}

// EntryPointer is the pointer function of a listing under key: /key/i/name.
func EntryPointer(key string) func(int) string {
	return func(i int) string { return "/" + key + "/" + strconv.Itoa(i) + "/name" }
}
