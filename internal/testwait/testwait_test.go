package testwait

import (
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
