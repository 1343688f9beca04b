package ratelimit

import (
	"context"
	"math"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/mcpgate/mcpgate/internal/testsvc"
)

// userFor returns a user name no other run has used, so runs never share a window.
func userFor(t *testing.T) string {
	return "test-" + strings.ReplaceAll(t.Name(), "/", "-") + "-" + time.Now().Format("150405.000000000")
}

// TestRedisCountsAcrossStores proves two stores (two replicas) on one Redis count one
// user's calls together, and other users apart.
func TestRedisCountsAcrossStores(t *testing.T) {
	url := testsvc.RedisURL(t)
	a, err := Open(Options{URL: url})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	b, err := Open(Options{URL: url})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	ctx := context.Background()
	u, other := userFor(t), userFor(t)+"-other"
	want := []int{1, 2, 3, 4, 5}
	for i, s := range []*Redis{a, b, a, b, b} {
		if got := s.Hit(ctx, u); got != want[i] {
			t.Fatalf("hit %d: count %d, want %d", i+1, got, want[i])
		}
	}
	if got := b.Peek(ctx, u); got != 5 {
		t.Fatalf("peek %d, want 5", got)
	}
	if got := a.Peek(ctx, u); got != 5 {
		t.Fatalf("a second peek %d: a peek counted a call", got)
	}
	if got := a.Hit(ctx, other); got != 1 {
		t.Fatalf("another user's first call counts %d", got)
	}
	if a.Errors()+b.Errors() != 0 {
		t.Fatalf("%d errors", a.Errors()+b.Errors())
	}
}

// TestRedisWindowSlides proves calls older than the window stop counting.
func TestRedisWindowSlides(t *testing.T) {
	s, err := Open(Options{URL: testsvc.RedisURL(t), Window: 200 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	u := userFor(t)
	s.Hit(context.Background(), u)
	s.Hit(context.Background(), u)
	// Counting is itself a call, so the test cannot poll: it waits out the window
	// (on Redis's clock) once, with a margin.
	time.Sleep(400 * time.Millisecond)
	if n := s.Hit(context.Background(), u); n != 1 {
		t.Fatalf("after the window: count %d, want 1 (older calls still count)", n)
	}
}

// TestRedisUnreachable proves the failure modes and that a Redis that accepts but
// never answers costs a call the timeout, not a hang.
func TestRedisUnreachable(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0") // accepts, never answers
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			defer c.Close()
		}
	}()
	closed, _ := net.Listen("tcp", "127.0.0.1:0")
	refused := closed.Addr().String()
	closed.Close()
	for _, tc := range []struct {
		name, addr, fail string
		want             int
	}{
		{"silent open", ln.Addr().String(), FailOpen, 0},
		{"silent closed", ln.Addr().String(), FailClosed, math.MaxInt32},
		{"refused open", refused, "", 0},
		{"refused closed", refused, FailClosed, math.MaxInt32},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, err := Open(Options{URL: "redis://" + tc.addr + "/0", Timeout: 100 * time.Millisecond, Fail: tc.fail})
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			start := time.Now()
			if got := s.Hit(context.Background(), "u"); got != tc.want {
				t.Fatalf("count %d, want %d", got, tc.want)
			}
			if d := time.Since(start); d > 2*time.Second {
				t.Fatalf("an unreachable Redis held the call %v", d)
			}
			if s.Errors() != 1 {
				t.Fatalf("%d errors counted, want 1", s.Errors())
			}
		})
	}
}

func TestOpenRejectsBadURLs(t *testing.T) {
	for _, u := range []string{"", "http://x", "redis://host:notaport/0", "redis://h:1/0"} {
		_, err := Open(Options{URL: u, Fail: "sideways"})
		if err == nil {
			t.Errorf("Open(%q, fail sideways) succeeded", u)
		}
	}
}
