package cell

import (
	"fmt"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/uplinksim/uplink/des"
	"github.com/uplinksim/uplink/netmodel"
)

// DefaultProgressEvery is how often, in wall time, the command that runs
// a cell prints its progress line unless told otherwise
// (Config.ProgressEvery).
const DefaultProgressEvery = 5 * time.Second

// MinProgressEvery is the shortest Config.ProgressEvery other than 0.
const MinProgressEvery = 10 * time.Millisecond

// Watch is what a running cell tells a watcher outside its bubble: the
// phase, the model's clock and the packets the network has simulated, the
// phase's bound in virtual time, and during the delivery the receivers
// complete. The cell (Config.Watch) updates it through atomics at its
// phase changes, at the publish and as each receiver completes; Line reads
// it. A watcher must run outside the bubble: a goroutine inside waiting on
// a wall-clock ticker would see the bubble's virtual clock instead. The
// zero Watch is ready; a nil *Watch takes the cell's updates and drops them.
type Watch struct {
	phase     atomic.Pointer[watchPhase]
	model     atomic.Pointer[watchModel]
	complete  atomic.Int64 // receivers complete in the delivery
	receivers atomic.Int64 // receivers in the delivery; 0 before it

	mu   sync.Mutex
	prev watchSample // the last line's reading
}

// watchPhase is one phase as the cell announced it; a new one replaces it
// whole.
type watchPhase struct {
	name string
	wall time.Duration // des.WallNow at the phase's start
	// A bounded phase: its virtual time counts from from (since names
	// that instant) and lasts at most limit (what names the bound).
	from        des.Time
	limit       des.Time // 0: no bound
	since, what string
}

// watchModel reads the model from outside the bubble.
type watchModel struct {
	wall time.Duration             // des.WallNow when the model's clock started (virtual 0)
	read func() (des.Time, uint64) // the model's clock and the packets sent so far
}

// watchSample is one reading of the model.
type watchSample struct {
	wall    time.Duration // des.WallNow
	model   bool          // the model was running: virt and packets are read
	virt    des.Time
	packets uint64
}

// enter announces a phase, unbounded until bound says otherwise.
func (w *Watch) enter(name string) {
	if w == nil {
		return
	}
	w.phase.Store(&watchPhase{name: name, wall: des.WallNow()})
}

// bound bounds the current phase: its virtual time counts from from
// (since says what happened then) and lasts at most limit (what says what
// sets it).
func (w *Watch) bound(from, limit des.Time, since, what string) {
	if w == nil {
		return
	}
	p := w.phase.Load()
	if p == nil {
		return
	}
	b := *p
	b.from, b.limit, b.since, b.what = from, limit, since, what
	w.phase.Store(&b)
}

// setModel hands the watch the running model: live's clock and nw's
// counters, read under live's mutex without running any event.
func (w *Watch) setModel(live *des.Live, nw *netmodel.Network) {
	if w == nil {
		return
	}
	w.model.Store(&watchModel{wall: des.WallNow(), read: func() (des.Time, uint64) {
		var packets uint64
		now := live.Peek(func() {
			for _, nd := range nw.Nodes() {
				packets += nd.Counters.SentPackets
			}
		})
		return now, packets
	}})
}

// setReceivers starts the count of the delivery's receivers.
func (w *Watch) setReceivers(n int) {
	if w == nil {
		return
	}
	w.complete.Store(0)
	w.receivers.Store(int64(n))
}

// completed counts a receiver complete.
func (w *Watch) completed() {
	if w == nil {
		return
	}
	w.complete.Add(1)
}

// Line reads the cell at wall (des.WallNow) and formats its progress
// line; "" before the cell's first phase. The rate it gives is the
// virtual time the model advanced per wall second since the previous
// line (or the model's start), and the ETA applies it to the virtual time
// left in a bounded phase: during the delivery the observation window,
// which ends it at the latest (the last completion ends it sooner); during
// mesh formation the mesh timeout or the settle time. Call it from one
// goroutine, outside the cell's bubble.
func (w *Watch) Line(wall time.Duration) string {
	p := w.phase.Load()
	if p == nil {
		return ""
	}
	cur := watchSample{wall: wall}
	m := w.model.Load()
	if m != nil {
		cur.model = true
		cur.virt, cur.packets = m.read()
	}
	w.mu.Lock()
	prev := w.prev
	if m != nil && !prev.model {
		prev = watchSample{wall: m.wall, model: true}
	}
	w.prev = cur
	w.mu.Unlock()
	return progressLine(*p, cur, prev, w.complete.Load(), w.receivers.Load())
}

// progressLine formats a progress line of phase p from the readings cur
// and prev (the previous line's) and the receivers complete of those in
// the delivery.
func progressLine(p watchPhase, cur, prev watchSample, complete, receivers int64) string {
	var b strings.Builder
	fmt.Fprintf(&b, "progress: %s, %s wall", p.name, wallText(cur.wall-p.wall))
	if !cur.model {
		return b.String()
	}
	left := des.Time(0)
	if p.limit > 0 {
		since := max(cur.virt-p.from, 0)
		fmt.Fprintf(&b, ": %.2f s virtual since %s, %s %s s", since.Seconds(), p.since, p.what, strconv.FormatFloat(p.limit.Seconds(), 'g', -1, 64))
		left = p.limit - since
	} else {
		fmt.Fprintf(&b, ": %.2f s virtual", cur.virt.Seconds())
	}
	if p.name == "delivery" && receivers > 0 {
		fmt.Fprintf(&b, ", %d/%d receivers complete", complete, receivers)
	}
	fmt.Fprintf(&b, ", %s packets", countText(cur.packets))
	dw := cur.wall - prev.wall
	if !prev.model || dw <= 0 {
		return b.String()
	}
	rate := (cur.virt - prev.virt).Seconds() / dw.Seconds()
	switch {
	case rate >= 10:
		fmt.Fprintf(&b, "; %.0f s virtual per s wall", rate)
	case rate > 0 && rate < 0.1:
		// A dear phase (a warm-up that fills every queue) moves a few
		// milliseconds a second, which "0.00 s" would hide.
		fmt.Fprintf(&b, "; %.1f ms virtual per s wall", 1000*rate)
	default:
		fmt.Fprintf(&b, "; %.2f s virtual per s wall", rate)
	}
	if left > 0 && rate > 0 {
		eta := time.Duration(left.Seconds() / rate * float64(time.Second))
		fmt.Fprintf(&b, ", ETA ≤ %s", wallText(eta))
	}
	return b.String()
}

// wallText is a wall-clock span to the second: 12s, 3m47s.
func wallText(d time.Duration) string {
	return max(d, 0).Round(time.Second).String()
}

// countText is a count in three or four figures: 950, 12.3k, 1.23M.
func countText(n uint64) string {
	switch {
	case n < 10_000:
		return strconv.FormatUint(n, 10)
	case n < 1_000_000:
		return fmt.Sprintf("%.1fk", float64(n)/1e3)
	}
	return fmt.Sprintf("%.2fM", float64(n)/1e6)
}
