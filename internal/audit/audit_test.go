package audit

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"maps"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/mcpgate/mcpgate/vocab"
)

var update = flag.Bool("update", false, "rewrite golden files under testdata/")

// rec builds a record the way the pipeline does, at minute i after base.
func rec(i int, action vocab.Action, tool string) *Record {
	ts := time.Date(2026, 11, 29, 10, 0, 0, 0, time.UTC).Add(time.Duration(i) * time.Minute)
	r := &Record{
		TS: ts.Format(TSLayout), Kind: KindGateway, Decision: "allow",
		EventID: fmt.Sprintf("00000000-0000-4000-8000-%012d", i), RuleIDs: []string{},
		HighestSeverity: "NONE", ActionTaken: action, Blocked: action == vocab.Block,
		GuardrailsTriggered: []string{}, Filter: "on", Tool: tool, Outcome: vocab.OutcomeOK,
		ToolCalls: []ToolCall{{Name: tool, Arguments: map[string]any{}, RBAC: RBAC{Action: action}}},
		StageMS:   map[vocab.Stage]float64{"upstream": 1.5, "post_policies": 0.25},
	}
	if action != vocab.Pass {
		r.GuardrailsTriggered = []string{GuardrailOutputSanitization}
	}
	if action == vocab.Block {
		r.Decision, r.RuleIDs, r.Reason = "block", []string{"output_osc52_clipboard_write"}, "filter_block"
	}
	return r
}

// corpus is 12 records over three tools and every action.
func corpus() []*Record {
	actions := []vocab.Action{vocab.Pass, vocab.Warn, vocab.Redact, vocab.Mask, vocab.Block, vocab.Pass}
	tools := []string{"read_file", "customer_profile_get", "kyc_check"}
	var out []*Record
	for i := range 12 {
		r := rec(i, actions[i%len(actions)], tools[i%len(tools)])
		if i%3 == 0 { // a --shadow run: records 3 and 9 differ, 0 and 6 agree
			r.Shadow = &Shadow{ActionTaken: r.ActionTaken, PolicySetHash: "h", Differs: i%2 == 1}
		}
		switch i % 4 { // callers: alice by claude-code, bob by ci-bot, the local user, none
		case 0:
			r.Caller = &Caller{UserID: "alice", CallerID: "claude-code", CallerClass: "trusted"}
		case 1:
			r.Caller = &Caller{UserID: "bob", CallerID: "ci-bot", CallerClass: "standard"}
		case 2:
			r.Caller = &Caller{UserID: "local", CallerID: "stdio"}
		}
		out = append(out, r)
	}
	return out
}

var now = time.Date(2026, 11, 29, 10, 12, 0, 0, time.UTC)

func TestAuditParseFilter(t *testing.T) {
	for _, tc := range []struct {
		name, status, tool, since, limit string
		want                             Filter
		err                              bool
	}{
		{name: "empty", want: Filter{Limit: DefaultLimit}},
		{name: "all", status: "redact", tool: "t", since: "1h", limit: "5", want: Filter{Status: "redact", Tool: "t", Since: now.Add(-time.Hour), Limit: 5}},
		{name: "mask", status: "mask", want: Filter{Status: "mask", Limit: DefaultLimit}},
		{name: "bad status", status: "allow", err: true},
		{name: "upper status", status: "BLOCK", want: Filter{Status: "block", Limit: DefaultLimit}},
		{name: "table label", status: "redacted", want: Filter{Status: "redact", Limit: DefaultLimit}},
		{name: "table label upper", status: "MASKED", want: Filter{Status: "mask", Limit: DefaultLimit}},
		{name: "bad since", since: "yesterday", err: true},
		{name: "negative since", since: "-1h", err: true},
		{name: "days", since: "7d", want: Filter{Since: now.Add(-7 * 24 * time.Hour), Limit: DefaultLimit}},
		{name: "zero days", since: "0d", err: true},
		{name: "negative days", since: "-7d", err: true},
		{name: "signed days", since: "+7d", err: true},
		{name: "fractional days", since: "1.5d", err: true},
		{name: "bare d", since: "d", err: true},
		{name: "too many days", since: "36501d", err: true},
		{name: "zero limit", limit: "0", err: true},
		{name: "huge limit", limit: "10001", err: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := ParseFilter(tc.status, tc.tool, tc.since, tc.limit, now)
			if tc.err {
				if !errors.Is(err, ErrBadFilter) {
					t.Fatalf("err = %v, want ErrBadFilter", err)
				}
				return
			}
			if err != nil || !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("got %+v, %v; want %+v", got, err, tc.want)
			}
		})
	}
}

// stores fills a Ring, a SQLite store and a JSONL file with the same records.
func stores(t *testing.T, recs []*Record) map[string]func(Filter) ([]Record, Counts) {
	t.Helper()
	dir := t.TempDir()
	ring := NewRing(100)
	db, err := OpenSQLite(filepath.Join(dir, "audit.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	var jsonl bytes.Buffer
	js := NewJSONL(&jsonl)
	jsonl.WriteString(`{"time":"x","level":"INFO","msg":"a log line, not a record"}` + "\n")
	for _, r := range recs {
		ring.Add(r)
		if err := db.Write(r); err != nil {
			t.Fatal(err)
		}
		if err := js.Write(r); err != nil {
			t.Fatal(err)
		}
	}
	if err := db.Flush(); err != nil {
		t.Fatal(err)
	}
	pg := pgStore(t) // nil without MCPGATE_TEST_POSTGRES_URL
	if pg != nil {
		for _, r := range recs {
			if err := pg.Write(r); err != nil {
				t.Fatal(err)
			}
		}
		if err := pg.Flush(); err != nil {
			t.Fatal(err)
		}
	}
	jsonl.WriteString(`{"event_id":"torn`) // a torn last line is skipped
	ctx := context.Background()
	store := func(s Store) func(Filter) ([]Record, Counts) {
		return func(f Filter) ([]Record, Counts) {
			got, err := s.Query(ctx, f)
			if err != nil {
				t.Fatal(err)
			}
			c, err := s.Count(ctx, f)
			if err != nil {
				t.Fatal(err)
			}
			return got, c
		}
	}
	out := map[string]func(Filter) ([]Record, Counts){
		"ring":   store(ring),
		"sqlite": store(db),
		"jsonl": func(f Filter) ([]Record, Counts) {
			got, c, err := ReadJSONL(bytes.NewReader(jsonl.Bytes()), f)
			if err != nil {
				t.Fatal(err)
			}
			return got, c
		},
	}
	if pg != nil {
		out["postgres"] = store(pg)
	}
	return out
}

// TestAuditStoresAgree proves the three readers answer every filter alike: newest
// first, exact status match (redact is its own status), tool, since and limit.
func TestAuditStoresAgree(t *testing.T) {
	ss := stores(t, corpus())
	for _, tc := range []struct {
		name   string
		f      Filter
		want   []int // record indexes, newest first
		counts Counts
	}{
		{"all", Filter{}, []int{11, 10, 9, 8, 7, 6, 5, 4, 3, 2, 1, 0}, Counts{Total: 12, Pass: 4, Warn: 2, Redact: 2, Mask: 2, Block: 2}},
		{"redact", Filter{Status: vocab.Redact}, []int{8, 2}, Counts{Total: 12, Pass: 4, Warn: 2, Redact: 2, Mask: 2, Block: 2}},
		{"block", Filter{Status: vocab.Block}, []int{10, 4}, Counts{Total: 12, Pass: 4, Warn: 2, Redact: 2, Mask: 2, Block: 2}},
		{"tool", Filter{Tool: "kyc_check"}, []int{11, 8, 5, 2}, Counts{Total: 4, Pass: 2, Redact: 2}},
		{"tool+status", Filter{Tool: "kyc_check", Status: vocab.Pass}, []int{11, 5}, Counts{Total: 4, Pass: 2, Redact: 2}},
		{"since", Filter{Since: now.Add(-3 * time.Minute)}, []int{11, 10, 9}, Counts{Total: 3, Pass: 1, Mask: 1, Block: 1}},
		{"limit", Filter{Limit: 2}, []int{11, 10}, Counts{Total: 12, Pass: 4, Warn: 2, Redact: 2, Mask: 2, Block: 2}},
		{"none", Filter{Tool: "nope"}, nil, Counts{}},
		{"shadow differs", Filter{ShadowDiffers: true}, []int{9, 3}, Counts{Total: 12, Pass: 4, Warn: 2, Redact: 2, Mask: 2, Block: 2}},
		{"shadow differs+status", Filter{ShadowDiffers: true, Status: vocab.Mask}, []int{9, 3}, Counts{Total: 12, Pass: 4, Warn: 2, Redact: 2, Mask: 2, Block: 2}},
		{"shadow differs+tool", Filter{ShadowDiffers: true, Tool: "read_file"}, []int{9, 3}, Counts{Total: 4, Pass: 2, Mask: 2}},
		{"caller by user_id", Filter{Caller: "alice"}, []int{8, 4, 0}, Counts{Total: 3, Pass: 1, Redact: 1, Block: 1}},
		{"caller by caller_id", Filter{Caller: "ci-bot"}, []int{9, 5, 1}, Counts{Total: 3, Pass: 1, Warn: 1, Mask: 1}},
		{"caller+status", Filter{Caller: "alice", Status: vocab.Block}, []int{4}, Counts{Total: 3, Pass: 1, Redact: 1, Block: 1}},
		{"caller none", Filter{Caller: "claude"}, nil, Counts{}},
		{"event id", Filter{EventID: "00000000-0000-4000-8000-000000000007"}, []int{7}, Counts{Total: 1, Warn: 1}},
		// PostgreSQL reads the record's JSON in its own dialect (json_extract is SQLite's).
		{"method", Filter{Method: "tools/call", Limit: 2}, []int{11, 10}, Counts{Total: 12, Pass: 4, Warn: 2, Redact: 2, Mask: 2, Block: 2}},
		{"event id unknown", Filter{EventID: "00000000-0000-4000-8000-000000000099"}, nil, Counts{}},
	} {
		for name, q := range ss {
			t.Run(tc.name+"/"+name, func(t *testing.T) {
				got, c := q(tc.f)
				var idx []int
				for _, r := range got {
					var i int
					fmt.Sscanf(r.EventID[len(r.EventID)-12:], "%d", &i)
					idx = append(idx, i)
				}
				if !reflect.DeepEqual(idx, tc.want) {
					t.Errorf("records %v, want %v", idx, tc.want)
				}
				if c != tc.counts {
					t.Errorf("counts %+v, want %+v", c, tc.counts)
				}
			})
		}
	}
}

// TestAuditRoundTrip proves a record read back from SQLite or JSONL equals the
// record written: the store keeps the JSON line as the sink wrote it.
func TestAuditRoundTrip(t *testing.T) {
	want := corpus()[4]
	for name, q := range stores(t, []*Record{want}) {
		got, _ := q(Filter{})
		if len(got) != 1 || !reflect.DeepEqual(&got[0], want) {
			t.Errorf("%s: got %+v\nwant %+v", name, got, want)
		}
	}
}

// TestAuditRingEvicts proves the ring keeps only the newest N.
func TestAuditRingEvicts(t *testing.T) {
	g := NewRing(3)
	for _, r := range corpus() {
		g.Add(r)
	}
	got, _ := g.Query(context.Background(), Filter{})
	if len(got) != 3 || got[0].EventID != corpus()[11].EventID || got[2].EventID != corpus()[9].EventID {
		t.Fatalf("ring kept %v", got)
	}
}

// TestAuditQueryPlan proves the reader's status and tool queries are answered from an
// index in ts order, with no table scan and no sort: the shape behind the
// "newest 100 of 1M under 50 ms" benchmark.
func TestAuditQueryPlan(t *testing.T) {
	db, err := OpenSQLite(filepath.Join(t.TempDir(), "a.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	for _, tc := range []struct {
		f     Filter
		index string
	}{
		{Filter{Status: vocab.Redact, Limit: 100}, "records_action"},
		{Filter{Status: vocab.Block, Since: now, Limit: 100}, "records_action"},
		{Filter{Tool: "x", Limit: 100}, "records_tool"},
		{Filter{Limit: 100}, "records_ts"},
		{Filter{Since: now, Limit: 100}, "records_ts"},
	} {
		plan, err := db.queryPlan(tc.f)
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(plan, tc.index) || strings.Contains(plan, "TEMP B-TREE") || strings.Contains(plan, "SCAN records\n") || plan == "SCAN records" {
			t.Errorf("filter %+v: plan %q, want index %s and no sort", tc.f, plan, tc.index)
		}
	}
}

// TestAuditSQLiteReader proves the read-only open refuses a file that is not a store.
func TestAuditSQLiteReader(t *testing.T) {
	dir := t.TempDir()
	if _, err := OpenSQLiteReader(filepath.Join(dir, "missing.db")); err == nil {
		t.Error("missing file: no error")
	}
	other := filepath.Join(dir, "other.db")
	os.WriteFile(other, nil, 0o600)
	if _, err := OpenSQLiteReader(other); err == nil || !strings.Contains(err.Error(), "not an mcpgate audit store") {
		t.Errorf("empty file: err = %v", err)
	}
}

// logBuf captures log lines.
type logBuf struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *logBuf) Write(p []byte) (int, error) { l.mu.Lock(); defer l.mu.Unlock(); return l.b.Write(p) }
func (l *logBuf) String() string              { l.mu.Lock(); defer l.mu.Unlock(); return l.b.String() }

type failSink struct{ panics bool }

func (f failSink) Write(*Record) error {
	if f.panics {
		panic("boom")
	}
	return errors.New("disk full")
}
func (failSink) Close() error { return nil }

// TestAuditFailingSink proves a failing (or panicking) sink never fails or stalls
// Emit, that its failures are counted per record, exactly, that the healthy sink
// still gets every record, and that the failure log is rate-limited (a full disk
// gave one ERROR line per record: thousands in seconds).
func TestAuditFailingSink(t *testing.T) {
	const n = 2000
	for _, panics := range []bool{false, true} {
		var logs logBuf
		ring := NewRing(n)
		e := NewEmitter(slog.New(slog.NewTextHandler(&logs, nil)), n, failSink{panics}, ring)
		for i := range n {
			e.Emit(corpus()[i%5])
		}
		if err := e.Close(context.Background()); err != nil {
			t.Fatal(err)
		}
		st := e.Stats()
		if st.Errors != n || st.Written != 0 || st.Dropped != 0 {
			t.Errorf("panics=%v: stats %+v, want %d errors", panics, st, n)
		}
		if got, _ := ring.Query(context.Background(), Filter{Limit: n}); len(got) != n {
			t.Errorf("healthy sink got %d records, want %d", len(got), n)
		}
		// One line per LogEvery (10 s): a run this short logs once, maybe twice.
		if c := strings.Count(logs.String(), "audit sink failed"); c < 1 || c > 2 {
			t.Errorf("logged %d sink failure lines for %d failures, want 1 (rate-limited):\n%s", c, n, logs.String())
		}
	}
}

// TestAuditLogLimiter proves the limiter lets one line through per interval and
// reports exactly how many it held back.
func TestAuditLogLimiter(t *testing.T) {
	l := logLimiter{every: time.Hour}
	if ok, quiet := l.allow(); !ok || quiet != 0 {
		t.Fatalf("first line: %v %d", ok, quiet)
	}
	for range 7 {
		if ok, _ := l.allow(); ok {
			t.Fatal("a second line within the interval was allowed")
		}
	}
	l.last = l.last.Add(-2 * time.Hour)
	if ok, quiet := l.allow(); !ok || quiet != 7 {
		t.Fatalf("after the interval: %v, %d suppressed; want true, 7", ok, quiet)
	}
}

// gateSink blocks every Write until release is closed; got says a write started.
type gateSink struct {
	got     chan struct{}
	release chan struct{}
	once    sync.Once
}

func (g *gateSink) Write(*Record) error {
	g.once.Do(func() { close(g.got) })
	<-g.release
	return nil
}
func (*gateSink) Close() error { return nil }

// TestAuditOverflow proves a full buffer drops (never blocks), counts each drop, and
// says so in a log line, and that every record accepted is still written on Close.
func TestAuditOverflow(t *testing.T) {
	var logs logBuf
	g := &gateSink{got: make(chan struct{}), release: make(chan struct{})}
	e := NewEmitter(slog.New(slog.NewJSONHandler(&logs, nil)), 2, g)
	recs := corpus()
	e.Emit(recs[0])
	<-g.got // the loop holds record 0; the buffer (2) is empty
	for _, r := range recs[1:6] {
		e.Emit(r) // 1 and 2 fit; 3, 4, 5 overflow
	}
	st := e.Stats()
	if st.Dropped != 3 || st.Queued != 2 || st.Cap != 2 {
		t.Errorf("stats %+v, want 3 dropped, 2 queued", st)
	}
	close(g.release)
	if err := e.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	if st := e.Stats(); st.Written != 3 || st.Dropped != 3 {
		t.Errorf("after close: %+v, want 3 written, 3 dropped", st)
	}
	if n := strings.Count(logs.String(), "audit buffer full: record dropped"); n != 1 {
		t.Errorf("logged %d drop lines, want 1 (rate-limited):\n%s", n, logs.String())
	}
	e.Emit(recs[6]) // after Close: dropped and counted, no panic
	if e.Stats().Dropped != 4 {
		t.Error("emit after close not counted as dropped")
	}
}

type batchFail struct{ n int }

func (b *batchFail) Write(*Record) error { b.n++; return nil }
func (b *batchFail) Flush() error {
	n := b.n
	b.n = 0
	if n == 0 {
		return nil
	}
	return &BatchError{N: n, Err: errors.New("database is locked")}
}
func (*batchFail) Close() error { return nil }

// TestAuditBatchFailure proves a batching sink's failed flush moves every record of
// the lost batch from written to errors.
func TestAuditBatchFailure(t *testing.T) {
	var logs logBuf
	e := NewEmitter(slog.New(slog.NewTextHandler(&logs, nil)), 64, &batchFail{})
	for _, r := range corpus() {
		e.Emit(r)
	}
	e.Close(context.Background())
	if st := e.Stats(); st.Errors != 12 || st.Written != 0 {
		t.Errorf("stats %+v, want 12 errors", st)
	}
	if !strings.Contains(logs.String(), "records_lost") {
		t.Errorf("no flush failure logged:\n%s", logs.String())
	}
}

// TestAuditSQLiteFlushOnClose proves Close stores every buffered record (the gateway
// closes the emitter on SIGTERM), including a partial batch.
func TestAuditSQLiteFlushOnClose(t *testing.T) {
	path := filepath.Join(t.TempDir(), "a.db")
	db, err := OpenSQLite(path)
	if err != nil {
		t.Fatal(err)
	}
	e := NewEmitter(slog.New(slog.DiscardHandler), 0, db)
	const n = DefaultBatch*2 + 7
	for i := range n {
		e.Emit(rec(i, vocab.Pass, "t"))
	}
	if err := e.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	r, err := OpenSQLiteReader(path)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	c, err := r.Count(context.Background(), Filter{})
	if err != nil || c.Total != n {
		t.Fatalf("stored %d (%v), want %d", c.Total, err, n)
	}
}

// TestAuditRotate proves the rotating file sink rolls over past its size and keeps
// writing whole lines.
func TestAuditRotate(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "audit.jsonl")
	s, err := NewRotatingFile(path, 1, 2)
	if err != nil {
		t.Fatal(err)
	}
	r := rec(0, vocab.Pass, strings.Repeat("t", 2000))
	for range 700 { // ~1.5 MB
		if err := s.Write(r); err != nil {
			t.Fatal(err)
		}
	}
	s.Close()
	files, _ := filepath.Glob(filepath.Join(dir, "audit*.jsonl"))
	if len(files) < 2 {
		t.Fatalf("files %v, want a rotated backup", files)
	}
	for _, f := range files {
		b, _ := os.ReadFile(f)
		if _, _, err := ReadJSONL(bytes.NewReader(b), Filter{}); err != nil || !bytes.HasSuffix(b, []byte("\n")) {
			t.Errorf("%s: not whole JSONL lines", f)
		}
	}
	if _, err := NewRotatingFile(filepath.Join(dir, "no", "such", "a.jsonl"), 1, 1); err == nil {
		t.Error("missing directory: no error")
	}
	if _, err := NewRotatingFile(path, 0, 1); err == nil {
		t.Error("0 MB: no error")
	}
}

// TestAuditRecordFields pins the JSON keys a record may carry. A new key must be added
// here on purpose, after checking it can never hold an argument or content value.
func TestAuditRecordFields(t *testing.T) {
	r := rec(0, vocab.Block, "t")
	r.AgentOrigin, r.Reason, r.Policy = &Origin{Kind: "gateway"}, "filter_block", "p.js"
	r.InputRuleIDs, r.Policies = []string{"x"}, []string{"p.js"}
	r.Caller, r.ClientInfo, r.AuditOutput = &Caller{UserID: "u"}, map[string]string{"name": "c"}, "off"
	r.PolicyRevision = "7"
	b, _ := json.Marshal(r)
	var m map[string]any
	json.Unmarshal(b, &m)
	keys := slices.Sorted(maps.Keys(m))
	golden(t, "record-keys.golden", []byte(strings.Join(keys, "\n")+"\n"))
}

// TestAuditTable pins `mcpgate audit --format table`: a redaction reads REDACTED,
// never PASS.
func TestAuditTable(t *testing.T) {
	var recs []Record
	for _, r := range corpus()[:6] {
		recs = append(recs, *r)
	}
	var b bytes.Buffer
	if err := WriteTable(&b, recs); err != nil {
		t.Fatal(err)
	}
	golden(t, "table.golden", b.Bytes())
	for _, want := range []string{"PASS", "WARN", "REDACTED", "MASKED", "BLOCKED"} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("table lacks %s", want)
		}
	}
}

func golden(t *testing.T, name string, got []byte) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *update {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test -update)", err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("%s differs (go test -update to accept):\ngot:\n%s\nwant:\n%s", name, got, want)
	}
}

// TestFilesAre0600: every file that holds records is created owner-only, the SQLite
// store and its WAL as the JSONL file.
func TestFilesAre0600(t *testing.T) {
	old := syscall.Umask(0o022)
	defer syscall.Umask(old)
	dir := t.TempDir()
	db, err := OpenSQLite(filepath.Join(dir, "audit.db"))
	if err != nil {
		t.Fatal(err)
	}
	if err := db.Write(rec(1, vocab.Redact, "t")); err != nil {
		t.Fatal(err)
	}
	if err := db.Flush(); err != nil {
		t.Fatal(err)
	}
	js, err := OpenJSONLFile(filepath.Join(dir, "audit.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	js.Close()
	ents, _ := os.ReadDir(dir)
	for _, e := range ents {
		info, err := e.Info()
		if err != nil {
			t.Fatal(err)
		}
		if perm := info.Mode().Perm(); perm != 0o600 {
			t.Errorf("%s: mode %v, want 0600", e.Name(), perm)
		}
	}
	db.Close()
	if len(ents) < 3 {
		t.Errorf("only %d files: %v", len(ents), ents)
	}
}

// TestMethodFilter: --method selects records by JSON-RPC method in every store; a
// record without a method (written before records named one) is a tools/call.
func TestMethodFilter(t *testing.T) {
	recs := []*Record{rec(0, vocab.Pass, "a"), rec(1, vocab.Block, ""), rec(2, vocab.Warn, ""), rec(3, vocab.Pass, "b")}
	recs[0].Method = "" // an old record
	recs[1].Method = "resources/read"
	recs[2].Method = "notifications/message"
	recs[3].Method = "tools/call"
	db, err := OpenSQLite(filepath.Join(t.TempDir(), "a.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var jsonl bytes.Buffer
	for _, r := range recs {
		if err := db.Write(r); err != nil {
			t.Fatal(err)
		}
		b, _ := json.Marshal(r)
		jsonl.Write(append(b, '\n'))
	}
	if err := db.Flush(); err != nil {
		t.Fatal(err)
	}
	for method, want := range map[string][]string{
		"tools/call":            {"b", "a"},
		"resources/read":        {""},
		"notifications/message": {""},
		"prompts/get":           {},
	} {
		f := Filter{Method: method, Limit: 10}
		got, err := db.Query(context.Background(), f)
		if err != nil {
			t.Fatal(err)
		}
		fromFile, _, err := ReadJSONL(bytes.NewReader(jsonl.Bytes()), f)
		if err != nil {
			t.Fatal(err)
		}
		for name, rs := range map[string][]Record{"sqlite": got, "jsonl": fromFile} {
			var tools []string
			for _, r := range rs {
				tools = append(tools, r.Tool)
			}
			if strings.Join(tools, ",") != strings.Join(want, ",") || len(rs) != len(want) {
				t.Errorf("%s --method %s: %q, want %q", name, method, tools, want)
			}
		}
	}
}

// TestControlsInNamesEscaped: a tool name with C1 or bidi controls reaches neither
// audit.jsonl nor the table raw, and the JSONL still decodes to the same name.
func TestControlsInNamesEscaped(t *testing.T) {
	name := "read\u202eelif\u0085_x"
	r := rec(1, vocab.Pass, name)
	var jsonl bytes.Buffer
	if err := NewJSONL(&jsonl).Write(r); err != nil {
		t.Fatal(err)
	}
	var table bytes.Buffer
	if err := WriteTable(&table, []Record{*r}); err != nil {
		t.Fatal(err)
	}
	for what, out := range map[string]string{"jsonl": jsonl.String(), "table": table.String()} {
		if strings.ContainsAny(out, "\u202e\u0085") || !strings.Contains(out, `read\u202eelif\u0085_x`) {
			t.Errorf("%s: %q", what, out)
		}
	}
	var back Record
	if err := json.Unmarshal(jsonl.Bytes(), &back); err != nil || back.Tool != name {
		t.Fatalf("decoded %q, %v", back.Tool, err)
	}
}

// TestCallerCellBoundedAndEscaped: a caller's ids reach the table cut at CallerCell
// bytes each and with controls shown as \uXXXX, like a tool name; the record view
// escapes them the same way.
func TestCallerCellBoundedAndEscaped(t *testing.T) {
	r := rec(0, vocab.Pass, "read_file")
	r.Caller = &Caller{UserID: "mallory\u202e" + strings.Repeat("x", 100), CallerID: "bot\x1b[2J"}
	var b bytes.Buffer
	if err := WriteTable(&b, []Record{*r}); err != nil {
		t.Fatal(err)
	}
	row := strings.Split(b.String(), "\n")[1]
	if strings.ContainsAny(row, "\u202e\x1b") || !strings.Contains(row, `mallory\u202e`) || strings.Contains(row, strings.Repeat("x", 40)) || !strings.Contains(row, "…") {
		t.Errorf("row %q", row)
	}
	b.Reset()
	if err := WriteRecord(&b, r); err != nil {
		t.Fatal(err)
	}
	if strings.ContainsAny(b.String(), "\u202e\x1b") || !strings.Contains(b.String(), `caller.user_id:      mallory\u202e`) {
		t.Errorf("record view:\n%s", b.String())
	}
}

// TestWriteRecord pins mcpgate audit show's view of one record.
func TestWriteRecord(t *testing.T) {
	r := corpus()[4] // blocked, alice by claude-code
	r.Server, r.ToolAccess, r.PolicyGen, r.PolicySetHash, r.ElapsedMS = "crm", "read", 3, "9f2c", 1.25
	r.InputRuleIDs, r.Policies = []string{"pii_email"}, []string{"redact-email.js"}
	var b bytes.Buffer
	if err := WriteRecord(&b, r); err != nil {
		t.Fatal(err)
	}
	golden(t, "record.golden", b.Bytes())
}

// queryPlan returns SQLite's plan for the statement Query would run.
func (s *SQLite) queryPlan(f Filter) (string, error) {
	q, args := querySQL(f)
	rows, err := s.db.Query("EXPLAIN QUERY PLAN "+q, args...)
	if err != nil {
		return "", err
	}
	defer rows.Close()
	var lines []string
	for rows.Next() {
		var id, parent, unused int
		var detail string
		if err := rows.Scan(&id, &parent, &unused, &detail); err != nil {
			return "", err
		}
		lines = append(lines, detail)
	}
	return strings.Join(lines, "\n"), rows.Err()
}
