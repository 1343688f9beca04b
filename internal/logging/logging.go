// Package logging builds mcpgate's log/slog logger: tint for a person at a terminal,
// JSON otherwise, written whole-line-at-a-time to a shared stderr.
package logging

import (
	"io"
	"log/slog"
	"os"
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
		return slog.New(tint.NewTextHandler(w, &tint.Options{Level: level, TimeFormat: "15:04:05.000"}))
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
// an audit record, and writes durations as Go duration strings ("1.5s", "30m0s")
// instead of integer nanoseconds.
func replaceAttr(groups []string, a slog.Attr) slog.Attr {
	if len(groups) == 0 && a.Key == "kind" {
		a.Key = "log_kind"
	}
	if a.Value.Kind() == slog.KindDuration {
		a.Value = slog.StringValue(a.Value.Duration().String())
	}
	return a
}
