package audit

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/mcpgate/mcpgate/internal/bound"
)

// Sink stores records. Write is called from one goroutine at a time; Close flushes.
type Sink interface {
	Write(r *Record) error
	Close() error
}

// Flusher is a Sink that batches: the emitter calls Flush whenever its buffer is
// empty, so a batch never waits for more traffic to be stored. A failed Flush should
// return a *BatchError so the lost records are counted one by one.
type Flusher interface {
	Flush() error
}

// BatchError reports that N buffered records could not be stored.
type BatchError struct {
	N   int
	Err error
}

func (e *BatchError) Error() string {
	return fmt.Sprintf("audit: %d records not stored: %v", e.N, e.Err)
}

func (e *BatchError) Unwrap() error { return e.Err }

// JSONL writes one JSON object per line to w (stderr by default, docs/decisions.md#record-fields).
type JSONL struct {
	w   io.Writer
	buf []byte
}

// NewJSONL returns a sink that writes to w; w should accept whole lines atomically.
func NewJSONL(w io.Writer) *JSONL { return &JSONL{w: w} }

// Write encodes r as one line.
func (s *JSONL) Write(r *Record) error {
	b, err := json.Marshal(r)
	if err != nil {
		return fmt.Errorf("audit: encode record: %w", err)
	}
	// C1 and bidi controls in a name are written \uXXXX: the same value to a JSON
	// reader, and no reordering or hidden text on a terminal or in a pager.
	s.buf = append(append(s.buf[:0], bound.EscapeControls(b)...), '\n')
	_, err = s.w.Write(s.buf)
	return err
}

// Close closes w when it is an io.Closer other than a standard stream.
func (s *JSONL) Close() error {
	if c, ok := s.w.(io.Closer); ok {
		return c.Close()
	}
	return nil
}

// Stats counts what the emitter did with records.
type Stats struct {
	Written uint64 `json:"written"`
	Dropped uint64 `json:"dropped"` // buffer full
	Errors  uint64 `json:"errors"`  // records a sink failed to store (write or batch flush)
	Queued  int    `json:"queued"`  // records waiting in the buffer now
	Cap     int    `json:"cap"`     // buffer capacity in records
}

// Emitter hands records to sinks off the hot path through a bounded buffer. A full
// buffer or a failing sink is counted and logged, and never fails or stalls a call.
type Emitter struct {
	ch      chan *Record
	sinks   []Sink
	log     *slog.Logger
	done    chan struct{}
	closing sync.Once
	mu      sync.RWMutex // guards ch against send-after-close
	closed  bool

	written, dropped, errs atomic.Uint64
	// Failure lines are rate-limited; the counters stay exact.
	dropLog, errLog, flushLog logLimiter
	// Replica, when set before the first Emit, names this replica in every record
	// that does not name one (docs/deploy.md).
	Replica string
	// OnWrite, when set, is called after each record is handed to every sink.
	OnWrite func(r *Record, err error)
}

// NewEmitter starts an emitter with a buffer of size records (4096 when ≤ 0).
func NewEmitter(log *slog.Logger, size int, sinks ...Sink) *Emitter {
	if size <= 0 {
		size = 4096
	}
	e := &Emitter{ch: make(chan *Record, size), sinks: sinks, log: log, done: make(chan struct{})}
	e.dropLog.every, e.errLog.every, e.flushLog.every = LogEvery, LogEvery, LogEvery
	go e.loop()
	return e
}

// Emit queues r; it never blocks.
func (e *Emitter) Emit(r *Record) {
	if r.Replica == "" {
		r.Replica = e.Replica
	}
	e.mu.RLock()
	defer e.mu.RUnlock()
	if e.closed {
		e.dropped.Add(1)
		e.log.Warn("audit record dropped: emitter closed", "event_id", r.EventID)
		return
	}
	select {
	case e.ch <- r:
	default:
		n := e.dropped.Add(1)
		if ok, quiet := e.dropLog.allow(); ok {
			e.log.Warn("audit buffer full: record dropped", "event_id", r.EventID, "dropped_total", n, "lines_suppressed", quiet)
		}
	}
}

func (e *Emitter) loop() {
	defer close(e.done)
	for r := range e.ch {
		var errs []error
		for _, s := range e.sinks {
			if err := safeWrite(s, r); err != nil {
				errs = append(errs, err)
			}
		}
		err := errors.Join(errs...)
		if err != nil {
			n := e.errs.Add(1)
			if ok, quiet := e.errLog.allow(); ok {
				e.log.Error("audit sink failed", "event_id", r.EventID, "err", err, "errors_total", n, "lines_suppressed", quiet)
			}
		} else {
			e.written.Add(1)
		}
		if e.OnWrite != nil {
			e.OnWrite(r, err)
		}
		if len(e.ch) == 0 {
			e.flush()
		}
	}
	e.flush()
}

// flush hands every batching sink the signal that the buffer is empty.
func (e *Emitter) flush() {
	for _, s := range e.sinks {
		f, ok := s.(Flusher)
		if !ok {
			continue
		}
		if err := safeFlush(f); err != nil {
			lost := uint64(1)
			var be *BatchError
			if errors.As(err, &be) {
				lost = uint64(be.N)
			}
			// The records were counted as written when handed over; move them.
			subClamp(&e.written, lost)
			n := e.errs.Add(lost)
			if ok, quiet := e.flushLog.allow(); ok {
				e.log.Error("audit sink flush failed", "err", err, "records_lost", lost, "errors_total", n, "lines_suppressed", quiet)
			}
		}
	}
}

func safeFlush(f Flusher) (err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("audit: sink flush panicked: %v", p)
		}
	}()
	return f.Flush()
}

func safeWrite(s Sink, r *Record) (err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("audit: sink panicked: %v", p)
		}
	}()
	return s.Write(r)
}

// Close drains the buffer, closes the sinks, and returns early if ctx ends first.
func (e *Emitter) Close(ctx context.Context) error {
	e.closing.Do(func() {
		e.mu.Lock()
		e.closed = true
		close(e.ch)
		e.mu.Unlock()
	})
	select {
	case <-e.done:
	case <-ctx.Done():
		return fmt.Errorf("audit: flush: %w", ctx.Err())
	}
	var errs []error
	for _, s := range e.sinks {
		errs = append(errs, s.Close())
	}
	return errors.Join(errs...)
}

// Stats returns the running counters.
func (e *Emitter) Stats() Stats {
	return Stats{Written: e.written.Load(), Dropped: e.dropped.Load(), Errors: e.errs.Load(), Queued: len(e.ch), Cap: cap(e.ch)}
}

// LogEvery is the least time between two log lines about the same kind of audit
// failure (buffer full, sink write, sink flush). Lines in between are suppressed;
// the next line says how many, and its *_total field is the exact count.
var LogEvery = 10 * time.Second

// logLimiter allows one line per every.
type logLimiter struct {
	mu         sync.Mutex
	every      time.Duration
	last       time.Time
	suppressed uint64
}

// allow reports whether to log now, and how many lines were suppressed since the
// last one logged.
func (l *logLimiter) allow() (bool, uint64) {
	l.mu.Lock()
	defer l.mu.Unlock()
	now := time.Now()
	if !l.last.IsZero() && now.Sub(l.last) < l.every {
		l.suppressed++
		return false, 0
	}
	n := l.suppressed
	l.last, l.suppressed = now, 0
	return true, n
}

// subClamp subtracts n from u, stopping at zero.
func subClamp(u *atomic.Uint64, n uint64) {
	for {
		old := u.Load()
		v := old - min(old, n)
		if u.CompareAndSwap(old, v) {
			return
		}
	}
}
