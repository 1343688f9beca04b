package ctxapi

// rewriteStrings is RewriteMembersAppend for an fn that returns the new string and
// how many replacements it made, without the member name: the shape the tests and
// the fuzz target check the rewriter with.
func rewriteStrings(raw []byte, skip map[string]bool, fn func(string) (string, int)) ([]byte, int, error) {
	return RewriteMembersAppend(raw, skip, func(dst []byte, _, s string) ([]byte, int) {
		ns, k := fn(s)
		if k == 0 || ns == s {
			return dst, 0
		}
		return append(dst, ns...), k
	})
}
