// Package des is uplink's event core: a virtual clock, an event queue with a
// deterministic order, reusable timers, seeded random streams, and the
// bridge that runs real goroutine code on the same virtual clock.
//
// # Model time
//
// A Sim holds the virtual clock (Time, int64 nanoseconds) and binary heaps
// of pending timers ordered by (instant, order key, insertion sequence):
// two events at the same instant fire in the order of their timers' keys
// (Timer.SetOrder; 0, the default, first), and with equal keys in the order
// they were scheduled. A Timer is owned by
// the model object that uses it (a link's next departure, a socket's wake-up)
// and is rescheduled rather than reallocated, so the steady state allocates
// nothing per event. Schedule, Cancel and the pop of the next event are
// O(log n).
//
// # Real code on the same clock
//
// Real protocol code (quic-go, go-libp2p) runs in goroutines inside a
// testing/synctest bubble, whose fake clock only moves when every goroutine
// in the bubble is durably blocked, and then jumps to the next timer. Live
// puts the event core inside that bubble: one core goroutine sleeps on a
// bubble timer until the instant of the next model event, runs every event
// due, and sleeps again. Model time is the bubble's time since the core
// started, so model events and real timers interleave at the same virtual
// instants.
//
// Real code calls into the model (a socket write) directly, under the core's
// mutex, at the caller's virtual now: the call first runs every model event
// due up to now (Live.Lock), then changes the model. No goroutine hand-off
// happens on that path; the core goroutine is only poked when the call made
// an event due earlier than the instant it sleeps towards. In the other
// direction, a model event that delivers a packet wakes at most the one
// goroutine waiting on that socket, through a one-slot channel.
//
// Events that cannot affect real code soon need no wake-up of their own:
// a timer of the Hidden class promises that its consequences reach real
// code no sooner than the Sim's lookahead after its instant (a packet
// leaving an uplink is at least the minimum one-way latency from any
// socket). The core sleeps until the earliest instant any pending event
// could matter (Sim.Horizon) and runs everything due in one batch; events
// still run in order and see their own instants. A socket write, a read or
// a deadline in real code catches the model up first, so nothing observes
// a hidden event late.
//
// The core reads no wall clock (WallNow is for progress lines and
// figures of cost only). Which goroutine runs first at one virtual
// instant is the Go scheduler's choice, though, and the scheduler preempts
// a goroutine that has run for 10 ms of wall time: under CPU contention,
// even at GOMAXPROCS=1, real code can call into the model in another
// order from run to run (docs/model.md, Reproducibility).
//
// A plain binary enters a bubble through the testing framework (the
// command's bubble package); a test uses synctest.Test; either creates the
// Live inside it.
//
// # Partitions
//
// A model can be split into partitions, each with a Sim, a Live and a
// bubble of its own, advancing in lock-step windows shorter than the
// smallest latency between partitions (window.go: Exchange,
// Live.SetWindows; netmodel's partitions carry the packets). Several
// bubbles run in one process: nothing that go-libp2p (as uplink builds its
// hosts), quic-go, yamux or go-libp2p-pubsub keeps process-wide is bound to
// the bubble that touches it first, as tests running cells in concurrent
// bubbles and one network split across bubbles show
// (protocols/cell/bubbles_test.go, transports/quic/partition_test.go). The
// exceptions to keep in mind: go-flow-metrics' global sweeper, which
// go-libp2p starts only with its bandwidth metrics (off in uplink; a
// second bubble touching it is a fatal error), and the process-wide state
// the bubbles share by nature: crypto/rand as replaced by CryptoSeed (one
// stream for all partitions, drawn in scheduling order), GOMAXPROCS and the
// garbage collector. Only the Exchange's channels may be made outside the
// bubbles: a goroutine of a bubble blocked on any other outside channel
// stops that bubble's clock. A gossipsub cell runs split this way with
// --partitions (protocols/cell/partition.go); a 20-node cell at K = 2 and
// K = 3, every receiver complete, is its test (TestSplitCell).
package des

import "fmt"

// Timer is a reusable event: a callback and, while pending, the instant it
// fires. Create timers with Sim.NewTimer and keep them for the life of the
// object that owns them.
type Timer struct {
	at    Time
	idx   int // position in its class's heap; -1 when not pending
	class uint8
	order uint64 // the order key, shifted into place (SetOrder)
	fn    func(now Time)
}

// seqBits is the width of the insertion sequence in an entry's order word;
// the timer's order key fills the bits above it.
const seqBits = 40

// MaxOrder is the largest order key (SetOrder).
const MaxOrder = 1<<(64-seqBits) - 1

// SetOrder gives t an order key among the events of its instant: events
// at one instant fire by ascending key, and with equal keys in the order
// they were scheduled. The default, 0, fires first. A key that follows
// from the model (a packet's sending node) rather than from when the
// event was scheduled keeps the order of simultaneous events the same
// however the model is split into partitions that schedule them at
// different times. t must not be pending.
func (t *Timer) SetOrder(key int) {
	if t.idx >= 0 {
		panic("des: SetOrder on a pending timer")
	}
	if key < 0 || key > MaxOrder {
		panic(fmt.Sprintf("des: order key %d out of range [0, %d]", key, MaxOrder))
	}
	t.order = uint64(key) << seqBits
}

// Pending reports whether t is scheduled.
func (t *Timer) Pending() bool { return t.idx >= 0 }

// At is the instant t fires; meaningful only while Pending.
func (t *Timer) At() Time { return t.at }

// NumClasses is the number of lookahead classes a Sim keeps.
const NumClasses = 2

// Lookahead classes. Visible events (class 0, the default) may wake real
// code at their instant: a delivery to a socket. Events of the Hidden
// class cannot affect real code sooner than the class's lookahead after
// their instant (a packet leaving an uplink is at least the minimum one-way
// latency away from any socket). Live lets hidden events run late, in a
// batch, at the next instant real code could notice, instead of waking the
// bubble for each; the order of events and the model instants they see are
// unchanged.
const (
	Visible uint8 = 0
	Hidden  uint8 = 1
)

// SetClass puts t in a lookahead class; t must not be pending.
func (t *Timer) SetClass(c uint8) {
	if t.idx >= 0 {
		panic("des: SetClass on a pending timer")
	}
	if c >= NumClasses {
		panic(fmt.Sprintf("des: class %d out of range", c))
	}
	t.class = c
}

type entry struct {
	at  Time
	ord uint64 // the timer's order key, then the insertion sequence
	t   *Timer
}

func (a *entry) before(b *entry) bool {
	return a.at < b.at || (a.at == b.at && a.ord < b.ord)
}

// Sim is a discrete-event simulation: a clock and a queue of timers, kept
// as one heap per lookahead class; the next event is the earliest head by
// (instant, order key, insertion sequence), so classes never change the
// order.
// It is not safe for concurrent use; Live serialises access from real code.
type Sim struct {
	now       Time
	seq       uint64
	heaps     [NumClasses]eheap
	lookahead [NumClasses]Time
	fired     uint64
}

// NewSim returns a simulation at instant 0 with no pending events.
func NewSim() *Sim { return &Sim{} }

// Now is the current virtual instant.
func (s *Sim) Now() Time { return s.now }

// Fired is the number of events run so far.
func (s *Sim) Fired() uint64 { return s.fired }

// Pending is the number of scheduled events.
func (s *Sim) Pending() int {
	n := 0
	for i := range s.heaps {
		n += len(s.heaps[i])
	}
	return n
}

// SetLookahead sets the lookahead of the Hidden class: events in it cannot
// affect real code sooner than d after their instant. 0 (the default) makes
// hidden events as urgent as visible ones.
func (s *Sim) SetLookahead(d Time) {
	if d < 0 {
		panic("des: negative lookahead")
	}
	s.lookahead[Hidden] = d
}

// NewTimer returns an unscheduled timer of the Visible class that calls fn
// when it fires.
func (s *Sim) NewTimer(fn func(now Time)) *Timer {
	return &Timer{idx: -1, fn: fn}
}

// Schedule makes t fire at instant at, replacing any earlier schedule of t.
// An instant in the past is a programming error and panics.
func (s *Sim) Schedule(t *Timer, at Time) {
	if at < s.now {
		panic(fmt.Sprintf("des: schedule at %v, before now %v", at, s.now))
	}
	s.seq++
	if s.seq >= 1<<seqBits {
		panic("des: more than 2^40 events scheduled on one Sim")
	}
	ord := t.order | s.seq
	h := &s.heaps[t.class]
	if t.idx >= 0 {
		e := &(*h)[t.idx]
		old := e.at
		e.at, e.ord = at, ord
		t.at = at
		if at < old {
			h.up(t.idx)
		} else {
			h.down(t.idx)
		}
		return
	}
	t.at = at
	t.idx = len(*h)
	*h = append(*h, entry{at: at, ord: ord, t: t})
	h.up(t.idx)
}

// After makes t fire d after now.
func (s *Sim) After(t *Timer, d Time) { s.Schedule(t, s.now+d) }

// Cancel unschedules t and reports whether it was pending.
func (s *Sim) Cancel(t *Timer) bool {
	if t.idx < 0 {
		return false
	}
	s.heaps[t.class].removeAt(t.idx)
	return true
}

// head returns the heap holding the earliest event, or nil.
func (s *Sim) head() *eheap {
	var best *eheap
	for i := range s.heaps {
		h := &s.heaps[i]
		if len(*h) > 0 && (best == nil || (*h)[0].before(&(*best)[0])) {
			best = h
		}
	}
	return best
}

// NextAt is the instant of the earliest pending event, or Never.
func (s *Sim) NextAt() Time {
	if h := s.head(); h != nil {
		return (*h)[0].at
	}
	return Never
}

// Horizon is the earliest instant at which a pending event could affect
// real code: the minimum over classes of the head's instant plus the
// class's lookahead; Never when nothing is pending.
func (s *Sim) Horizon() Time {
	hz := Never
	for i := range s.heaps {
		if h := s.heaps[i]; len(h) > 0 {
			hz = min(hz, h[0].at+s.lookahead[i])
		}
	}
	return hz
}

// Step runs the earliest pending event, advancing the clock to its instant,
// and reports whether there was one.
func (s *Sim) Step() bool {
	h := s.head()
	if h == nil {
		return false
	}
	t := (*h)[0].t
	s.now = (*h)[0].at
	h.popMin()
	s.fired++
	t.fn(s.now)
	return true
}

// RunUntil runs every event due at or before end, in order, then sets the
// clock to end (if end is later than now).
func (s *Sim) RunUntil(end Time) {
	for {
		h := s.head()
		if h == nil || (*h)[0].at > end {
			break
		}
		s.Step()
	}
	if end > s.now {
		s.now = end
	}
}

// RunBefore runs every event due strictly before end, in order, and leaves
// the clock at the last event run: a partition's window [start, end) ends
// before the events at end, which may still be joined by arrivals from
// other partitions at end.
func (s *Sim) RunBefore(end Time) {
	for {
		h := s.head()
		if h == nil || (*h)[0].at >= end {
			return
		}
		s.Step()
	}
}

// Run runs events until none is pending.
func (s *Sim) Run() {
	for s.Step() {
	}
}

// eheap is a binary min-heap of entries ordered by (at, ord); each timer
// knows its index, so Cancel and reschedule are O(log n). A 4-ary heap
// measured no faster in BenchmarkHold.
type eheap []entry

// popMin removes the root with Floyd's bottom-up method: the hole left at
// the root sinks to a leaf along the smaller children (one comparison a
// level), then the last entry rises from there, usually a level or two.
func (hp *eheap) popMin() {
	h := *hp
	h[0].t.idx = -1
	last := len(h) - 1
	e := h[last]
	h[last] = entry{}
	h = h[:last]
	*hp = h
	if last == 0 {
		return
	}
	i := 0
	for {
		c := 2*i + 1
		if c >= last {
			break
		}
		if r := c + 1; r < last && h[r].before(&h[c]) {
			c = r
		}
		h[i] = h[c]
		h[i].t.idx = i
		i = c
	}
	h[i] = e
	e.t.idx = i
	hp.up(i)
}

func (hp *eheap) removeAt(i int) {
	h := *hp
	h[i].t.idx = -1
	last := len(h) - 1
	if i != last {
		h[i] = h[last]
		h[i].t.idx = i
	}
	h[last] = entry{}
	*hp = h[:last]
	if i != last {
		hp.down(i)
		hp.up(i)
	}
}

func (hp *eheap) up(i int) {
	h := *hp
	e := h[i]
	for i > 0 {
		p := (i - 1) / 2
		if !e.before(&h[p]) {
			break
		}
		h[i] = h[p]
		h[i].t.idx = i
		i = p
	}
	h[i] = e
	e.t.idx = i
}

func (hp *eheap) down(i int) {
	h := *hp
	n := len(h)
	e := h[i]
	for {
		c := 2*i + 1
		if c >= n {
			break
		}
		if r := c + 1; r < n && h[r].before(&h[c]) {
			c = r
		}
		if !h[c].before(&e) {
			break
		}
		h[i] = h[c]
		h[i].t.idx = i
		i = c
	}
	h[i] = e
	e.t.idx = i
}
