package engine

import (
	"bytes"
	"encoding/base64"
	"fmt"
	"strings"
	"sync"
	"unicode/utf8"
	"unsafe"
)

// Analyzer runs the built-in rules. It is safe for concurrent use.
type Analyzer struct {
	opts Options
	sev  []Severity // by ruleIndex
}

// New returns an Analyzer. It errors when Options.Severities names an unknown rule id.
// A severity of SeverityNone switches a rule off.
func New(opts Options) (*Analyzer, error) {
	if opts.MaxScanBytes <= 0 {
		opts.MaxScanBytes = MaxScanBytes
	}
	a := &Analyzer{opts: opts, sev: make([]Severity, len(ruleTable))}
	for i, r := range ruleTable {
		a.sev[i] = r.Severity
	}
	for id, sev := range opts.Severities {
		r, ok := ruleByID[id]
		if !ok {
			return nil, fmt.Errorf("engine: unknown rule id %q in Options.Severities", id)
		}
		if sev > SeverityHigh {
			return nil, fmt.Errorf("engine: rule %q: invalid severity %d", id, sev)
		}
		a.sev[r] = sev
	}
	return a, nil
}

// Severity returns the effective severity of a rule id, and false for an unknown id.
func (a *Analyzer) Severity(ruleID string) (Severity, bool) {
	r, ok := ruleByID[ruleID]
	if !ok {
		return SeverityNone, false
	}
	return a.sev[r], true
}

// state is the pooled scratch of one analysis: walker, sink and decode buffers.
type state struct {
	w       jsonWalker
	k       sink
	buf     []byte // decoded string
	blobBuf []byte // decoded base64 blob
	v       docVisitor
}

var statePool = sync.Pool{New: func() any { return new(state) }}

func (a *Analyzer) getState() *state {
	st := statePool.Get().(*state)
	st.k = sink{sev: a.sev, matches: st.k.matches[:0], cat: st.k.cat, catHits: st.k.catHits} // matches hold offsets and static entity names only
	return st
}

func putState(st *state) {
	st.k.findings = nil
	st.k.w = nil
	st.k.matches = st.k.matches[:0]
	if cap(st.k.matches) > 1<<12 {
		st.k.matches = nil
	}
	st.v.blobs.reset()
	st.v = docVisitor{blobs: st.v.blobs}
	if cap(st.buf) > 1<<20 {
		st.buf = nil
	}
	if cap(st.blobBuf) > 1<<20 {
		st.blobBuf = nil
	}
	statePool.Put(st)
}

func (st *state) report(truncated bool) Report {
	r := Report{Findings: st.k.findings, Highest: st.k.highest, Truncated: truncated}
	r.Verdict = VerdictFor(r.Highest)
	return r
}

// AnalyzeText scans one plain text; finding pointers are "". Only the first
// Options.MaxScanBytes bytes are scanned (Report.Truncated says when more followed).
func (a *Analyzer) AnalyzeText(text string) Report {
	st := a.getState()
	defer putState(st)
	truncated := false
	if len(text) > a.opts.MaxScanBytes {
		text = text[:runeStart(text, a.opts.MaxScanBytes)]
		truncated = true
	}
	st.k.beginString(false)
	scanText(&st.k, text, false, truncated)
	return st.report(truncated)
}

// runeStart backs n off to the start of a UTF-8 sequence in s.
func runeStart(s string, n int) int {
	for k := 0; k < utf8.UTFMax && n > 0 && n < len(s) && !utf8.RuneStart(s[n]); k++ {
		n--
	}
	return n
}

// AnalyzeResult scans every text-bearing part of an MCP CallToolResult (JSON object):
// content[].text; resource text and text/* blobs (decoded); resource_link name, title,
// description and uri; every string value and member name of structuredContent; string
// values of other members. Image and audio data are never scanned. Pointers are
// relative to the result object. Strings are scanned one by one (as if NUL-joined, so
// no sequence spans two), and only the first Options.MaxScanBytes bytes in total count.
// It errors (wrapping ErrUndecodable) when result is not a JSON object.
func (a *Analyzer) AnalyzeResult(result []byte) (Report, error) {
	i := 0
	for i < len(result) && (result[i] == ' ' || result[i] == '\t' || result[i] == '\n' || result[i] == '\r') {
		i++
	}
	if i >= len(result) || result[i] != '{' {
		return Report{}, errNotObject()
	}
	return a.analyzeDoc(result, modeResult, nil)
}

// AnalyzeResultWithin is AnalyzeResult for a session whose client declared roots
// (Root.uri file:// URIs, MCP 2025-11-25 client/roots): a file: link target outside
// every one is also output_ssrf_target (docs/engine.md#targets). No roots, or none
// that is a file:// URI of an absolute path, is AnalyzeResult.
func (a *Analyzer) AnalyzeResultWithin(result []byte, roots []string) (Report, error) {
	if len(roots) == 0 {
		return a.AnalyzeResult(result)
	}
	i := 0
	for i < len(result) && (result[i] == ' ' || result[i] == '\t' || result[i] == '\n' || result[i] == '\r') {
		i++
	}
	if i >= len(result) || result[i] != '{' {
		return Report{}, errNotObject()
	}
	return a.analyzeDoc(result, modeResult, rootPaths(roots))
}

// AnalyzeArguments scans the string leaves (and keys) of tools/call arguments (a JSON
// object, or null). Pointers are relative to the arguments object.
func (a *Analyzer) AnalyzeArguments(args []byte) (Report, error) {
	if nullDoc(args) {
		return Report{}, nil
	}
	return a.analyzeDoc(args, modeArguments, nil)
}

// nullDoc reports a document that is empty, white space or null (nothing to scan).
func nullDoc(b []byte) bool {
	t := bytes.TrimSpace(b)
	return len(t) == 0 || string(t) == "null"
}

// AnalyzeDefinitions scans a listing result (tools/list, prompts/list,
// resources/list, resources/templates/list: every string and member name, as
// AnalyzeArguments does) and, unlike arguments, reads the requests a definition makes
// of the agent (output_credential_request): a definition speaks to the model
// (docs/engine.md#what-is-scanned). Pointers are relative to the result.
func (a *Analyzer) AnalyzeDefinitions(result []byte) (Report, error) {
	if nullDoc(result) {
		return Report{}, nil
	}
	return a.analyzeDoc(result, modeDefinitions, nil)
}

type docMode uint8

const (
	modeResult docMode = iota
	modeArguments
	modeDefinitions // a listing: read as arguments, but requests of the agent count
)

func (a *Analyzer) analyzeDoc(doc []byte, mode docMode, roots []string) (Report, error) {
	st := a.getState()
	defer putState(st)
	st.k.roots = roots
	st.k.inArgs = mode == modeArguments
	st.v = docVisitor{st: st, mode: mode, budget: a.opts.MaxScanBytes, blobs: st.v.blobs}
	st.k.w = &st.w
	st.w.reset(doc, &st.v)
	if err := st.w.walk(); err != nil {
		return Report{}, err
	}
	return st.report(st.v.truncated), nil
}

// docVisitor decides which strings of a result or arguments document are scanned.
type docVisitor struct {
	st        *state
	mode      docMode
	budget    int
	truncated bool
	blobs     blobTracker
}

// role of a string in a result
const (
	roleSkip = iota
	roleScan
	roleBlob
	roleMime
)

// resultRole says what a string of a CallToolResult is: text to scan (and, on Warn,
// to sanitize), a base64 blob, a blob's mimeType, or something that is not text
// (type, mimeType, image/audio data, isError, the member names of the result, of a
// content item and of a resource). AnalyzeResult and SanitizeResult share it, so the
// sanitizer cleans exactly what the analyzer scans.
func resultRole(w *jsonWalker, isKey bool) int {
	d := w.depth()
	if d == 0 || w.keyIs(0, "isError") {
		return roleSkip
	}
	content := w.keyIs(0, "content")
	// a content item's own members, or an embedded resource's
	item := content && (d == 3 || d == 4 && w.keyIs(2, "resource"))
	if isKey {
		// member names at fixed-schema positions are not text; names inside
		// structuredContent, _meta, annotations and unknown members are
		if d == 1 || item {
			return roleSkip
		}
		return roleScan
	}
	if item {
		switch string(w.key(d - 1)) {
		case "type":
			return roleSkip
		case "mimeType":
			return roleMime
		case "data":
			return roleSkip // image and audio data are never text
		case "blob":
			return roleBlob
		}
	}
	return roleScan
}

func (v *docVisitor) visitString(w *jsonWalker, raw []byte, start int, esc, isKey bool) {
	role := roleScan
	if v.mode == modeResult {
		role = resultRole(w, isKey)
	}
	switch role {
	case roleScan:
		v.scanRaw(raw, esc, isKey)
	case roleBlob:
		v.blobs.blob(w, raw, start, esc)
	case roleMime:
		v.st.buf = v.blobs.mime(w, raw, esc, v.st.buf)
	}
}

// pendingBlob is a base64 blob whose object's mimeType may still follow.
type pendingBlob struct {
	depth int // depth of the object holding it
	start int // offset of its JSON text in the document
	raw   []byte
	esc   bool
}

// blobTracker holds the blobs of the content item and resource being walked until
// their object ends and its mimeType is known. Blobs pend only in objects of depth 2
// (content[i]) and 3 (content[i].resource).
type blobTracker struct {
	pending  []pendingBlob
	mimeText [4]bool // by object depth: the object's mimeType is a text type
}

func (b *blobTracker) blob(w *jsonWalker, raw []byte, start int, esc bool) {
	b.pending = append(b.pending, pendingBlob{depth: w.depth() - 1, start: start, raw: raw, esc: esc})
}

// mime records a mimeType; buf is scratch for unescaping, returned for reuse.
func (b *blobTracker) mime(w *jsonWalker, raw []byte, esc bool, buf []byte) []byte {
	d := w.depth() - 1
	if esc {
		var ok bool
		buf, ok = appendUnquoted(buf[:0], raw)
		if !ok {
			return buf
		}
		raw = buf
	}
	if d < len(b.mimeText) {
		b.mimeText[d] = isTextMIME(raw)
	}
	return buf
}

// end closes the object at depth d: it returns the blobs that were pending in it (to
// be handled when text is true) and forgets them. The returned slice is valid until
// the next call.
func (b *blobTracker) end(d int) (blobs []pendingBlob, text bool) {
	if d >= len(b.mimeText) {
		return nil, false
	}
	text = b.mimeText[d]
	b.mimeText[d] = false
	k := len(b.pending)
	for k > 0 && b.pending[k-1].depth == d {
		k--
	}
	blobs = b.pending[k:]
	b.pending = b.pending[:k]
	return blobs, text
}

func (b *blobTracker) reset() {
	clear(b.pending)
	b.pending = b.pending[:0]
	b.mimeText = [4]bool{}
}

// isTextMIME reports whether a blob's mimeType makes it text: text/*, JSON, XML,
// YAML, JavaScript, or a +json/+xml suffix.
func isTextMIME(m []byte) bool {
	s := strings.ToLower(strings.TrimSpace(string(m)))
	if i := strings.IndexByte(s, ';'); i >= 0 {
		s = strings.TrimSpace(s[:i])
	}
	switch {
	case strings.HasPrefix(s, "text/"),
		s == "application/json", s == "application/xml", s == "application/yaml",
		s == "application/x-yaml", s == "application/javascript", s == "application/x-sh",
		strings.HasSuffix(s, "+json"), strings.HasSuffix(s, "+xml"):
		return true
	}
	return false
}

func (v *docVisitor) objectEnd(w *jsonWalker) {
	blobs, text := v.blobs.end(w.depth())
	if !text {
		return
	}
	for _, pb := range blobs {
		v.scanBlob(w, pb.raw, pb.esc)
	}
}

// decodeBlob base64-decodes a blob's JSON text raw (escaped when esc) into dst,
// using scratch for unescaping. Standard padded base64 and the unpadded form are
// accepted (line breaks are ignored); padded reports which one the blob used (a blob
// whose length is a multiple of 4 counts as padded).
func decodeBlob(dst, scratch, raw []byte, esc bool) (dec, scratchOut []byte, padded, ok bool) {
	if esc {
		scratch, ok = appendUnquoted(scratch[:0], raw)
		if !ok {
			return dst, scratch, false, false
		}
		raw = scratch
	}
	n := max(base64.StdEncoding.DecodedLen(len(raw)), base64.RawStdEncoding.DecodedLen(len(raw)))
	if cap(dst) < n {
		dst = make([]byte, n)
	}
	dst = dst[:n]
	// unpadded when it has no '=' and a length (line breaks aside) that needs one
	nb := len(raw) - bytes.Count(raw, []byte{'\n'}) - bytes.Count(raw, []byte{'\r'})
	padded = nb%4 == 0 || bytes.IndexByte(raw, '=') >= 0
	m, err := base64.StdEncoding.Decode(dst, raw)
	if err != nil && !padded {
		m, err = base64.RawStdEncoding.Decode(dst, raw)
	}
	if err != nil {
		return dst[:0], scratch, padded, false
	}
	return dst[:m], scratch, padded, true
}

// scanBlob decodes a base64 blob and scans it under the pointer ".../blob".
func (v *docVisitor) scanBlob(w *jsonWalker, raw []byte, esc bool) {
	st := v.st
	dec, scratch, _, ok := decodeBlob(st.blobBuf, st.buf, raw, esc)
	st.blobBuf, st.buf = dec[:0], scratch
	if !ok {
		return
	}
	koff := len(w.keys)
	w.keys = append(w.keys, "blob"...)
	w.path = append(w.path, pathSeg{idx: -1, koff: koff, klen: 4})
	v.scanBytes(dec, false)
	w.path = w.path[:len(w.path)-1]
	w.keys = w.keys[:koff]
}

func (v *docVisitor) scanRaw(raw []byte, esc, isKey bool) {
	if len(raw) == 0 {
		return
	}
	if v.budget <= 0 {
		v.truncated = true
		return
	}
	if esc {
		st := v.st
		var ok bool
		// decode at most what the budget can still scan, plus one byte to notice the cut
		st.buf, ok = appendUnquotedLimit(st.buf[:0], raw, v.budget+1)
		if !ok {
			st.buf = st.buf[:0]
		}
		raw = st.buf
	}
	v.scanBytes(raw, isKey)
}

func (v *docVisitor) scanBytes(b []byte, isKey bool) {
	if len(b) == 0 {
		return
	}
	if v.budget <= 0 {
		v.truncated = true
		return
	}
	s := unsafe.String(unsafe.SliceData(b), len(b))
	cut := false
	if len(s) > v.budget {
		s = s[:runeStart(s, v.budget)]
		v.truncated, cut = true, true
	}
	v.budget -= len(s) + 1 // +1 for the NUL separator (docs/decisions.md#scan-cap)
	v.st.k.beginString(isKey)
	if w := v.st.k.w; !isKey && w != nil {
		// the nearest member name: an array element is read under its array's name
		for d := w.depth() - 1; d >= 0; d-- {
			if key := w.key(d); key != nil {
				v.st.k.key = unsafe.String(unsafe.SliceData(key), len(key))
				break
			}
		}
	}
	scanText(&v.st.k, s, false, cut)
	if v.mode != modeResult && !isKey {
		v.scanDecoded(s)
	}
}
