package policyast

import (
	"fmt"
	"strings"
)

// ErrorPosition finds where a native error was raised in the policy file: the first
// frame of the runtime's stack text (the runner reads it only while it is a data
// property) that names file. Only the two numbers are taken, never any text.
func ErrorPosition(stack, file string, prefix int) (line, col int) {
	lines := strings.Split(strings.TrimRight(stack, "\n"), "\n")
	// frames are the tail of the text; a message cannot come after them
	start := len(lines)
	for start > 0 && strings.HasPrefix(strings.TrimLeft(lines[start-1], " \t"), "at ") {
		start--
	}
	for _, l := range lines[start:] {
		i := strings.Index(l, file+":")
		if i < 0 {
			continue
		}
		var ln, cl, pc int
		if n, _ := fmt.Sscanf(l[i+len(file)+1:], "%d:%d(%d)", &ln, &cl, &pc); n >= 2 && ln >= 1 && cl >= 1 {
			if ln == 1 {
				cl = max(cl-prefix, 1)
			}
			return ln, cl
		}
	}
	return 0, 0
}
