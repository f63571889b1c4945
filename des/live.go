package des

import (
	"sync"
	"time"
)

// Live drives a Sim from inside a testing/synctest bubble, so model events
// and real goroutine code share one virtual clock (see the package doc).
// Create it inside the bubble; Start the core goroutine; wrap every call
// from real code into the model in Lock / Unlock; Stop before the bubble
// ends.
type Live struct {
	mu     sync.Mutex
	sim    *Sim
	epoch  time.Time
	wake   chan struct{} // pokes the core when an earlier event appears
	stop   chan struct{}
	done   chan struct{}
	target Time // the instant the core sleeps towards; Never when idle
	wakes  uint64
	// quantum, when positive, rounds every wake-up of the core up to a
	// multiple of it (see SetQuantum).
	quantum Time
	// window, when positive, is the length of the lock-step windows of a
	// partitioned model (SetWindows): the core stops at windowEnd-1 and
	// calls atEnd.
	window, windowEnd Time
	atEnd             func(end Time) bool
	windowsEnded      chan struct{}
}

// NewLive wraps sim. It must be called inside the bubble: model instant 0
// is the bubble time of this call.
func NewLive(sim *Sim) *Live {
	return &Live{
		sim:    sim,
		epoch:  time.Now(),
		wake:   make(chan struct{}, 1),
		stop:   make(chan struct{}),
		done:   make(chan struct{}),
		target: Never,
	}
}

// Sim returns the wrapped simulation. Use it only while holding the lock
// (or from model events, which run with the lock held).
func (l *Live) Sim() *Sim { return l.sim }

// Now is the bubble's virtual time as a model instant. It may be later than
// Sim().Now() until the next Lock catches the model up.
func (l *Live) Now() Time { return Time(time.Since(l.epoch)) }

// Peek runs fn, when not nil, under the model's mutex and returns the
// Sim's clock, without running any event. It is for a reader outside the
// bubble (a progress watcher): there Lock and Now would read the real
// clock, as time.Since does outside a bubble. The clock it returns lags
// the bubble's virtual time by the events not yet run; fn may only read
// the model.
func (l *Live) Peek(fn func()) Time {
	l.mu.Lock()
	defer l.mu.Unlock()
	if fn != nil {
		fn()
	}
	return l.sim.Now()
}

// Lock takes the model for a call from real code: it acquires the mutex and
// runs every model event due up to the caller's virtual now, so the call
// takes effect at that instant. It returns the instant.
func (l *Live) Lock() Time {
	l.mu.Lock()
	now := l.Now()
	l.sim.RunUntil(now)
	return now
}

// Unlock releases the model. If the call scheduled an event whose horizon
// (see Sim.Horizon) is earlier than the instant the core goroutine sleeps
// towards, the core is poked.
func (l *Live) Unlock() {
	if next := l.round(l.sim.Horizon()); next < l.target {
		l.target = next
		select {
		case l.wake <- struct{}{}:
		default:
		}
	}
	l.mu.Unlock()
}

// SetQuantum makes the core wake only at multiples of q (q ≤ 0: at the
// exact horizon, the default). Model events still run in order at their
// own instants, but real code sees their effects (a delivered packet, a
// freed buffer) at the next multiple of q, up to q late. That is a fidelity
// setting: it lets the goroutines of many nodes run in one virtual instant,
// and so on several cores, at the cost of rounding every latency real code
// observes up to the quantum. Call it with the lock held.
func (l *Live) SetQuantum(q Time) {
	l.quantum = max(q, 0)
}

// round returns t rounded up to the quantum.
func (l *Live) round(t Time) Time {
	if l.quantum <= 0 || t == Never {
		return t
	}
	if r := t % l.quantum; r != 0 {
		return t + l.quantum - r
	}
	return t
}

// Wakes is how often the core goroutine woke (a timer or a poke): the
// number of virtual-clock hand-offs the model cost.
func (l *Live) Wakes() uint64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.wakes
}

// Start runs the core goroutine. It must be called inside the bubble.
func (l *Live) Start() {
	go l.loop()
}

// Stop ends the core goroutine and waits for it. Events still pending stay
// in the Sim and do not run.
func (l *Live) Stop() {
	close(l.stop)
	<-l.done
}

func (l *Live) loop() {
	defer close(l.done)
	timer := time.NewTimer(time.Hour)
	timer.Stop()
	for {
		l.mu.Lock()
		l.wakes++
		now := l.Now()
		if l.window > 0 && now >= l.windowEnd-1 {
			// The window's last instant: events up to it run, none at
			// its end, where other partitions' packets may still arrive.
			l.sim.RunUntil(l.windowEnd - 1)
			l.mu.Unlock()
			l.endWindow()
			continue
		}
		l.sim.RunUntil(now)
		next := min(l.round(l.sim.Horizon()), l.windowTarget())
		l.target = next
		l.mu.Unlock()
		if next == Never {
			select {
			case <-l.wake:
			case <-l.stop:
				return
			}
			continue
		}
		timer.Reset(time.Duration(next - now))
		select {
		case <-timer.C:
		case <-l.wake:
			timer.Stop()
		case <-l.stop:
			timer.Stop()
			return
		}
	}
}
