package des

import (
	"fmt"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/require"
)

// pingPart is one partition of TestWindowsPingPong: a Live in a bubble of
// its own, a real goroutine that answers every ping it is woken for, and
// an outbox of pings to the other partition.
type pingPart struct {
	idx    int
	live   *Live
	outbox []ping
	wake   chan ping // made inside the bubble
	got    []Time    // the virtual instants the real goroutine woke at
}

type ping struct {
	at Time
	n  int
}

// TestWindowsPingPong: two partitions, each in its own bubble, exchange
// pings with a 10 ms latency through an Exchange at the ends of 10 ms
// windows; a ping sent at t arrives at exactly t + 10 ms on the other
// partition's clock, as real code there sees it, and the partitions stop
// together.
func TestWindowsPingPong(t *testing.T) {
	const latency = 10 * Millisecond
	ex := NewExchange(2)
	parts := []*pingPart{{idx: 0}, {idx: 1}}
	var wg sync.WaitGroup
	for _, p := range parts {
		wg.Go(func() {
			t.Run(fmt.Sprintf("partition-%d", p.idx), func(t *testing.T) {
				synctest.Test(t, func(t *testing.T) { p.run(t, ex, latency) })
			})
		})
	}
	wg.Wait()
	// Partition 0 sends ping 0 at 3 ms; each ping is answered at once.
	require.Equal(t, []Time{13 * Millisecond, 33 * Millisecond, 53 * Millisecond}, parts[1].got)
	require.Equal(t, []Time{23 * Millisecond, 43 * Millisecond, 63 * Millisecond}, parts[0].got)
}

func (p *pingPart) run(t *testing.T, ex *Exchange, latency Time) {
	sim := NewSim()
	p.live = NewLive(sim)
	p.wake = make(chan ping, 16)
	const stopAt = 100 * Millisecond
	p.live.SetWindows(latency, func(end Time) bool {
		synctest.Wait()
		p.live.Lock()
		out := p.outbox
		p.outbox = nil
		p.live.Unlock()
		round, err := ex.Swap(p.idx, out)
		if err != nil {
			t.Errorf("partition %d: %v", p.idx, err)
			return false
		}
		p.live.Lock()
		for from, v := range round {
			if from == p.idx {
				continue
			}
			for _, pg := range v.([]ping) {
				if pg.at < end {
					t.Errorf("partition %d: a ping due at %v, inside the window that ended at %v", p.idx, pg.at, end)
				}
				tm := sim.NewTimer(func(Time) { p.wake <- pg })
				sim.Schedule(tm, pg.at)
			}
		}
		p.live.Unlock()
		return end < stopAt
	})
	p.live.Start()
	defer p.live.Stop()
	send := func(n int) {
		now := p.live.Lock()
		p.outbox = append(p.outbox, ping{now + latency, n})
		p.live.Unlock()
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		if p.idx == 0 {
			time.Sleep(3 * time.Millisecond)
			send(0)
		}
		for {
			select {
			case pg := <-p.wake:
				p.got = append(p.got, p.live.Now())
				if pg.n < 5 {
					send(pg.n + 1)
				}
			case <-time.After(200 * time.Millisecond):
				return
			}
		}
	}()
	<-done
}

// TestExchangeClose: a partition that fails closes the exchange, and a
// partition waiting at the window's end gets the failure instead of
// waiting for ever.
func TestExchangeClose(t *testing.T) {
	ex := NewExchange(2)
	errc := make(chan error)
	go func() {
		_, err := ex.Swap(0, "x")
		errc <- err
	}()
	boom := fmt.Errorf("partition 1 failed")
	ex.Close(boom)
	require.ErrorIs(t, <-errc, boom)
	_, err := ex.Swap(1, "y")
	require.ErrorIs(t, err, boom)
}
