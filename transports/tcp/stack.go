package tcp

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/netip"
	"sync"
	"time"

	"github.com/uplinksim/uplink/des"
	"github.com/uplinksim/uplink/netmodel"
)

// Stack gives real code in a testing/synctest bubble TCP connections on
// the model: net.Conn and net.Listener values whose protocol runs in the
// Engine's model events, driven by a des.Live on the bubble's clock.
//
// A Read, Write or Close takes effect at the caller's virtual now under
// the model lock, with no goroutine hand-off. A Read that finds nothing to
// read, or a Write that finds the send buffer full, waits on the
// connection's own one-slot channel, which the model signals from the
// event that delivered data or freed space.
type Stack struct {
	live  *des.Live
	eng   *Engine
	addrs map[uint64]*net.TCPAddr // (node, port) -> address, shared and immutable
}

// NewStack returns a stack on n, driven by live (which must wrap n's Sim),
// with TCP profile cfg.
func NewStack(live *des.Live, n *netmodel.Network, cfg Config) (*Stack, error) {
	live.Lock()
	defer live.Unlock()
	eng, err := NewEngine(n, cfg)
	if err != nil {
		return nil, err
	}
	return &Stack{live: live, eng: eng, addrs: make(map[uint64]*net.TCPAddr)}, nil
}

// Engine is the model-level engine behind the stack; use it only with the
// model locked.
func (st *Stack) Engine() *Engine { return st.eng }

// Live is the stack's bridge to the event core.
func (st *Stack) Live() *des.Live { return st.live }

// addr returns the shared address of (node, port); call with the lock held.
func (st *Stack) addr(node int, port uint16) *net.TCPAddr {
	k := uint64(node)<<16 | uint64(port)
	a := st.addrs[k]
	if a == nil {
		a = net.TCPAddrFromAddrPort(netip.AddrPortFrom(netmodel.NodeAddr(node), port))
		st.addrs[k] = a
	}
	return a
}

// resolve maps a *net.TCPAddr (or any address whose String is ip:port) of
// a node of the network to (node, port).
func (st *Stack) resolve(addr net.Addr) (int, uint16, error) {
	var ap netip.AddrPort
	switch a := addr.(type) {
	case *net.TCPAddr:
		ap = a.AddrPort()
	default:
		p, err := netip.ParseAddrPort(addr.String())
		if err != nil {
			return 0, 0, fmt.Errorf("tcp: %v is not an ip:port address: %w", addr, err)
		}
		ap = p
	}
	n := st.eng.net.NodeOf(ap.Addr())
	if n < 0 {
		return 0, 0, fmt.Errorf("tcp: %v: no such node in the simulated network", addr)
	}
	return n, ap.Port(), nil
}

func signal(ch chan struct{}) {
	select {
	case ch <- struct{}{}:
	default:
	}
}

// Listen listens on port (1..65535) of node.
func (st *Stack) Listen(node int, port uint16) (*Listener, error) {
	if port == 0 {
		return nil, fmt.Errorf("tcp: listen on node %d: port 0; give a port", node)
	}
	st.live.Lock()
	defer st.live.Unlock()
	l := &Listener{st: st, ready: make(chan struct{}, 1), closed: make(chan struct{})}
	lp, err := st.eng.Listen(node, port, l.accepted)
	if err != nil {
		return nil, err
	}
	l.lp = lp
	l.addr = st.addr(node, lp.Port())
	return l, nil
}

// Listener is a listening TCP port; it implements net.Listener.
type Listener struct {
	st        *Stack
	lp        *ListenPort
	addr      *net.TCPAddr
	queue     []*Conn // established, not yet accepted (model lock)
	ready     chan struct{}
	closed    chan struct{}
	closeOnce sync.Once
	isClosed  bool // model lock
}

var _ net.Listener = (*Listener)(nil)

// accepted runs in the model when a handshake completes.
func (l *Listener) accepted(ep *Endpoint, now des.Time) bool {
	if l.isClosed || len(l.queue) >= l.st.eng.cfg.Backlog {
		return false
	}
	l.queue = append(l.queue, l.st.newConn(ep))
	signal(l.ready)
	return true
}

// Accept waits for the next connection.
func (l *Listener) Accept() (net.Conn, error) {
	lv := l.st.live
	for {
		lv.Lock()
		if l.isClosed {
			lv.Unlock()
			return nil, &net.OpError{Op: "accept", Net: "tcp", Addr: l.addr, Err: net.ErrClosed}
		}
		if len(l.queue) > 0 {
			c := l.queue[0]
			l.queue[0] = nil
			l.queue = l.queue[1:]
			more := len(l.queue) > 0
			lv.Unlock()
			if more {
				signal(l.ready) // pass the baton to another Accept
			}
			return c, nil
		}
		lv.Unlock()
		select {
		case <-l.ready:
		case <-l.closed:
		}
	}
}

// Close stops listening. Connections not yet accepted are reset, as Linux
// does; accepted ones are unaffected.
func (l *Listener) Close() error {
	err := error(&net.OpError{Op: "close", Net: "tcp", Addr: l.addr, Err: net.ErrClosed})
	l.closeOnce.Do(func() {
		lv := l.st.live
		now := lv.Lock()
		l.isClosed = true
		for _, c := range l.queue {
			c.ep.Abort(now)
		}
		l.queue = nil
		l.lp.Close(now)
		lv.Unlock()
		close(l.closed)
		err = nil
	})
	return err
}

// Addr is the listening address.
func (l *Listener) Addr() net.Addr { return l.addr }

// Dial connects from node to addr (a *net.TCPAddr of a node of the
// network). It fails with an error wrapping syscall.ECONNREFUSED when
// nothing listens there, and with ctx's error when ctx ends first.
func (st *Stack) Dial(ctx context.Context, node int, addr net.Addr) (*Conn, error) {
	opErr := func(err error) error {
		return &net.OpError{Op: "dial", Net: "tcp", Addr: addr, Err: err}
	}
	dst, port, err := st.resolve(addr)
	if err != nil {
		return nil, opErr(err)
	}
	lv := st.live
	now := lv.Lock()
	ep, err := st.eng.Connect(node, dst, port, now)
	if err != nil {
		lv.Unlock()
		return nil, opErr(err)
	}
	c := st.newConn(ep)
	done := make(chan struct{})
	cb := c.callbacks()
	cb.Established = func(des.Time) { close(done) }
	cb.Closed = func(error, des.Time) {
		select {
		case <-done:
		default:
			close(done)
		}
	}
	ep.SetCallbacks(cb)
	lv.Unlock()
	select {
	case <-done:
	case <-ctx.Done():
		now := lv.Lock()
		ep.Abort(now)
		lv.Unlock()
		return nil, opErr(ctx.Err())
	}
	lv.Lock()
	ep.SetCallbacks(c.callbacks())
	err = ep.Err()
	lv.Unlock()
	if err != nil {
		return nil, opErr(err)
	}
	return c, nil
}

// newConn wraps ep; call with the lock held.
func (st *Stack) newConn(ep *Endpoint) *Conn {
	c := &Conn{
		st:       st,
		ep:       ep,
		laddr:    st.addr(ep.node, ep.lport),
		raddr:    st.addr(ep.rnode, ep.rport),
		readable: make(chan struct{}, 1),
		writable: make(chan struct{}, 1),
		closed:   make(chan struct{}),
		dl:       des.NewDeadlines(),
	}
	ep.SetCallbacks(c.callbacks())
	return c
}

// Conn is a TCP connection on the model; it implements net.Conn.
type Conn struct {
	st           *Stack
	ep           *Endpoint
	laddr, raddr *net.TCPAddr
	readable     chan struct{}
	writable     chan struct{}
	closed       chan struct{}
	dl           *des.Deadlines
	closeOnce    sync.Once
	// writers counts writers waiting for send-buffer space, under the
	// live lock: the endpoint wakes one, and a writer that finishes passes
	// the wake-up on (see Write).
	writers int
}

var _ net.Conn = (*Conn)(nil)

func (c *Conn) callbacks() Callbacks {
	return Callbacks{
		Readable: func(des.Time) { signal(c.readable) },
		Writable: func(des.Time) { signal(c.writable) },
	}
}

// Endpoint is the model endpoint behind c; use it only with the model
// locked.
func (c *Conn) Endpoint() *Endpoint { return c.ep }

// Stats returns the connection's counters.
func (c *Conn) Stats() Stats {
	c.st.live.Lock()
	defer c.st.live.Unlock()
	return c.ep.Stats()
}

func (c *Conn) opErr(op string, err error) error {
	return &net.OpError{Op: op, Net: "tcp", Source: c.laddr, Addr: c.raddr, Err: err}
}

func (c *Conn) isClosed() bool {
	select {
	case <-c.closed:
		return true
	default:
		return false
	}
}

// Read reads data, waiting while none is readable. At the end of the
// stream it returns io.EOF.
func (c *Conn) Read(b []byte) (int, error) {
	if c.isClosed() {
		return 0, c.opErr("read", net.ErrClosed)
	}
	if len(b) == 0 {
		return 0, nil
	}
	lv := c.st.live
	for {
		now := lv.Lock()
		n, err := c.ep.Read(b, now)
		more := n > 0 && c.ep.Readable() > 0
		lv.Unlock()
		if more {
			signal(c.readable) // pass the baton to a concurrent reader
		}
		switch {
		case n > 0:
			return n, nil
		case err == nil:
		case errors.Is(err, ErrAborted) && c.isClosed():
			return 0, c.opErr("read", net.ErrClosed)
		case errors.Is(err, io.EOF):
			return 0, io.EOF
		default:
			return 0, c.opErr("read", err)
		}
		if err := c.dl.Wait(c.readable, c.closed, true); err != nil {
			return 0, c.opErr("read", err)
		}
	}
}

// Write writes b, waiting while the send buffer is full.
func (c *Conn) Write(b []byte) (int, error) {
	if c.isClosed() {
		return 0, c.opErr("write", net.ErrClosed)
	}
	lv := c.st.live
	written := 0
	waited := false
	for {
		now := lv.Lock()
		if waited {
			c.writers--
		}
		n, err := c.ep.Write(b[written:], now)
		written += n
		waited = err == nil && written < len(b)
		if waited {
			c.writers++
		} else if c.writers > 0 && c.ep.AwaitWritable() {
			signal(c.writable) // pass the baton to a concurrent writer
		}
		lv.Unlock()
		if err != nil {
			if errors.Is(err, ErrAborted) && c.isClosed() {
				err = net.ErrClosed
			}
			return written, c.opErr("write", err)
		}
		if written == len(b) {
			return written, nil
		}
		if err := c.dl.Wait(c.writable, c.closed, false); err != nil {
			lv.Lock()
			c.writers--
			lv.Unlock()
			return written, c.opErr("write", err)
		}
	}
}

// Close closes the connection: a FIN after the data written (the
// connection finishes in the model), or a reset if received data is left
// unread, as on Linux. Waiting reads and writes return net.ErrClosed.
func (c *Conn) Close() error {
	err := c.opErr("close", net.ErrClosed)
	c.closeOnce.Do(func() {
		lv := c.st.live
		now := lv.Lock()
		c.ep.Close(now)
		lv.Unlock()
		close(c.closed)
		err = nil
	})
	return err
}

// CloseWrite shuts the sending side: the peer reads EOF after the data
// written.
func (c *Conn) CloseWrite() error {
	if c.isClosed() {
		return c.opErr("close", net.ErrClosed)
	}
	lv := c.st.live
	now := lv.Lock()
	err := c.ep.CloseWrite(now)
	lv.Unlock()
	if err != nil {
		return c.opErr("close", err)
	}
	return nil
}

// LocalAddr and RemoteAddr are *net.TCPAddr of netmodel.NodeAddr.
func (c *Conn) LocalAddr() net.Addr  { return c.laddr }
func (c *Conn) RemoteAddr() net.Addr { return c.raddr }

// SetDeadline sets the read and write deadlines.
func (c *Conn) SetDeadline(t time.Time) error { c.dl.Set(true, true, t); return nil }

// SetReadDeadline sets the read deadline.
func (c *Conn) SetReadDeadline(t time.Time) error { c.dl.Set(true, false, t); return nil }

// SetWriteDeadline sets the write deadline.
func (c *Conn) SetWriteDeadline(t time.Time) error { c.dl.Set(false, true, t); return nil }
