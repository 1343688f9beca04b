package audit

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/mcpgate/mcpgate/internal/methods"
	"github.com/mcpgate/mcpgate/vocab"
)

// Limits of a query.
const (
	DefaultLimit = 100
	MaxLimit     = 10000
)

// Filter selects records. The zero Filter matches everything; Limit 0 means
// DefaultLimit.
type Filter struct {
	Status vocab.Action // one of vocab.Actions, or "" for any; matches action_taken exactly
	Tool   string       // exact tool name, or "" for any
	// Method is the exact JSON-RPC method (tools/call, resources/read, …), or "" for
	// any; a record written before records named their method is a tools/call.
	Method string
	// Caller is a caller's user_id or caller_id, exactly, or "" for any.
	Caller string
	// EventID is one record's event_id, exactly, or "" for any: the look-up behind
	// "see audit log entry <event_id>".
	EventID string
	Since   time.Time // records with ts at or after Since; zero for any
	Limit   int       // newest N records; 1..MaxLimit
	// ShadowDiffers keeps only records whose shadow field says differs: true (gateway
	// run --shadow; docs/policies.md#shadow).
	ShadowDiffers bool
}

// ErrBadFilter is wrapped by every ParseFilter error.
var ErrBadFilter = errors.New("bad filter")

// MaxFilterText bounds a caller or event id given to a filter, in bytes; ids and
// callers are shorter (bound.ClientInfo).
const MaxFilterText = 256

// SetCaller sets the caller and event id tests of f from a reader's text (a CLI flag
// or a query parameter), each checked against MaxFilterText.
func (f *Filter) SetCaller(caller, eventID string) error {
	if len(caller) > MaxFilterText {
		return fmt.Errorf("%w: caller is %d bytes long; want at most %d", ErrBadFilter, len(caller), MaxFilterText)
	}
	if len(eventID) > MaxFilterText {
		return fmt.Errorf("%w: event_id is %d bytes long; want at most %d", ErrBadFilter, len(eventID), MaxFilterText)
	}
	f.Caller, f.EventID = caller, eventID
	return nil
}

// ParseFilter builds a Filter from the reader's textual inputs (CLI flags or query
// parameters). since is a Go duration ("1h", "90m") or a whole number of days
// ("7d") counted back from now, or "".
// limit is a decimal, or "" for DefaultLimit.
func ParseFilter(status, tool, since, limit string, now time.Time) (Filter, error) {
	f := Filter{Tool: tool, Limit: DefaultLimit}
	if status != "" {
		a, ok := vocab.ParseAction(status)
		if !ok {
			return f, fmt.Errorf("%w: status %q: want pass, warn, redact, mask or block (or the table's PASS, WARN, REDACTED, MASKED, BLOCKED)", ErrBadFilter, status)
		}
		f.Status = a
	}
	if since != "" {
		d, ok := parseSince(since)
		if !ok {
			return f, fmt.Errorf("%w: since %q: want a positive duration such as 90m, 24h or 7d", ErrBadFilter, since)
		}
		f.Since = now.Add(-d)
	}
	if limit != "" {
		n, err := strconv.Atoi(limit)
		if err != nil || n < 1 || n > MaxLimit {
			return f, fmt.Errorf("%w: limit %q: want 1..%d", ErrBadFilter, limit, MaxLimit)
		}
		f.Limit = n
	}
	return f, nil
}

// maxSinceDays bounds "Nd" so that N days stay a valid time.Duration.
const maxSinceDays = 36500

// parseSince reads a positive Go duration, or N days written "Nd" (1..maxSinceDays),
// which time.ParseDuration does not know.
func parseSince(s string) (time.Duration, bool) {
	if days, ok := strings.CutSuffix(s, "d"); ok {
		n, err := strconv.Atoi(days)
		if err != nil || n < 1 || n > maxSinceDays || days[0] == '+' {
			return 0, false
		}
		return time.Duration(n) * 24 * time.Hour, true
	}
	d, err := time.ParseDuration(s)
	return d, err == nil && d > 0
}

func (f Filter) limit() int {
	if f.Limit <= 0 {
		return DefaultLimit
	}
	return min(f.Limit, MaxLimit)
}

// since is the filter's lower bound in the records' own ts format, or "".
func (f Filter) since() string {
	if f.Since.IsZero() {
		return ""
	}
	return f.Since.UTC().Format(TSLayout)
}

// RecordMethod is r's method: tools/call for a record written before records named
// their method.
func RecordMethod(r *Record) string {
	if r.Method == "" {
		return methods.ToolsCall
	}
	return r.Method
}

// TSLayout is the format of Record.TS: RFC 3339, UTC, milliseconds. Its strings sort
// in time order.
const TSLayout = "2006-01-02T15:04:05.000Z"

// Match reports whether r passes the filter's status, shadow, tool and since tests.
func (f Filter) Match(r *Record) bool {
	return f.matchScope(r) && f.matchStatus(r)
}

// matchStatus is the status and shadow test: what the tiles count within.
func (f Filter) matchStatus(r *Record) bool {
	if f.ShadowDiffers && (r.Shadow == nil || !r.Shadow.Differs) {
		return false
	}
	return f.Status == "" || r.ActionTaken == f.Status
}

// matchScope is Match without the status test: the scope of the count tiles.
func (f Filter) matchScope(r *Record) bool {
	if f.Tool != "" && r.Tool != f.Tool {
		return false
	}
	if f.Method != "" && RecordMethod(r) != f.Method {
		return false
	}
	if f.EventID != "" && r.EventID != f.EventID {
		return false
	}
	if f.Caller != "" && (r.Caller == nil || r.Caller.UserID != f.Caller && r.Caller.CallerID != f.Caller) {
		return false
	}
	if s := f.since(); s != "" && r.TS < s {
		return false
	}
	return true
}

// Counts are the console's tiles over a filter's tool and since (not its status or
// limit): how many records hold each action.
type Counts struct {
	Total  int `json:"total"`
	Pass   int `json:"pass"`
	Warn   int `json:"warn"`
	Redact int `json:"redact"`
	Mask   int `json:"mask"`
	Block  int `json:"block"`
}

func (c *Counts) add(action vocab.Action, n int) {
	c.Total += n
	switch action {
	case vocab.Warn:
		c.Warn += n
	case vocab.Redact:
		c.Redact += n
	case vocab.Mask:
		c.Mask += n
	case vocab.Block:
		c.Block += n
	default:
		c.Pass += n
	}
}

// Store answers queries over kept records; Ring and SQLite implement it.
type Store interface {
	// Query returns the newest records matching f, newest first.
	Query(ctx context.Context, f Filter) ([]Record, error)
	// Count returns the tiles over f's tool and since.
	Count(ctx context.Context, f Filter) (Counts, error)
}

var (
	_ Store = (*Ring)(nil)
	_ Store = (*SQLite)(nil)
)

// ReadJSONL reads a JSONL audit stream (a file written by --audit-file, or a
// captured stderr) and returns the newest records matching f, newest first, with the
// counts over f's scope. Lines that are not records — log lines, blank lines, a torn
// last line — are skipped: a record is an object with both event_id and kind.
// Lines of any length are read (no 64 KiB token limit).
func ReadJSONL(r io.Reader, f Filter) ([]Record, Counts, error) {
	br := bufio.NewReaderSize(r, 64<<10)
	lim := f.limit()
	ring := make([]Record, 0, min(lim, 1024))
	next := 0 // next slot to overwrite once ring is full
	var c Counts
	for {
		line, err := br.ReadBytes('\n')
		if len(line) > 0 {
			var rec Record
			if json.Unmarshal(line, &rec) == nil && rec.EventID != "" && rec.Kind != "" && f.matchScope(&rec) {
				c.add(rec.ActionTaken, 1)
				if f.matchStatus(&rec) {
					if len(ring) < lim {
						ring = append(ring, rec)
					} else {
						ring[next] = rec
						next = (next + 1) % lim
					}
				}
			}
		}
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, c, fmt.Errorf("audit: read: %w", err)
		}
	}
	out := make([]Record, 0, len(ring))
	for i := len(ring) - 1; i >= 0; i-- { // newest first
		out = append(out, ring[(next+i)%len(ring)])
	}
	return out, c, nil
}
