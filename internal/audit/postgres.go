package audit

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5/stdlib" // registers the "pgx" database/sql driver
)

// IsPostgres reports whether an --audit-db or --db value names PostgreSQL
// (postgres:// or postgresql://) rather than a SQLite file.
func IsPostgres(dsn string) bool {
	return strings.HasPrefix(dsn, "postgres://") || strings.HasPrefix(dsn, "postgresql://")
}

// pgMigrations are the PostgreSQL schema versions, applied in order at start under
// an advisory lock, so replicas starting together migrate once. The table and its
// indexes mirror the SQLite store's (schema), plus the replica that wrote each
// record; ts is the record's TSLayout string, which sorts in time order.
var pgMigrations = []string{
	`CREATE TABLE IF NOT EXISTS mcpgate_records (
		id           BIGSERIAL PRIMARY KEY,
		ts           TEXT    NOT NULL,
		event_id     TEXT    NOT NULL,
		action_taken TEXT    NOT NULL,
		tool         TEXT    NOT NULL,
		blocked      BOOLEAN NOT NULL,
		replica      TEXT    NOT NULL DEFAULT '',
		record       TEXT    NOT NULL
	);
	CREATE INDEX IF NOT EXISTS mcpgate_records_ts     ON mcpgate_records (ts, id);
	CREATE INDEX IF NOT EXISTS mcpgate_records_action ON mcpgate_records (action_taken, ts, id);
	CREATE INDEX IF NOT EXISTS mcpgate_records_tool   ON mcpgate_records (tool, ts, id);`,
	// 2: the look-up by event_id (mcpgate audit show, the console's record view).
	`CREATE INDEX IF NOT EXISTS mcpgate_records_event ON mcpgate_records (event_id);`,
}

// pgLockID is the advisory lock the migration holds ("mcpgate" in ASCII).
const pgLockID = 0x6d63706761746500

// Postgres is an audit store in PostgreSQL (github.com/jackc/pgx/v5), shared by every
// replica: the same records, indexes and queries as the SQLite store. As a Sink it
// batches like SQLite (DefaultBatch rows per transaction, the rest on Flush); as a
// Store it answers Query and Count newest first.
type Postgres struct {
	db    *sql.DB
	batch batch // queued rows: ts, event_id, action_taken, tool, blocked, replica, record
}

// OpenPostgres connects to dsn, applies the migrations, and returns the store for
// writing and reading. Connecting waits at most 10 s.
func OpenPostgres(ctx context.Context, dsn string) (*Postgres, error) {
	db, err := openPG(ctx, dsn)
	if err != nil {
		return nil, err
	}
	if err := migratePG(ctx, db); err != nil {
		db.Close()
		return nil, fmt.Errorf("audit: migrate %s: %w", redactDSN(dsn), err)
	}
	return &Postgres{db: db, batch: batch{db: db, size: DefaultBatch, timeout: 30 * time.Second,
		insert: `INSERT INTO mcpgate_records (ts, event_id, action_taken, tool, blocked, replica, record) VALUES ($1, $2, $3, $4, $5, $6, $7)`}}, nil
}

// OpenPostgresReader connects to a store a gateway created, for `mcpgate audit`.
func OpenPostgresReader(ctx context.Context, dsn string) (*Postgres, error) {
	db, err := openPG(ctx, dsn)
	if err != nil {
		return nil, err
	}
	var ok bool
	if err := db.QueryRowContext(ctx, `SELECT to_regclass('mcpgate_records') IS NOT NULL`).Scan(&ok); err != nil || !ok {
		db.Close()
		if err == nil {
			err = errors.New("no mcpgate_records table: is this the database a gateway writes with --audit-db?")
		}
		return nil, fmt.Errorf("audit: open %s: %w", redactDSN(dsn), err)
	}
	return &Postgres{db: db}, nil
}

func openPG(ctx context.Context, dsn string) (*sql.DB, error) {
	db, err := sql.Open("pgx", dsn)
	if err != nil {
		return nil, fmt.Errorf("audit: open %s: %w", redactDSN(dsn), err)
	}
	db.SetMaxOpenConns(4)
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if err := db.PingContext(ctx); err != nil {
		db.Close()
		return nil, fmt.Errorf("audit: connect %s: %w", redactDSN(dsn), err)
	}
	return db, nil
}

var _ = stdlib.GetDefaultDriver // the import registers the driver

func migratePG(ctx context.Context, db *sql.DB) error {
	conn, err := db.Conn(ctx)
	if err != nil {
		return err
	}
	defer conn.Close()
	if _, err := conn.ExecContext(ctx, `SELECT pg_advisory_lock($1)`, int64(pgLockID)); err != nil {
		return err
	}
	defer conn.ExecContext(context.WithoutCancel(ctx), `SELECT pg_advisory_unlock($1)`, int64(pgLockID))
	if _, err := conn.ExecContext(ctx, `CREATE TABLE IF NOT EXISTS mcpgate_schema (version INTEGER NOT NULL)`); err != nil {
		return err
	}
	var v int
	if err := conn.QueryRowContext(ctx, `SELECT coalesce(max(version), 0) FROM mcpgate_schema`).Scan(&v); err != nil {
		return err
	}
	for ; v < len(pgMigrations); v++ {
		tx, err := conn.BeginTx(ctx, nil)
		if err != nil {
			return err
		}
		if _, err := tx.ExecContext(ctx, pgMigrations[v]); err != nil {
			tx.Rollback()
			return fmt.Errorf("version %d: %w", v+1, err)
		}
		if _, err := tx.ExecContext(ctx, `INSERT INTO mcpgate_schema (version) VALUES ($1)`, v+1); err != nil {
			tx.Rollback()
			return err
		}
		if err := tx.Commit(); err != nil {
			return err
		}
	}
	return nil
}

// redactDSN drops the password from a URL for error messages.
func redactDSN(dsn string) string {
	at := strings.LastIndexByte(dsn, '@')
	scheme := strings.Index(dsn, "://")
	if at < 0 || scheme < 0 || at < scheme {
		return dsn
	}
	user := dsn[scheme+3 : at]
	if i := strings.IndexByte(user, ':'); i >= 0 {
		user = user[:i] + ":xxxxx"
	}
	return dsn[:scheme+3] + user + dsn[at:]
}

// Write queues r and commits when a full batch is queued.
func (s *Postgres) Write(r *Record) error {
	b, err := json.Marshal(r)
	if err != nil {
		return fmt.Errorf("audit: encode record: %w", err)
	}
	return s.batch.add(r.TS, r.EventID, string(r.ActionTaken), r.Tool, r.Blocked, r.Replica, string(b))
}

// Flush commits the queued records in one transaction. On failure the batch is
// dropped and a *BatchError says how many records were lost.
func (s *Postgres) Flush() error { return s.batch.flush() }

// Close commits what is queued and closes the connections.
func (s *Postgres) Close() error {
	return errors.Join(s.Flush(), s.db.Close())
}

// numbered turns the ? placeholders of where's SQL into PostgreSQL's $1, $2, …
func numbered(q string) string {
	var b strings.Builder
	n := 0
	for _, c := range q {
		if c == '?' {
			n++
			b.WriteString("$" + strconv.Itoa(n))
			continue
		}
		b.WriteRune(c)
	}
	return b.String()
}

// pgShadowDiffers is Filter.ShadowDiffers on PostgreSQL's text column.
const pgShadowDiffers = "(record::jsonb -> 'shadow' ->> 'differs') = 'true'"

// pgField is a record JSON field (a dotted path) as PostgreSQL reads the text column.
func pgField(path string) string {
	return "(record::jsonb #>> '{" + strings.ReplaceAll(path, ".", ",") + "}')"
}

// pgWhere is where in PostgreSQL's dialect.
func pgWhere(f Filter, withStatus bool) (string, []any) {
	w, args := whereIn(f, withStatus, pgField)
	return strings.Replace(w, sqliteShadowDiffers, pgShadowDiffers, 1), args
}

// pgQuerySQL is the statement Query runs: SQLite's, on mcpgate_records.
func pgQuerySQL(f Filter) (string, []any) {
	w, args := pgWhere(f, true)
	return numbered(`SELECT record FROM mcpgate_records` + w + ` ORDER BY ts DESC, id DESC LIMIT ?`), append(args, f.limit())
}

// Query returns the newest records matching f, newest first.
func (s *Postgres) Query(ctx context.Context, f Filter) ([]Record, error) {
	q, args := pgQuerySQL(f)
	rows, err := s.db.QueryContext(ctx, q, args...)
	if err != nil {
		return nil, fmt.Errorf("audit: query: %w", err)
	}
	defer rows.Close()
	out := []Record{}
	for rows.Next() {
		var b []byte
		if err := rows.Scan(&b); err != nil {
			return nil, fmt.Errorf("audit: query: %w", err)
		}
		var r Record
		if err := json.Unmarshal(b, &r); err != nil {
			return nil, fmt.Errorf("audit: query: bad record: %w", err)
		}
		out = append(out, r)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("audit: query: %w", err)
	}
	return out, nil
}

// Count returns the tiles over f's tool and since, as SQLite's Count does.
func (s *Postgres) Count(ctx context.Context, f Filter) (Counts, error) {
	c, err := countTiles(ctx, s.db, f, pgWhere, func(w string) string { return numbered(`SELECT count(*) FROM mcpgate_records` + w) })
	if err != nil {
		return Counts{}, fmt.Errorf("audit: count: %w", err)
	}
	return c, nil
}

var _ Store = (*Postgres)(nil)
