package des

import (
	"math/rand/v2"
	"slices"
	"strconv"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestOrderByTimeThenInsertion(t *testing.T) {
	s := NewSim()
	var got []int
	add := func(id int, at Time) {
		s.Schedule(s.NewTimer(func(Time) { got = append(got, id) }), at)
	}
	add(1, 30)
	add(2, 10)
	add(3, 20)
	add(4, 10) // same instant as 2, scheduled later: fires after it
	add(5, 0)
	s.Run()
	if want := []int{5, 2, 4, 3, 1}; !slices.Equal(got, want) {
		t.Fatalf("order %v, want %v", got, want)
	}
	if s.Now() != 30 || s.Fired() != 5 {
		t.Fatalf("now %v fired %d, want 30 and 5", s.Now(), s.Fired())
	}
}

func TestCancelAndReschedule(t *testing.T) {
	s := NewSim()
	var got []int
	a := s.NewTimer(func(Time) { got = append(got, 1) })
	b := s.NewTimer(func(Time) { got = append(got, 2) })
	c := s.NewTimer(func(Time) { got = append(got, 3) })
	s.Schedule(a, 10)
	s.Schedule(b, 20)
	s.Schedule(c, 30)
	if !s.Cancel(b) || s.Cancel(b) {
		t.Fatal("Cancel should report true once, then false")
	}
	s.Schedule(c, 5)  // earlier
	s.Schedule(a, 50) // later
	if b.Pending() || !a.Pending() || a.At() != 50 {
		t.Fatal("pending state wrong after reschedule")
	}
	s.Run()
	if want := []int{3, 1}; !slices.Equal(got, want) {
		t.Fatalf("order %v, want %v", got, want)
	}
}

func TestRescheduleSameInstantMovesBehind(t *testing.T) {
	s := NewSim()
	var got []int
	a := s.NewTimer(func(Time) { got = append(got, 1) })
	b := s.NewTimer(func(Time) { got = append(got, 2) })
	s.Schedule(a, 10)
	s.Schedule(b, 10)
	s.Schedule(a, 10) // a new insertion: now after b
	s.Run()
	if want := []int{2, 1}; !slices.Equal(got, want) {
		t.Fatalf("order %v, want %v", got, want)
	}
}

func TestRunUntil(t *testing.T) {
	s := NewSim()
	n := 0
	for _, at := range []Time{5, 10, 15} {
		s.Schedule(s.NewTimer(func(Time) { n++ }), at)
	}
	s.RunUntil(10)
	if n != 2 || s.Now() != 10 || s.Pending() != 1 {
		t.Fatalf("after RunUntil(10): ran %d now %v pending %d", n, s.Now(), s.Pending())
	}
	s.RunUntil(100)
	if n != 3 || s.Now() != 100 {
		t.Fatalf("after RunUntil(100): ran %d now %v", n, s.Now())
	}
}

func TestScheduleInPastPanics(t *testing.T) {
	s := NewSim()
	s.RunUntil(10)
	defer func() {
		if recover() == nil {
			t.Fatal("scheduling before now should panic")
		}
	}()
	s.Schedule(s.NewTimer(func(Time) {}), 5)
}

// TestHeapAgainstSort checks the heap against a sorted reference under a
// random mix of schedules, reschedules and cancels.
func TestHeapAgainstSort(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	s := NewSim()
	type rec struct {
		at  Time
		seq int
	}
	want := map[*Timer]rec{}
	var fired []rec
	timers := make([]*Timer, 200)
	seq := 0
	for i := range timers {
		timers[i] = s.NewTimer(nil)
		tm := timers[i]
		tm.fn = func(now Time) {
			fired = append(fired, want[tm])
			delete(want, tm)
		}
	}
	for range 5000 {
		tm := timers[rng.IntN(len(timers))]
		if rng.IntN(4) == 0 {
			s.Cancel(tm)
			delete(want, tm)
			continue
		}
		at := Time(rng.IntN(100))
		s.Schedule(tm, at)
		seq++
		want[tm] = rec{at, seq}
	}
	var ref []rec
	for _, r := range want {
		ref = append(ref, r)
	}
	slices.SortFunc(ref, func(a, b rec) int {
		if a.at != b.at {
			return int(a.at - b.at)
		}
		return a.seq - b.seq
	})
	s.Run()
	if !slices.Equal(fired, ref) {
		t.Fatalf("fired %d events in a different order than the reference (%d)", len(fired), len(ref))
	}
}

func TestStreamsDeterministicAndIndependent(t *testing.T) {
	a := NewStreams(7).Stream("loss")
	b := NewStreams(7).Stream("loss")
	c := NewStreams(7).Stream("jitter")
	d := NewStreams(8).Stream("loss")
	same, diffName, diffSeed := true, 0, 0
	for range 100 {
		x, y, z, w := a.Uint64(), b.Uint64(), c.Uint64(), d.Uint64()
		same = same && x == y
		if x != z {
			diffName++
		}
		if x != w {
			diffSeed++
		}
	}
	if !same || diffName < 99 || diffSeed < 99 {
		t.Fatalf("same %v, differing draws by name %d, by seed %d", same, diffName, diffSeed)
	}
}

// BenchmarkHold is the classic hold model: a standing population of pending
// events; each step pops the earliest and schedules it again a random time
// ahead. It reports events per second; the goal is 10 M/s with 0 allocs.
func BenchmarkHold(b *testing.B) {
	for _, pop := range []int{64, 1024, 4096} {
		b.Run(strconv.Itoa(pop), func(b *testing.B) {
			s := NewSim()
			rng := rand.New(rand.NewPCG(1, 1))
			delays := make([]Time, 1024)
			for i := range delays {
				delays[i] = Time(rng.IntN(1_000_000))
			}
			k := 0
			for range pop {
				var tm *Timer
				tm = s.NewTimer(func(now Time) {
					k++
					s.Schedule(tm, now+delays[k&1023])
				})
				s.Schedule(tm, delays[rng.IntN(1024)])
			}
			b.ReportAllocs()
			b.ResetTimer()
			for range b.N {
				s.Step()
			}
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds()/1e6, "Mevents/s")
		})
	}
}

// TestOrderKeys: events at one instant fire by ascending order key, then
// in the order they were scheduled, whatever the order of scheduling; an
// earlier instant always comes first.
func TestOrderKeys(t *testing.T) {
	s := NewSim()
	var got []string
	mk := func(name string, key int) *Timer {
		tm := s.NewTimer(func(Time) { got = append(got, name) })
		tm.SetOrder(key)
		return tm
	}
	c, b, a0, a1, early := mk("c", 3), mk("b", 2), mk("a0", 0), mk("a1", 0), mk("early", 9)
	s.Schedule(c, 10)
	s.Schedule(b, 10)
	s.Schedule(a0, 10)
	s.Schedule(a1, 10)
	s.Schedule(early, 5)
	s.Run()
	require.Equal(t, []string{"early", "a0", "a1", "b", "c"}, got)
	require.Panics(t, func() { mk("x", MaxOrder+1) })
	tm := mk("y", 1)
	s.Schedule(tm, 20)
	require.Panics(t, func() { tm.SetOrder(2) })
}

// TestRunBefore: RunBefore stops short of the events at its end.
func TestRunBefore(t *testing.T) {
	s := NewSim()
	var got []Time
	for _, at := range []Time{3, 7, 10, 12} {
		s.Schedule(s.NewTimer(func(now Time) { got = append(got, now) }), at)
	}
	s.RunBefore(10)
	require.Equal(t, []Time{3, 7}, got)
	require.Equal(t, Time(7), s.Now())
	s.RunBefore(13)
	require.Equal(t, []Time{3, 7, 10, 12}, got)
}
