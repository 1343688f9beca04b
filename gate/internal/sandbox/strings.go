package sandbox

import (
	"reflect"

	"github.com/dop251/goja"
)

// This is the one file that knows how goja holds a string. goja's public API has no way
// to tell an ASCII string (held as Go bytes) from a UTF-16 one, nor to read its bytes
// without converting it (String() builds UTF-8 from UTF-16 each time): upstream gap
// in github.com/dop251/goja's String interface. ascii reads the kind by reflection.

// ASCII returns s as Go bytes when goja holds it as ASCII (no copy); goja's
// conversion of other strings to UTF-8 is slow and is never made here.
func ASCII(s goja.String) (string, bool) {
	if reflect.TypeOf(s).Kind() != reflect.String {
		return "", false
	}
	a := reflect.ValueOf(s).String()
	return a, len(a) == s.Length()
}

func isASCII(s goja.String) bool { _, ok := ASCII(s); return ok }

// unicodeStringType is the type of goja strings held as UTF-16, whose String() decodes
// them (asciiString and strings imported from Go return the Go string they hold).
var unicodeStringType = reflect.TypeOf(goja.StringFromUTF16([]uint16{0x100}))

// HeldAsGoString reports whether goja holds s as a Go string (ASCII, or imported from
// Go), so that String() returns it without decoding.
func HeldAsGoString(s goja.String) bool { return reflect.TypeOf(s) != unicodeStringType }
