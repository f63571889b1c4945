package des

import (
	"net"
	"os"
	"sync"
	"time"
)

// Deadlines are a connection's read and write deadlines for real code in
// the bubble, and the wait that honours them: a virtual socket's reader or
// writer blocks until the model signals it, the connection closes, or its
// deadline passes on the bubble's clock. Changing a deadline wakes the
// waiters so they re-arm. The zero value is not usable; use NewDeadlines.
type Deadlines struct {
	mu      sync.Mutex
	read    time.Time
	write   time.Time
	changed chan struct{} // closed and replaced when a deadline changes
}

// NewDeadlines returns deadlines that are both unset.
func NewDeadlines() *Deadlines { return &Deadlines{changed: make(chan struct{})} }

// Set sets the read deadline, the write deadline, or both, to t (the zero
// time: none).
func (d *Deadlines) Set(read, write bool, t time.Time) {
	d.mu.Lock()
	if read {
		d.read = t
	}
	if write {
		d.write = t
	}
	close(d.changed)
	d.changed = make(chan struct{})
	d.mu.Unlock()
}

// Wait blocks until ready is signalled (nil), closed is closed
// (net.ErrClosed), or the read (or write) deadline passes
// (os.ErrDeadlineExceeded).
func (d *Deadlines) Wait(ready, closed <-chan struct{}, read bool) error {
	for {
		d.mu.Lock()
		dl, changed := d.write, d.changed
		if read {
			dl = d.read
		}
		d.mu.Unlock()
		var timeout <-chan time.Time
		var t *time.Timer
		if !dl.IsZero() {
			wait := time.Until(dl)
			if wait <= 0 {
				return os.ErrDeadlineExceeded
			}
			t = time.NewTimer(wait)
			timeout = t.C
		}
		var err error
		again := false
		select {
		case <-ready:
		case <-closed:
			err = net.ErrClosed
		case <-timeout:
			return os.ErrDeadlineExceeded
		case <-changed:
			again = true
		}
		if t != nil {
			t.Stop()
		}
		if !again {
			return err
		}
	}
}
