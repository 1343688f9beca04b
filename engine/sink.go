package engine

// maxFindings bounds how many findings one Report keeps; the verdict still counts every
// match (docs/engine.md, "Limits").
const maxFindings = 10000

// match is one detector hit before it becomes a Finding.
type match struct {
	rule       ruleIndex
	entity     string
	start, end int
}

// sink receives detector hits for the string being scanned. It turns them into
// Findings (analysis) or collects redactable matches (Redact).
type sink struct {
	sev      []Severity // by ruleIndex
	findings []Finding
	highest  Severity

	// current string
	w       *jsonWalker // nil for plain text
	inKey   bool
	ptr     string
	ptrDone bool
	first   int // index in findings of the first finding of the current string
	// key is the member name of the object member whose value is being scanned ("" for
	// plain text, array elements and member names): context for the value rules
	// (Authorization, Cookie, aws_secret_access_key, *version).
	key string
	// decoded names the encoding of the text being scanned when it is the decoded form
	// of an argument's encoded run (scanDecoded), "" otherwise.
	decoded string
	// inArgs: the document is a call's arguments (AnalyzeArguments); the rules that
	// read requests made of the agent (credentialRequest) skip it.
	inArgs bool

	// roots are the clean paths of the client's declared roots for this document
	// (AnalyzeResultWithin); nil when none are known.
	roots []string

	// Redact mode; noCatalogue: the kinds asked for want no catalogue rule, so its
	// pass is skipped (catalogueWanted)
	collect     bool
	noCatalogue bool
	matches     []match

	// preferSevere: once findings is full, a Medium or High finding replaces the
	// latest Info or Low one (lowCursor walks down from the end, so the work stays
	// linear); the caller re-sorts by offset. Streaming analysis sets it, so the
	// finding that decides the verdict is listed.
	preferSevere bool
	lowCursor    int

	// scratch of the catalogue pass, reused across strings
	cat     []catToken
	catHits []uint32
}

func (k *sink) beginString(inKey bool) {
	k.inKey = inKey
	k.key = ""
	k.ptrDone = false
	k.first = len(k.findings)
}

func (k *sink) add(r ruleIndex, entity string, start, end int) {
	if k.collect {
		if r.isRedactable() {
			k.matches = append(k.matches, match{r, entity, start, end})
		}
		return
	}
	sev := k.sev[r]
	if sev == SeverityNone {
		return // disabled by Options.Severities
	}
	if sev > k.highest {
		k.highest = sev
	}
	full := len(k.findings) >= maxFindings
	if full && !(k.preferSevere && sev > SeverityLow) {
		return
	}
	if !k.ptrDone {
		if k.w != nil {
			k.ptr = k.w.pointer()
		} else {
			k.ptr = ""
		}
		k.ptrDone = true
	}
	f := Finding{RuleID: ruleTable[r].ID, Severity: sev, Entity: entity, Pointer: k.ptr, Start: start, End: end, InKey: k.inKey, Decoded: k.decoded}
	if full {
		k.findings, k.lowCursor = replaceLow(k.findings, k.lowCursor, f)
		return
	}
	k.findings = append(k.findings, f)
	// keep the current string's findings ordered by offset
	for j := len(k.findings) - 1; j > k.first && k.findings[j].Start < k.findings[j-1].Start; j-- {
		k.findings[j], k.findings[j-1] = k.findings[j-1], k.findings[j]
	}
}

// count is the number of hits received so far (findings or redactable matches).
func (k *sink) count() int { return len(k.findings) + len(k.matches) }

// replaceLow puts f in place of the last Info or Low finding below cursor and returns
// the new cursor (0 when none is left, and f is dropped).
func replaceLow(fs []Finding, cursor int, f Finding) ([]Finding, int) {
	for cursor > 0 {
		cursor--
		if fs[cursor].Severity <= SeverityLow {
			fs[cursor] = f
			return fs, cursor
		}
	}
	return fs, 0
}
