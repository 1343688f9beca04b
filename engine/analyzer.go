package engine

import (
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
	sev  [numRules]Severity
}

// New returns an Analyzer. It errors when Options.Severities names an unknown rule id.
// A severity of SeverityNone switches a rule off.
func New(opts Options) (*Analyzer, error) {
	if opts.MaxScanBytes <= 0 {
		opts.MaxScanBytes = MaxScanBytes
	}
	a := &Analyzer{opts: opts}
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
	st.k = sink{sev: &a.sev, findings: nil}
	return st
}

func putState(st *state) {
	st.k.findings = nil
	st.k.w = nil
	st.k.matches = st.k.matches[:0]
	st.v = docVisitor{}
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
	scanText(&st.k, text, false)
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
	return a.analyzeDoc(result, modeResult)
}

// AnalyzeArguments scans the string leaves (and keys) of tools/call arguments (a JSON
// object, or null). Pointers are relative to the arguments object.
func (a *Analyzer) AnalyzeArguments(args []byte) (Report, error) {
	t := strings.TrimSpace(string(args))
	if t == "" || t == "null" {
		return Report{}, nil
	}
	return a.analyzeDoc(args, modeArguments)
}

type docMode uint8

const (
	modeResult docMode = iota
	modeArguments
)

func (a *Analyzer) analyzeDoc(doc []byte, mode docMode) (Report, error) {
	st := a.getState()
	defer putState(st)
	st.v = docVisitor{st: st, mode: mode, budget: a.opts.MaxScanBytes}
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

	// a pending base64 blob of the content item or resource being walked
	blobDepth int
	blobRaw   []byte
	blobEsc   bool
	mimeDepth int
	mimeText  bool
}

// role of a string in a result
const (
	roleSkip = iota
	roleScan
	roleBlob
	roleMime
)

func (v *docVisitor) role(w *jsonWalker, isKey bool) int {
	if v.mode == modeArguments {
		return roleScan
	}
	d := w.depth()
	if d == 0 {
		return roleSkip
	}
	switch {
	case w.keyIs(0, "structuredContent"):
		if isKey && d == 1 {
			return roleSkip
		}
		return roleScan
	case isKey:
		return roleSkip
	case w.keyIs(0, "content"):
		// content[i].<k2> or content[i].resource.<k3>
		if d == 3 || (d == 4 && w.keyIs(2, "resource")) {
			last := w.key(d - 1)
			switch string(last) {
			case "type", "mimeType":
				if string(last) == "mimeType" {
					return roleMime
				}
				return roleSkip
			case "data":
				return roleSkip // image and audio data are never text
			case "blob":
				return roleBlob
			}
		}
		return roleScan
	case w.keyIs(0, "isError"):
		return roleSkip
	}
	return roleScan
}

func (v *docVisitor) visitString(w *jsonWalker, raw []byte, start int, esc, isKey bool) {
	switch v.role(w, isKey) {
	case roleScan:
		v.scanRaw(raw, esc, isKey)
	case roleBlob:
		v.blobDepth, v.blobRaw, v.blobEsc = w.depth()-1, raw, esc
	case roleMime:
		v.mimeDepth = w.depth() - 1
		v.mimeText = isTextMIME(raw)
	}
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
	d := w.depth()
	if v.blobRaw != nil && v.blobDepth == d {
		raw, esc := v.blobRaw, v.blobEsc
		isText := v.mimeText && v.mimeDepth == d
		v.blobRaw = nil
		if isText {
			v.scanBlob(w, raw, esc)
		}
	}
	if v.mimeDepth == d {
		v.mimeDepth, v.mimeText = -1, false
	}
}

// scanBlob decodes a base64 blob and scans it under the pointer ".../blob".
func (v *docVisitor) scanBlob(w *jsonWalker, raw []byte, esc bool) {
	st := v.st
	if esc {
		var ok bool
		st.buf, ok = appendUnquoted(st.buf[:0], raw)
		if !ok {
			return
		}
		raw = st.buf
	}
	n := base64.StdEncoding.DecodedLen(len(raw))
	if cap(st.blobBuf) < n {
		st.blobBuf = make([]byte, n)
	}
	dec, err := base64.StdEncoding.Decode(st.blobBuf[:n], raw)
	if err != nil {
		return
	}
	koff := len(w.keys)
	w.keys = append(w.keys, "blob"...)
	w.path = append(w.path, pathSeg{idx: -1, koff: koff, klen: 4})
	v.scanBytes(st.blobBuf[:dec], false)
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
	if len(s) > v.budget {
		s = s[:runeStart(s, v.budget)]
		v.truncated = true
	}
	v.budget -= len(s) + 1 // +1 for the NUL separator of seed 000
	v.st.k.beginString(isKey)
	scanText(&v.st.k, s, false)
}
