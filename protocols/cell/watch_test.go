package cell

import (
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/uplinksim/uplink/des"
)

// TestWatchLine: the progress line and its ETA from given readings. The
// rate is the virtual time advanced per wall second since the previous
// line (or since the model's start, for the first line with a model), and
// the ETA applies it to the virtual time left in the phase's bound.
func TestWatchLine(t *testing.T) {
	var w Watch
	require.Empty(t, w.Line(time.Second), "no line before the first phase")

	// Before the model runs: the phase and its wall time only.
	w.phase.Store(&watchPhase{name: "hosts", wall: 10 * time.Second})
	require.Equal(t, "progress: hosts, 5s wall", w.Line(15*time.Second))

	// The model started at wall 16 s; at wall 20 s it reads 0.8 s virtual
	// and 52,000 packets: 0.2 s virtual per s wall since its start. Dial
	// has no bound: no ETA.
	virt, packets := des.Time(800*des.Millisecond), uint64(52_000)
	w.model.Store(&watchModel{wall: 16 * time.Second, read: func() (des.Time, uint64) { return virt, packets }})
	w.phase.Store(&watchPhase{name: "dial", wall: 15 * time.Second})
	require.Equal(t, "progress: dial, 5s wall: 0.80 s virtual, 52.0k packets; 0.20 s virtual per s wall", w.Line(20*time.Second))

	// Mesh formation against the mesh timeout: subscribed at 1 s virtual,
	// 60 s bound. At wall 25 s the clock reads 3 s: 2.2 s virtual in 5 s
	// wall is 0.44 s/s; 58 s of virtual time left take 131.8 s wall.
	w.phase.Store(&watchPhase{name: "mesh", wall: 20 * time.Second, from: des.Second, limit: 60 * des.Second, since: "subscribing", what: "mesh timeout"})
	virt, packets = 3*des.Second, 950
	require.Equal(t, "progress: mesh, 5s wall: 2.00 s virtual since subscribing, mesh timeout 60 s, 950 packets; 0.44 s virtual per s wall, ETA ≤ 2m12s", w.Line(25*time.Second))

	// The delivery: published at 10 s virtual, an 8 s window. At wall
	// 35 s (10 s after the last line) the clock reads 12 s: 0.9 s/s, and
	// the 6 s left of the window take at most 6.7 s wall.
	w.phase.Store(&watchPhase{name: "delivery", wall: 30 * time.Second, from: 10 * des.Second, limit: 8 * des.Second, since: "the publish", what: "window"})
	w.setReceivers(59)
	for range 45 {
		w.completed()
	}
	virt, packets = 12*des.Second, 1_234_567
	require.Equal(t, "progress: delivery, 5s wall: 2.00 s virtual since the publish, window 8 s, 45/59 receivers complete, 1.23M packets; 0.90 s virtual per s wall, ETA ≤ 7s", w.Line(35*time.Second))

	// A clock that did not move gives a rate of 0 and no ETA; one that
	// runs ahead of the wall clock prints a whole rate.
	require.Equal(t, "progress: delivery, 10s wall: 2.00 s virtual since the publish, window 8 s, 45/59 receivers complete, 1.23M packets; 0.00 s virtual per s wall", w.Line(40*time.Second))
	virt = 17 * des.Second
	require.Equal(t, "progress: delivery, 10s wall: 7.00 s virtual since the publish, window 8 s, 45/59 receivers complete, 1.23M packets; 20 s virtual per s wall, ETA ≤ 0s", w.Line(40250*time.Millisecond))

	// Past the bound: no ETA. The teardown shows no receivers.
	virt = 19 * des.Second
	require.Equal(t, "progress: delivery, 11s wall: 9.00 s virtual since the publish, window 8 s, 45/59 receivers complete, 1.23M packets; 2.67 s virtual per s wall", w.Line(41*time.Second))
	w.phase.Store(&watchPhase{name: "teardown", wall: 41 * time.Second, from: 19 * des.Second, limit: 120 * des.Second, since: "the teardown's start", what: "teardown limit"})
	virt = 19*des.Second + 500*des.Millisecond
	require.Equal(t, "progress: teardown, 1s wall: 0.50 s virtual since the teardown's start, teardown limit 120 s, 1.23M packets; 0.50 s virtual per s wall, ETA ≤ 3m59s", w.Line(42*time.Second))
	// A slow clock prints milliseconds: 17 ms in 5 s of wall time.
	virt += 17 * des.Millisecond
	require.Equal(t, "progress: teardown, 6s wall: 0.52 s virtual since the teardown's start, teardown limit 120 s, 1.23M packets; 3.4 ms virtual per s wall, ETA ≤ 9h45m42s", w.Line(47*time.Second))

	// A nil Watch takes the cell's updates.
	var nw *Watch
	nw.enter("hosts")
	nw.bound(0, des.Second, "x", "y")
	nw.setReceivers(3)
	nw.completed()
}

// TestProgressDuringDelivery: a cell run with a Watch, read every 50 ms of
// wall time from outside its bubble as uplink cell reads it, shows the
// delivery while it runs: the virtual time since the publish against the
// window, the receivers and the packets. The receivers never complete (the
// publisher withholds the one unit), so the delivery runs the whole window
// under a background load.
func TestProgressDuringDelivery(t *testing.T) {
	var w Watch
	var mu sync.Mutex
	var lines []string
	stop := make(chan struct{})
	stopped := make(chan struct{})
	go func() {
		defer close(stopped)
		tick := time.NewTicker(50 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-stop:
				return
			case <-tick.C:
			}
			if l := w.Line(des.WallNow()); l != "" {
				mu.Lock()
				lines = append(lines, l)
				mu.Unlock()
			}
		}
	}()
	var rec *Record
	synctest.Test(t, func(t *testing.T) {
		cfg := leakCell(t)
		cfg.Watch = &w
		cfg.Withhold = []int{0}
		cfg.Window = des.Second
		cfg.Background = Background{Size: 16 << 10, Interval: 20 * des.Millisecond, Lead: 100 * des.Millisecond}
		var err error
		rec, err = Run(cfg)
		require.NoError(t, err)
	})
	close(stop)
	<-stopped
	require.Equal(t, 0, rec.Completed)
	var delivery []string
	for _, l := range lines {
		if strings.HasPrefix(l, "progress: delivery, ") {
			delivery = append(delivery, l)
		}
	}
	t.Logf("%d lines, %d in the delivery (%.2f s wall)", len(lines), len(delivery), rec.Phases.Delivery)
	require.NotEmpty(t, delivery, "no progress line during the delivery; lines: %q", lines)
	re := regexp.MustCompile(`^progress: delivery, \d+s wall: (\d+\.\d\d) s virtual since the publish, window 1 s, 0/9 receivers complete, [0-9.]+[kM]? packets`)
	last := -1.0
	for _, l := range delivery {
		m := re.FindStringSubmatch(l)
		require.NotNil(t, m, l)
		v, err := strconv.ParseFloat(m[1], 64)
		require.NoError(t, err)
		require.GreaterOrEqual(t, v, last, "the virtual time since the publish went back: %q", delivery)
		require.LessOrEqual(t, v, 1.0)
		last = v
	}
	require.Equal(t, int64(9), w.receivers.Load())
}
