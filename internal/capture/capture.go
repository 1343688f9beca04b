// Package capture keeps a local, opt-in copy of tools/call traffic for mcpgate replay:
// one JSONL line per call with the caller's arguments and the upstream's result, named
// by the call's event_id (gateway run --capture FILE; docs/policies.md#replay).
//
// Unlike the audit trail, a capture file holds values: it is created with mode 0600,
// written only when asked for, and rotated like the audit file.
package capture

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"sync"
	"sync/atomic"

	"gopkg.in/natefinch/lumberjack.v2"

	"github.com/mcpgate/mcpgate/ctxapi"
	"github.com/mcpgate/mcpgate/internal/guardrail"
	"github.com/mcpgate/mcpgate/vocab"
)

// Entry is one captured tools/call.
type Entry struct {
	EventID      string          `json:"event_id"` // the audit record's event_id
	TS           string          `json:"ts"`       // RFC 3339, UTC, milliseconds
	Tool         string          `json:"tool"`
	ToolAccess   string          `json:"tool_access"`
	User         ctxapi.User     `json:"user"`
	FilterOutput bool            `json:"filter_output"` // --filter-output was on
	Arguments    json.RawMessage `json:"arguments"`     // as the client sent them
	// Result is the upstream's CallToolResult; absent when the upstream was never
	// called (a pre-phase rejection) or gave no result.
	Result      json.RawMessage `json:"result,omitempty"`
	ActionTaken vocab.Action    `json:"action_taken"` // the recorded action
	Outcome     vocab.Outcome   `json:"outcome"`
	// Guardrails are the outside guardrails' verdicts, replacements and findings, in
	// the order given (docs/guardrails.md#replay): replay gives them back instead of
	// calling out.
	Guardrails []guardrail.Recorded `json:"guardrails,omitempty"`
}

// MaxLine bounds one line Read accepts, in bytes (a result may be large).
const MaxLine = 256 << 20

// Writer appends entries to a file on its own goroutine, so a slow disk never holds
// up a call; when its buffer is full an entry is dropped and counted.
type Writer struct {
	ch      chan *Entry
	w       io.WriteCloser
	log     *slog.Logger
	done    chan struct{}
	once    sync.Once
	dropped atomic.Uint64
	errs    atomic.Uint64
}

// Open creates or appends to path with mode 0600 (an existing file is narrowed to
// 0600). rotateMB > 0 rotates it past that many megabytes, keeping keep old files
// (0: all), as --audit-rotate-mb does for the audit file.
func Open(path string, rotateMB, keep int, log *slog.Logger) (*Writer, error) {
	if path == "" {
		return nil, errors.New("capture: no file")
	}
	if log == nil {
		log = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("capture: %w", err)
	}
	if err := f.Chmod(0o600); err != nil {
		f.Close()
		return nil, fmt.Errorf("capture: %w", err)
	}
	var w io.WriteCloser = f
	if rotateMB > 0 {
		f.Close()
		w = &lumberjack.Logger{Filename: path, MaxSize: rotateMB, MaxBackups: keep}
	}
	cw := &Writer{ch: make(chan *Entry, 1024), w: w, log: log, done: make(chan struct{})}
	go cw.loop()
	return cw, nil
}

// Capture queues e; it never blocks.
func (w *Writer) Capture(e *Entry) {
	select {
	case w.ch <- e:
	default:
		if w.dropped.Add(1) == 1 {
			w.log.Warn("capture buffer full; calls are missing from the capture file")
		}
	}
}

func (w *Writer) loop() {
	defer close(w.done)
	bw := bufio.NewWriter(w.w)
	for e := range w.ch {
		b, err := json.Marshal(e)
		if err == nil {
			b = append(b, '\n')
			_, err = bw.Write(b)
		}
		if err == nil && len(w.ch) == 0 {
			err = bw.Flush()
		}
		if err != nil && w.errs.Add(1) == 1 {
			w.log.Warn("capture write failed", "error", err.Error())
		}
	}
	_ = bw.Flush()
}

// Dropped is the number of entries lost to a full buffer or a write error.
func (w *Writer) Dropped() uint64 { return w.dropped.Load() + w.errs.Load() }

// Close writes what is queued and closes the file.
func (w *Writer) Close() error {
	w.once.Do(func() { close(w.ch) })
	<-w.done
	return w.w.Close()
}

// Read decodes a capture file. A line that is not an entry (an audit record
// included: both files are JSONL with an event_id) is an error naming its line
// number; blank lines are skipped.
func Read(r io.Reader) ([]Entry, error) {
	br := bufio.NewReaderSize(r, 64<<10)
	var out []Entry
	for n := 1; ; n++ {
		line, err := readLine(br)
		if len(line) > 0 {
			var e struct {
				Entry
				Kind string `json:"kind"` // audit records have one; entries never do
			}
			if jerr := json.Unmarshal(line, &e); jerr != nil || e.Kind != "" || e.EventID == "" || e.Tool == "" {
				switch {
				case jerr != nil:
				case e.Kind != "":
					jerr = fmt.Errorf("an audit record (kind %q), not a capture entry: replay reads the file of gateway run --capture", e.Kind)
				default:
					jerr = errors.New("missing event_id or tool")
				}
				return out, fmt.Errorf("capture: line %d: %w", n, jerr)
			}
			out = append(out, e.Entry)
		}
		if errors.Is(err, io.EOF) {
			return out, nil
		}
		if err != nil {
			return out, fmt.Errorf("capture: line %d: %w", n, err)
		}
	}
}

func readLine(br *bufio.Reader) ([]byte, error) {
	var line []byte
	for {
		chunk, isPrefix, err := br.ReadLine()
		line = append(line, chunk...)
		if len(line) > MaxLine {
			return nil, fmt.Errorf("line longer than %d bytes", MaxLine)
		}
		if err != nil || !isPrefix {
			return line, err
		}
	}
}
