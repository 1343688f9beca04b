package pipeline

import (
	"context"
	"testing"
)

// TestHoldRecords: under HoldRecords a call's record is decided as always but
// reaches the sink only on release, exactly once however often release is called;
// a record decided after release goes out at once.
func TestHoldRecords(t *testing.T) {
	p, rec := newPipeline(t, nil, true, false)
	count := func() int {
		rec.mu.Lock()
		defer rec.mu.Unlock()
		return len(rec.recs)
	}
	ctx, release := HoldRecords(context.Background())
	reply := p.Handle(ctx, call(`{}`), upstreamReturning(cleanResult, nil))
	if string(reply.Original) == "" {
		t.Fatalf("reply %+v", reply)
	}
	if n := count(); n != 0 {
		t.Fatalf("%d records before release; want them held", n)
	}
	release()
	release()
	if n := count(); n != 1 {
		t.Fatalf("%d records after release; want 1", n)
	}
	p.Handle(ctx, call(`{}`), upstreamReturning(cleanResult, nil))
	if n := count(); n != 2 {
		t.Fatalf("%d records after a call under a released hold; want 2", n)
	}
}
