package des

import (
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/require"
)

// TestLiveInterleaves checks that model events and real goroutine timers
// share one clock: each side observes the other's effects at the instants
// they were due.
func TestLiveInterleaves(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		sim := NewSim()
		l := NewLive(sim)
		l.Start()
		defer l.Stop()

		var seen []Time
		done := make(chan Time, 4)
		// A model event at 10 ms, scheduled before the core sleeps.
		l.Lock()
		sim.Schedule(sim.NewTimer(func(now Time) {
			seen = append(seen, now)
			done <- l.Now()
		}), 10*Millisecond)
		l.Unlock()

		// Real code sleeps 3 ms, then schedules a model event 2 ms later,
		// earlier than the one the core sleeps towards: the core must be
		// poked and fire it at 5 ms.
		time.Sleep(3 * time.Millisecond)
		now := l.Lock()
		if now != 3*Millisecond {
			t.Errorf("Lock returned %v, want 3ms", now)
		}
		sim.Schedule(sim.NewTimer(func(now Time) {
			seen = append(seen, now)
			done <- l.Now()
		}), now+2*Millisecond)
		l.Unlock()

		if got := <-done; got != 5*Millisecond {
			t.Errorf("poked event ran at bubble time %v, want 5ms", got)
		}
		if got := <-done; got != 10*Millisecond {
			t.Errorf("first event ran at bubble time %v, want 10ms", got)
		}
		if len(seen) != 2 || seen[0] != 5*Millisecond || seen[1] != 10*Millisecond {
			t.Errorf("model instants %v, want [5ms 10ms]", seen)
		}
	})
}

// TestLiveCatchUp checks that a call from real code first runs the events
// due at its instant, even if the core goroutine has not run yet.
func TestLiveCatchUp(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		sim := NewSim()
		l := NewLive(sim)
		// No core goroutine: only Lock's catch-up can run the event.
		ran := Time(-1)
		l.Lock()
		sim.Schedule(sim.NewTimer(func(now Time) { ran = now }), 2*Millisecond)
		l.Unlock()
		time.Sleep(7 * time.Millisecond)
		now := l.Lock()
		defer l.Unlock()
		if ran != 2*Millisecond || now != 7*Millisecond || sim.Now() != 7*Millisecond {
			t.Fatalf("event ran at %v, lock at %v, model now %v; want 2ms, 7ms, 7ms", ran, now, sim.Now())
		}
	})
}

// TestLiveHiddenBatch: hidden events run at the right model instants, in
// order with visible ones, without the core waking for each: with a
// lookahead of 10 ms, a chain of hidden events 1 ms apart that ends in a
// visible one costs a handful of wake-ups, not one per event.
func TestLiveHiddenBatch(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		sim := NewSim()
		sim.SetLookahead(10 * Millisecond)
		l := NewLive(sim)
		var order []Time
		done := make(chan Time, 1)
		visible := sim.NewTimer(func(now Time) {
			order = append(order, now)
			done <- l.Now()
		})
		var hidden *Timer
		k := 0
		hidden = sim.NewTimer(func(now Time) {
			order = append(order, now)
			k++
			if k < 20 {
				sim.Schedule(hidden, now+Millisecond)
			} else {
				sim.Schedule(visible, now+10*Millisecond)
			}
		})
		hidden.SetClass(Hidden)
		l.Lock()
		sim.Schedule(hidden, Millisecond)
		l.Unlock()
		l.Start()
		defer l.Stop()
		if got := <-done; got != 30*Millisecond {
			t.Fatalf("visible event seen by real code at %v, want 30ms", got)
		}
		for i, at := range order[:20] {
			if at != Time(i+1)*Millisecond {
				t.Fatalf("hidden event %d ran at model instant %v", i, at)
			}
		}
		if w := l.Wakes(); w > 5 {
			t.Fatalf("core woke %d times for 20 hidden events and one visible", w)
		}
	})
}

// TestLiveQuantum: with a quantum, events keep their own model instants
// but the core wakes, and real code sees them, only at the next multiple
// of the quantum; events due in one quantum are seen together. Back at
// quantum 0 the next event is seen at its own instant.
func TestLiveQuantum(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		sim := NewSim()
		l := NewLive(sim)
		l.SetQuantum(Millisecond)
		l.Start()
		defer l.Stop()
		type seen struct{ model, bubble Time }
		done := make(chan seen, 3)
		at := func(d Time) {
			sim.Schedule(sim.NewTimer(func(now Time) { done <- seen{now, l.Now()} }), d)
		}
		l.Lock()
		at(1300 * Microsecond)
		at(1900 * Microsecond)
		l.Unlock()
		for _, want := range []seen{{1300 * Microsecond, 2 * Millisecond}, {1900 * Microsecond, 2 * Millisecond}} {
			if got := <-done; got != want {
				t.Errorf("event at model %v seen at bubble %v; want model %v seen at %v", got.model, got.bubble, want.model, want.bubble)
			}
		}
		// An event exactly on a multiple is not delayed.
		l.Lock()
		at(3 * Millisecond)
		l.Unlock()
		if got := <-done; got.bubble != 3*Millisecond {
			t.Errorf("event due at 3ms seen at %v", got.bubble)
		}
		l.Lock()
		l.SetQuantum(0)
		at(3300 * Microsecond)
		l.Unlock()
		if got := <-done; got.bubble != 3300*Microsecond {
			t.Errorf("exact again: event due at 3.3ms seen at %v", got.bubble)
		}
	})
}

// TestLivePeek: Peek reads the Sim's clock under the mutex and runs no
// event, where Lock catches the model up to the bubble's now first.
func TestLivePeek(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		sim := NewSim()
		l := NewLive(sim)
		fired := false
		sim.Schedule(sim.NewTimer(func(Time) { fired = true }), 500*Millisecond)
		time.Sleep(time.Second)
		var inside bool
		require.Equal(t, Time(0), l.Peek(func() { inside = true }))
		require.True(t, inside, "Peek runs its function")
		require.False(t, fired, "Peek ran an event")
		require.Equal(t, Time(0), l.Peek(nil))
		require.Equal(t, Second, l.Lock())
		l.Unlock()
		require.True(t, fired)
		require.Equal(t, Second, l.Peek(nil))
	})
}
