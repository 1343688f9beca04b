// Package logging builds mcpgate's log/slog logger: tint for a person at a terminal,
// JSON otherwise, written whole-line-at-a-time to a shared stderr.
package logging

import (
	"io"
	"log/slog"
	"os"
	"strings"
	"sync"

	"github.com/lmittmann/tint"
	"github.com/mattn/go-isatty"

	"github.com/mcpgate/mcpgate/internal/bound"
)

// LineWriter serialises whole lines from many writers (logger, audit sink, upstream
// stderr relay) onto one stream, so lines never interleave.
type LineWriter struct {
	mu sync.Mutex
	w  io.Writer
}

// NewLineWriter wraps w.
func NewLineWriter(w io.Writer) *LineWriter { return &LineWriter{w: w} }

// Write writes p in one call under the lock; callers pass whole lines. C1 and bidi
// controls (a hostile tool name, say) are written as \uXXXX, so that no line can
// reorder or hide what a terminal shows; a JSON line decodes to the same values.
func (l *LineWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if _, err := l.w.Write(bound.EscapeControls(p)); err != nil {
		return 0, err
	}
	return len(p), nil
}

// Format selects the log encoding.
type Format string

// Log formats: auto picks text (tint) on a terminal and JSON otherwise.
const (
	FormatAuto Format = "auto"
	FormatText Format = "text"
	FormatJSON Format = "json"
)

// New returns a logger writing to w. A log line never carries both event_id and
// kind: those two together mark an audit record (docs/decisions.md#record-fields).
func New(w io.Writer, format Format, level slog.Level) *slog.Logger {
	if format == FormatAuto || format == "" {
		format = FormatJSON
		if f, ok := terminal(w); ok && isatty.IsTerminal(f.Fd()) {
			format = FormatText
		}
	}
	if format == FormatText {
		// Colours only on a terminal, and never with NO_COLOR set (no-color.org): a
		// redirected file or pipe gets plain text.
		f, ok := terminal(w)
		noColor := !ok || !isatty.IsTerminal(f.Fd()) || os.Getenv("NO_COLOR") != ""
		return slog.New(tint.NewTextHandler(w, &tint.Options{Level: level, TimeFormat: "15:04:05.000", ReplaceAttr: replaceAttr, NoColor: noColor}))
	}
	return slog.New(slog.NewJSONHandler(w, &slog.HandlerOptions{Level: level, ReplaceAttr: replaceAttr}))
}

func terminal(w io.Writer) (*os.File, bool) {
	if lw, ok := w.(*LineWriter); ok {
		w = lw.w
	}
	f, ok := w.(*os.File)
	return f, ok
}

// replaceAttr renames a top-level "kind" attribute so a log line can never pass for
// an audit record, writes durations as Go duration strings ("1.5s", "30m0s")
// instead of integer nanoseconds, and removes the user-info of every URL in a string
// or error value, the message included (StripUserinfo).
func replaceAttr(groups []string, a slog.Attr) slog.Attr {
	if len(groups) == 0 && a.Key == "kind" {
		a.Key = "log_kind"
	}
	switch a.Value.Kind() {
	case slog.KindDuration:
		a.Value = slog.StringValue(a.Value.Duration().String())
	case slog.KindString:
		if s := a.Value.String(); strings.Contains(s, "://") {
			a.Value = slog.StringValue(StripUserinfo(s))
		}
	case slog.KindAny:
		if err, ok := a.Value.Any().(error); ok {
			if s := err.Error(); strings.Contains(s, "://") {
				a.Value = slog.StringValue(StripUserinfo(s))
			}
		}
	}
	return a
}

// StripUserinfo removes the user-info (RFC 3986 section 3.2.1: "user:password@")
// of every URL in s: "connect http://alice:pw@host:4318/x" reads
// "connect http://host:4318/x". A URL is found by its "://"; its authority ends at
// the first '/', '?', '#', space, control, quote, backslash or angle bracket, and
// the user-info at the authority's last '@', as net/url splits it. Text without
// "://" comes back as it is.
func StripUserinfo(s string) string {
	var b strings.Builder
	rest := s
	for {
		i := strings.Index(rest, "://")
		if i < 0 {
			break
		}
		auth := rest[i+3:]
		end := strings.IndexFunc(auth, func(r rune) bool {
			return r <= ' ' || r == 0x7f || strings.ContainsRune("/?#\"'<>", r)
		})
		if end < 0 {
			end = len(auth)
		}
		at := strings.LastIndexByte(auth[:end], '@')
		b.WriteString(rest[:i+3])
		if at >= 0 {
			rest = auth[at+1:]
		} else {
			rest = auth
		}
	}
	if b.Len() == 0 {
		return s
	}
	b.WriteString(rest)
	return b.String()
}
