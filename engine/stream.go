package engine

import (
	"errors"
	"io"
	"slices"
	"unsafe"
)

// Streaming analysis of plain text of any length (docs/engine.md, "Streaming").
const (
	// StreamWindow is how many bytes AnalyzeReader scans at a time.
	StreamWindow = 4 << 20
	// StreamOverlap is the context each window shares with its neighbours on either
	// side: a finding is kept by the window in which it has at least this much text
	// before and after it, so no match shorter than this is lost or counted twice.
	StreamOverlap = 64 << 10
)

// StreamReport is the result of AnalyzeReader: the report (offsets are bytes from the
// start of the stream; Truncated is always false, every byte is scanned) and how many
// bytes were read.
type StreamReport struct {
	Report
	BytesRead int64
}

// AnalyzeReader scans everything r yields as plain text, in windows of StreamWindow
// bytes that overlap by 2×StreamOverlap, in memory bounded by the window (plus at
// most 10,000 findings; past that, Medium and High findings take the place of Info
// and Low ones, so the list shows what decided the verdict). It ignores
// Options.MaxScanBytes: the cap belongs to the gateway's verdict, not to a pipeline
// tool. A window starts at a line start where one lies within the overlap, so line
// rules see whole lines. State that spans more than StreamOverlap bytes (an SGR
// conceal set far earlier, a hyperlink label longer than that) is judged per window.
// It returns what was read and the read error, if any (io.EOF is not an error).
func (a *Analyzer) AnalyzeReader(r io.Reader) (StreamReport, error) {
	return a.analyzeReader(r, StreamWindow, StreamOverlap)
}

func (a *Analyzer) analyzeReader(r io.Reader, window, overlap int) (StreamReport, error) {
	window = max(window, 4*overlap) // room for context on both sides and a line start
	var out StreamReport
	buf := make([]byte, window)
	n := 0         // bytes in buf
	keepFrom := 0  // findings starting before this offset in buf belong to the previous window
	var base int64 // stream offset of buf[0]
	eof := false
	var rerr error
	outCursor, resort := maxFindings, false
	st := a.getState()
	defer putState(st)
	for {
		for n < len(buf) && !eof {
			m, err := r.Read(buf[n:])
			n += m
			out.BytesRead += int64(m)
			if err != nil {
				eof = true
				if !errors.Is(err, io.EOF) {
					rerr = err
				}
			}
		}
		text := unsafe.String(unsafe.SliceData(buf), n)
		next, keepTo := n, n
		if !eof {
			next = windowStart(text, n-2*overlap, overlap/2)
			keepTo = next + overlap
		}
		st.k = sink{sev: a.sev, findings: st.k.findings[:0], preferSevere: true, lowCursor: maxFindings, cat: st.k.cat, catHits: st.k.catHits}
		st.k.beginString(false)
		scanText(&st.k, text, false, !eof)
		overflow := len(st.k.findings) >= maxFindings
		if overflow {
			slices.SortStableFunc(st.k.findings, func(x, y Finding) int { return x.Start - y.Start })
		}
		for _, f := range st.k.findings {
			if f.Start < keepFrom || f.Start >= keepTo {
				continue
			}
			out.Highest = max(out.Highest, f.Severity)
			f.Start += int(base)
			f.End += int(base)
			if len(out.Findings) < maxFindings {
				out.Findings = append(out.Findings, f)
			} else if f.Severity > SeverityLow {
				// keep the findings that decide the verdict: replace an Info or Low one
				out.Findings, outCursor = replaceLow(out.Findings, outCursor, f)
				resort = true
			}
		}
		if overflow {
			out.Highest = max(out.Highest, st.k.highest)
		}
		if eof {
			break
		}
		copy(buf, buf[next:n])
		n -= next
		base += int64(next)
		keepFrom = keepTo - next
	}
	st.k.findings = nil
	if resort {
		slices.SortStableFunc(out.Findings, func(x, y Finding) int { return x.Start - y.Start })
	}
	out.Verdict = VerdictFor(out.Highest)
	return out, rerr
}

// windowStart picks where the next window starts, near target: just after the last
// line feed in s[target-slack:target], else the rune start at or before target.
func windowStart(s string, target, slack int) int {
	for i := target - 1; i >= max(0, target-slack); i-- {
		if s[i] == '\n' {
			return i + 1
		}
	}
	return runeStart(s, target)
}
