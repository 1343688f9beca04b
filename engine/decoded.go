package engine

import (
	"encoding/base64"
	"encoding/hex"
	"unicode/utf8"
)

// Encoded text in arguments (docs/engine.md#decoded-arguments): a credential an agent
// sends out base64-, hex- or percent-encoded is the same credential. AnalyzeArguments
// scans each encoded run of a string leaf decoded, with the PII and secret rules only,
// and reports what it finds there with Finding.Decoded set.

// Encodings a Finding.Decoded names.
const (
	DecodedBase64 = "base64"
	DecodedHex    = "hex"
	DecodedURL    = "url"
)

// Bounds of the decoding: runs shorter than these are words, not encodings; decoding
// nests at most maxDecodeDepth times (base64 of hex of a token); a string's decoded
// texts together are at most its own length (each decoding shrinks or keeps it).
const (
	minBase64Run   = 20
	minHexRun      = 32
	maxDecodeDepth = 2
)

// EachDecoded calls fn with each text s carries encoded: every base64 (standard or
// URL alphabet, padded or not) run of at least 20 characters, every hex run of at least
// 32 digits, and the whole string percent-decoded when it holds %XX escapes, each
// decoded only when the result is printable UTF-8 text; and those texts' own encoded
// runs, two levels deep. enc names the outermost encoding. The bytes passed to fn are
// valid only during the call. It allocates only for strings that carry such runs.
func EachDecoded(s string, fn func(enc string, text []byte)) {
	eachDecoded(s, 0, "", fn)
}

func eachDecoded(s string, depth int, outer string, fn func(enc string, text []byte)) {
	if depth >= maxDecodeDepth {
		return
	}
	emit := func(enc string, dec []byte) {
		if outer != "" {
			enc = outer
		}
		fn(enc, dec)
		eachDecoded(string(dec), depth+1, enc, fn)
	}
	if hasPercentEscape(s) {
		if dec, ok := percentDecodeText(s); ok {
			emit(DecodedURL, dec)
		}
	}
	for i := 0; i < len(s); {
		if !isB64URLByte(s[i]) {
			i++
			continue
		}
		j := i
		hexOnly := true
		for j < len(s) && isB64URLByte(s[j]) {
			hexOnly = hexOnly && isHex(s[j])
			j++
		}
		run := s[i:j]
		pad := j
		for pad < len(s) && pad-j < 2 && s[pad] == '=' {
			pad++
		}
		switch {
		case hexOnly && len(run) >= minHexRun:
			if dec, ok := decodeHexText(run); ok {
				emit(DecodedHex, dec)
			} else if dec, ok := decodeBase64Text(s[i:pad]); ok {
				emit(DecodedBase64, dec)
			}
		case len(run) >= minBase64Run:
			if dec, ok := decodeBase64Text(s[i:pad]); ok {
				emit(DecodedBase64, dec)
			}
		}
		i = pad
	}
}

func isB64URLByte(c byte) bool {
	return isAlnum(c) || c == '+' || c == '/' || c == '-' || c == '_'
}

// decodeBase64Text decodes run in whichever alphabet its bytes fit, padded or not.
func decodeBase64Text(run string) ([]byte, bool) {
	std, urlSafe := true, true
	for k := 0; k < len(run); k++ {
		switch run[k] {
		case '+', '/':
			urlSafe = false
		case '-', '_':
			std = false
		}
	}
	var enc *base64.Encoding
	switch {
	case std:
		enc = base64.StdEncoding
	case urlSafe:
		enc = base64.URLEncoding
	default:
		return nil, false
	}
	body := run
	for len(body) > 0 && body[len(body)-1] == '=' {
		body = body[:len(body)-1]
	}
	if len(body)%4 == 1 {
		return nil, false
	}
	dec, err := enc.WithPadding(base64.NoPadding).DecodeString(body)
	if err != nil || !printableText(dec) {
		return nil, false
	}
	return dec, true
}

func decodeHexText(run string) ([]byte, bool) {
	if len(run)%2 != 0 {
		return nil, false
	}
	dec, err := hex.DecodeString(run)
	if err != nil || !printableText(dec) {
		return nil, false
	}
	return dec, true
}

func hasPercentEscape(s string) bool {
	for i := 0; i+2 < len(s); i++ {
		if s[i] == '%' && isHex(s[i+1]) && isHex(s[i+2]) {
			return true
		}
	}
	return false
}

// percentDecodeText decodes %XX escapes (and '+' as a space is left as it is: a
// credential may hold '+'); a malformed escape is kept as written.
func percentDecodeText(s string) ([]byte, bool) {
	dec := make([]byte, 0, len(s))
	for i := 0; i < len(s); i++ {
		if s[i] == '%' && i+2 < len(s) && isHex(s[i+1]) && isHex(s[i+2]) {
			dec = append(dec, unhex(s[i+1])<<4|unhex(s[i+2]))
			i += 2
			continue
		}
		dec = append(dec, s[i])
	}
	return dec, printableText(dec)
}

func unhex(c byte) byte {
	switch {
	case c >= '0' && c <= '9':
		return c - '0'
	case c|0x20 >= 'a' && c|0x20 <= 'f':
		return c | 0x20 - 'a' + 10
	}
	return 0
}

// printableText reports whether b is valid UTF-8 with no control characters but tab,
// CR and LF: text a person wrote, not the bytes of an image or a hash.
func printableText(b []byte) bool {
	if len(b) == 0 || !utf8.Valid(b) {
		return false
	}
	for _, c := range b {
		if c < 0x20 && c != '\t' && c != '\n' && c != '\r' || c == 0x7f {
			return false
		}
	}
	return true
}

// scanDecoded scans the encoded runs of an argument string s decoded, with the PII and
// secret rules, under the string's pointer and member name; the findings carry
// Decoded. Each decoded text counts against the scan budget.
func (v *docVisitor) scanDecoded(s string) {
	k := &v.st.k
	key := k.key
	EachDecoded(s, func(enc string, text []byte) {
		if v.budget <= 0 {
			v.truncated = true
			return
		}
		if len(text) > v.budget {
			text = text[:runeStart(string(text), v.budget)]
			v.truncated = true
		}
		v.budget -= len(text) + 1
		k.decoded = enc
		k.key = key
		k.first = len(k.findings) // the decoded text's offsets are its own
		scanText(k, string(text), true, false)
		k.decoded = ""
	})
}
