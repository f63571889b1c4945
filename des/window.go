package des

import (
	"errors"
	"fmt"
	"sync"
)

// Partitions in lock-step.
//
// A model split into K partitions runs each partition on a Sim and a Live
// of its own, in a synctest bubble of its own. The partitions advance in
// windows of length W no longer than the smallest latency between them, so
// nothing one partition does inside a window can reach another before the
// window ends. At each window's end E the core of every partition stops at
// E-1ns, the window's last instant (real code woken at E may not run model
// events at E before the other partitions' packets due at E have arrived),
// waits until every goroutine of its bubble is durably blocked (the wait
// it was given: synctest.Wait), and then swaps what left it for the other
// partitions through an Exchange. Blocking on the Exchange, whose channels
// were made outside every bubble, is not a durable block: the bubble's
// clock stands still until every partition has arrived.
//
// Real code may still act at E-1ns after the swap: what atEnd hands it
// there (an answer read from every partition) wakes it at that instant,
// and a packet it sends then can leave at once (an uplink with tokens to
// spare). Such a packet is taken at the next window's end, so a caller
// makes W at least 1ns shorter than the smallest latency: a packet that
// left at E-1ns then still arrives no sooner than the next window's end.

// Exchange is the meeting point of K partitions at each window's end. It
// must be made outside every bubble (its channels would otherwise belong
// to the bubble that made them), and runs a goroutine of its own until
// Close.
type Exchange struct {
	k     int
	in    chan deposit
	out   []chan []any
	close sync.Once
	done  chan struct{}
	err   error // why it closed; read after done
}

type deposit struct {
	part int
	v    any
}

// ErrExchangeClosed is what Swap returns once the exchange has closed.
var ErrExchangeClosed = errors.New("des: the partitions' exchange is closed")

// NewExchange starts the exchange of k partitions.
func NewExchange(k int) *Exchange {
	e := &Exchange{k: k, in: make(chan deposit), out: make([]chan []any, k), done: make(chan struct{})}
	for i := range e.out {
		e.out[i] = make(chan []any, 1)
	}
	go e.run()
	return e
}

func (e *Exchange) run() {
	for {
		round := make([]any, e.k)
		seen := make([]bool, e.k)
		for range e.k {
			select {
			case d := <-e.in:
				if seen[d.part] {
					e.Close(fmt.Errorf("des: partition %d arrived twice at one window's end", d.part))
					return
				}
				seen[d.part], round[d.part] = true, d.v
			case <-e.done:
				return
			}
		}
		for _, c := range e.out {
			c <- round
		}
	}
}

// Swap hands over what partition part leaves for the others at a window's
// end and returns, once every partition has done so, what each left
// (indexed by partition; the caller must not change it). After Close it
// returns the error Close was given, or ErrExchangeClosed.
func (e *Exchange) Swap(part int, v any) ([]any, error) {
	select {
	case e.in <- deposit{part, v}:
	case <-e.done:
		return nil, e.closedErr()
	}
	select {
	case round := <-e.out[part]:
		return round, nil
	case <-e.done:
		return nil, e.closedErr()
	}
}

// Close ends the exchange: every Swap waiting or to come returns err (nil
// reads as ErrExchangeClosed). A partition that fails closes it, so the
// others stop instead of waiting for it.
func (e *Exchange) Close(err error) {
	e.close.Do(func() {
		e.err = err
		close(e.done)
	})
}

// Err is the error the exchange was closed with (ErrExchangeClosed for
// nil), or nil while it is open.
func (e *Exchange) Err() error {
	select {
	case <-e.done:
		return e.closedErr()
	default:
		return nil
	}
}

func (e *Exchange) closedErr() error {
	if e.err != nil {
		return e.err
	}
	return ErrExchangeClosed
}

// SetWindows makes the core stop at the last instant of every window of
// length w (the first ends at w after the current model instant's window
// start, windows being aligned to multiples of w) and call atEnd(end)
// there, outside the model's lock: atEnd waits for the bubble, swaps with
// the other partitions and injects what arrived (under Lock). When atEnd
// returns false the windows end (WindowsEnded) and the core runs on alone.
// Call it inside the bubble, before Start. Every partition must keep its
// core until the windows have ended (the others wait for it at every
// window's end): wait for WindowsEnded before Stop, and close the
// Exchange when a partition fails.
func (l *Live) SetWindows(w Time, atEnd func(end Time) bool) {
	if w <= 1 {
		panic(fmt.Sprintf("des: window %v: want at least 2ns", w))
	}
	now := l.sim.Now()
	l.window, l.windowEnd, l.atEnd = w, now-now%w+w, atEnd
	l.windowsEnded = make(chan struct{})
}

// WindowsEnded is closed once atEnd has returned false (nil without
// windows).
func (l *Live) WindowsEnded() <-chan struct{} { return l.windowsEnded }

// windowTarget is the core's next stop for the windows: the last instant
// of the current window, or Never without windows.
func (l *Live) windowTarget() Time {
	if l.window == 0 {
		return Never
	}
	return l.windowEnd - 1
}

// endWindow runs at a window's last instant, without the lock: it calls
// atEnd and moves to the next window, or ends the windows.
func (l *Live) endWindow() {
	if l.atEnd(l.windowEnd) {
		l.mu.Lock()
		l.windowEnd += l.window
		l.mu.Unlock()
		return
	}
	l.mu.Lock()
	l.window, l.atEnd = 0, nil
	l.mu.Unlock()
	close(l.windowsEnded)
}
