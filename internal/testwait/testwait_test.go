package testwait

import (
	"errors"
	"sync/atomic"
	"testing"
	"time"
)

func TestWithin(t *testing.T) {
	var n atomic.Int32
	if !Within(time.Second, func() bool { return n.Add(1) >= 5 }) {
		t.Fatal("a condition that comes true was not seen")
	}
	if Within(20*time.Millisecond, func() bool { return false }) {
		t.Fatal("a condition that never holds was reported as held")
	}
}

func TestReturn(t *testing.T) {
	boom := errors.New("boom")
	if v, err := Return(t, "f", func() (int, error) { return 7, boom }); v != 7 || err != boom {
		t.Fatalf("got %d, %v; want f's own results", v, err)
	}
}
