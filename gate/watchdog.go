package gate

import (
	_ "embed"
	"runtime"
	"runtime/metrics"
	"time"
)

// The watchdog's clock and the heap budget.
const (
	watchInterval  = time.Millisecond // heap sampling and deadlines while a policy runs
	watchIdleTicks = 100              // ticks with no policy before the watchdog sleeps
	inputFactor    = 32               // heap budget bytes per byte of a phase's input JSON
)

const heapMetric = "/memory/classes/heap/objects:bytes"

// liveHeapBytes is the heap the last GC found live (runtime/metrics /gc/heap/live:bytes).
func liveHeapBytes() uint64 {
	s := [1]metrics.Sample{{Name: "/gc/heap/live:bytes"}}
	metrics.Read(s[:])
	return sampleUint(s[0])
}

// collect runs two full garbage collections in the background, unless they are
// running; when they end, gcLive holds the smaller live heap they found and gcSeq
// the number of this collection (gcStarted counts the ones begun). Two, because a GC counts what is allocated while it marks as live: a
// burst of garbage made during the first is gone by the second, a bomb is not.
func (p *pool) collect() {
	if p.collecting.CompareAndSwap(false, true) {
		n := p.gcStarted.Add(1)
		go func() {
			defer p.collecting.Store(false)
			runtime.GC()
			first := liveHeapBytes()
			runtime.GC()
			p.gcLive.Store(min(first, liveHeapBytes()))
			p.gcSeq.Store(n)
		}()
	}
}

// heapBytes is the heap in use by objects, live or not yet swept (about 0.3 µs).
func heapBytes() uint64 {
	s := [1]metrics.Sample{{Name: heapMetric}}
	metrics.Read(s[:])
	return sampleUint(s[0])
}

func sampleUint(s metrics.Sample) uint64 {
	if s.Value.Kind() != metrics.KindUint64 {
		return 0
	}
	return s.Value.Uint64()
}

// watchdog wakes every millisecond while a policy runs (and sleeps once none has run
// for watchIdleTicks). It interrupts a policy past its deadline or whose call was
// cancelled (policy_timeout), and samples the heap: once the live heap passes the soft
// cap it interrupts every running policy; with a per-policy budget set, a policy whose
// heap growth since it began passes that budget. Allocation in a loop is JS and stops
// at the next instruction (policy_memory_limit), so string doubling with `+` or
// template literals, which no built-in guard sees, stops soon after the limit. The GC
// that tells live memory from garbage runs on its own goroutine, so a policy copying a
// huge string never stalls this loop.
func (p *pool) watchdog() {
	defer p.wg.Done()
	t := time.NewTicker(watchInterval)
	defer t.Stop()
	seenGC, trustFrom := p.gcSeq.Load(), p.gcStarted.Load()+1
	idle := 0 // ticks in a row with no policy running
	for {
		p.mu.Lock()
		n := len(p.active)
		p.mu.Unlock()
		if n == 0 {
			// Keep ticking for a while (calls come in bursts: waking a sleeping
			// goroutine for each policy would cost more than the ticks), then sleep
			// until begin wakes us.
			if idle++; idle > watchIdleTicks {
				t.Stop()
				p.asleep.Store(true)
				p.mu.Lock() // a begin before the store above did not wake us: look again
				n = len(p.active)
				p.mu.Unlock()
				if n == 0 {
					select {
					case <-p.stop:
						return
					case <-p.wake:
					}
				}
				p.asleep.Store(false)
				t.Reset(watchInterval)
			}
		} else if idle > 0 {
			idle = 0
			trustFrom = p.gcStarted.Load() + 1 // a busy period begins
		}
		select {
		case <-p.stop:
			return
		case now := <-t.C:
			if n == 0 {
				continue
			}
			timedOut := p.interruptWith(errTimeout, func(r activeRun) bool { return !r.deadline.IsZero() && now.After(r.deadline) })
			if cancelled := p.interruptWith(errCancelled, isDone); timedOut+cancelled > 0 {
				continue
			}
		}
		heap := heapBytes()
		if heap >= p.softCap {
			// The heap counts garbage until the next GC: only memory a GC forced here
			// found live interrupts, or a burst of garbage (a large result handled by
			// another call) would reject every clean call. The GC runs off this loop,
			// and again while the heap stays high, so a growing bomb is re-measured.
			// Only a collection begun in this busy period describes these policies.
			if seq := p.gcSeq.Load(); seq != seenGC && seq >= trustFrom {
				seenGC = seq
				if live := p.gcLive.Load(); live >= p.softCap {
					if n := p.interrupt(func(activeRun) bool { return true }); n > 0 {
						p.logger.Warn("gate: live heap passed the soft limit; running policies interrupted",
							"live_bytes", live, "soft_limit", p.softCap, "interrupted", n)
					}
				}
			}
			p.collect()
			continue
		}
		if p.budget == 0 {
			continue
		}
		if n := p.interrupt(func(r activeRun) bool { return heap > r.base+r.budget }); n > 0 {
			p.logger.Warn("gate: the heap grew past a running policy's budget; interrupted",
				"heap_bytes", heap, "interrupted", n)
		}
	}
}

// interrupt interrupts the running policies that match f and were not interrupted
// yet (policy_memory_limit), and returns how many.
func (p *pool) interrupt(f func(activeRun) bool) int {
	return p.interruptWith(errMemory, f)
}

// interruptWith interrupts the running policies that match f and were not interrupted
// yet, with why, and returns how many.
func (p *pool) interruptWith(why *interruptReason, f func(activeRun) bool) int {
	p.mu.Lock()
	victims := make(map[*vm]uint64, len(p.active))
	for v, r := range p.active {
		if !r.hit && f(r) {
			victims[v] = r.tok
			r.hit = true
			p.active[v] = r
		}
	}
	p.mu.Unlock()
	for v, tok := range victims {
		v.interruptIf(tok, why)
	}
	return len(victims)
}

// isDone reports whether a run's call was cancelled.
func isDone(r activeRun) bool {
	if r.done == nil {
		return false
	}
	select {
	case <-r.done:
		return true
	default:
		return false
	}
}
