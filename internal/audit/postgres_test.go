package audit

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"os"
	"strings"
	"sync"
	"testing"

	"github.com/mcpgate/mcpgate/internal/testsvc"
)

// pgSchemaDSN returns a DSN whose tables live in a fresh schema, dropped at cleanup,
// so tests never see each other's records.
func pgSchemaDSN(t *testing.T, base string) string {
	t.Helper()
	var b [6]byte
	_, _ = rand.Read(b[:])
	schema := "mcpgate_test_" + hex.EncodeToString(b[:])
	db, err := sql.Open("pgx", base)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.Exec(`CREATE SCHEMA ` + schema); err != nil {
		db.Close()
		t.Fatalf("create schema: %v", err)
	}
	t.Cleanup(func() {
		_, _ = db.Exec(`DROP SCHEMA ` + schema + ` CASCADE`)
		db.Close()
	})
	sep := "?"
	if strings.Contains(base, "?") {
		sep = "&"
	}
	return base + sep + "search_path=" + schema
}

// pgStore opens a PostgreSQL store in a fresh schema when MCPGATE_TEST_POSTGRES_URL
// is set; nil otherwise (TestAuditPostgres reports the skip).
func pgStore(t *testing.T) *Postgres {
	t.Helper()
	base := os.Getenv("MCPGATE_TEST_POSTGRES_URL")
	if base == "" {
		return nil
	}
	s, err := OpenPostgres(context.Background(), pgSchemaDSN(t, base))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// TestAuditPostgres proves the PostgreSQL store migrates once when replicas start
// together, keeps each record's replica, and is read back by the reader
// `mcpgate audit --db postgres://…` opens. TestAuditStoresAgree and
// TestAuditRoundTrip run their queries on it too.
func TestAuditPostgres(t *testing.T) {
	dsn := pgSchemaDSN(t, testsvc.PostgresURL(t))
	ctx := context.Background()
	var wg sync.WaitGroup
	stores := make([]*Postgres, 4)
	errs := make([]error, 4)
	for i := range stores {
		wg.Add(1)
		go func() { defer wg.Done(); stores[i], errs[i] = OpenPostgres(ctx, dsn) }()
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Fatalf("replica %d: %v", i, err)
		}
		defer stores[i].Close()
	}
	var versions int
	if err := stores[0].db.QueryRow(`SELECT count(*) FROM mcpgate_schema`).Scan(&versions); err != nil || versions != len(pgMigrations) {
		t.Fatalf("%d schema versions recorded (%v), want %d", versions, err, len(pgMigrations))
	}
	for i, s := range stores[:2] {
		r := corpus()[i]
		r.Replica = []string{"a", "b"}[i]
		if err := s.Write(r); err != nil {
			t.Fatal(err)
		}
		if err := s.Flush(); err != nil {
			t.Fatal(err)
		}
	}
	rd, err := OpenPostgresReader(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer rd.Close()
	got, err := rd.Query(ctx, Filter{})
	if err != nil || len(got) != 2 || got[0].Replica != "b" || got[1].Replica != "a" {
		t.Fatalf("read back %+v, %v; want replicas b then a", got, err)
	}
	var col string
	if err := rd.db.QueryRow(`SELECT string_agg(replica, ',' ORDER BY id) FROM mcpgate_records`).Scan(&col); err != nil || col != "a,b" {
		t.Fatalf("replica column %q (%v)", col, err)
	}
	if _, err := OpenPostgresReader(ctx, pgSchemaDSN(t, testsvc.PostgresURL(t))); err == nil {
		t.Fatal("the reader opened a database without the records table")
	}
}

func TestRedactDSN(t *testing.T) {
	for in, want := range map[string]string{
		"postgres://u:secret@h:5432/db":     "postgres://u:xxxxx@h:5432/db",
		"postgres://u@h/db":                 "postgres://u@h/db",
		"postgresql://h/db?sslmode=disable": "postgresql://h/db?sslmode=disable",
	} {
		if got := redactDSN(in); got != want {
			t.Errorf("redactDSN(%q) = %q, want %q", in, got, want)
		}
	}
}
