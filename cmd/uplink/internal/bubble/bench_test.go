package bubble

import (
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/uplinksim/uplink/des"
)

// BenchmarkLivePokes: the core's cost per poke (real code schedules a
// model event earlier than the one the core sleeps towards, so the core
// wakes, stops its timer and re-arms it), with and without many idle
// timers in the bubble (quic-go keeps one per connection end: 35 000 at
// 500 nodes, degree 70). A stopped timer stays in the runtime's heap and a
// reset marks it modified; the runtime's timer code fixes such timers up
// lazily, and this shows that the core's pattern does not make it rescan
// the whole heap: the cost per poke does not grow with the idle timers.
// Wall time, including the setup of the idle timers (amortised over b.N).
func BenchmarkLivePokes(b *testing.B) {
	for _, idle := range []int{0, 35000} {
		b.Run(fmt.Sprintf("idle-timers=%d", idle), func(b *testing.B) {
			b.ResetTimer() // wall time: inside the bubble the clock is virtual (setup included, amortised over b.N)
			err := Run(func(t *testing.T) error {
				timers := make([]*time.Timer, idle)
				for i := range timers {
					timers[i] = time.NewTimer(time.Hour + time.Duration(i))
				}
				// A timer of real code always due before the core's next
				// instant (as quic-go's pacing and ACK timers are), so a
				// stopped core timer is never at the top of the heap, where
				// the runtime would drop it at once.
				var rearm func()
				var stopped atomic.Bool
				rearm = func() {
					if !stopped.Load() {
						time.AfterFunc(3*time.Microsecond, rearm)
					}
				}
				rearm()
				sim := des.NewSim()
				l := des.NewLive(sim)
				var tick *des.Timer
				tick = sim.NewTimer(func(now des.Time) { sim.Schedule(tick, now+des.Millisecond) })
				sim.Schedule(tick, des.Millisecond)
				l.Start()
				for range b.N {
					time.Sleep(10 * time.Microsecond)
					now := l.Lock()
					sim.Schedule(sim.NewTimer(func(des.Time) {}), now+des.Microsecond)
					l.Unlock()
				}
				l.Stop()
				stopped.Store(true)
				time.Sleep(time.Millisecond) // the last re-arm runs out
				for _, tm := range timers {
					tm.Stop()
				}
				return nil
			})
			b.StopTimer()
			if err != nil {
				b.Fatal(err)
			}
		})
	}
}
