package budget

import (
	"context"
	"errors"
	"testing"
	"time"
)

// TestEnterCallLimit proves the call limit holds and a waiting call gets ErrBusy
// after CallWait, or takes a slot that frees up.
func TestEnterCallLimit(t *testing.T) {
	b := New(Options{MaxCalls: 2, CallWait: 50 * time.Millisecond})
	r1, err1 := b.EnterCall(context.Background())
	r2, err2 := b.EnterCall(context.Background())
	if err1 != nil || err2 != nil {
		t.Fatal(err1, err2)
	}
	if _, err := b.EnterCall(context.Background()); !errors.Is(err, ErrBusy) {
		t.Fatalf("third call: %v, want ErrBusy", err)
	}
	got := make(chan error, 1)
	go func() {
		b2 := New(Options{MaxCalls: 1, CallWait: time.Minute})
		r, _ := b2.EnterCall(context.Background())
		done := make(chan error, 1)
		go func() { _, err := b2.EnterCall(context.Background()); done <- err }()
		r()
		got <- <-done
	}()
	if err := <-got; err != nil {
		t.Fatalf("a waiting call did not take the freed slot: %v", err)
	}
	r1()
	r2()
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	full := New(Options{MaxCalls: 1})
	full.EnterCall(context.Background())
	if _, err := full.EnterCall(ctx); !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled wait: %v", err)
	}
}

// TestHoldBytes proves results wait while the byte budget is held, and one larger
// than the whole budget still runs once it is alone.
func TestHoldBytes(t *testing.T) {
	b := New(Options{MaxBytes: 100})
	r1, err := b.HoldBytes(context.Background(), 60)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	if _, err := b.HoldBytes(ctx, 60); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("over the budget: %v, want a wait until the deadline", err)
	}
	r1()
	r2, err := b.HoldBytes(context.Background(), 1<<30)
	if err != nil {
		t.Fatalf("a result over the whole budget, alone: %v", err)
	}
	r2()
	var nilB *Budget
	if r, err := nilB.HoldBytes(context.Background(), 1<<40); err != nil {
		t.Fatal(err)
	} else {
		r()
	}
}
