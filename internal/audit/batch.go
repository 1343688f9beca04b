package audit

import (
	"context"
	"database/sql"
	"time"
)

// batch queues rows for one INSERT and commits them in one transaction once size rows
// are queued, or on flush; the SQLite and PostgreSQL stores share it. It is used from
// one goroutine (the sink's writer).
type batch struct {
	db      *sql.DB
	insert  string        // the INSERT statement, one placeholder per column
	timeout time.Duration // bounds one commit; 0 means none
	size    int
	rows    [][]any
}

// add queues row and commits the batch when it is full.
func (b *batch) add(row ...any) error {
	b.rows = append(b.rows, row)
	if len(b.rows) >= b.size {
		return b.flush()
	}
	return nil
}

// flush commits the queued rows in one transaction. On failure the rows are dropped
// and a *BatchError says how many records were lost.
func (b *batch) flush() error {
	if len(b.rows) == 0 {
		return nil
	}
	rows := b.rows
	b.rows = b.rows[:0] // reused only after commit returns: one goroutine
	if err := b.commit(rows); err != nil {
		return &BatchError{N: len(rows), Err: err}
	}
	return nil
}

func (b *batch) commit(rows [][]any) error {
	ctx := context.Background()
	if b.timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, b.timeout)
		defer cancel()
	}
	tx, err := b.db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	st, err := tx.PrepareContext(ctx, b.insert)
	if err != nil {
		tx.Rollback()
		return err
	}
	for _, row := range rows {
		if _, err := st.ExecContext(ctx, row...); err != nil {
			st.Close()
			tx.Rollback()
			return err
		}
	}
	st.Close()
	return tx.Commit()
}
