package audit

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"os"
	"strings"

	_ "modernc.org/sqlite" // pure Go driver "sqlite"; no cgo

	"github.com/mcpgate/mcpgate/vocab"
)

// schema is the store's layout. The record column holds the record's JSON exactly as
// the JSONL sink writes it; the other columns are copies kept for the indexes.
// ts strings sort in time order (TSLayout), so "newest first" is ORDER BY ts DESC.
// Each index is (column, ts) with the rowid implied last, so ORDER BY ts DESC, id DESC
// walks an index backwards with no sort; Count runs one index-only range count per
// action over records_action.
const schema = `
CREATE TABLE IF NOT EXISTS records (
	id           INTEGER PRIMARY KEY,
	ts           TEXT    NOT NULL,
	event_id     TEXT    NOT NULL,
	action_taken TEXT    NOT NULL,
	tool         TEXT    NOT NULL,
	blocked      INTEGER NOT NULL,
	record       TEXT    NOT NULL
);
CREATE INDEX IF NOT EXISTS records_ts     ON records (ts);
CREATE INDEX IF NOT EXISTS records_action ON records (action_taken, ts);
CREATE INDEX IF NOT EXISTS records_tool   ON records (tool, ts);
CREATE INDEX IF NOT EXISTS records_event  ON records (event_id);
`

// DefaultBatch is how many records one insert transaction holds at most.
const DefaultBatch = 512

// SQLite is an embedded audit store (modernc.org/sqlite, pure Go). As a Sink it
// batches: Write queues a record and commits when DefaultBatch are queued, and Flush
// (called by the Emitter whenever its buffer empties) commits the rest, so inserts
// run in transactions off the hot path. As a Store it answers queries, newest first,
// through the indexes on ts, (action_taken, ts) and (tool, ts).
//
// Write and Flush are called from one goroutine; Query and Count are safe alongside
// them (WAL mode lets readers run while a batch commits).
type SQLite struct {
	db    *sql.DB
	path  string
	batch batch // queued rows: ts, event_id, action_taken, tool, blocked, record
}

// OpenSQLite opens (creating if needed) the store at path for writing and reading.
// A new store is created with mode 0600, like the JSONL file; SQLite gives its WAL
// and shared-memory files the same mode.
func OpenSQLite(path string) (*SQLite, error) {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("audit: open %s: %w", path, err)
	}
	_ = f.Close()
	db, err := sql.Open("sqlite", dsn(path, false))
	if err != nil {
		return nil, fmt.Errorf("audit: open %s: %w", path, err)
	}
	if _, err := db.Exec(schema); err != nil {
		db.Close()
		return nil, fmt.Errorf("audit: open %s: %w", path, err)
	}
	return &SQLite{db: db, path: path, batch: batch{db: db, size: DefaultBatch,
		insert: `INSERT INTO records (ts, event_id, action_taken, tool, blocked, record) VALUES (?, ?, ?, ?, ?, ?)`}}, nil
}

// OpenSQLiteReader opens an existing store read-only, for `mcpgate audit`.
func OpenSQLiteReader(path string) (*SQLite, error) {
	db, err := sql.Open("sqlite", dsn(path, true))
	if err != nil {
		return nil, fmt.Errorf("audit: open %s: %w", path, err)
	}
	// A read-only open of a missing file fails only at first use; check now.
	var n int
	if err := db.QueryRow(`SELECT count(*) FROM sqlite_master WHERE name = 'records'`).Scan(&n); err != nil {
		db.Close()
		return nil, fmt.Errorf("audit: open %s: %w", path, err)
	}
	if n == 0 {
		db.Close()
		return nil, fmt.Errorf("audit: %s is not an mcpgate audit store (no records table)", path)
	}
	return &SQLite{db: db, path: path}, nil
}

func dsn(path string, readOnly bool) string {
	q := url.Values{}
	q.Add("_pragma", "busy_timeout(5000)")
	if readOnly {
		q.Add("mode", "ro")
	} else {
		q.Add("_pragma", "journal_mode(WAL)")
		q.Add("_pragma", "synchronous(NORMAL)")
	}
	return "file:" + (&url.URL{Path: path}).EscapedPath() + "?" + q.Encode()
}

// Write queues r and commits when a full batch is queued.
func (s *SQLite) Write(r *Record) error {
	b, err := json.Marshal(r)
	if err != nil {
		return fmt.Errorf("audit: encode record: %w", err)
	}
	blocked := 0
	if r.Blocked {
		blocked = 1
	}
	return s.batch.add(r.TS, r.EventID, string(r.ActionTaken), r.Tool, blocked, string(b))
}

// Flush commits the queued records in one transaction. On failure the batch is
// dropped and a *BatchError says how many records were lost.
func (s *SQLite) Flush() error { return s.batch.flush() }

// Close commits what is queued and closes the database.
func (s *SQLite) Close() error {
	return errors.Join(s.Flush(), s.db.Close())
}

// sqliteShadowDiffers is Filter.ShadowDiffers in SQLite; Postgres swaps in its own.
const sqliteShadowDiffers = "json_extract(record, '$.shadow.differs') = 1"

// sqliteField is a record JSON field (a dotted path) as SQLite reads it.
func sqliteField(path string) string { return "json_extract(record, '$." + path + "')" }

// where builds the WHERE clause of f in SQLite's dialect; withStatus false leaves
// the status and the shadow test out.
func where(f Filter, withStatus bool) (string, []any) { return whereIn(f, withStatus, sqliteField) }

// whereIn is where with the record's JSON fields read by field (the store's dialect).
func whereIn(f Filter, withStatus bool, field func(path string) string) (string, []any) {
	var conds []string
	var args []any
	if withStatus && f.Status != "" {
		conds, args = append(conds, "action_taken = ?"), append(args, string(f.Status))
	}
	if withStatus && f.ShadowDiffers {
		conds = append(conds, sqliteShadowDiffers)
	}
	if f.Tool != "" {
		conds, args = append(conds, "tool = ?"), append(args, f.Tool)
	}
	if f.Method != "" { // the record's JSON: no column, so stores from before keep working
		conds, args = append(conds, "coalesce(nullif("+field("method")+", ''), 'tools/call') = ?"), append(args, f.Method)
	}
	if f.EventID != "" {
		conds, args = append(conds, "event_id = ?"), append(args, f.EventID)
	}
	if f.Caller != "" {
		conds, args = append(conds, "("+field("caller.user_id")+" = ? OR "+field("caller.caller_id")+" = ?)"), append(args, f.Caller, f.Caller)
	}
	if s := f.since(); s != "" {
		conds, args = append(conds, "ts >= ?"), append(args, s)
	}
	if len(conds) == 0 {
		return "", nil
	}
	return " WHERE " + strings.Join(conds, " AND "), args
}

// querySQL is the statement Query runs, exposed to the query-plan test.
func querySQL(f Filter) (string, []any) {
	w, args := where(f, true)
	return `SELECT record FROM records` + w + ` ORDER BY ts DESC, id DESC LIMIT ?`, append(args, f.limit())
}

// Query returns the newest records matching f, newest first.
func (s *SQLite) Query(ctx context.Context, f Filter) ([]Record, error) {
	q, args := querySQL(f)
	rows, err := s.db.QueryContext(ctx, q, args...)
	if err != nil {
		return nil, fmt.Errorf("audit: query %s: %w", s.path, err)
	}
	defer rows.Close()
	out := []Record{}
	for rows.Next() {
		var b []byte
		if err := rows.Scan(&b); err != nil {
			return nil, fmt.Errorf("audit: query %s: %w", s.path, err)
		}
		var r Record
		if err := json.Unmarshal(b, &r); err != nil {
			return nil, fmt.Errorf("audit: query %s: bad record: %w", s.path, err)
		}
		out = append(out, r)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("audit: query %s: %w", s.path, err)
	}
	return out, nil
}

// Count returns the tiles over f's tool and since: one count per action, each a range
// over records_action (index-only unless a tool is given), and the total; records
// with an action off the ladder count as pass, as Counts does elsewhere.
func (s *SQLite) Count(ctx context.Context, f Filter) (Counts, error) {
	c, err := countTiles(ctx, s.db, f, where, func(w string) string { return `SELECT count(*) FROM records` + w })
	if err != nil {
		return Counts{}, fmt.Errorf("audit: count %s: %w", s.path, err)
	}
	return c, nil
}

// countTiles runs Count's queries, each built by stmt from a WHERE clause: the total
// over f, then one count per action over f's tool and since; pass is the rest.
func countTiles(ctx context.Context, db *sql.DB, f Filter, where func(Filter, bool) (string, []any), stmt func(where string) string) (Counts, error) {
	var c Counts
	w, args := where(f, false)
	if err := db.QueryRowContext(ctx, stmt(w), args...).Scan(&c.Total); err != nil {
		return Counts{}, err
	}
	for _, a := range []struct {
		action vocab.Action
		n      *int
	}{{vocab.Warn, &c.Warn}, {vocab.Redact, &c.Redact}, {vocab.Mask, &c.Mask}, {vocab.Block, &c.Block}} {
		g := f
		g.Status, g.ShadowDiffers = a.action, false // the tiles' scope is tool and since
		w, args := where(g, true)
		if err := db.QueryRowContext(ctx, stmt(w), args...).Scan(a.n); err != nil {
			return Counts{}, err
		}
	}
	c.Pass = c.Total - c.Warn - c.Redact - c.Mask - c.Block
	return c, nil
}
